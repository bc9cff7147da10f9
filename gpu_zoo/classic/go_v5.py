"""``go_v5``: PettingZoo's go, turn-based; the rules are in `gpu_zoo.classic.go`."""

from gpu_zoo.classic.boards import ILLEGAL_REWARD
from gpu_zoo.classic.go import SPEC
from gpu_zoo.core.faces.aec import turn_based_entry_points

env, raw_env, batched_env = turn_based_entry_points(SPEC, illegal_reward=ILLEGAL_REWARD)
