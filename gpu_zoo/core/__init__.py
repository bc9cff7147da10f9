"""The batched backend: env specs, one-source kernels for CUDA and CPU, and the three faces."""

from numba import njit

from .spec import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerItem, PerObs

kernel_fn = njit(_nrt=False, error_model="numpy")
"""Decorator for an environment's phase functions and their helpers (both targets compile them).

No ``cache=True`` here: their signatures name the state type of a generated kernel module,
which another process cannot unpickle. The generated kernels are cached with their callees inlined.
``error_model="numpy"`` makes a division by zero give inf/nan as on CUDA, instead of raising.
"""

__all__ = ["EnvSpec", "Field", "Group", "ObsBlock", "PerAgent", "PerEnv", "PerItem", "PerObs", "kernel_fn"]
