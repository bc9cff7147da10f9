"""``rps_v2``: PettingZoo's rock-paper-scissors, played in rounds; the rules are in `gpu_zoo.classic.rps`."""

from gpu_zoo.classic.rps import SPEC
from gpu_zoo.core.faces.aec import rounds_entry_points

env, parallel_env, raw_env, batched_env = rounds_entry_points(SPEC)
