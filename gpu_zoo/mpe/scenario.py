"""What every MPE scenario's params and spaces share: MPE2's common arguments and its movement action."""

from __future__ import annotations

import gymnasium
import numpy as np

from gpu_zoo.core.api.params import check_count


def check_common(p) -> None:
    """Checks the values of MPE2's arguments every scenario takes (their types are checked by annotation)."""
    check_count("max_cycles", p.max_cycles)
    if p.benchmark_data:
        raise NotImplementedError(f"{type(p).__name__}: benchmark_data=True (MPE2's per-agent benchmark infos) is "
                                  "not supported; pass benchmark_data=False")


def check_neighbors(p) -> None:
    """MPE2's partial observability arguments: a positive count, or None for every entity."""
    for name in ("num_agent_neighbors", "num_landmark_neighbors"):
        check_count(name, getattr(p, name), none_ok=True)


def move_space(continuous: bool) -> gymnasium.spaces.Space:
    """A moving, silent agent's action space in MPE2: Discrete(5), or Box(0, 1, (5,)) with continuous actions."""
    return gymnasium.spaces.Box(0.0, 1.0, (5,), np.float32) if continuous else gymnasium.spaces.Discrete(5)
