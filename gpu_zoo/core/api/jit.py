"""The decorator for functions that run inside the kernels: env phases, their helpers, the core's own."""

from numba import njit

kernel_fn = njit(_nrt=False, error_model="numpy", no_cpython_wrapper=True, no_cfunc_wrapper=True)
"""Decorator for an environment's phase functions and their helpers (both targets compile them).

No ``cache=True`` here: their signatures name the state type of a generated kernel module,
which another process cannot unpickle. The generated kernels are cached with their callees inlined.
``error_model="numpy"`` makes a division by zero give inf/nan as on CUDA, instead of raising.
No Python or C-callable wrappers: these functions are only called from kernels, and a wrapper
that unpacks the whole state tuple costs more compile time than the function itself.
"""

CUDA_TWINS: dict = {}
"""Kernel function -> factory of the CUDA device function that replaces it on CUDA (`gpu_zoo.core.api.floats`).

Declared beside the function it replaces; the compiler swaps it in when it builds a CUDA kernel.
"""
