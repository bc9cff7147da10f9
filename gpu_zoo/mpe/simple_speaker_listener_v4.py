"""``simple_speaker_listener_v4``: MPE's speaker and listener, as MPE2's (`gpu_zoo.mpe.simple_speaker_listener`)."""

from gpu_zoo.core.faces.pettingzoo import entry_points
from gpu_zoo.mpe.simple_speaker_listener import SPEC

env, parallel_env, raw_env, batched_env = entry_points(SPEC)
