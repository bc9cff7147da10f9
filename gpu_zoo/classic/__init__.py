"""PettingZoo's classic board games, turn-based, under PettingZoo's module names."""

from gpu_zoo.classic import connect_four_v3, go_v5, rps_v2, tictactoe_v3

__all__ = ["connect_four_v3", "go_v5", "rps_v2", "tictactoe_v3"]
