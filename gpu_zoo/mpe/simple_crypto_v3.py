"""``simple_crypto_v3``: MPE's simple crypto, as MPE2's (`gpu_zoo.mpe.simple_crypto`)."""

from gpu_zoo.core.faces.pettingzoo import entry_points
from gpu_zoo.mpe.simple_crypto import SPEC

env, parallel_env, raw_env, batched_env = entry_points(SPEC)
