"""``tag_continuous_v0``: Tag in a continuous arena; the rules are in `gpu_zoo.tag.continuous`."""

from gpu_zoo.core.faces.pettingzoo import entry_points
from gpu_zoo.tag.continuous import SPEC

env, parallel_env, raw_env, batched_env = entry_points(SPEC)
