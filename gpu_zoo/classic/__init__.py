"""PettingZoo's classic board games, turn-based, under PettingZoo's module names."""

from gpu_zoo.classic import chess_v6, connect_four_v3, go_v5, rps_v2, tictactoe_v3

__all__ = ["chess_v6", "connect_four_v3", "go_v5", "rps_v2", "tictactoe_v3"]
