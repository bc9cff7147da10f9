"""Version and platform fixes, applied once, before Numba compiles anything."""

from __future__ import annotations

import os

import numpy as np


def _numpy_shim():
    # NumPy 2.5 removed row_stack; numba-cuda 0.30 still refers to it while compiling any kernel.
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


def import_cuda():
    """``numba.cuda``, made usable on current NumPy. Raises ImportError with a hint if absent."""
    _numpy_shim()
    try:
        from numba import cuda
    except ImportError as err:  # pragma: no cover - depends on the install
        raise ImportError("the CUDA target needs numba-cuda: pip install 'gpu_zoo[cuda]'") from err
    return cuda


def configure_cpu_threading():
    """Picks a fork-safe Numba threading layer unless the user chose one.

    GNU OpenMP kills a process forked after a parallel region ran, which is exactly what
    SuperSuit's multi-process vector envs do; workqueue survives a fork.
    """
    import numba

    if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
        numba.config.THREADING_LAYER = "workqueue"

