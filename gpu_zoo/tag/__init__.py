"""Tag environments: taggers chase runners."""

from gpu_zoo.tag import simple_tag_v3, tag_continuous_v0, tag_gridworld_v0

__all__ = ["simple_tag_v3", "tag_continuous_v0", "tag_gridworld_v0"]
