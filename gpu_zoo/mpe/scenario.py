"""What every MPE scenario's params and spaces share: MPE2's common arguments and its movement action."""

from __future__ import annotations

import gymnasium
import numpy as np


def check_common(p) -> None:
    """Checks the values of MPE2's arguments every scenario takes (their types are checked by annotation)."""
    if isinstance(p.max_cycles, bool) or not isinstance(p.max_cycles, int) or p.max_cycles < 1:
        raise ValueError(f"max_cycles must be an int >= 1, got {p.max_cycles!r}")
    if p.benchmark_data:
        raise NotImplementedError(f"{type(p).__name__}: benchmark_data=True (MPE2's per-agent benchmark infos) is "
                                  "not supported; pass benchmark_data=False")


def check_neighbors(p) -> None:
    """MPE2's partial observability arguments: a positive count, or None for every entity."""
    for name in ("num_agent_neighbors", "num_landmark_neighbors"):
        v = getattr(p, name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ValueError(f"{name} must be a positive int or None, got {v!r}")


def move_space(continuous: bool) -> gymnasium.spaces.Space:
    """A moving, silent agent's action space in MPE2: Discrete(5), or Box(0, 1, (5,)) with continuous actions."""
    return gymnasium.spaces.Box(0.0, 1.0, (5,), np.float32) if continuous else gymnasium.spaces.Discrete(5)
