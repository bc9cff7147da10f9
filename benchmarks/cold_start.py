"""From ``gpu_zoo.make`` to the end of the first step, with an empty kernel cache and with a warm one.

    python -m benchmarks.cold_start --device cpu --out benchmarks/results/
    python -m benchmarks.cold_start --device cuda --only '^simple_' --label h200-s32 --jobs 4

Every registered env runs in its constructor's defaults and in the configuration its trainer
preset uses (`trainers.config.PRESETS`), when that differs. Each configuration runs twice, each
time in a fresh process: first with empty cache folders (``GPU_ZOO_CACHE_DIR`` and
``NUMBA_CACHE_DIR`` pointing at a new temporary folder: the cold figure, what a user's first
``make`` costs), then a second process on the caches the first one filled (warm: every later
process). A process imports torch, numba and gpu_zoo first (timed apart: ``import_s``), then
times ``make`` (compiling or loading the kernels), ``reset`` and one ``step`` with the device
synchronised. Numba's compile events split the compile time into its front end (bytecode,
typing, inlining, lowering to LLVM IR: ``compile_s`` less ``llvm_s``) and LLVM's optimisation
and machine-code generation (``llvm_s``); on CUDA the back end is NVVM and ptxas making the cubin,
and a cold process's first step includes numba-cuda's import (``cuda_import_s``).

Records (one JSON object per line) go to ``cold_start_<device>_<label>.jsonl``; ``python -m
benchmarks report`` renders them into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCHEMA = "gpu_zoo.cold_start/1"
NUM_ENVS = 4


def configurations() -> list[tuple[str, dict]]:
    """(env id, constructor arguments): each env's defaults, then its preset's when they differ."""
    from trainers.config import shipped_configurations

    return [(env_id, params) for env_id, params, _ in shipped_configurations()]


def _time_cuda_compiles(spent: dict, timers: contextlib.ExitStack) -> None:
    """Adds numba-cuda's kernel compiles to ``spent``: the whole under compile, NVVM and ptxas under LLVM.

    numba-cuda broadcasts no compile event for a kernel compiled by signature, so it is timed where
    it runs: ``CUDADispatcher.compile`` (the whole: bytecode to a kernel loaded in the context) and,
    inside it, ``CUDACodeLibrary.get_asm_strs`` (NVVM to PTX) and ``get_cubin`` with
    `gpu_zoo.core.compiler.ptxas.assemble` (the cubin; numba-cuda's linker where there is no ptxas): the
    back end, ``llvm_s``.
    """
    from gpu_zoo.core.compiler import ptxas
    from gpu_zoo.core.compiler.speed import compat

    compat.import_cuda()  # as gpu_zoo imports it: made usable on current NumPy first
    from numba.cuda import codegen, dispatcher

    depth = {"numba:compile": 0, "numba:llvm_lock": 0}  # a call inside another of its kind counts once

    def timed(owner, name: str, kind: str):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            depth[kind] += 1
            try:
                return original(*args, **kwargs)
            finally:
                depth[kind] -= 1
                if not depth[kind]:
                    spent[kind] += time.perf_counter() - t

        setattr(owner, name, wrapper)
        timers.callback(setattr, owner, name, original)

    timed(dispatcher.CUDADispatcher, "compile", "numba:compile")
    timed(codegen.CUDACodeLibrary, "get_asm_strs", "numba:llvm_lock")
    timed(codegen.CUDACodeLibrary, "get_cubin", "numba:llvm_lock")
    timed(ptxas, "assemble", "numba:llvm_lock")


def _child(env_id: str, params: dict, device: str, profile: str | None = None, cold: bool = True) -> dict:
    """One process's start: imports, then make, reset and one step, each timed (run in a fresh process).

    ``profile``: a file for cProfile's table of make, reset and step (by cumulative, then own time).
    """
    t0 = time.perf_counter()
    import numba
    import torch
    from numba.core import event

    import gpu_zoo

    imported = time.perf_counter()
    spent = {"numba:compile": 0.0, "numba:llvm_lock": 0.0}
    timers = contextlib.ExitStack()
    # outermost durations: a callee compiled inside its caller counts once
    for kind in ("numba:compile", "numba:llvm_lock"):
        timers.enter_context(event.install_timer(kind, lambda dt, kind=kind: spent.__setitem__(kind, spent[kind] + dt)))
    # A warm process loads its kernels' cubins without numba-cuda (`gpu_zoo.core.compiler.cubin`); a cold one
    # imports it inside ``make``. Hooking its compiler needs it imported first, so a cold child times
    # that import apart and adds it to the first step, where a user pays it.
    cuda_import_s = 0.0
    if device == "cuda" and cold:
        started = time.perf_counter()
        _time_cuda_compiles(spent, timers)
        cuda_import_s = time.perf_counter() - started

    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    start = time.perf_counter()
    env = gpu_zoo.make(env_id, num_envs=NUM_ENVS, device=device, **params)
    sync()
    made = time.perf_counter()
    env.reset(seed=0)
    sync()
    was_reset = time.perf_counter()
    env.step(env.sample_actions(torch.Generator(device=env.device).manual_seed(0)))
    sync()
    stepped = time.perf_counter()
    timers.close()
    if profiler is not None:
        import io
        import pstats

        profiler.disable()
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        stats.sort_stats("cumulative").print_stats(60)
        stats.sort_stats("tottime").print_stats(40)
        root = str(Path(__file__).resolve().parents[1]) + os.sep  # the project's own files, relative to it
        Path(profile).write_text(f"# {env_id} {params} on {device}: make, reset, one step\n"
                                 + text.getvalue().replace(root, ""))
    return {"import_s": imported - t0, "cuda_import_s": cuda_import_s, "make_s": made - start,
            "reset_s": was_reset - made, "step_s": stepped - was_reset, "first_step_s": stepped - start + cuda_import_s,
            "compile_s": spent["numba:compile"], "llvm_s": spent["numba:llvm_lock"], "numba": numba.__version__,
            "numba_cuda_imported": "numba_cuda" in sys.modules}


def measure(env_id: str, params: dict, device: str, cache: Path, timeout: float, profile: Path | None = None,
            cold: bool = True) -> dict:
    """The child's figures, from a fresh process whose kernel caches live in ``cache``.

    Python's bytecode cache stays on, as on a user's machine (an installed package has its ``.pyc``
    files; a checkout writes them on first import): with ``PYTHONDONTWRITEBYTECODE`` set, as on some
    hosts, every warm process would compile every imported module from its source again (measured:
    0.4 s of a warm make on one H100 host, the generated kernel module and gpu_zoo's own included).
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env |= {"GPU_ZOO_CACHE_DIR": str(cache / "kernels"), "NUMBA_CACHE_DIR": str(cache / "numba")}
    return child_record("benchmarks.cold_start", env_id, params, env, timeout,
                        ["--device", device, *(["--profile-file", str(profile)] if profile else []),
                         *([] if cold else ["--warm"])])


def child_record(module: str, env_id: str, params: dict, env: dict, timeout: float, extra: list[str] = ()) -> dict:
    """The JSON line ``python -m module --child ENV_ID --params ...`` prints last, from the project root.

    ``process_s``: the child's wall time, start-up included.
    """
    cmd = [sys.executable, "-m", module, "--child", env_id, "--params", json.dumps(params), *extra]
    wall = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=Path(__file__).resolve().parents[1])
    wall = time.perf_counter() - wall
    if proc.returncode != 0:
        raise RuntimeError(f"{env_id} {params}: the child process failed:\n{proc.stderr[-3000:]}")
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "process_s": wall}


def each_configuration(only: str | None, jobs: int, measure_one):
    """(k, count, env id, params, ``measure_one(k, env id, params)``), in `configurations` order.

    Only the configurations whose env id matches ``only``; ``jobs`` of them measured at once.
    """
    from concurrent.futures import ThreadPoolExecutor

    cases = [(e, p) for e, p in configurations() if only is None or re.search(only, e)]
    if not cases:
        raise SystemExit(f"no configuration's env id matches {only!r}")
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = [pool.submit(measure_one, k, env_id, params) for k, (env_id, params) in enumerate(cases, 1)]
        for k, ((env_id, params), future) in enumerate(zip(cases, futures, strict=True), 1):
            yield k, len(cases), env_id, params, future.result()


def records_file(out: Path, name: str, label: str | None, module: str) -> tuple[Path, str, dict]:
    """(``out/<name>_<label>.jsonl``, the label, the machine and ``module``'s command for each record).

    ``label`` defaults to the GPU's name, else the host's.
    """
    from benchmarks.metadata import system_description

    system = {**system_description(), "command": " ".join(["python", "-m", module, *sys.argv[1:]])}
    label = label or re.sub(r"[^A-Za-z0-9_.-]+", "-", system.get("gpu") or system["host"]).strip("-")
    out.mkdir(parents=True, exist_ok=True)
    return out / f"{name}_{label}.jsonl", label, system


def _cold_then_warm(env_id: str, params: dict, device: str, timeout: float, profile: Path | None = None,
                    profiled: str = "cold") -> list[tuple[str, dict]]:
    """Both figures of one configuration: empty caches, then what they filled; the ``profiled`` one into ``profile``."""
    with tempfile.TemporaryDirectory(prefix="gpu_zoo_cold_") as folder:
        return [(cache, measure(env_id, params, device, Path(folder), timeout, profile if cache == profiled else None,
                                cache == "cold")) for cache in ("cold", "warm")]


def run(device: str, out: Path, label: str | None, only: str | None, timeout: float, jobs: int = 1,
        profile: str | None = None) -> Path:
    """Every configuration cold then warm; ``jobs`` configurations at once (each compile is one core's work).

    ``profile``: "cold" or "warm", the process to profile in each configuration.
    """
    path, label, system = records_file(out, f"cold_start_{device}", label, "benchmarks.cold_start")

    def profile_file(k: int, env_id: str):  # cProfile's tables slow a run: figures of their own
        return (out / f"profile_{profile}_{device}_{label}_{k}_{env_id}.txt").resolve() if profile else None

    def both(k, env_id, params):
        return _cold_then_warm(env_id, params, device, timeout, profile_file(k, env_id), profile)

    with open(path, "a") as fh:
        for k, n, env_id, params, rows in each_configuration(only, jobs, both):
            for cache, row in rows:
                record = {"schema": SCHEMA, "env_id": env_id, "params": params, "device": device,
                          "num_envs": NUM_ENVS, "cache": cache, "jobs": jobs,
                          "profiled": profile == cache, **row, **system}
                fh.write(json.dumps(record) + "\n")
                fh.flush()
                print(f"[{k}/{n}] {env_id} {params or 'defaults'} {cache}: first step "
                      f"{row['first_step_s']:.1f} s (compile {row['compile_s']:.1f} s, LLVM "
                      f"{row['llvm_s']:.1f} s; imports {row['import_s']:.1f} s)", flush=True)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.cold_start", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=("cpu", "cuda"), required=True)
    ap.add_argument("--out", default="benchmarks/results/")
    ap.add_argument("--label", default=None, help="machine label in the file name (default: GPU or host name)")
    ap.add_argument("--only", default=None, help="regular expression on env ids")
    ap.add_argument("--timeout-s", type=float, default=900.0, help="per process")
    ap.add_argument("--jobs", type=int, default=1,
                    help="configurations measured at once, each in its own processes (keep below the core count)")
    ap.add_argument("--profile", nargs="?", const="cold", choices=("cold", "warm"), default=None,
                    help="profile each cold (or warm) process with cProfile, a table per configuration beside the "
                         "records (their figures then include the profiler's cost: use a --label of their own)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--profile-file", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--params", default="{}", help=argparse.SUPPRESS)
    ap.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, json.loads(args.params), args.device, args.profile_file, not args.warm)))
        return
    print(f"wrote {run(args.device, Path(args.out), args.label, args.only, args.timeout_s, args.jobs, args.profile)}")


if __name__ == "__main__":
    main()
