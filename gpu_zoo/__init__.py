"""gpu_zoo: multi-agent RL environments stepped as Numba kernels, thousands at once, on GPU or CPU.

Three faces of every environment:
  - ``gpu_zoo.make(env_id, num_envs, device)``: the batched tensor API (`BatchedEnv`);
  - ``gpu_zoo.tag.tag_continuous_v0.parallel_env()``: a PettingZoo ``ParallelEnv``;
  - ``gpu-zoo train ENV_ID``: the bundled PPO trainer, end to end on the device (``trainers/``).
"""

from __future__ import annotations

from .registry import get_spec, register, registered_envs

__version__ = "0.1.0"


def make(env_id: str, num_envs: int = 1, device=None, **kwargs):
    """The batched env for ``env_id``: ``num_envs`` copies on ``device`` (default: CUDA if usable)."""
    from .core.batched import BatchedEnv

    return BatchedEnv(get_spec(env_id), num_envs=num_envs, device=device, **kwargs)


def parallel_env(env_id: str, **kwargs):
    """The PettingZoo ``ParallelEnv`` for ``env_id``."""
    from .core.pettingzoo import GpuZooParallelEnv

    return GpuZooParallelEnv(get_spec(env_id), **kwargs)


__all__ = ["__version__", "get_spec", "make", "parallel_env", "register", "registered_envs"]
