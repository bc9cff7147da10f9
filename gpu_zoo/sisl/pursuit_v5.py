"""``pursuit_v5``: PettingZoo's SISL pursuit, played in sequence; the rules are in `gpu_zoo.sisl.pursuit`."""

from gpu_zoo.core.faces.aec import rounds_entry_points
from gpu_zoo.sisl.pursuit import SPEC

env, parallel_env, raw_env, batched_env = rounds_entry_points(SPEC)
