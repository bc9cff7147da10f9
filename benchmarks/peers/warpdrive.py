"""WarpDrive 2.7.1's Tag envs on its Numba backend: the env step, with its done-env resets, as its trainer runs it."""

from __future__ import annotations

import copy
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from benchmarks.cases import check_action_mode
from benchmarks.skip import Skipped
from benchmarks.timing import gpu_memory_in_use, host_us_per_step, peak_gpu_memory, time_steps

NOTES = ("step_all_envs + reset_only_done_envs per step, {actions}; the host reset that WarpDrive's "
         "setup runs once per env is computed once and replayed (memoised: host_resets_replayed)")
ACTION_NOTES = {"fixed": "fixed random actions (drawn once)",
                "fresh": "random actions drawn on the GPU (torch.rand) into its sampled_actions before every step"}
SEED = 274880  # WarpDrive's tag_continuous.yaml seed, as an int: its np.int32 default breaks random.seed on 3.11+


def _import():
    # NumPy 2.5 removed row_stack, which numba-cuda still calls while compiling
    # (as in gpu_zoo.core.compiler.speed.compat).
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
    try:
        from example_envs.tag_continuous.tag_continuous import TagContinuous
        from example_envs.tag_gridworld.tag_gridworld import CUDATagGridWorld
        from warp_drive.env_wrapper import EnvWrapper
        from warp_drive.training.utils.data_loader import create_and_push_data_placeholders
    except ImportError as err:
        raise Skipped(f"rl-warp-drive is not installed ({err}); pip install rl-warp-drive==2.7.1") from err
    return TagContinuous, CUDATagGridWorld, EnvWrapper, create_and_push_data_placeholders


def shipped_run_config(name: str) -> dict:
    """WarpDrive's own run configuration ``warp_drive/training/run_configs/<name>.yaml``, as it ships."""
    import warp_drive
    import yaml

    path = Path(warp_drive.__file__).parent / "training" / "run_configs" / f"{name}.yaml"
    if not path.exists():
        raise Skipped(f"this WarpDrive ships no {path.name}")
    return yaml.safe_load(path.read_text())


def as_our_kwargs(wd_env: dict) -> dict:
    """A WarpDrive Tag env configuration in gpu_zoo's names (its seed is a separate setting here)."""
    kw = {k: v for k, v in wd_env.items() if k not in ("seed", "episode_length")}
    kw["max_cycles"] = wd_env["episode_length"]
    return kw


def _memoise_reset(env) -> dict:
    """Makes repeated host resets of ``env`` return the first one's observations.

    WarpDrive's setup resets the Python env on the host once per env (its observation
    placeholders are built from ``[obs_at_reset() for _ in range(num_envs)]``) and twice more,
    with no step in between, each time computing every agent's observation in Python (2.3 s at
    1000 agents, so 77 minutes for 2000 envs). The first reset is computed, the others replayed.
    """
    reset, cache = env.reset, {}
    stats = {"host_resets_computed": 0, "host_reset_s": 0.0, "host_resets_replayed": 0}

    def memoised():
        if "obs" not in cache:
            t = time.perf_counter()
            cache["obs"] = reset()
            stats["host_resets_computed"] += 1
            stats["host_reset_s"] += time.perf_counter() - t
        else:
            stats["host_resets_replayed"] += 1
        return copy.deepcopy(cache["obs"])

    env.reset = memoised
    return stats


def _env(workload: str, env_kwargs: dict):
    TagContinuous, CUDATagGridWorld, _, _ = _import()
    if workload == "tag_continuous":
        kw = dict(env_kwargs)
        kw["episode_length"] = kw.pop("max_cycles", 100)
        return TagContinuous(seed=SEED, **kw)
    if workload == "tag_gridworld":
        if env_kwargs.get("num_runners", 1) != 1:
            raise Skipped("WarpDrive's tag_gridworld has exactly one runner")
        return CUDATagGridWorld(num_taggers=env_kwargs["num_taggers"], grid_length=env_kwargs["grid_length"],
                                episode_length=env_kwargs.get("max_cycles", 100), seed=SEED)
    raise ValueError(f"WarpDrive has no {workload!r} env here")


@dataclass
class Stepper:
    """WarpDrive's env as its trainer steps it: ``step()`` runs ``step_all_envs`` then ``reset_only_done_envs``.

    With ``fresh`` actions, ``draw()`` (random actions into its ``sampled_actions``, on the GPU) runs
    before every step; with ``fixed`` ones it ran once, at set-up.
    """

    env: object
    wrapper: object
    actions: str
    draw: Callable[[], None]
    setup_s: float
    host_resets: dict

    def step(self):
        if self.actions == "fresh":
            self.draw()
        self.wrapper.step_all_envs()
        self.wrapper.reset_only_done_envs()  # what WarpDrive's trainer runs after every step


def stepper(workload: str, num_envs: int, env_kwargs: dict, actions: str) -> Stepper:
    """WarpDrive's ``workload`` env (gpu_zoo's argument names) over ``num_envs`` envs, reset, actions drawn."""
    check_action_mode(actions)
    _, _, EnvWrapper, create_and_push_data_placeholders = _import()
    dev = torch.device("cuda")
    t0 = time.perf_counter()
    env = _env(workload, env_kwargs)
    host_resets = _memoise_reset(env)
    wrapper = EnvWrapper(env, num_envs=num_envs, env_backend="numba")
    ids = {"tagger": list(env.taggers), "runner": list(env.runners)}
    create_and_push_data_placeholders(wrapper, policy_tag_to_agent_id_map=ids,
                                      create_separate_placeholders_for_each_policy=False,
                                      push_data_batch_placeholders=False)
    wrapper.reset_all_envs()
    sampled = wrapper.cuda_data_manager.data_on_device_via_torch("sampled_actions")
    high = torch.as_tensor(np.atleast_1d(env.action_space[0].nvec if hasattr(env.action_space[0], "nvec")
                                         else env.action_space[0].n), device=dev)
    gen = torch.Generator(device=dev).manual_seed(0)

    def draw():
        sampled.copy_((torch.rand(sampled.shape, device=dev, generator=gen) * high).to(sampled.dtype))

    draw()
    return Stepper(env, wrapper, actions, draw, time.perf_counter() - t0, host_resets)


def measure(workload: str, num_envs: int, device: str, env_kwargs: dict, *, target_s: float, repeats: int,
            actions: str = "fixed", window: int | None = None) -> dict:
    """WarpDrive's env step as its trainer runs it; ``actions``: ``fixed`` or ``fresh`` (drawn before every step).

    ``window``: steps per timed repeat (an episode length), else calibrated to ``target_s``.
    """
    check_action_mode(actions)
    _import()
    if device != "cuda":
        raise Skipped("WarpDrive's numba backend runs on a CUDA GPU only")
    dev = torch.device("cuda")
    baseline = gpu_memory_in_use(dev)
    run = stepper(workload, num_envs, env_kwargs, actions)
    step, agents, setup_s, stats = run.step, run.wrapper.n_agents, run.setup_s, run.host_resets
    try:
        step()
        torch.cuda.synchronize()
    except Exception as err:  # noqa: BLE001 - the launch failure itself is the result
        why = f"the numba backend could not step {agents} agents per env: {type(err).__name__}: {err}"
        return {"status": "unsupported", "agents": agents, "reason": why, "result": why, "setup_s": setup_s, **stats}
    timing = time_steps(step, dev, target_s=target_s, repeats=repeats, warmup=5, steps=window)
    rate = timing.summary(num_envs)
    return {"window": window, "env_steps_per_s": rate["median"], "spread": rate["spread"], "samples": rate["samples"],
            "agent_steps_per_s": rate["median"] * agents, "agents": agents, "steps_per_repeat": timing.steps,
            "host_us_per_step": host_us_per_step(step, dev), "setup_s": setup_s, **stats,
            **peak_gpu_memory(dev, baseline), "seed": SEED, "actions": actions,
            "notes": NOTES.format(actions=ACTION_NOTES[actions]) + ("; timed over whole episode lengths"
                                                                     if window else "")}


A2C_NOTES = ("TrainerA2C on the shipped run configuration: per iteration _generate_rollout_batch() (policy forward, "
             "WarpDrive's CUDA sampler, step_all_envs, reset_only_done_envs, one step at a time) then "
             "_update_model_params() (one A2C gradient step per policy on the whole batch), as its train() runs "
             "them; the setup's host resets are memoised as in the env rows")


def measure_a2c(num_envs: int, device: str, our_env_kwargs: dict, *, iterations: int, repeats: int) -> dict:
    """Env-steps/s of WarpDrive's A2C trainer on its shipped ``tag_continuous.yaml``, as its ``train()`` loop runs.

    ``our_env_kwargs`` is the env the gpu_zoo rows of this workload train (in gpu_zoo's names):
    a mismatch with the shipped YAML is an error, so the two rows always measure one workload.
    """
    _, _, EnvWrapper, _ = _import()
    if device != "cuda":
        raise Skipped("WarpDrive's numba backend runs on a CUDA GPU only")
    from warp_drive.training.trainers.trainer_a2c import TrainerA2C

    config_name = "tag_continuous"
    run = shipped_run_config(config_name)
    shipped = as_our_kwargs(run["env"])
    if shipped != our_env_kwargs:
        diff = {k: (shipped.get(k), our_env_kwargs.get(k)) for k in shipped.keys() | our_env_kwargs.keys()
                if shipped.get(k) != our_env_kwargs.get(k)}
        raise ValueError(f"{config_name}.yaml's env differs from this workload's (yaml, ours): {diff}")
    if run["trainer"]["num_envs"] != num_envs:
        raise ValueError(f"{config_name}.yaml trains {run['trainer']['num_envs']} envs, this case {num_envs}")
    run["trainer"]["seed"] = SEED  # its default, np.int32(time.time()), breaks random.seed on 3.11+
    # Nothing written to disk while timed: metrics once per timed call at most, no checkpoints.
    run["saving"].update(basedir=tempfile.mkdtemp(prefix="wd_bench_"), metrics_log_freq=10**9,
                         model_params_save_freq=10**9)
    dev = torch.device("cuda")
    baseline = gpu_memory_in_use(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    t0 = time.perf_counter()
    env = _env("tag_continuous", shipped)
    stats = _memoise_reset(env)
    wrapper = EnvWrapper(env, num_envs=num_envs, env_backend="numba")
    ids = {"tagger": list(env.taggers), "runner": list(env.runners)}
    trainer = TrainerA2C(env_wrapper=wrapper, config=run, policy_tag_to_agent_id_map=ids, results_dir="bench",
                         verbose=False)
    trainer.cuda_envs.reset_all_envs()
    setup_s = time.perf_counter() - t0

    def iteration():
        trainer._generate_rollout_batch()
        trainer._update_model_params(1)  # not the first or last iteration: no metrics logging

    iteration()
    timing = time_steps(iteration, dev, target_s=0.0, repeats=repeats, warmup=0, steps=iterations)
    rate = timing.summary(trainer.training_batch_size)
    agents = wrapper.n_agents
    return {"env_steps_per_s": rate["median"], "spread": rate["spread"], "samples": rate["samples"],
            "agent_steps_per_s": rate["median"] * agents, "agents": agents,
            "num_steps": trainer.training_batch_size_per_env, "iterations_per_repeat": iterations,
            "trained_groups": list(trainer.policies_to_train),
            "algorithm": {p: run["policy"][p]["algorithm"] for p in trainer.policies_to_train},
            "fc_dims": {p: run["policy"][p]["model"]["fc_dims"] for p in trainer.policies_to_train},
            "setup_s": setup_s, **stats, **peak_gpu_memory(dev, baseline), "seed": SEED,
            "run_config": f"warp_drive/training/run_configs/{config_name}.yaml", "notes": A2C_NOTES}
