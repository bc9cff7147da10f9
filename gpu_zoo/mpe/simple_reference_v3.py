"""``simple_reference_v3``: MPE's simple reference, as MPE2's (`gpu_zoo.mpe.simple_reference`)."""

from gpu_zoo.core.faces.pettingzoo import entry_points
from gpu_zoo.mpe.simple_reference import SPEC

env, parallel_env, raw_env, batched_env = entry_points(SPEC)
