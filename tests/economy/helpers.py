"""One small configuration for the economy tests (a kernel compile is costly: share it)."""

import torch

import gpu_zoo
from gpu_zoo.economy.params import EconomyParams

# The AI Economist's map and rules, with short episodes and tax periods.
ECON_SMALL = dict(max_cycles=60, tax_period=10)
P = EconomyParams(**ECON_SMALL)
NOOP, BUILD = 0, 1
BID_STONE, ASK_STONE, BID_WOOD, ASK_WOOD = 2, 2 + P.num_prices, 2 + 2 * P.num_prices, 2 + 3 * P.num_prices
LEFT, RIGHT, UP, DOWN = range(2 + 4 * P.num_prices, 6 + 4 * P.num_prices)
# Empty tiles of the quadrant map (row 7 and 8 hold no source and no water).
SPOTS = ((7, 2), (7, 6), (7, 10), (7, 14))


def econ_env(num_envs: int = 1, **kw):
    return gpu_zoo.make("gather_trade_build_v0", num_envs=num_envs, device="cpu", **{**ECON_SMALL, **kw})


def staged(num_envs: int = 1, seed: int = 0, **kw):
    """An env after reset with known positions on empty tiles, no skills and nothing regrowing."""
    env = econ_env(num_envs, **kw)
    env.reset(seed=seed)
    env.set_params(resource_regen_prob=0.0)
    s = env.state
    for a, (r, c) in enumerate(SPOTS):
        s.row[:, a], s.col[:, a] = r, c
    s.gather_bonus[:] = 0
    return env


def act(env, workers, planner=None):
    """Steps with the workers' actions (a list, or a tensor (num_envs, n)) and the planner's (7 ints)."""
    w = torch.as_tensor(workers, dtype=torch.int32).expand_as(env.actions["worker"]).clone()
    pl = torch.zeros_like(env.actions["planner"])
    if planner is not None:
        pl[:] = torch.as_tensor(planner, dtype=torch.int32)
    return env.step({"worker": w, "planner": pl})
