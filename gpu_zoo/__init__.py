"""gpu_zoo: multi-agent RL environments stepped as Numba kernels, thousands at once, on GPU or CPU.

Environments (``registered_envs()`` lists their ids): ``gpu_zoo.tag`` (Tag continuous and gridworld,
after WarpDrive; MPE's simple_tag), ``gpu_zoo.mpe`` (every MPE2 scenario), ``gpu_zoo.economy`` (the
AI Economist's gather-trade-build).

Faces of every environment:
  - ``gpu_zoo.make(env_id, num_envs, device)``: the batched tensor API (`BatchedEnv`);
  - ``gpu_zoo.mpe.simple_spread_v3.parallel_env()`` and the like: a PettingZoo ``ParallelEnv`` (``.env()``: AEC);
  - ``gpu_zoo.core.faces.sb3.SB3VecEnv``: one agent group as a stable-baselines3 VecEnv;
  - ``gpu_zoo.torchrl.GpuZooEnv`` and ``gpu_zoo.benchmarl``: TorchRL's EnvBase and BenchMARL's tasks;
  - ``gpu-zoo train ENV_ID``: the bundled PPO trainer, end to end on the device (``trainers/``).

Writing one: ``gpu_zoo.core`` (`EnvSpec` and its parts; docs/guides/new_env.md), ``register`` to add
it to the registry, ``gpu_zoo.testing.check_env`` to check it.
"""

from __future__ import annotations

import os

# Where colorama is installed, Numba colours each error message it formats by wrapping stdout and
# stderr anew, and typing a kernel formats thousands (every overload tried and refused): 0.15-0.27 s
# of a cold CUDA compile on 2 cores. Numba and numba-cuda read this once, at their import.
os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")

from .registry import get_spec, register, registered_envs

__version__ = "0.1.0"


def make(env_id: str, num_envs: int = 1, device=None, **kwargs):
    """The batched env for ``env_id``: ``num_envs`` copies on ``device`` (default: CUDA if usable)."""
    from .core.runtime.batched import BatchedEnv

    return BatchedEnv(get_spec(env_id), num_envs=num_envs, device=device, **kwargs)


def parallel_env(env_id: str, **kwargs):
    """The PettingZoo ``ParallelEnv`` for ``env_id``."""
    from .core.faces.pettingzoo import GpuZooParallelEnv

    return GpuZooParallelEnv(get_spec(env_id), **kwargs)


__all__ = ["__version__", "get_spec", "make", "parallel_env", "register", "registered_envs"]
