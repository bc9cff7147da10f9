"""``simple_world_comm_v3``: MPE's world comm, as MPE2's (`gpu_zoo.mpe.simple_world_comm`)."""

from gpu_zoo.core.faces.pettingzoo import entry_points
from gpu_zoo.mpe.simple_world_comm import SPEC

env, parallel_env, raw_env, batched_env = entry_points(SPEC)
