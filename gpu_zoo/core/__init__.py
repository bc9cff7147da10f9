"""The batched backend: env specs, one-source kernels for CUDA and CPU, and the three faces."""

from .api.jit import kernel_fn
from .api.spec import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerItem, PerObs
from .api.tuning import Tuning

__all__ = ["EnvSpec", "Field", "Group", "ObsBlock", "PerAgent", "PerEnv", "PerItem", "PerObs", "Tuning", "kernel_fn"]
