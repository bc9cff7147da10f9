"""Runs each case of a suite in its own process and writes the records, one JSON file per run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.cases import Case, suite_cases
from benchmarks.metadata import ROOT, system_description
from benchmarks.worker import RECORD_PREFIX, compiles_ours

SCHEMA = "gpu_zoo.benchmarks/1"


def _worker_cmd(case: Case, tiny: bool, *flags: str) -> tuple[list[str], dict]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return [sys.executable, "-m", "benchmarks.worker", *flags, json.dumps({**case.to_json(), "tiny": tiny})], env


def _parse(stdout: str, stderr: str, returncode: int, wall_s: float) -> dict:
    lines = [ln for ln in stdout.splitlines() if ln.startswith(RECORD_PREFIX)]
    if not lines:
        return {"status": "error", "reason": f"the worker exited with {returncode} and no record",
                "stderr_tail": stderr[-3000:], "wall_s": wall_s}
    return {**json.loads(lines[-1][len(RECORD_PREFIX):]), "wall_s": wall_s}


def run_one(case: Case, tiny: bool, timeout_s: float) -> dict:
    """The record of ``case``, measured in a fresh Python process (own compile caches, own GPU context)."""
    cmd, env = _worker_cmd(case, tiny)
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"status": "error", "reason": f"timed out after {timeout_s:.0f} s", "wall_s": time.perf_counter() - t}
    return _parse(proc.stdout, proc.stderr, proc.returncode, time.perf_counter() - t)


def warm_all(cases: list[Case], tiny: bool, jobs: int, timeout_s: float) -> dict[str, dict]:
    """Compiles our cases' kernels into the on-disk cache, ``jobs`` processes at a time; nothing is timed.

    Compiling is single-threaded and takes tens of seconds per configuration, so on a many-core
    host this turns minutes of sequential compiles into one parallel pass; the timed runs that
    follow, one at a time, load the kernels from the cache. Returns each warmed case's result.
    """
    todo = [c for c in cases if compiles_ours(c)]
    running: list[tuple[Case, subprocess.Popen, float]] = []
    done: dict[str, dict] = {}
    while todo or running:
        while todo and len(running) < jobs:
            case = todo.pop(0)
            cmd, env = _worker_cmd(case, tiny, "--warm")
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                    cwd=ROOT)
            running.append((case, proc, time.perf_counter()))
        time.sleep(0.2)
        for item in list(running):
            case, proc, t = item
            waited = time.perf_counter() - t
            if proc.poll() is None and waited < timeout_s:
                continue
            if proc.poll() is None:
                proc.kill()
            out, err = proc.communicate()
            res = (_parse(out, err, proc.returncode, waited) if waited < timeout_s else
                   {"status": "error", "reason": f"compiling timed out after {timeout_s:.0f} s", "wall_s": waited})
            done[case.id] = res
            running.remove(item)
            print(f"compiled {case.id:70s} {res['status']:6s} {res['wall_s']:.0f} s "
                  f"{res.get('reason', '')[:100]}", flush=True)
    return done


def record(case: Case, result: dict, system: dict) -> dict:
    """One self-describing record: the case, its result and everything that produced it."""
    return {"schema": SCHEMA, "id": case.id, "workload": case.workload, "system": case.system,
            "device": case.device, "num_envs": case.num_envs, "config": case.config, **result, "machine": system}


def run_suite(suite: str, device: str, out_dir: str | Path, sizes: str = "full", only: str | None = None,
              budget_s: float | None = None, case_timeout_s: float = 240.0, label: str | None = None,
              warm_jobs: int = 0) -> Path:
    """Runs the cases and writes ``<out_dir>/<suite>_<device>_<sizes>[_<label>].json`` after every case.

    Args:
        suite: ``env``, ``train`` or ``all``.
        device: ``cuda`` or ``cpu``.
        out_dir: folder of the JSON file.
        sizes: ``full`` (the published figures) or ``tiny`` (a structural check in seconds).
        only: a regular expression; cases whose id does not match are left out.
        budget_s: once this many seconds have passed, the remaining cases are recorded as skipped.
        case_timeout_s: a case still running after this is recorded as an error.
        label: distinguishes runs on different machines in the file name (default: the GPU or host).
        warm_jobs: if positive, first compile our cases' kernels this many processes at a time
            (`warm_all`); each record then carries its ``compile`` result. The clock of a case
            never includes compiling either way: its measurement warms up before timing.
    """
    cases = [c for c in suite_cases(suite, device, sizes) if not only or re.search(only, c.id)]
    system = system_description()
    label = label or re.sub(r"[^A-Za-z0-9]+", "-", system.get("gpu") or system["host"]).strip("-").lower()
    out = Path(out_dir) / f"{suite}_{device}_{sizes}_{label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    records, start, timed_out = [], time.perf_counter(), set()
    warmed = warm_all(cases, sizes == "tiny", warm_jobs, case_timeout_s) if warm_jobs > 0 else {}
    for case in cases:
        if budget_s is not None and time.perf_counter() - start > budget_s:
            result = {"status": "skipped", "reason": f"the run's time budget of {budget_s:.0f} s was spent"}
        elif warmed.get(case.id, {}).get("reason", "").startswith("compiling timed out"):
            result = {"status": "skipped", "reason": warmed[case.id]["reason"]}
        elif (case.workload, case.system) in timed_out:
            # Its kernels were never compiled into the cache, so every larger size would time out too.
            result = {"status": "skipped", "reason": "a smaller size of this workload timed out"}
        else:
            result = run_one(case, sizes == "tiny", case_timeout_s)
            if result["status"] == "error" and result["reason"].startswith("timed out"):
                timed_out.add((case.workload, case.system))
        if case.id in warmed:
            result["compile"] = {k: v for k, v in warmed[case.id].items() if k in ("status", "reason", "wall_s")}
        records.append(record(case, result, system))
        rate = result.get("env_steps_per_s")
        print(f"{case.id:70s} {result['status']:11s} " + (f"{rate:.3e} env-steps/s" if rate else
              result.get("reason", result.get("result", ""))[:120]), flush=True)
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps({"schema": SCHEMA, "records": records}, indent=1))
        os.replace(tmp, out)  # after every case: a run cut short still leaves what it measured
    return out
