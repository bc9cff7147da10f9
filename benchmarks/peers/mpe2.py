"""MPE2's ``simple_tag_v3``: one env on one core, and many through SuperSuit's vector envs."""

from __future__ import annotations

import os

import numpy as np

from benchmarks.skip import Skipped
from benchmarks.timing import time_steps


def _parallel_env():
    try:
        from mpe2 import simple_tag_v3
    except ImportError as err:
        raise Skipped(f"mpe2 is not installed ({err}); pip install mpe2") from err
    return simple_tag_v3.parallel_env(max_cycles=25)


def measure_single(*, target_s: float, repeats: int) -> dict:
    """One ``ParallelEnv`` stepped in Python on one core, reset when its episode ends."""
    env = _parallel_env()
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    # Actions drawn ahead of time, so the clock sees the env, not the sampler.
    pool = [{a: int(rng.integers(5)) for a in env.possible_agents} for _ in range(256)]
    i = 0

    def step():
        nonlocal i
        if not env.agents:
            env.reset()
        env.step(pool[i % len(pool)])
        i += 1

    timing = time_steps(step, "cpu", target_s=target_s, repeats=repeats, warmup=10)
    rate = timing.summary(1)
    return {"env_steps_per_s": rate["median"], "spread": rate["spread"], "samples": rate["samples"],
            "agent_steps_per_s": rate["median"] * len(env.possible_agents), "agents": len(env.possible_agents),
            "steps_per_repeat": timing.steps, "notes": "one process, one core; random actions drawn ahead"}


def supersuit_vec_env(num_envs: int, base_class: str):
    """``num_envs`` copies of MPE2's simple_tag as one vector env with a slot per agent, and its process count.

    The groups' observations differ in size and the vector env needs one shape: padded, as in the tutorial.
    """
    env = _parallel_env()
    try:
        import supersuit as ss
    except ImportError as err:
        raise Skipped(f"supersuit is not installed ({err}); pip install supersuit") from err
    vec = ss.pettingzoo_env_to_vec_env_v1(ss.pad_observations_v0(env))
    num_cpus = 0 if num_envs < 4 else min(num_envs, os.cpu_count() or 1)
    return ss.concat_vec_envs_v1(vec, num_envs, num_cpus=num_cpus, base_class=base_class), num_cpus


def measure_supersuit(num_envs: int, *, target_s: float, repeats: int) -> dict:
    """``pettingzoo_env_to_vec_env_v1`` + ``concat_vec_envs_v1``: the SB3 tutorial's vectorisation."""
    venv, num_cpus = supersuit_vec_env(num_envs, "gymnasium")
    agents = venv.num_envs // num_envs
    venv.reset(seed=0)
    rng = np.random.default_rng(0)
    pool = [rng.integers(0, 5, size=num_envs * agents) for _ in range(64)]
    i = 0

    def step():
        nonlocal i
        venv.step(pool[i % len(pool)])
        i += 1

    try:
        timing = time_steps(step, "cpu", target_s=target_s, repeats=repeats, warmup=5)
    finally:
        venv.close()
    rate = timing.summary(num_envs)
    return {"env_steps_per_s": rate["median"], "spread": rate["spread"], "samples": rate["samples"],
            "agent_steps_per_s": rate["median"] * agents, "agents": agents, "steps_per_repeat": timing.steps,
            "num_cpus": num_cpus, "notes": f"concat_vec_envs_v1(num_cpus={num_cpus}); auto-reset by the vector env"}
