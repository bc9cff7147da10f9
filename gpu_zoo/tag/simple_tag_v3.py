"""``simple_tag_v3`` among the Tag envs: the MPE scenario itself, `gpu_zoo.mpe.simple_tag_v3`."""

from gpu_zoo.mpe.simple_tag_v3 import batched_env, env, parallel_env, raw_env

__all__ = ["batched_env", "env", "parallel_env", "raw_env"]
