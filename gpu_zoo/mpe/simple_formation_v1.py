"""``simple_formation_v1``: MPE's simple formation, as MPE2's (`gpu_zoo.mpe.simple_formation`)."""

from gpu_zoo.core.faces.pettingzoo import entry_points
from gpu_zoo.mpe.simple_formation import SPEC

env, parallel_env, raw_env, batched_env = entry_points(SPEC)
