"""An env's CUDA kernels compiled for real, to PTX, on a machine without a GPU or driver.

    python -m gpu_zoo.testing.cuda_compile tag_continuous_v0 --params '{"num_runners": 100}'

Under Numba's CUDA simulator the kernels run as plain Python: numba-cuda's typing, the generated
CUDA code and its libdevice calls go untested there. NVVM (the ``nvidia-cuda-nvcc-cu12`` and
``nvidia-cuda-nvrtc-cu12`` wheels, or a CUDA toolkit) compiles them as a GPU run does, without
launching anything. A process with the simulator on compiles in a fresh process without it.
A kernel that compiled is remembered in the kernel cache by its source's digest, so an unchanged
env is not compiled again.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import types

CC = (9, 0)  # Hopper: the GPUs the benchmarks run on


class CudaCompileError(RuntimeError):
    """A kernel of an env that numba-cuda's real compiler refuses."""


def nvvm_available() -> bool:
    """Whether NVVM and NVRTC are here: as NVIDIA's wheels or a CUDA toolkit (``CUDA_HOME``)."""
    wheels = all(importlib.util.find_spec(m) is not None for m in ("nvidia.cuda_nvcc", "nvidia.cuda_nvrtc"))
    return wheels or bool(os.environ.get("CUDA_HOME"))


def compile_kernels(env_id: str, num_envs: int = 2000, cc: tuple[int, int] = CC, **params) -> dict[str, int]:
    """Compiles every CUDA kernel of ``env_id`` with ``params`` at ``num_envs``'s launch shape.

    Returns the PTX size of each kernel by name; raises `CudaCompileError` naming the env, the
    kernel and the compiler's message.
    """
    from gpu_zoo.core.runtime.launch import simulator_enabled

    if not simulator_enabled():
        return _compile_all(env_id, num_envs, cc, params)
    from gpu_zoo.registry import entry

    # the same imports as this process (a user's env module among them) and its registration
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    cmd = [sys.executable, "-m", "gpu_zoo.testing.cuda_compile", env_id, "--num-envs", str(num_envs),
           "--cc", f"{cc[0]}.{cc[1]}", "--params", json.dumps(params), "--register", entry(env_id), "--json"]
    env["NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING"] = "1"
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = done.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    if done.returncode or result is None:
        if result and "error" in result:
            raise CudaCompileError(result["error"])
        raise CudaCompileError(f"{env_id} {params}: the compiling process failed:\n{done.stderr[-4000:]}")
    return result


def kernel_ptx(env_id: str, name: str = "drive", num_envs: int = 2000, cc: tuple[int, int] = CC,
               threads_per_env: int | None = None, **params):
    """(the PTX of one kernel, its launch shape), compiled here (the simulator must be off)."""
    module, layout, shape = _kernels(env_id, num_envs, params, threads_per_env)
    return _ptx(module, name, layout, cc, env_id, params), shape


def _compile_all(env_id: str, num_envs: int, cc, params: dict) -> dict[str, int]:
    from gpu_zoo.core.compiler.compile import CUDA_KERNELS, cuda_compiler
    from gpu_zoo.core.compiler.kernel_cache import cache_dir

    module, layout, _ = _kernels(env_id, num_envs, params)
    folder = cache_dir() / "ptx"
    sizes = {}
    for name in (k for k in CUDA_KERNELS if hasattr(module, k)):
        # the module's name holds its source's digest, which covers every file its kernels call into
        marker = folder / f"{module.__name__}.{name}.sm{cc[0]}{cc[1]}.{cuda_compiler()}"
        if not marker.exists():
            folder.mkdir(parents=True, exist_ok=True)
            marker.write_text(str(len(_ptx(module, name, layout, cc, env_id, params))))
        sizes[name] = int(marker.read_text())
    return sizes


def compile_stages(env_id: str, num_envs: int = 1024, cc: tuple[int, int] = CC, top: int = 5,
                   lto: bool | None = None, **params) -> dict:
    """Seconds a cold compile of ``env_id``'s kernels spends in each stage, on this machine's CPU.

    ``front_s``: numba-cuda's front end (bytecode, typing, lowering to LLVM IR) of the kernels and
    of every device function they call; ``ptx_s``: NVVM making the PTX; ``link_s``: the cubin as
    a GPU host makes it (`gpu_zoo.core.compiler.ptxas` assembling the PTX whole; numba-cuda's linker where
    there is no ptxas, or with LTO), None where that needs nvJitLink and it is not installed (a
    GPU's driver links there instead). ``compiles``: numba-cuda compiles, one per function and argument types;
    ``functions``: the distinct functions; ``slowest``: the ``top`` functions by time in their own
    compile (children excluded), as (name, seconds, compiles). ``lto``: link with LTO or not, in
    place of the kernel's own choice (None keeps it), to compare the two. Run in a fresh process with an
    empty cache and the simulator off: what was compiled before is not compiled again. ``cc`` (9, 0)
    compiles for sm_90, where numba-cuda on an H100 or H200 compiles for sm_90a: the same stages.
    """
    import time
    from collections import Counter

    from numba.core import types as nb_types
    from numba.cuda import compiler as cuda_compiler_module
    from numba.cuda import dispatcher
    from numba.cuda.cudadrv import driver

    from gpu_zoo.core.compiler import ptxas
    from gpu_zoo.core.compiler.compile import CUDA_KERNELS, kernel_signature

    module, layout, _ = _kernels(env_id, num_envs, params)
    own, count, stack = Counter(), Counter(), []
    original = dispatcher.compile_cuda

    def timed(pyfunc, *args, **kwargs):  # device functions compile inside their caller's typing
        stack.append(0.0)
        t = time.perf_counter()
        try:
            return original(pyfunc, *args, **kwargs)
        finally:
            spent, children = time.perf_counter() - t, stack.pop()
            if stack:
                stack[-1] += spent
            name = (pyfunc.__module__, pyfunc.__qualname__)  # an env's reset_env is not the core's
            own[name] += spent - children
            count[name] += 1

    linked = driver._have_nvjitlink() or (ptxas.find() is not None and not lto)
    stages = {"front_s": 0.0, "ptx_s": 0.0, "link_s": 0.0 if linked else None}
    dispatcher.compile_cuda = timed
    try:
        with _compute_capability(cc), ptxas.whole_programs():
            for name in (k for k in CUDA_KERNELS if hasattr(module, k)):
                kernel = getattr(module, name)
                options = kernel.targetoptions  # as numba-cuda's `_Kernel` passes them on
                nvvm_options = {"fastmath": options.get("fastmath", False), "opt": 3 if options.get("opt", True) else 0}
                t0 = time.perf_counter()
                cres = timed(kernel.py_func, nb_types.void, kernel_signature(module, name, layout), cc=cc,
                             debug=options.get("debug", False), lineinfo=options.get("lineinfo", False),
                             fastmath=nvvm_options["fastmath"], nvvm_options=nvvm_options,
                             lto=options.get("lto", False) if lto is None else lto,
                             max_registers=options.get("max_registers"))
                library = cres.library
                library._entry_name = cres.fndesc.llvm_func_name  # marked as numba-cuda marks a kernel's
                cuda_compiler_module.kernel_fixup(library.get_function(cres.fndesc.llvm_func_name), False)
                t1 = time.perf_counter()
                library.get_asm_str(cc=cc)
                t2 = time.perf_counter()
                stages["front_s"] += t1 - t0
                stages["ptx_s"] += t2 - t1
                if stages["link_s"] is not None:
                    library.get_cubin(cc=cc)
                    stages["link_s"] += time.perf_counter() - t2
    finally:
        dispatcher.compile_cuda = original
    slowest = [(f[1], round(t, 3), count[f]) for f, t in own.most_common(top)]
    return {**stages, "compiles": sum(count.values()), "functions": len(count), "slowest": slowest}


def _kernels(env_id: str, num_envs: int, params: dict, threads_per_env: int | None = None):
    """(the generated CUDA module, its layout, the launch shape) of a configuration."""
    from gpu_zoo.core.compiler.compile import load_kernels
    from gpu_zoo.core.compiler.launch_shape import layout_launch_shape
    from gpu_zoo.core.compiler.layout import Layout
    from gpu_zoo.core.compiler.speed import compat
    from gpu_zoo.registry import get_spec

    spec = get_spec(env_id)
    layout = Layout(spec, spec.make_params(**params))
    shape = layout_launch_shape(layout, num_envs, threads_per_env=threads_per_env)
    compat.import_cuda()  # numba-cuda made usable on this NumPy before the module imports it
    return load_kernels(layout, "cuda", shape), layout, shape


def _ptx(module, name: str, layout, cc, env_id: str, params: dict) -> str:
    from numba import cuda

    from gpu_zoo.core.compiler.compile import kernel_signature

    fn = getattr(module, name).py_func
    sig = kernel_signature(module, name, layout)
    try:
        with _compute_capability(cc):
            return cuda.compile_ptx(fn, sig, cc=cc)[0]
    except Exception as err:
        raise CudaCompileError(f"{env_id} {params}: kernel {name!r} does not compile for sm_{cc[0]}{cc[1]}: "
                               f"{type(err).__name__}: {err}") from err


@contextlib.contextmanager
def _compute_capability(cc):
    """Device functions ask the current GPU for its compute capability; there is none here."""
    from numba.cuda import dispatcher

    before = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)
    try:
        yield
    finally:
        dispatcher.get_current_device = before


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m gpu_zoo.testing.cuda_compile", description=__doc__.splitlines()[0])
    ap.add_argument("env_id")
    ap.add_argument("--params", default="{}", help="JSON object of constructor arguments")
    ap.add_argument("--num-envs", type=int, default=2000, help="sizes the launch shape")
    ap.add_argument("--cc", default=f"{CC[0]}.{CC[1]}", help="compute capability (default: Hopper)")
    ap.add_argument("--json", action="store_true", help="print the PTX sizes as one JSON line")
    ap.add_argument("--register", default=None, metavar="MODULE:ATTRIBUTE",
                    help="the spec of an env this process does not know (a user's)")
    ns = ap.parse_args(argv)
    if ns.register:
        from gpu_zoo.registry import register

        register(ns.env_id, ns.register)
    cc = tuple(int(x) for x in ns.cc.split("."))
    try:
        sizes = compile_kernels(ns.env_id, ns.num_envs, cc, **json.loads(ns.params))
    except CudaCompileError as err:
        if not ns.json:
            raise
        print(json.dumps({"error": str(err)}))
        sys.exit(1)
    print(json.dumps(sizes) if ns.json else "\n".join(f"{k}: {v} bytes of PTX" for k, v in sizes.items()))


if __name__ == "__main__":
    main()
