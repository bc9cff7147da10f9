"""``tag_gridworld_v0``: Tag on a grid; the rules are in `gpu_zoo.tag.gridworld`."""

from gpu_zoo.core.faces.pettingzoo import entry_points
from gpu_zoo.tag.gridworld import SPEC

env, parallel_env, raw_env, batched_env = entry_points(SPEC)
