"""MPE, the multi-particle environments, as MPE2 ships them: one particle world, each scenario its own module."""

from gpu_zoo.mpe import (
    collect_treasure_v1,
    simple_adversary_v3,
    simple_crypto_v3,
    simple_formation_v1,
    simple_line_v1,
    simple_push_v3,
    simple_reference_v3,
    simple_speaker_listener_v4,
    simple_spread_v3,
    simple_tag_v3,
    simple_v3,
    simple_world_comm_v3,
)

__all__ = ["collect_treasure_v1", "simple_adversary_v3", "simple_crypto_v3", "simple_formation_v1", "simple_line_v1",
           "simple_push_v3", "simple_reference_v3", "simple_speaker_listener_v4", "simple_spread_v3", "simple_tag_v3",
           "simple_v3", "simple_world_comm_v3"]
