r"""Cold compile time with the compile-time accelerations on and off (``GPU_ZOO_COMPILE_ACCELERATIONS``).

    python -m benchmarks.speed_switch --device cpu --label cpu-2core \
        --only '^(simple_tag_v3|tag_continuous_v0|connect_four_v3|gather_trade_build_v0)$'
    python -m benchmarks.speed_switch --device cuda --only '^simple_tag_v3$'

Each registered env, in its constructor's defaults, starts twice in a fresh process with empty
cache folders: the accelerations on (the default), then off (`gpu_zoo.core.compiler.speed`). The
processes are `benchmarks.cold_start`'s (imports, then ``make``, ``reset`` and one step, with
Numba's compile time split into its front end and LLVM, or NVVM and ptxas on CUDA); only the
switch differs between the two. Both compile the same kernels, so the pair's difference is what
the accelerations save; the trajectories are the same (``tests/test_speed_switch.py``).

Records (one JSON object per line, ``accelerations``: "on" or "off") go to
``speed_switch_<label>.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from pathlib import Path

from benchmarks.cold_start import NUM_ENVS, child_record, records_file

SCHEMA = "gpu_zoo.speed_switch/1"
SWITCH = "GPU_ZOO_COMPILE_ACCELERATIONS"  # `gpu_zoo.core.compiler.speed.SWITCH`, named without importing Numba


def cold(env_id: str, params: dict, device: str, on: bool, timeout: float) -> dict:
    """`benchmarks.cold_start`'s figures of a fresh process on empty caches, the accelerations ``on`` or off."""
    with tempfile.TemporaryDirectory(prefix="gpu_zoo_switch_") as folder:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env |= {"GPU_ZOO_CACHE_DIR": str(Path(folder) / "kernels"), "NUMBA_CACHE_DIR": str(Path(folder) / "numba"),
                SWITCH: "1" if on else "0"}
        return child_record("benchmarks.cold_start", env_id, params, env, timeout, ["--device", device])


def run(device: str, out: Path, label: str | None, only: str | None, timeout: float) -> Path:
    from gpu_zoo.registry import registered_envs

    ids = [e for e in registered_envs() if only is None or re.search(only, e)]
    if not ids:
        raise SystemExit(f"no env id matches {only!r}")
    path, label, system = records_file(out, "speed_switch", label, "benchmarks.speed_switch")
    with open(path, "a") as fh:
        for k, env_id in enumerate(ids, 1):
            rows = {}
            for on in (True, False):
                row = rows[on] = cold(env_id, {}, device, on, timeout)
                record = {"schema": SCHEMA, "env_id": env_id, "params": {}, "device": device, "num_envs": NUM_ENVS,
                          "cache": "cold", "accelerations": "on" if on else "off", **row, **system}
                fh.write(json.dumps(record) + "\n")
                fh.flush()
            print(f"[{k}/{len(ids)}] {env_id}: first step {rows[True]['first_step_s']:.1f} s on, "
                  f"{rows[False]['first_step_s']:.1f} s off (compile {rows[True]['compile_s']:.1f} / "
                  f"{rows[False]['compile_s']:.1f} s)", flush=True)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.speed_switch", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--out", default="benchmarks/results/")
    ap.add_argument("--label", default=None, help="machine label in the file name (default: GPU or host name)")
    ap.add_argument("--only", default=None, help="regular expression on env ids")
    ap.add_argument("--timeout-s", type=float, default=1800.0, help="per process")
    args = ap.parse_args(argv)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("--device cuda needs a GPU")
    print(f"wrote {run(args.device, Path(args.out), args.label, args.only, args.timeout_s)}")


if __name__ == "__main__":
    main()
