"""The counter-based RNG: pure, well spread, and identical compiled and uncompiled."""

import numpy as np
from numba import njit

from gpu_zoo.core.api import rng
from gpu_zoo.core.compiler.speed.rebuild import plain, rebuild


@njit
def _draws(n, seed):
    out = np.empty(n, np.float32)
    for i in range(n):
        out[i] = rng.bits_to_unit(rng.hash_u64(seed, 0, i % 97, i // 97, 3, 5, i % 7))
    return out


def test_uniform_draws_are_pure_and_spread():
    a, b = _draws(20000, 1), _draws(20000, 1)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, _draws(20000, 2))
    assert a.min() >= 0.0 and a.max() < 1.0
    assert abs(a.mean() - 0.5) < 0.01
    hist, _ = np.histogram(a, bins=10, range=(0, 1))
    assert hist.min() > 1800


def test_compiled_and_python_bits_agree():
    py_hash = rebuild(rng.hash_u64, plain, {})
    with np.errstate(over="ignore"):
        for args in [(0, 0, 0, 0, 0, 0, 0), (123, 7, 65535, 999, 12, 100, 3), (2**31 - 1, 2**31 - 1, 1, 2, 3, 4, 5)]:
            assert int(rng.hash_u64(*args)) == int(py_hash(*[np.int32(x) for x in args]))
