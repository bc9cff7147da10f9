"""Where a Tag continuous step's GPU time goes, for WarpDrive and gpu_zoo, per world and action mode.

    python -m benchmarks.profile_tag --num-envs 2000 --agents 640 --out DIR

Each (system, world, actions) runs in this process: built, warmed, then ``--steps`` steps under
torch's profiler (CUPTI sees every kernel of the process, Numba's included). The record gives
each kernel's GPU time per step, the step's wall time, and what the world looks like after the
steps (where the agents are, how many runners are left, how long episodes last), which is what
decides how much work a data-dependent search does. Worlds: ``defaults`` (each constructor's
defaults, the 10 nearest observed past 100 agents, as the env suite runs it) and
``tag_continuous.yaml`` (WarpDrive's shipped world, agent counts changed).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time
from collections import defaultdict

import numpy as np
import torch

from benchmarks.cases import WARPDRIVE_YAML, Case, env_kwargs, shipped_world_counts, tag_continuous_kwargs

WORLDS = ("defaults", WARPDRIVE_YAML)


def world_kwargs(world: str, agents: int) -> dict:
    config = tag_continuous_kwargs(agents) if world == "defaults" else shipped_world_counts(agents)
    return env_kwargs(Case("tag_continuous", "gpu_zoo", "cuda", 0, config))


def _kernels(prof, steps: int) -> dict[str, float]:
    """GPU microseconds per step of each kernel (and copy or fill) the profiler saw."""
    per = defaultdict(float)
    for ev in prof.key_averages():
        us = getattr(ev, "self_device_time_total", None) or getattr(ev, "self_cuda_time_total", 0)
        if us > 0:
            per[ev.key[:90]] += us / steps
    return dict(sorted(per.items(), key=lambda kv: -kv[1]))


def _profile(step, steps: int) -> dict:
    from torch.profiler import ProfilerActivity, profile

    for _ in range(20):
        step()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    wall_us = (time.perf_counter() - t) / steps * 1e6
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    kernels = _kernels(prof, steps)
    return {"wall_us_per_step": wall_us, "gpu_us_per_step": sum(kernels.values()), "kernels": kernels}


def _layout_stats(x: np.ndarray, y: np.ndarray, alive: np.ndarray, grid: float) -> dict:
    """How crowded the arena is: agents at a wall, and the busiest of a 16 x 16 grid's cells per env."""
    margin = 0.01 * grid
    at_wall = (x <= margin) | (y <= margin) | (x >= grid - margin) | (y >= grid - margin)
    cells = 16
    cx = np.clip((x / grid * cells).astype(int), 0, cells - 1)
    cy = np.clip((y / grid * cells).astype(int), 0, cells - 1)
    idx = (cx * cells + cy) + np.arange(x.shape[0])[:, None] * cells * cells
    counts = np.bincount(idx[alive.astype(bool)], minlength=x.shape[0] * cells * cells).reshape(x.shape[0], -1)
    return {"fraction_at_a_wall": float(at_wall[alive.astype(bool)].mean()),
            "busiest_cell_share": float((counts.max(1) / np.maximum(alive.sum(1), 1)).mean()),
            "alive_fraction": float(alive.mean())}


def ours(num_envs: int, agents: int, world: str, actions: str, steps: int) -> dict:
    import gpu_zoo
    from benchmarks.ours import random_stepper

    kw = world_kwargs(world, agents)
    env = gpu_zoo.make("tag_continuous_v0", num_envs=num_envs, device="cuda", validate=False, **kw)
    env.reset(seed=0)
    rec = _profile(random_stepper(env, actions), steps)
    s = env.state
    rec["world"] = _layout_stats(s.pos_x.cpu().numpy(), s.pos_y.cpu().numpy(), s.alive.cpu().numpy(),
                                 float(env.params.grid_length))
    rec["world"]["finished_episodes_per_env"] = float(env.episode_stats()["episodes"].float().mean())
    rec["world"]["runners_left_fraction"] = float(s.runners_left.float().mean() / env.params.num_runners)
    return {"system": "gpu_zoo", "env_kwargs": kw, **rec}


def warpdrive(num_envs: int, agents: int, world: str, actions: str, steps: int) -> dict:
    from benchmarks.peers.warpdrive import stepper

    kw = world_kwargs(world, agents)
    run = stepper("tag_continuous", num_envs, kw, actions)
    dm = run.wrapper.cuda_data_manager
    dones = []
    for _ in range(100):  # how often envs finish (read before the resets clear the flags), ahead of the timing
        if actions == "fresh":
            run.draw()
        run.wrapper.step_all_envs()
        dones.append(float(np.mean(dm.pull_data_from_device("_done_"))))
        run.wrapper.reset_only_done_envs()
    rec = _profile(run.step, steps)
    x, y = dm.pull_data_from_device("loc_x"), dm.pull_data_from_device("loc_y")
    rec["world"] = _layout_stats(x, y, dm.pull_data_from_device("still_in_the_game"), float(run.env.grid_length))
    rec["world"]["done_per_step"] = float(np.mean(dones))
    rec["world"]["runners_left_fraction"] = float(dm.pull_data_from_device("num_runners").mean() / run.env.num_runners)
    return {"system": "warpdrive", "env_kwargs": kw, **rec}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--num-envs", type=int, default=2000)
    p.add_argument("--agents", type=int, default=640)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--systems", default="warpdrive,gpu_zoo")
    p.add_argument("--worlds", default=",".join(WORLDS))
    p.add_argument("--actions", default="fixed,fresh")
    p.add_argument("--out", default=None, help="a folder for profile_tag.jsonl")
    a = p.parse_args(argv)
    runs = {"warpdrive": warpdrive, "gpu_zoo": ours}
    rows = []
    for system in a.systems.split(","):
        for world in a.worlds.split(","):
            for actions in a.actions.split(","):
                try:
                    row = runs[system](a.num_envs, a.agents, world, actions, a.steps)
                except Exception as err:  # noqa: BLE001 - one failed run is a row, the others go on
                    row = {"system": system, "error": f"{type(err).__name__}: {err}"}
                row.update(world_name=world, actions=actions, num_envs=a.num_envs, agents=a.agents)
                top = list(row.get("kernels", {}).items())[:4]
                print(json.dumps({k: v for k, v in row.items() if k != "kernels"} | {"top_kernels": top}), flush=True)
                rows.append(row)
    if a.out:
        out = pathlib.Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "profile_tag.jsonl", "a") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    return rows


if __name__ == "__main__":
    main()
