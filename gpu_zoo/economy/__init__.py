"""Economic simulations: workers gather, trade and build while a planner sets taxes."""

from gpu_zoo.economy import gather_trade_build_v0

__all__ = ["gather_trade_build_v0"]
