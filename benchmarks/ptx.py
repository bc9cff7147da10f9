r"""An env's CUDA step kernel (with its reset) as PTX, with ptxas's register and spill report, without a GPU.

    pip install "numba-cuda[cu12]"     # NVVM and ptxas as wheels; no driver needed
    python -m benchmarks.ptx tag_continuous_v0 --kw num_taggers=50 num_runners=950 \
        use_full_observation=False num_other_agents_observed=10 --max-registers 80 --out /tmp/step.ptx

Registers per thread decide how many blocks fit on a multiprocessor; the PTX shows what each
element of an observation costs. Only the timing needs the GPU (``benchmarks.probe``).
"""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

from benchmarks.probe import _kwargs


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.ptx", description=__doc__.splitlines()[0])
    ap.add_argument("env_id")
    ap.add_argument("--kw", nargs="*", default=[], metavar="NAME=VALUE", help="env constructor arguments")
    ap.add_argument("--num-envs", type=int, default=2000, help="sizes the default launch shape")
    ap.add_argument("--tpe", type=int, default=None, help="threads per env (default: the env's choice)")
    ap.add_argument("--max-registers", type=int, default=None, help="ptxas register cap to report")
    ap.add_argument("--kernel", default="drive", help="drive (a step and a reset), or step_phases, step_observe, "
                    "step_finished where the step is split")
    ap.add_argument("--cc", default="9.0", help="compute capability (default 9.0, Hopper)")
    ap.add_argument("--out", default=None, help="write the PTX here")
    args = ap.parse_args(argv)

    from gpu_zoo.testing.cuda_compile import kernel_ptx

    cc = tuple(int(x) for x in args.cc.split("."))
    ptx, shape = kernel_ptx(args.env_id, args.kernel, args.num_envs, cc, args.tpe, **_kwargs(args.kw))
    path = Path(args.out or f"/tmp/{args.env_id}_{args.kernel}.ptx")
    path.write_text(ptx)
    body = [ln for ln in ptx.splitlines() if ln.strip() and not ln.strip().startswith(("//", ".", "$", "{", "}"))]
    print(f"{args.env_id} {shape}: {len(body)} PTX instructions -> {path}")
    try:
        import nvidia.cuda_nvcc as nvcc

        ptxas = Path(nvcc.__path__[0]) / "bin" / "ptxas"
    except ImportError:
        print("no ptxas (pip install nvidia-cuda-nvcc-cu12): no register report")
        return
    cmd = [str(ptxas), f"-arch=sm_{cc[0]}{cc[1]}", "-v", str(path), "-o", "/dev/null"]
    if args.max_registers:
        cmd.insert(1, f"-maxrregcount={args.max_registers}")
    report = subprocess.run(cmd, capture_output=True, text=True).stderr
    for line in report.splitlines():
        if re.search(r"registers|spill", line):
            print(line.strip())


if __name__ == "__main__":
    main()
