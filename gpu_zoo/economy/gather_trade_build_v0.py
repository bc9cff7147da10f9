"""``gather_trade_build_v0``: the AI Economist's world; the rules are in `gpu_zoo.economy.gather_trade_build`."""

from gpu_zoo.core.faces.pettingzoo import entry_points
from gpu_zoo.economy.gather_trade_build import SPEC

env, parallel_env, raw_env, batched_env = entry_points(SPEC)
