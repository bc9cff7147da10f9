"""PettingZoo's SISL environments, under PettingZoo's module names."""

from gpu_zoo.sisl import pursuit_v5

__all__ = ["pursuit_v5"]
