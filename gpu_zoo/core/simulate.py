"""Running njit phase functions as plain Python, for Numba's CUDA simulator.

The simulator executes a kernel as Python threads and hands it fake device arrays, which a
compiled ``njit`` function cannot take. `as_python` rebuilds a function from its Python source
with every njit function it reaches swapped for such a rebuilt copy, so the simulated kernel runs
the very same env code, uncompiled.
"""

from __future__ import annotations

import types

from numba.core.dispatcher import Dispatcher


def as_python(fn, _memo: dict | None = None):
    """A plain-Python twin of an njit function (and of the njit functions it calls)."""
    memo = {} if _memo is None else _memo
    if not isinstance(fn, Dispatcher):
        return fn
    if fn in memo:
        return memo[fn]
    py = fn.py_func
    namespace: dict = {}
    twin = types.FunctionType(py.__code__, namespace, py.__name__, py.__defaults__, py.__closure__)
    memo[fn] = twin
    for k, v in py.__globals__.items():
        namespace[k] = as_python(v, memo) if isinstance(v, Dispatcher) else v
    return twin
