"""BenchMARL's MAPPO on simple_tag through gpu_zoo's env and through VMAS's, with the same settings.

    python -m benchmarks.benchmarl_speed --device cuda --num-envs 1024,8192 --iterations 4 --out DIR
    python -m benchmarks.benchmarl_speed --device cuda --num-envs 8192 --iterations 24 --eval-every 4 --out DIR

The second form is a learning comparison: it evaluates every ``--eval-every`` iterations (64
episodes, deterministic actions, as BenchMARL's evaluation does) and records each group's return
curve, from the first iteration's (a policy that has barely trained) to the last; its speed
figures then leave the evaluations out (collection and training timers only).

Both runs are one BenchMARL `Experiment`: the same algorithm config, model, seed, collection and
training sizes; only the task differs (`gpu_zoo.benchmarl.GpuZooTask.SIMPLE_TAG_V3` against
BenchMARL's `VmasTask.SIMPLE_TAG`). The worlds are alike and not identical: one good agent,
three adversaries, two obstacles and 100 steps an episode in both, but VMAS follows the
original MPE's physics, gpu_zoo follows PettingZoo's (mpe2). The figures are BenchMARL's own
timers (collection, training, whole iteration) over the iterations after the first, which
compiles and warms up; env-steps/s counts each env's steps (BenchMARL's frames).
"""

from __future__ import annotations

import argparse
import csv
import json
import pathlib
import tempfile
import time

BACKENDS = ("gpu_zoo", "vmas")
TIMERS = ("collection_time", "training_time", "iteration_time")


def task(backend: str, max_steps: int):
    if backend == "gpu_zoo":
        from gpu_zoo.benchmarl import GpuZooTask
        return GpuZooTask.SIMPLE_TAG_V3.get_task(config={"num_good": 1, "num_adversaries": 3, "num_obstacles": 2,
                                                         "max_cycles": max_steps})
    from benchmarl.environments import VmasTask
    config = VmasTask.SIMPLE_TAG.get_from_yaml().config
    return VmasTask.SIMPLE_TAG.get_task(config={**config, "max_steps": max_steps})


def experiment_config(device: str, num_envs: int, max_steps: int, iterations: int, folder: str,
                      eval_every: int = 0):
    from benchmarl.experiment import ExperimentConfig
    cfg = ExperimentConfig.get_from_yaml()
    cfg.sampling_device = cfg.train_device = cfg.buffer_device = device
    cfg.on_policy_n_envs_per_worker = num_envs
    cfg.on_policy_collected_frames_per_batch = num_envs * max_steps
    cfg.on_policy_minibatch_size = max(400, num_envs * max_steps // 8)
    cfg.on_policy_n_minibatch_iters = 8
    cfg.max_n_frames = None
    cfg.max_n_iters = iterations + 1
    cfg.evaluation = True
    cfg.evaluation_interval = cfg.on_policy_collected_frames_per_batch * (eval_every or (iterations + 1))
    cfg.evaluation_episodes = 64
    cfg.prefer_continuous_actions = False
    cfg.render = False
    cfg.loggers = ["csv"]
    cfg.create_json = False
    cfg.checkpoint_at_end = False
    cfg.save_folder = folder
    return cfg


def _rows(folder: pathlib.Path, name: str) -> list[tuple[int, float]]:
    """(iteration, value) of each logged value of BenchMARL's scalar ``name``."""
    (path,) = folder.glob(f"**/scalars/{name}.csv")
    with open(path) as f:
        return [(int(float(row[0])), float(row[1])) for row in csv.reader(f)]


def _scalar(folder: pathlib.Path, name: str) -> list[float]:
    return [v for _, v in _rows(folder, name)]


def _return_curves(folder: pathlib.Path) -> dict[str, list[tuple[int, float]]]:
    """Every group's mean episode return per logged iteration, in evaluation and in collection."""
    names = sorted(p.stem for p in folder.glob("**/scalars/*reward_episode_reward_mean.csv"))
    return {n: _rows(folder, n) for n in names}


def measure(backend: str, device: str, num_envs: int, max_steps: int, iterations: int, seed: int,
            eval_every: int = 0) -> dict:
    from benchmarl.algorithms import MappoConfig
    from benchmarl.experiment import Experiment
    from benchmarl.models import MlpConfig
    with tempfile.TemporaryDirectory() as folder:
        t0 = time.perf_counter()
        exp = Experiment(task=task(backend, max_steps), algorithm_config=MappoConfig.get_from_yaml(),
                         model_config=MlpConfig.get_from_yaml(), seed=seed,
                         config=experiment_config(device, num_envs, max_steps, iterations, folder, eval_every))
        built = time.perf_counter() - t0
        exp.run()
        total = time.perf_counter() - t0
        root = pathlib.Path(folder)
        timers = {t: _scalar(root, f"timers_{t}")[1:] for t in TIMERS}  # the first iteration compiles and warms
        frames = num_envs * max_steps
        out = {"backend": backend, "device": device, "num_envs": num_envs, "max_steps": max_steps,
               "timed_iterations": len(timers["iteration_time"]), "build_s": round(built, 2),
               "run_s": round(total, 2)}
        for t, values in timers.items():
            out[f"{t}_s"] = round(sum(values) / len(values), 4)
        out["collection_env_steps_per_s"] = frames / out["collection_time_s"]
        out["end_to_end_env_steps_per_s"] = frames / out["iteration_time_s"]
        # iteration_time counts the evaluations in the iterations that run one
        out["train_env_steps_per_s"] = frames / (out["collection_time_s"] + out["training_time_s"])
        for name in ("eval_adversary_reward_episode_reward_mean", "eval_agent_reward_episode_reward_mean"):
            out[name] = _scalar(root, name)[-1]
        if eval_every:
            out["eval_every"] = eval_every
            out["return_curves"] = _return_curves(root)
        return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--num-envs", default="1024", help="comma-separated sizes")
    p.add_argument("--max-steps", type=int, default=100)
    p.add_argument("--iterations", type=int, default=4, help="timed iterations after the first")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--eval-every", type=int, default=0,
                   help="evaluate every this many iterations and record the return curves (0: at the end only)")
    p.add_argument("--out", default=None, help="a folder for benchmarl_speed.jsonl")
    a = p.parse_args(argv)
    rows = []
    for n in (int(s) for s in a.num_envs.split(",")):
        for backend in a.backends.split(","):
            row = measure(backend, a.device, n, a.max_steps, a.iterations, a.seed, a.eval_every)
            print(json.dumps({k: v for k, v in row.items() if k != "return_curves"}), flush=True)
            rows.append(row)
            if a.out:  # each row as it comes: a run cut short keeps what it measured
                out = pathlib.Path(a.out)
                out.mkdir(parents=True, exist_ok=True)
                with open(out / "benchmarl_speed.jsonl", "a") as f:
                    f.write(json.dumps(row) + "\n")
    return rows


if __name__ == "__main__":
    main()
