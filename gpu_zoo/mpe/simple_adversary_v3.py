"""``simple_adversary_v3``: MPE's simple_adversary, matching MPE2's; the rules are in `gpu_zoo.mpe.simple_adversary`."""

from gpu_zoo.core.faces.pettingzoo import entry_points
from gpu_zoo.mpe.simple_adversary import SPEC

env, parallel_env, raw_env, batched_env = entry_points(SPEC)
