"""WarpDrive 2.7.1's Tag envs on its Numba backend: the env step, with its done-env resets, as its trainer runs it."""

from __future__ import annotations

import copy
import time

import numpy as np
import torch

from benchmarks.skip import Skipped
from benchmarks.timing import gpu_memory_in_use, host_us_per_step, peak_gpu_memory, time_steps

NOTES = ("step_all_envs + reset_only_done_envs per step, fixed random actions; the host reset that WarpDrive's "
         "setup runs once per env is computed once and replayed (memoised: host_resets_replayed)")
SEED = 274880  # WarpDrive's tag_continuous.yaml seed, as an int: its np.int32 default breaks random.seed on 3.11+


def _import():
    # NumPy 2.5 removed row_stack, which numba-cuda still calls while compiling (as in gpu_zoo.core.compat).
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


def measure(workload: str, num_envs: int, device: str, env_kwargs: dict, *, target_s: float, repeats: int) -> dict:
    _, _, EnvWrapper, create_and_push_data_placeholders = _import()
    if device != "cuda":
        raise Skipped("WarpDrive's numba backend runs on a CUDA GPU only")
    dev = torch.device("cuda")
    baseline = gpu_memory_in_use(dev)
    t0 = time.perf_counter()
    env = _env(workload, env_kwargs)
    stats = _memoise_reset(env)
    wrapper = EnvWrapper(env, num_envs=num_envs, env_backend="numba")
    agents = wrapper.n_agents
    ids = {"tagger": list(env.taggers), "runner": list(env.runners)}
    create_and_push_data_placeholders(wrapper, policy_tag_to_agent_id_map=ids,
                                      create_separate_placeholders_for_each_policy=False,
                                      push_data_batch_placeholders=False)
    wrapper.reset_all_envs()
    setup_s = time.perf_counter() - t0
    actions = wrapper.cuda_data_manager.data_on_device_via_torch("sampled_actions")
    high = torch.as_tensor(np.atleast_1d(env.action_space[0].nvec if hasattr(env.action_space[0], "nvec")
                                         else env.action_space[0].n), device=dev)
    gen = torch.Generator(device=dev).manual_seed(0)
    actions.copy_((torch.rand(actions.shape, device=dev, generator=gen) * high).to(actions.dtype))

    def step():
        wrapper.step_all_envs()
        wrapper.reset_only_done_envs()  # what WarpDrive's trainer runs after every step

    try:
        step()
        torch.cuda.synchronize()
    except Exception as err:  # noqa: BLE001 - the launch failure itself is the result
        why = f"the numba backend could not step {agents} agents per env: {type(err).__name__}: {err}"
        return {"status": "unsupported", "agents": agents, "reason": why, "result": why, "setup_s": setup_s, **stats}
    timing = time_steps(step, dev, target_s=target_s, repeats=repeats, warmup=5)
    rate = timing.summary(num_envs)
    return {"env_steps_per_s": rate["median"], "spread": rate["spread"], "samples": rate["samples"],
            "agent_steps_per_s": rate["median"] * agents, "agents": agents, "steps_per_repeat": timing.steps,
            "host_us_per_step": host_us_per_step(step, dev), "setup_s": setup_s, **stats,
            **peak_gpu_memory(dev, baseline), "seed": SEED,
            "notes": NOTES}
