"""Tag environments: taggers chase runners."""

from gpu_zoo.tag import tag_continuous_v0, tag_gridworld_v0

__all__ = ["tag_continuous_v0", "tag_gridworld_v0"]
