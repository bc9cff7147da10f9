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
from benchmarks.worker import RECORD_PREFIX

SCHEMA = "gpu_zoo.benchmarks/1"


def run_one(case: Case, tiny: bool, timeout_s: float) -> dict:
    """The record of ``case``, measured in a fresh Python process (own compile caches, own GPU context)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-m", "benchmarks.worker", json.dumps({**case.to_json(), "tiny": tiny})]
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"status": "error", "reason": f"timed out after {timeout_s:.0f} s", "wall_s": time.perf_counter() - t}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RECORD_PREFIX)]
    if not lines:
        return {"status": "error", "reason": f"the worker exited with {proc.returncode} and no record",
                "stderr_tail": proc.stderr[-3000:], "wall_s": time.perf_counter() - t}
    return {**json.loads(lines[-1][len(RECORD_PREFIX):]), "wall_s": time.perf_counter() - t}


def record(case: Case, result: dict, system: dict) -> dict:
    """One self-describing record: the case, its result and everything that produced it."""
    return {"schema": SCHEMA, "id": case.id, "workload": case.workload, "system": case.system,
            "device": case.device, "num_envs": case.num_envs, "config": case.config, **result, "machine": system}


def run_suite(suite: str, device: str, out_dir: str | Path, sizes: str = "full", only: str | None = None,
              budget_s: float | None = None, case_timeout_s: float = 240.0, label: str | None = None) -> Path:
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
    """
    cases = [c for c in suite_cases(suite, device, sizes) if not only or re.search(only, c.id)]
    system = system_description()
    label = label or re.sub(r"[^A-Za-z0-9]+", "-", system.get("gpu") or system["host"]).strip("-").lower()
    out = Path(out_dir) / f"{suite}_{device}_{sizes}_{label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    records, start, timed_out = [], time.perf_counter(), set()
    for case in cases:
        if budget_s is not None and time.perf_counter() - start > budget_s:
            result = {"status": "skipped", "reason": f"the run's time budget of {budget_s:.0f} s was spent"}
        elif (case.workload, case.system) in timed_out:
            # Its kernels were never compiled into the cache, so every larger size would time out too.
            result = {"status": "skipped", "reason": "a smaller size of this workload timed out"}
        else:
            result = run_one(case, sizes == "tiny", case_timeout_s)
            if result["status"] == "error" and result["reason"].startswith("timed out"):
                timed_out.add((case.workload, case.system))
        records.append(record(case, result, system))
        rate = result.get("env_steps_per_s")
        print(f"{case.id:70s} {result['status']:11s} " + (f"{rate:.3e} env-steps/s" if rate else
              result.get("reason", result.get("result", ""))[:120]), flush=True)
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps({"schema": SCHEMA, "records": records}, indent=1))
        os.replace(tmp, out)  # after every case: a run cut short still leaves what it measured
    return out
