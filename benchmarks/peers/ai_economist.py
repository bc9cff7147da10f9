"""The ai-economist package's own gather-trade-build env (the reference of ``gather_trade_build_v0``)."""

from __future__ import annotations

import contextlib
import io

import numpy as np

from benchmarks.skip import Skipped
from benchmarks.timing import time_steps

# The AI Economist's phase-2 configuration (its tutorials' rllib config), without tax annealing.
CONFIG = dict(
    scenario_name="layout_from_file/simple_wood_and_stone",
    components=[
        ("Build", dict(build_labor=10, payment=10, payment_max_skill_multiplier=3, skill_dist="pareto")),
        ("ContinuousDoubleAuction", dict(max_bid_ask=10, max_num_orders=5, order_duration=50, order_labor=0.25)),
        ("Gather", dict(collect_labor=1, move_labor=1, skill_dist="pareto")),
        ("PeriodicBracketTax", dict(bracket_spacing="us-federal", disable_taxes=False, period=100, rate_disc=0.05,
                                    tax_model="model_wrapper", usd_scaling=1000)),
    ],
    energy_cost=0.21, energy_warmup_constant=0, env_layout_file="quadrant_25x25_20each_30clump.txt",
    episode_length=1000, flatten_masks=True, flatten_observations=True, isoelastic_eta=0.23,
    multi_action_mode_agents=False, multi_action_mode_planner=True, n_agents=4, planner_gets_spatial_info=False,
    planner_reward_type="coin_eq_times_productivity", starting_agent_coin=0, world_size=[25, 25],
)


def make(seed: int = 1):
    """A fresh env of the package (it prints a GPU census on import: kept quiet)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            from ai_economist import foundation
    except ImportError as err:
        raise Skipped(f"ai-economist is not installed ({err}); pip install --no-deps ai-economist==1.7.1 "
                      "lz4 pycryptodome GPUtil") from err
    with contextlib.redirect_stdout(io.StringIO()):
        return foundation.make_env_instance(**CONFIG, seed=seed)


def measure_single(*, target_s: float, repeats: int) -> dict:
    """One env on one core, random feasible actions (drawn from its masks each step), reset at the end."""
    env = make()
    obs = [env.reset()]
    rng = np.random.default_rng(0)
    workers = [k for k in obs[0] if k != "p"]

    def step():
        o = obs[0]
        acts = {k: int(rng.choice(np.flatnonzero(o[k]["action_mask"]))) for k in workers}
        acts["p"] = [int(rng.choice(np.flatnonzero(r))) for r in o["p"]["action_mask"].reshape(7, 22)]
        o, _, done, _ = env.step(acts)
        obs[0] = env.reset() if done["__all__"] else o

    timing = time_steps(step, "cpu", target_s=target_s, repeats=repeats, warmup=5)
    rate = timing.summary(1)
    return {"env_steps_per_s": rate["median"], "spread": rate["spread"], "samples": rate["samples"],
            "agent_steps_per_s": rate["median"] * (len(workers) + 1), "agents": len(workers) + 1,
            "steps_per_repeat": timing.steps,
            "notes": "ai-economist 1.7.1, one process, one core; masked random actions sampled in the loop"}
