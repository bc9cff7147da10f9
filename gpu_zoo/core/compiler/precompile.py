"""Filling the kernel cache before a run, so that the run's first step starts warm.

A container image built once, a cluster's shared cache folder, a job about to start many ranks
together: compiling there moves the cold start (seconds to tens of seconds per configuration) out
of every later process. What is compiled is exactly what a first step compiles, through the public
``make``, ``reset`` and ``step``: nothing can go stale between this and a real run. CUDA kernels are
compiled for a launch shape, which depends on the batch size (`gpu_zoo.core.compiler.launch_shape`): fill
the cache with the ``num_envs`` the run will use.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .kernel_cache import cache_dir


@dataclass(frozen=True)
class Precompiled:
    """One configuration's first step, and what it left in the cache."""

    env_id: str
    params: dict
    num_envs: int
    device: str
    seconds: float
    """From ``make`` to the end of the first step, the device synchronised."""
    written: tuple[str, ...] = field(default=())
    """Files the compile added to the cache folders (none: the configuration was cached already)."""


def cache_folders() -> list[Path]:
    """Where compiled kernels go: gpu_zoo's folder, and Numba's own when ``NUMBA_CACHE_DIR`` moves it."""
    folders = [cache_dir()]
    numba_dir = os.environ.get("NUMBA_CACHE_DIR")
    if numba_dir and Path(numba_dir) != folders[0]:
        folders.append(Path(numba_dir))
    return folders


def cache_files() -> set[str]:
    """Every file in the cache folders, lock files aside."""
    # lock files are left behind by a load as much as by a compile: they say nothing
    return {str(p) for folder in cache_folders() if folder.is_dir() for p in folder.rglob("*")
            if p.is_file() and p.suffix != ".lock"}


def precompile(env_id: str, num_envs: int, device=None, **params) -> Precompiled:
    """Compiles (or loads) ``env_id``'s kernels for ``num_envs`` copies on ``device`` by taking a first step."""
    import torch

    from gpu_zoo import make

    before = cache_files()
    start = time.perf_counter()
    env = make(env_id, num_envs=num_envs, device=device, **params)
    env.reset(seed=0)
    env.step(env.sample_actions(torch.Generator(device=env.device).manual_seed(0)))
    if env.device.type == "cuda":
        torch.cuda.synchronize(env.device)
    seconds = time.perf_counter() - start
    return Precompiled(env_id, dict(params), num_envs, str(env.device), seconds, tuple(sorted(cache_files() - before)))
