"""Version and platform fixes, applied once, before Numba compiles anything."""

from __future__ import annotations

import os
import threading
import time

import numpy as np

from . import ENABLED


def _numpy_shim():
    # NumPy 2.5 removed row_stack; numba-cuda 0.30 still refers to it while compiling any kernel.
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


def simulator_enabled() -> bool:
    """True when ``numba.cuda`` is Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"


def numba_cuda_installed() -> bool:
    """Whether numba-cuda is installed, found without importing it (which takes about half a second)."""
    import importlib.util

    return importlib.util.find_spec("numba_cuda") is not None


def import_cuda():
    """``numba.cuda``, made usable on current NumPy. Raises ImportError with a hint if absent."""
    _numpy_shim()
    try:
        from numba import cuda
    except ImportError as err:  # pragma: no cover - depends on the install
        raise ImportError("the CUDA target needs numba-cuda: pip install 'gpu_zoo[cuda]'") from err
    if simulator_enabled():
        _simulator_yields()  # a run-time matter of the simulator: kept with the accelerations off
    elif ENABLED:
        _quick_compile_flags()
    return cuda


_option_defaults: dict[type, dict] = {}


def _flag_values(self) -> dict:
    """``TargetConfig.values``: each option's value, its default where it is not set."""
    defaults = _option_defaults.get(type(self))
    if defaults is None:
        defaults = _option_defaults[type(self)] = {k: o.default for k, o in type(self).options.items()}
    got = self._values
    if not got.keys() <= defaults.keys():  # copied from a config of other options: only its own count
        return {k: got.get(k, d) for k, d in defaults.items()}
    return {**defaults, **got}


def _flag_hash(self) -> int:
    # what the original hashes, ``tuple(sorted(self.values()))``, is the sorted option names: the dict's keys
    return hash(tuple(sorted(type(self).options)))


def _quick_compile_flags():
    """numba-cuda's compile flags, hashed and compared as before without reading each option through a property.

    Typing a call looks its overload up in a cache keyed by the flags in force (a ``TargetConfig``
    of about 30 options), hashing and comparing them by building a dict of every option's value
    through its property: 12,666 times for tag_continuous's kernel, a tenth of its front end. The
    values, the hash and the equality are the same; where the class is not there (another
    numba-cuda), nothing is done.
    """
    try:
        from numba.cuda.core.targetconfig import TargetConfig
    except ImportError:  # pragma: no cover - depends on the numba-cuda release
        return
    if not hasattr(TargetConfig, "options") or "_values" not in getattr(TargetConfig, "__slots__", ()):
        return  # pragma: no cover - another layout: left as it is
    TargetConfig.values = _flag_values
    TargetConfig.__hash__ = _flag_hash


def _yielding_is_alive(thread) -> bool:
    time.sleep(0)  # releases the GIL for a moment
    return threading.Thread.is_alive(thread)


def _simulator_yields():
    """Makes Numba's CUDA simulator give the GIL to its kernel threads while it waits on them.

    The simulator runs each thread of a block as a Python thread, and its block manager polls
    them (``is_alive``, barrier flags) in a loop that never blocks, so it holds the GIL for most
    of every switch interval: a kernel ran at a third of its speed (one 60-step episode of
    simple_tag_v3, 8.1 s -> 3.7 s with this; gather_trade_build_v0 20.6 -> 7.5 s). Yielding in
    that poll changes only the interleaving; without the class (another numba-cuda), nothing is done.
    """
    try:
        from numba.cuda.simulator.kernel import BlockThread
    except ImportError:  # pragma: no cover - depends on the numba-cuda release
        return
    if BlockThread.is_alive is not _yielding_is_alive:
        BlockThread.is_alive = _yielding_is_alive


def configure_cpu_threading():
    """Picks a fork-safe Numba threading layer unless the user chose one.

    GNU OpenMP kills a process forked after a parallel region ran, which is exactly what
    SuperSuit's multi-process vector envs do; workqueue survives a fork.
    """
    import numba

    if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
        numba.config.THREADING_LAYER = "workqueue"

