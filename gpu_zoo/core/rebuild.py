"""Rebuilding njit functions for another target: the CUDA simulator, CUDA device functions, inlined CPU code.

An env's phase functions are ``numba.njit`` functions that call other njit helpers. For the
CUDA target each one is rebuilt from its Python code as a force-inlined CUDA device function,
and every njit function it reaches is swapped for such a rebuilt copy: the kernel then becomes
one function, and the state namedtuple is never passed (or copied) between calls. For the
simulator, the copies stay plain Python, since it hands kernels fake device arrays that
compiled functions cannot take. Either way the kernel runs the very same env source.
"""

from __future__ import annotations

import types
from collections.abc import Callable

from numba.core.dispatcher import Dispatcher

CUDA_TWINS: dict = {}
"""njit function -> factory of the CUDA device function that replaces it on CUDA (`gpu_zoo.core.floats`)."""


def rebuild(fn, wrap: Callable, memo: dict):
    """``wrap`` applied to a twin of njit function ``fn`` whose njit globals are rebuilt likewise."""
    if not isinstance(fn, Dispatcher):
        return fn
    if fn in memo:
        return memo[fn]
    if wrap is cuda_device and fn in CUDA_TWINS:
        memo[fn] = twin = CUDA_TWINS[fn]()
        return twin
    py = fn.py_func
    namespace: dict = {}
    memo[fn] = wrapped = wrap(_twin(py, namespace))
    for k, v in py.__globals__.items():
        namespace[k] = rebuild(v, wrap, memo) if isinstance(v, Dispatcher) else v
    return wrapped


def _twin(py, namespace: dict):
    """Python function ``py`` with ``namespace`` for its globals."""
    twin = types.FunctionType(py.__code__, namespace, py.__name__, py.__defaults__, py.__closure__)
    twin.__module__ = py.__module__
    twin.__qualname__ = py.__qualname__
    return twin


def plain(fn):
    return fn


def cpu_inline(fn):
    """A CPU twin inlined into its callers at Numba's IR level (no call, no state tuple passed)."""
    from numba import njit

    return njit(inline="always", _nrt=False, error_model="numpy", no_cpython_wrapper=True,
                no_cfunc_wrapper=True)(fn)


def cpu_inline_only(fn, helpers: tuple[str, ...], memo: dict):
    """``cpu_inline`` twin of njit function ``fn`` inlining only its helpers named in ``helpers``.

    Those are inlined with everything they reach (`rebuild`); ``fn``'s other njit helpers stay
    calls, each compiled once, where inlining types and optimises a copy of each at every call site.
    """
    py = fn.py_func
    return cpu_inline(_twin(py, {k: rebuild(v, cpu_inline, memo) if k in helpers else v
                                 for k, v in py.__globals__.items()}))


def cuda_device(fn):
    from numba import cuda

    return cuda.jit(device=True, forceinline=True)(fn)
