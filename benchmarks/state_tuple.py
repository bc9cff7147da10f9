"""Numba's compile time against the size of the state tuple each kernel function is passed, without a GPU.

    python -m benchmarks.state_tuple                     # CUDA (NVVM to PTX, no driver needed) and the CPU
    python -m benchmarks.state_tuple --fields 5 30 90 --calls 30 60 --target cuda

Every phase and helper of a generated kernel takes the env's whole state, a namedtuple of one
array per field (`gpu_zoo.core.codegen_cuda.state_tuple`). This builds a synthetic kernel of
``calls`` small device functions, each passed a state of ``fields`` arrays and touching one of
them, and times its compile in this process after a warm-up compile (so Numba's own start-up is
left out). Whether compile time follows fields x calls says whether passing each function only
the fields it reads would shorten a cold start.
"""

from __future__ import annotations

import argparse
import time


def synthetic_source(fields: int, calls: int, target: str) -> str:
    """A kernel (``kern``) calling ``calls`` functions of the state tuple, each adding to one field."""
    names = [f"f{i}" for i in range(fields)]
    # the decorators of the generated kernels (`gpu_zoo.core.compile`, `gpu_zoo.core.jit.kernel_fn`)
    deco = ("@cuda.jit(device=True, forceinline=True)" if target == "cuda" else
            "@njit(_nrt=False, error_model='numpy', no_cpython_wrapper=True, no_cfunc_wrapper=True)")
    src = ["from collections import namedtuple", "from numba import cuda, njit, prange",
           f"State = namedtuple('State', {tuple(names)!r})"]
    for j in range(calls):
        src += [deco, f"def phase{j}(s, e):", f"    s.f{j % fields}[e] += 1.0"]
    args = ", ".join(names)
    if target == "cuda":
        src += [f"def kern({args}):", f"    s = State({args})", "    e = cuda.grid(1)", "    if e < s.f0.shape[0]:"]
    else:
        src += ["@njit(parallel=True, _nrt=False, error_model='numpy')", f"def kern({args}):",
                "    for e in prange(f0.shape[0]):", f"        s = State({args})"]
    return "\n".join(src + [f"        phase{j}(s, e)" for j in range(calls)]) + "\n"


def compile_seconds(fields: int, calls: int, target: str) -> float:
    import numba

    from gpu_zoo.core.compat import import_cuda

    ns: dict = {}
    exec(compile(synthetic_source(fields, calls, target), f"<state_tuple {fields}x{calls}>", "exec"), ns)
    sig = tuple(numba.types.float32[::1] for _ in range(fields))
    t0 = time.perf_counter()
    if target == "cuda":
        from gpu_zoo.testing.cuda_compile import _compute_capability

        with _compute_capability((9, 0)):
            import_cuda().compile_ptx(ns["kern"], sig, cc=(9, 0))
    else:
        ns["kern"].compile(sig)
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.state_tuple", description=__doc__.splitlines()[0])
    ap.add_argument("--fields", nargs="*", type=int, default=[5, 30, 90], help="arrays in the state tuple")
    ap.add_argument("--calls", nargs="*", type=int, default=[30, 60], help="functions the kernel calls")
    ap.add_argument("--target", nargs="*", default=["cuda", "cpu"], choices=("cuda", "cpu"))
    args = ap.parse_args(argv)
    for target in args.target:
        compile_seconds(1, 1, target)  # Numba's start-up for this target, outside the clock
        for calls in args.calls:
            for fields in args.fields:
                seconds = compile_seconds(fields, calls, target)
                print(f"{target}: {fields:3d} fields x {calls:3d} calls: {seconds:6.2f} s", flush=True)


if __name__ == "__main__":
    main()
