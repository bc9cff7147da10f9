"""``simple_v3``: MPE's simple, matching MPE2's; the rules are in `gpu_zoo.mpe.simple`."""

from gpu_zoo.core.faces.pettingzoo import entry_points
from gpu_zoo.mpe.simple import SPEC

env, parallel_env, raw_env, batched_env = entry_points(SPEC)
