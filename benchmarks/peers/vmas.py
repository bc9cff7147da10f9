"""VMAS's MPE scenarios (torch, batched over envs) on the same device as ours.

VMAS follows the original OpenAI MPE (its own action sets: 9 moves in simple_spread, the moves
and messages flattened into one Discrete for the speaking agents), so its rows are alike in
world, not identical to MPE2's.
"""

from __future__ import annotations

import torch

from benchmarks.cases import check_action_mode
from benchmarks.skip import Skipped
from benchmarks.timing import gpu_memory_in_use, host_us_per_step, peak_gpu_memory, time_steps

EPISODE = 25  # MPE's episode length; VMAS envs all end together, so all are reset at once
DRAWN = {"fixed": "fixed random", "fresh": "drawn by get_random_action before every step"}
SCENARIOS = ("simple_tag", "simple_spread", "simple_reference", "simple_speaker_listener", "simple_world_comm")


def measure(num_envs: int, device: str, *, target_s: float, repeats: int, workload: str = "simple_tag",
            actions: str = "fixed") -> dict:
    """``actions``: ``fixed`` (VMAS's random actions drawn once) or ``fresh`` (drawn by VMAS before every step)."""
    check_action_mode(actions)
    try:
        import vmas
    except ImportError as err:
        raise Skipped(f"vmas is not installed ({err}); pip install vmas") from err
    if workload not in SCENARIOS:
        raise ValueError(f"no VMAS scenario measured for {workload!r}; measured: {SCENARIOS}")
    dev = torch.device(device)
    baseline = gpu_memory_in_use(dev)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    env = vmas.make_env(workload, num_envs=num_envs, device=dev, continuous_actions=False, seed=0)
    env.reset()
    torch.manual_seed(0)  # VMAS samples its random actions from torch's global generator
    drawn = [env.get_random_action(agent) for agent in env.agents]
    t = 0

    def step():
        nonlocal t
        env.step([env.get_random_action(agent) for agent in env.agents] if actions == "fresh" else drawn)
        t += 1
        if t % EPISODE == 0:
            env.reset()

    timing = time_steps(step, dev, target_s=target_s, repeats=repeats, warmup=5)
    rate = timing.summary(num_envs)
    agents = len(env.agents)
    return {"env_steps_per_s": rate["median"], "spread": rate["spread"], "samples": rate["samples"],
            "agent_steps_per_s": rate["median"] * agents, "agents": agents, "steps_per_repeat": timing.steps,
            "host_us_per_step": host_us_per_step(step, dev), **peak_gpu_memory(dev, baseline),
            "actions": actions,
            "notes": f"discrete actions, {DRAWN[actions]}; every env reset together each {EPISODE} steps"}
