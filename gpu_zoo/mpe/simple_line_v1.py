"""``simple_line_v1``: MPE's simple line, as MPE2's (`gpu_zoo.mpe.simple_line`)."""

from gpu_zoo.core.faces.pettingzoo import entry_points
from gpu_zoo.mpe.simple_line import SPEC

env, parallel_env, raw_env, batched_env = entry_points(SPEC)
