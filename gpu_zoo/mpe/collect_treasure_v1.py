"""``collect_treasure_v1``: MPE2's collect treasure (`gpu_zoo.mpe.collect_treasure`)."""

from gpu_zoo.core.faces.pettingzoo import entry_points
from gpu_zoo.mpe.collect_treasure import SPEC

env, parallel_env, raw_env, batched_env = entry_points(SPEC)
