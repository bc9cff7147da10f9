"""gpu_zoo's own envs: env-steps/s of the batched API on the CUDA or CPU target, with a roofline figure."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch

from benchmarks.cases import check_action_mode
from benchmarks.skip import Skipped
from benchmarks.timing import copy_bandwidth_gbps, gpu_memory_in_use, host_us_per_step, peak_gpu_memory, time_steps

_DTYPE_BYTES = {"f64": 8, "f32": 4, "i32": 4, "u8": 1}
# Core fields by how one step touches them (see gpu_zoo.core.compiler.layout.CORE_DOCS); the env's own
# fields are counted as read and written every step.
_READ_ONLY = ("params", "seed", "episode", "max_cycles")
_WRITE_ONLY = ("rew", "term", "trunc", "done", "active")
_AT_EPISODE_END = ("last_ret", "last_len", "ep_count", "start_t")


def step_traffic(layout) -> dict:
    """Bytes one env-step must move to and from device memory, counted from the env's layout.

    A streaming model: every field is read once and written once if the step changes it.
    Actions and run-time params are only read, observations and rewards only written, and what
    is written only when an episode ends (``final_obs``, last return and length) is left out,
    so this is a lower bound on the traffic of a step.
    """
    read = write = 0
    for name, f in layout.fields.items():
        nbytes = math.prod(f.shape) * _DTYPE_BYTES[f.dtype]
        if name.startswith("final_obs_") or name in _AT_EPISODE_END:
            continue
        if name.startswith("act_") or name in _READ_ONLY:
            read += nbytes
        elif name.startswith("obs_") or name in _WRITE_ONLY:
            write += nbytes
        else:
            read += nbytes
            write += nbytes
    return {"read": read, "write": write, "total": read + write, "words_per_env": layout.words_per_env}


ACTION_NOTES = {
    "fixed": "one random valid action per agent (BatchedEnv.sample_actions), written once before the clock",
    "fresh": "env.sample_actions(generator, out=env.actions); env.step() every step: actions drawn on the "
             "device into the env's action buffers (one or two torch kernels a group), timed with the step",
}


def random_stepper(env, actions: str) -> Callable[[], object]:
    """A step of ``env`` under random actions: drawn once now (``fixed``), or before every step (``fresh``)."""
    gen = torch.Generator(device=env.device).manual_seed(0)
    if check_action_mode(actions) == "fresh":
        def fresh():
            env.sample_actions(gen, out=env.actions)
            return env.step()
        return fresh
    for g, a in env.sample_actions(gen).items():
        env.actions[g].copy_(a)
    return env.step


def measure(env_id: str, num_envs: int, device: str, env_kwargs: dict, *, target_s: float, repeats: int,
            actions: str = "fixed", window: int | None = None) -> dict:
    """Steps ``num_envs`` copies of ``env_id`` with random actions (auto-resets included).

    ``actions``: ``fixed`` (drawn once: the clock sees the env step alone) or ``fresh`` (drawn
    on the device before every step, inside the clock). ``window``: steps per timed repeat
    (an episode length), else calibrated to ``target_s``.
    """
    check_action_mode(actions)
    import gpu_zoo

    if env_id not in gpu_zoo.registered_envs():
        raise Skipped(f"{env_id} is not in gpu_zoo's registry yet")
    dev = torch.device(device)
    baseline = gpu_memory_in_use(dev)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    t0 = time.perf_counter()
    env = gpu_zoo.make(env_id, num_envs=num_envs, device=dev, validate=False, **env_kwargs)
    make_s = time.perf_counter() - t0
    env.reset(seed=0)
    step = random_stepper(env, actions)
    timing = time_steps(step, dev, target_s=target_s, repeats=repeats, warmup=2, steps=window)
    rate = timing.summary(num_envs)
    agents = env.layout.num_agents
    traffic = step_traffic(env.layout)
    rec = {
        "env_steps_per_s": rate["median"], "spread": rate["spread"], "samples": rate["samples"],
        "agent_steps_per_s": rate["median"] * agents, "agents": agents, "steps_per_repeat": timing.steps,
        # On the CPU target the step runs in the calling thread: its host cost is the whole step.
        "host_us_per_step": host_us_per_step(step, dev) if dev.type == "cuda" else None,
        "env_kwargs": env_kwargs, "actions": actions, "window": window,
        "notes": ACTION_NOTES[actions] + ("; timed over whole episode lengths" if window else ""),
        "make_s": make_s, "target": env.target,
        "launch": str(env._launcher.shape), "state_bytes": env.buffers.nbytes(),
        "bytes_per_env_step": traffic,
        **peak_gpu_memory(dev, baseline),
    }
    if dev.type == "cuda":
        achieved = traffic["total"] * rate["median"] / 1e9
        copy = copy_bandwidth_gbps(dev)
        rec["roofline"] = {"achieved_gbps": achieved, "copy_gbps": copy, "fraction_of_copy": achieved / copy}
    return rec
