"""``connect_four_v3``: PettingZoo's connect four, turn-based; the rules are in `gpu_zoo.classic.connect_four`."""

from gpu_zoo.classic.boards import ILLEGAL_REWARD
from gpu_zoo.classic.connect_four import SPEC
from gpu_zoo.core.faces.aec import turn_based_entry_points

env, raw_env, batched_env = turn_based_entry_points(SPEC, illegal_reward=ILLEGAL_REWARD)
