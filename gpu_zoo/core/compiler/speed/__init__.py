"""Compile-time accelerations the compiler calls: rebuilt and narrowed twins of kernel functions, Numba patches.

``GPU_ZOO_COMPILE_ACCELERATIONS=0`` turns them off (`ENABLED`): the compiler then takes its plain
path, and every env steps through the same states, only its kernels taking longer to compile.
The variable is read once, when this package is first imported (with the compiler, before
numba-cuda is imported or patched): a patch applied in a process cannot be taken back, so the
choice holds for the whole process; set it before importing gpu_zoo. Off:

- each call of a kernel function passes the state (and params) whole, read off the state tuple
  (``s.pos_x``), where it was given a tuple of only the fields its callee uses and the kernel read
  each field off its own argument (`state_fields`, `gpu_zoo.core.compiler.plan.fields_direct`);
- a call of more than 30 arguments (the state tuple's) is one plain call, which Numba compiles
  too, only into larger IR (`gpu_zoo.core.compiler.plan.wide_call`);
- no rebuilt function is narrowed so (`rebuild`), and a CUDA device function is compiled once per
  argument types, literal ones included (numba-cuda's own typing of calls);
- numba-cuda's compile flags are hashed and compared by its own code (`compat`).

Kept either way, as the kernels need them to compile or to run the same code: each env function
rebuilt for the CUDA target (a device function, or plain Python under the simulator) with its
CUDA-only replacements; the CPU's inlined observation functions (the kernel's shape, an env's
`Tuning`); NumPy's ``row_stack`` for numba-cuda and the simulator's yielding of the GIL to its
threads (a run-time matter of the simulator, no compile). The generated module's text names the
setting, so the two never share a cached kernel.
"""

from __future__ import annotations

import os

SWITCH = "GPU_ZOO_COMPILE_ACCELERATIONS"
ENABLED: bool = os.environ.get(SWITCH, "1").strip().lower() not in ("0", "false", "off", "no")
"""Whether the compile-time accelerations are on: ``GPU_ZOO_COMPILE_ACCELERATIONS``, read at import (default on)."""
