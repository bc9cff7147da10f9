"""A kernel's PTX assembled as a whole program by ptxas, the assembler released beside NVVM.

numba-cuda turns PTX into a cubin through a linker (nvJitLink, or the driver's), which assembles
each PTX module as relocatable device code: ptxas must then keep every function callable from
another module, so the routines it adds for IEEE division and reciprocals are called through the
full ABI (registers saved and restored around each call; simple_tag's step kernel takes 63
registers where 58 do). A kernel of this package is one self-contained module, so it is assembled
whole instead: the code nvJitLink makes with link-time optimisation, without NVVM's second pass
over the LTO-IR and nvJitLink's optimisation of the whole module again (the economy's link takes
1.4 s this way, 3.9 s with LTO, on 2 CPU cores).

The ptxas used is the one released with the NVVM that wrote the PTX (the nvidia-cuda-nvcc wheel's,
or the CUDA toolkit's), so it accepts that PTX's ISA version; `find` returns None where there is
none and the kernel is then linked by numba-cuda as before.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import subprocess
import tempfile
import threading
import warnings
from pathlib import Path

_TARGET = re.compile(r"^\s*\.target\s+(sm_\w+)", re.M)


@functools.cache
def find() -> str | None:
    """The ptxas released with the NVVM numba-cuda loads; None where there is none.

    That is NVIDIA's wheel's where one is installed (numba-cuda takes NVVM from it first), else
    the one beside the NVVM numba-cuda finds (a CUDA toolkit's), else ``CUDA_HOME``'s.
    """
    exe_name = "ptxas.exe" if os.name == "nt" else "ptxas"
    for folder in _wheel_folders():
        if (folder / exe_name).is_file():
            return _runnable(folder / exe_name)
    candidates = []
    try:  # numba-cuda's own search (a tenth of a second): only where no wheel has one
        from numba.cuda.cuda_paths import get_cuda_paths

        nvvm = get_cuda_paths()["nvvm"].info  # <root>/nvvm/lib64/libnvvm.so
        if nvvm:
            candidates.append(Path(nvvm).resolve().parents[2] / "bin")
    except Exception:  # noqa: BLE001 - numba-cuda's path lookup is internal: any failure means "not found"
        pass
    candidates += [Path(os.environ[v]) / "bin" for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    for folder in candidates:
        if (folder / exe_name).is_file():
            return _runnable(folder / exe_name)
    return None


def _wheel_folders() -> list[Path]:
    """Where NVIDIA's wheels put ptxas beside NVVM: nvidia-cuda-nvcc-cu12, and CUDA 13's nvidia/cu13."""
    import importlib.util

    folders = []
    for package, sub in (("nvidia.cuda_nvcc", "bin"), ("nvidia.cu13", "bin")):
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            continue
        for root in (spec.submodule_search_locations or []) if spec else []:
            folders.append(Path(root) / sub)
    return folders


def _runnable(exe: Path) -> str | None:
    return str(exe) if os.access(exe, os.X_OK) else None


def assemble(ptx: str, max_registers: int | None = None, exe: str | None = None) -> bytes:
    """The cubin of a one-module kernel's ``ptx`` (for the GPU its ``.target`` names), assembled whole.

    ``max_registers`` caps the registers per thread as numba-cuda's ``max_registers`` does.
    Raises RuntimeError with ptxas's message where it refuses the PTX.
    """
    exe = exe or find()
    if exe is None:
        raise RuntimeError("ptxas was not found beside NVVM nor under CUDA_HOME: pip install nvidia-cuda-nvcc-cu12")
    target = _TARGET.search(ptx)
    if target is None:
        raise ValueError("the PTX names no .target architecture")
    with tempfile.TemporaryDirectory(prefix="gpu_zoo_ptxas_") as tmp:
        src, out = Path(tmp, "kernel.ptx"), Path(tmp, "kernel.cubin")
        src.write_text(ptx)
        cmd = [exe, f"-arch={target.group(1)}", "-O3", "-o", str(out), str(src)]
        if max_registers:
            cmd[1:1] = [f"--maxrregcount={max_registers}"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"ptxas ({exe}) refused the kernel's PTX:\n{done.stderr.strip()[-2000:]}")
        return out.read_bytes()


_patch = {"depth": 0, "original": None}
_patch_lock = threading.Lock()


@contextlib.contextmanager
def whole_programs():
    """While open, numba-cuda makes each kernel's cubin with `assemble` instead of its linker.

    numba-cuda links a kernel while compiling it (to load it), so its library's ``get_cubin`` is
    what changes (once, however many threads or nested blocks have it open). Only a kernel made
    of its own PTX alone is assembled whole: one with files to link (``link=``), the device
    runtime, or LTO goes through the linker as before, as does every kernel where no ptxas is
    found or ptxas refuses the PTX (with a warning saying so).
    """
    exe = find()
    if exe is None:
        yield
        return
    from numba.cuda import codegen

    with _patch_lock:
        if not _patch["depth"]:
            _patch["original"] = codegen.CUDACodeLibrary.get_cubin
            codegen.CUDACodeLibrary.get_cubin = _whole_program_get_cubin(_patch["original"], exe)
        _patch["depth"] += 1
    try:
        yield
    finally:
        with _patch_lock:
            _patch["depth"] -= 1
            if not _patch["depth"]:
                codegen.CUDACodeLibrary.get_cubin = _patch["original"]


def _whole_program_get_cubin(original, exe: str):
    def get_cubin(self, cc=None):
        alone = not (getattr(self, "_lto", False) or getattr(self, "_linking_files", None)
                     or getattr(self, "needs_cudadevrt", False))
        cache = getattr(self, "_cubin_cache", None)
        if alone and getattr(self, "_entry_name", None) and isinstance(cache, dict):
            cc = self._ensure_cc(cc)
            if cc not in cache:
                try:
                    cubin = assemble(self.get_asm_str(cc=cc), getattr(self, "_max_registers", None), exe)
                    cache[cc] = _as_linked(cubin)
                except RuntimeError as err:  # a ptxas older than the PTX, say: the linker still makes a cubin
                    warnings.warn(f"{err}\nLinking the kernel as relocatable code instead (slower code).",
                                  RuntimeWarning, stacklevel=2)
        return original(self, cc=cc)

    return get_cubin


def _as_linked(cubin: bytes):
    """``cubin`` as numba-cuda's linker hands a cubin over, which is what its module loader takes.

    That is cuda.core's ``ObjectCode`` where numba-cuda's driver uses one (the loader reads its
    ``handle``), plain bytes in releases from before it.
    """
    from numba.cuda.cudadrv import driver

    object_code = getattr(driver, "ObjectCode", None)
    return object_code.from_cubin(cubin) if object_code is not None else cubin
