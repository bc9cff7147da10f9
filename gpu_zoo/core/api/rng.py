"""Counter-based random numbers that the CPU and CUDA targets compute bit for bit alike.

A draw is a pure function of (seed, env, agent, counter, draw index): a splitmix64 finaliser
chained over the inputs. There is no generator state to carry, so any environment can draw
its numbers in any order on any target and a seed replays exactly.

Numba typing traps avoided here: every constant and shift count is a ``np.uint64`` and inputs
are masked to non-negative 31-bit values before widening, so no operand mixes signedness.
"""

import numpy as np
from numba import njit

from .jit import kernel_fn

_C1 = np.uint64(0xBF58476D1CE4E5B9)
_C2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S40 = np.uint64(40)
_MASK31 = 0x7FFFFFFF
_INV24 = np.float32(1.0 / (1 << 24))


@njit(_nrt=False)
def _mix(z):
    z = (z ^ (z >> _S30)) * _C1
    z = (z ^ (z >> _S27)) * _C2
    return z ^ (z >> _S31)


# Inputs are widened where they enter: Numba compiles a helper once per argument types, and an
# int32, an int64 and each literal draw index were a compile of `_absorb` (and `hash_u64`) apiece.
@njit(_nrt=False)
def _absorb(z, x):
    """``z`` with ``x`` (a uint64 below 2**31) mixed in."""
    return _mix(z ^ (x + _GOLDEN))


@njit(_nrt=False)
def hash_u64(seed_lo, seed_hi, env, agent, episode, step, draw):
    """64 random bits from seven int inputs (each taken mod 2**31)."""
    z = _mix(np.uint64(seed_lo & _MASK31) + _GOLDEN)
    z = _absorb(z, np.uint64(seed_hi & _MASK31))
    z = _absorb(z, np.uint64(env & _MASK31))
    z = _absorb(z, np.uint64(agent & _MASK31))
    z = _absorb(z, np.uint64(episode & _MASK31))
    z = _absorb(z, np.uint64(step & _MASK31))
    return _absorb(z, np.uint64(draw & _MASK31))


@njit(_nrt=False)
def bits_to_unit(z):
    """The top 24 bits of ``z`` as a float32 in [0, 1), exactly representable."""
    return np.float32(z >> _S40) * _INV24


@kernel_fn
def uniform(s, e, a, k):
    """A float32 in [0, 1) for draw ``k`` of agent ``a`` in env ``e`` at the env's current step.

    Distinct (episode, step, agent, k) give independent draws; the same ones replay exactly.
    """
    return bits_to_unit(hash_u64(s.seed[e, 0], s.seed[e, 1], np.int64(e), np.int64(a), s.episode[e], s.t[e],
                                 np.int64(k)))


@kernel_fn
def randint(s, e, a, k, n):
    """An int in [0, n) (n <= 2**24), drawn like `uniform`."""
    r = np.int32(uniform(s, e, a, k) * np.float32(n))
    return min(r, n - 1)
