"""Where a cold CUDA compile's time goes, per configuration and stage, on a CPU: no GPU needed.

    python -m benchmarks.cuda_compile_stages --label cpu-2core
    python -m benchmarks.cuda_compile_stages --only '^gather_trade' --jobs 2

Each configuration `benchmarks.cold_start` measures (every env's defaults and its preset's) is
compiled in a fresh process with an empty cache, as a GPU's first ``make`` compiles it
(`gpu_zoo.testing.cuda_compile.compile_stages`): numba-cuda's front end (bytecode, typing and
lowering of the kernels and of every device function they reach), NVVM's PTX, and the cubin's
link (needs nvJitLink, e.g. the ``nvidia-nvjitlink-cu12`` wheel; without it the link is not
timed). A GPU's cold first step adds numba-cuda's import, the CUDA context and loading the
cubin (`benchmarks.cold_start --device cuda`). Records go to
``cuda_compile_stages_<label>.jsonl``; ``python -m benchmarks report`` renders them.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from benchmarks.cold_start import child_record, each_configuration, records_file

SCHEMA = "gpu_zoo.cuda_compile_stages/1"
NUM_ENVS = 1024  # the launch shape's size: kernels are compiled per shape


def measure(env_id: str, params: dict, timeout: float) -> dict:
    """``compile_stages`` of one configuration in a fresh process with empty caches and the simulator off."""
    with tempfile.TemporaryDirectory(prefix="gpu_zoo_stages_") as folder:
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
        env |= {"GPU_ZOO_CACHE_DIR": folder, "NUMBA_CACHE_DIR": folder}
        return child_record("benchmarks.cuda_compile_stages", env_id, params, env, timeout)


def run(out: Path, label: str | None, only: str | None, timeout: float, jobs: int = 1) -> Path:
    path, _, system = records_file(out, "cuda_compile_stages", label, "benchmarks.cuda_compile_stages")
    with open(path, "a") as fh:
        for k, n, env_id, params, row in each_configuration(only, jobs, lambda _, e, p: measure(e, p, timeout)):
            fh.write(json.dumps({"schema": SCHEMA, "env_id": env_id, "params": params, "num_envs": NUM_ENVS,
                                 "jobs": jobs, **row, **system}) + "\n")
            fh.flush()
            link = "not timed" if row["link_s"] is None else f"{row['link_s']:.1f} s"
            print(f"[{k}/{n}] {env_id} {params or 'defaults'}: front end {row['front_s']:.1f} s "
                  f"({row['compiles']} compiles of {row['functions']} functions), PTX {row['ptx_s']:.1f} s, "
                  f"link {link}", flush=True)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.cuda_compile_stages", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="benchmarks/results/")
    ap.add_argument("--label", default=None, help="machine label in the file name (default: GPU or host name)")
    ap.add_argument("--only", default=None, help="regular expression on env ids")
    ap.add_argument("--timeout-s", type=float, default=600.0, help="per process")
    ap.add_argument("--jobs", type=int, default=1, help="configurations compiled at once (keep below the core count)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--params", default="{}", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        from gpu_zoo.testing.cuda_compile import compile_stages

        print(json.dumps(compile_stages(args.child, NUM_ENVS, **json.loads(args.params))))
        return
    from gpu_zoo.testing.cuda_compile import nvvm_available

    if not nvvm_available():
        raise SystemExit("NVVM is not installed: pip install 'numba-cuda[cu12]' (or set CUDA_HOME)")
    print(f"wrote {run(Path(args.out), args.label, args.only, args.timeout_s, args.jobs)}")


if __name__ == "__main__":
    main()
