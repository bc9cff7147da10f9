"""The kernel cache: the one folder where gpu_zoo keeps what it compiles, shared by every process.

It holds the generated kernel modules and Numba's cache of them (`gpu_zoo.core.compiler.compile`), CUDA
cubins (`gpu_zoo.core.compiler.cubin`) and the state fields each kernel function uses
(`gpu_zoo.core.compiler.speed.state_fields`). ``GPU_ZOO_CACHE_DIR`` names it; by default it lies in the user's
cache directory (``$XDG_CACHE_HOME``, else ``~/.cache``), never inside the installed package.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The kernel cache's folder, read from the environment at each call (it may not exist yet)."""
    root = os.environ.get("GPU_ZOO_CACHE_DIR")
    if root:
        return Path(root)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpu_zoo" / "kernels"
