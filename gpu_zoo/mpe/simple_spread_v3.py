"""``simple_spread_v3``: MPE's simple_spread, matching MPE2's; the rules are in `gpu_zoo.mpe.simple_spread`."""

from gpu_zoo.core.faces.pettingzoo import entry_points
from gpu_zoo.mpe.simple_spread import SPEC

env, parallel_env, raw_env, batched_env = entry_points(SPEC)
