"""Numba's compile time against the size of the state tuple each kernel function is passed, without a GPU.

    python -m benchmarks.state_tuple                     # CUDA (NVVM to PTX, no driver needed) and the CPU
    python -m benchmarks.state_tuple --fields 5 30 90 --calls 30 60 --target cuda
    python -m benchmarks.state_tuple --fields 5 --params 3 40 --calls 60     # the params tuple's share

Every phase and helper of a generated kernel takes the env's whole state, a namedtuple of one
array per field (`gpu_zoo.core.compiler.codegen_cuda.state_tuple`). This builds a synthetic kernel of
``calls`` small device functions, each passed a state of ``fields`` arrays and touching one of
them, and times its compile in this process after a warm-up compile (so Numba's own start-up is
left out). Whether compile time follows fields x calls says whether passing each function only
the fields it reads would shorten a cold start.
"""

from __future__ import annotations

import argparse
import time


def synthetic_source(fields: int, calls: int, target: str, params: int = 0) -> str:
    """A kernel (``kern``) calling ``calls`` functions of the state tuple, each adding to one field.

    ``params``: each function is passed a params tuple of that many scalars too (as `gpu_zoo.core.compiler.compile`'s
    ``Params``), and adds one of them.
    """
    names = [f"f{i}" for i in range(fields)]
    # the decorators of the generated kernels (`gpu_zoo.core.compiler.compile`, `gpu_zoo.core.api.jit.kernel_fn`)
    deco = ("@cuda.jit(device=True, forceinline=True)" if target == "cuda" else
            "@njit(_nrt=False, error_model='numpy', no_cpython_wrapper=True, no_cfunc_wrapper=True)")
    src = ["from collections import namedtuple", "import numpy as np", "from numba import cuda, njit, prange",
           f"State = namedtuple('State', {tuple(names)!r})",
           f"Params = namedtuple('Params', {tuple(f'p{i}' for i in range(params))!r})"]
    for j in range(calls):
        add = f"p.p{j % params}" if params else "1.0"
        src += [deco, f"def phase{j}(s, p, e):", f"    s.f{j % fields}[e] += {add}"]
    args = ", ".join(names)
    # ints and floats, as an env's params are
    p = f"Params({', '.join(f'np.float32({i}.0)' if i % 3 else str(i) for i in range(params))})"
    if target == "cuda":
        src += [f"def kern({args}):", f"    s = State({args})", f"    p = {p}", "    e = cuda.grid(1)",
                "    if e < s.f0.shape[0]:"]
    else:
        src += ["@njit(parallel=True, _nrt=False, error_model='numpy')", f"def kern({args}):",
                "    for e in prange(f0.shape[0]):", f"        s = State({args})", f"        p = {p}"]
    return "\n".join(src + [f"        phase{j}(s, p, e)" for j in range(calls)]) + "\n"


def compile_seconds(fields: int, calls: int, target: str, params: int = 0) -> float:
    import numba

    from gpu_zoo.core.compiler.speed.compat import import_cuda

    ns: dict = {}
    exec(compile(synthetic_source(fields, calls, target, params), f"<state_tuple {fields}x{calls}>", "exec"), ns)
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
    ap.add_argument("--params", nargs="*", type=int, default=[0], help="scalars in a params tuple also passed")
    args = ap.parse_args(argv)
    for target in args.target:
        compile_seconds(1, 1, target)  # Numba's start-up for this target, outside the clock
        for calls in args.calls:
            for fields in args.fields:
                for params in args.params:
                    seconds = compile_seconds(fields, calls, target, params)
                    print(f"{target}: {fields:3d} fields, {params:2d} params x {calls:3d} calls: {seconds:6.2f} s",
                          flush=True)


if __name__ == "__main__":
    main()
