"""Compile one gpu_zoo env's CUDA kernels to PTX for sm_90 with no GPU, cold, under either backend.

    python -m benchmarks.mlir_compile ENV_ID --backend numba-cuda|numba-cuda-mlir [--num-envs 2000] [--keep DIR]

A study of numba-cuda-mlir (docs/numba_cuda_mlir.md), run in a fresh process per env and backend
(numba-cuda-mlir needs a venv of its own beside numba 0.68: `pip install numba-cuda-mlir==0.6.0
nvidia-cuda-nvcc-cu12 nvidia-cuda-nvrtc-cu12 nvidia-nvjitlink-cu12`).

numba-cuda: the project's own path (gpu_zoo.testing.cuda_compile._kernels + _ptx), project venv.
numba-cuda-mlir: the same generated source, its `from numba import njit, cuda` swapped for
numba_cuda_mlir's cuda, gpu_zoo's device-function wrapper (rebuild.cuda_device) and its one
CUDA twin (floats.mul_rn) swapped for numba_cuda_mlir equivalents, compiled with its compile_ptx.
Prints one JSON line; the generated sources and PTX go to ``--keep`` (a temp dir by default), and
GPU_ZOO_CACHE_DIR is a fresh temp dir, so every run compiles cold. The two workarounds for
numba-cuda-mlir 0.6.0 (namedtuple construction, uint64 globals) are patches of its lowering, here
in a study tool and never in gpu_zoo; NCM_NAMEDTUPLE_FIX=0 / NCM_UINT64_FIX=0 show the failures,
NCM_FORCEINLINE=0 compiles device functions without forced inlining.
"""
import argparse
import json
import os
import sys
import tempfile
import time
import traceback

T0 = time.perf_counter()
ap = argparse.ArgumentParser()
ap.add_argument("env_id")
ap.add_argument("--backend", required=True, choices=("numba-cuda", "numba-cuda-mlir"))
ap.add_argument("--num-envs", type=int, default=2000)
ap.add_argument("--keep", default=None, help="folder for the generated sources and PTX (default: a temp dir)")
ns = ap.parse_args()
os.environ["GPU_ZOO_CACHE_DIR"] = tempfile.mkdtemp(prefix="gz_cache_")
ns.keep = ns.keep or tempfile.mkdtemp(prefix="gz_mlir_")
CC = (9, 0)
out = {"env": ns.env_id, "backend": ns.backend}

from gpu_zoo.core.compiler.compile import CUDA_KERNELS, generate_source  # noqa: E402
from gpu_zoo.core.compiler.launch_shape import layout_launch_shape  # noqa: E402
from gpu_zoo.core.compiler.layout import Layout  # noqa: E402
from gpu_zoo.registry import get_spec  # noqa: E402

spec = get_spec(ns.env_id)
layout = Layout(spec, spec.make_params())
shape = layout_launch_shape(layout, ns.num_envs)


def sizes_of(ptx):
    return {"ptx_bytes": len(ptx), "ptx_lines": ptx.count("\n"),
            "regs_decl": ptx.count(".reg "), "local_depot": ".local" in ptx}


if ns.backend == "numba-cuda":
    from gpu_zoo.testing.cuda_compile import _kernels, _ptx
    t = time.perf_counter()
    module, layout, _ = _kernels(ns.env_id, ns.num_envs, {})
    out["import_and_load_s"] = round(time.perf_counter() - T0, 2)
    src = open(module.__file__).read()
    open(f"{ns.keep}/{ns.env_id}.numba_cuda.py", "w").write(src)
    out["kernels"] = {}
    for name in (k for k in CUDA_KERNELS if hasattr(module, k)):
        t = time.perf_counter()
        ptx = _ptx(module, name, layout, CC, ns.env_id, {})
        out["kernels"][name] = {"compile_s": round(time.perf_counter() - t, 2), **sizes_of(ptx)}
        open(f"{ns.keep}/{ns.env_id}.{name}.numba_cuda.ptx", "w").write(ptx)
else:
    import importlib.util

    from numba_cuda_mlir import cuda as mcuda
    from numba_cuda_mlir import tools as mtools
    from numba_cuda_mlir.numba_cuda import types as mtypes
    mtools._cached_cc = CC  # no device: pin the "host" compute capability it asks for
    from gpu_zoo.core.api import floats
    from gpu_zoo.core.api import jit as gzjit
    from gpu_zoo.core.compiler.speed import rebuild as rb

    def cuda_device_mlir(fn):
        return mcuda.jit(device=True, forceinline=os.environ.get("NCM_FORCEINLINE", "1") == "1")(fn)

    def _mul_rn_mlir():
        from numba_cuda_mlir.cuda import libdevice

        @mcuda.jit(device=True, forceinline=True)
        def mul_rn(a, b):
            return libdevice.fmul_rn(a, b)
        return mul_rn

    if os.environ.get("NCM_NAMEDTUPLE_FIX", "1") == "1":
        # workaround (repro/w1): numba-cuda-mlir 0.6.0 cannot lower a namedtuple's construction in device code
        from numba_cuda_mlir import mlir_lowering as ml
        _orig = ml.MLIRLower._get_registered_builder

        def _build_namedtuple(builder, target, args, kwargs):
            builder.store_var(target, tuple(builder.load_var(a) for a in args))

        def _get_registered_builder(self, fn, signature):
            got = _orig(self, fn, signature)
            if got is None:
                cls = self._extract_callable_from_var(fn) if hasattr(fn, "name") else fn
                if isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields"):
                    return _build_namedtuple
            return got
        ml.MLIRLower._get_registered_builder = _get_registered_builder
    if os.environ.get("NCM_UINT64_FIX", "1") == "1":
        # workaround (repro/r3): a global np.uint64 >= 2**63 makes IntegerAttr.get(i64, v) raise std::bad_cast
        import numpy as _np
        from numba_cuda_mlir import mlir_lowering as ml2
        _orig_glob = ml2.MLIRLower.lower_global_assign

        def lower_global_assign(self, target, glob):
            v = glob.value
            if isinstance(v, (_np.unsignedinteger, int)) and not isinstance(v, bool) and int(v) >= 2**63:
                glob = type(glob)(glob.name, _np.int64(int(v) - 2**64), glob.loc)  # same 64 bits, signless
            return _orig_glob(self, target, glob)

        ml2.MLIRLower.lower_global_assign = lower_global_assign
    # stage timers: NVVM (MLIR -> LLVM 7 IR -> libnvvm PTX) and the cubin link numba-cuda-mlir always does
    from numba_cuda_mlir import mlir_optimization as mo
    from numba_cuda_mlir.numba_cuda.cudadrv import driver as mdrv
    STAGES = {"nvvm_s": 0.0, "link_s": 0.0}

    def _timed(fn, key):
        def inner(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                STAGES[key] += time.perf_counter() - t
        return inner
    mo._call_llvm70_capi = _timed(mo._call_llvm70_capi, "nvvm_s")
    mdrv._Linker.complete = _timed(mdrv._Linker.complete, "link_s")
    rb.cuda_device = cuda_device_mlir  # rebuild() compares `wrap is cuda_device` against its module global
    gzjit.CUDA_TWINS[floats.mul_rn] = _mul_rn_mlir
    src = generate_source(layout, "cuda", shape)
    assert "from numba import njit, cuda\n" in src
    src = src.replace("from numba import njit, cuda\n", "from numba import njit\nfrom numba_cuda_mlir import cuda\n")
    src = src.replace("from gpu_zoo.core.compiler.speed.rebuild import rebuild, plain, cuda_device",
                      "from gpu_zoo.core.compiler.speed.rebuild import rebuild, plain, cuda_device  # patched: MLIR")
    path = f"{ns.keep}/{ns.env_id}.numba_cuda_mlir.py"
    open(path, "w").write(src)
    modname = f"gz_mlir_{ns.env_id}"
    s = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(s)
    sys.modules[modname] = module
    try:
        s.loader.exec_module(module)
    except Exception as err:
        out["load_error"] = f"{type(err).__name__}: {err}"[:3000]
        out["traceback"] = traceback.format_exc()[-4000:]
        print(json.dumps(out))
        sys.exit(1)
    out["import_and_load_s"] = round(time.perf_counter() - T0, 2)
    dt = {"f64": mtypes.float64, "f32": mtypes.float32, "i32": mtypes.int32, "u8": mtypes.uint8}
    arrays = tuple(mtypes.Array(dt[f.dtype], 1 + len(f.shape), "C") for f in layout.fields.values())
    out["kernels"] = {}
    import inspect
    for name in (k for k in CUDA_KERNELS if hasattr(module, k)):
        kern = getattr(module, name)
        fn = kern.py_func
        first = next(iter(inspect.signature(fn).parameters))
        sig = (mtypes.boolean, *arrays) if first == "resetting" else arrays
        t = time.perf_counter()
        try:
            ptx, _ = mcuda.compile_ptx(fn, sig, cc=CC)
            out["kernels"][name] = {"compile_s": round(time.perf_counter() - t, 2), **sizes_of(ptx),
                                    **{k: round(v, 2) for k, v in STAGES.items()}}
            open(f"{ns.keep}/{ns.env_id}.{name}.numba_cuda_mlir.ptx", "w").write(ptx)
        except Exception as err:
            out["kernels"][name] = {"compile_s": round(time.perf_counter() - t, 2),
                                    "error": f"{type(err).__name__}: {err}"[:4000]}
            open(f"{ns.keep}/{ns.env_id}.{name}.numba_cuda_mlir.err", "w").write(traceback.format_exc())
out["total_s"] = round(time.perf_counter() - T0, 2)
print(json.dumps(out))
