"""From a training command's start to a target return: the start-up, and where its time goes.

    python -m benchmarks.trainer_startup --runs 2 --stages

Each run launches ``gpu-zoo train`` in a fresh process (simple_tag_v3 at JaxMARL IPPO's
settings, 4096 envs, one log row per iteration) and watches its progress.csv: the wall time from
the launch to the first row, and to the first row whose mean adversary return reaches
``--target``; the process is stopped there. A machine's first run also compiles the kernels
(the cold figure); the later ones find them in the caches (warm). ``--stages`` times one more
fresh process's start-up by stage: imports, the CUDA context, the env and the trainer, the first
iteration (kernels loaded, run eagerly, captured) and one replayed iteration.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def train_command(env_id: str, num_envs: int, total: int, device: str, out: Path) -> list[str]:
    from benchmarks.trainer_speed import JAXMARL_IPPO_SETTINGS

    cmd = [sys.executable, "-m", "gpu_zoo.cli", "train", env_id, "--num-envs", str(num_envs), "--total-env-steps",
           str(total), "--device", device, "--log-every", "1", "--out", str(out)]
    for k, v in JAXMARL_IPPO_SETTINGS.items():
        flag = "--" + k.replace("_", "-")
        cmd += [flag if v else "--no-" + flag[2:]] if isinstance(v, bool) else [flag, str(v)]
    return cmd


def first_rows(csv_path: Path, column: str, target: float) -> tuple[dict | None, dict | None]:
    """The first row of the file and its first row with ``column`` at least ``target`` (None while absent)."""
    if not csv_path.exists():
        return None, None
    with open(csv_path, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r.get("iteration")]
    hit = next((r for r in rows if r.get(column) and float(r[column]) >= target), None)
    return (rows[0] if rows else None), hit


def run_once(cmd: list[str], out: Path, column: str, target: float, timeout: float) -> dict:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first_at = None
    try:
        while True:
            first, hit = first_rows(out / "progress.csv", column, target)
            now = time.perf_counter() - start
            if first is not None and first_at is None:
                first_at = now
            if hit is not None:
                return {"first_row_s": round(first_at, 2), "target_s": round(now, 2),
                        "training_s_at_target": round(float(hit["seconds"]), 2),
                        "env_steps_at_target": int(hit["env_steps"])}
            if proc.poll() is not None:
                raise RuntimeError(f"the run ended (code {proc.returncode}) before {column} reached {target}:\n"
                                   f"{proc.stderr.read()[-3000:]}")
            if now > timeout:
                raise TimeoutError(f"{column} did not reach {target} within {timeout} s")
            time.sleep(0.005)
    finally:
        proc.kill()
        proc.wait()


def stages(env_id: str, num_envs: int, device: str) -> dict:
    """This process's start-up by stage, in seconds: call it in a fresh process, before any heavy import."""
    marks = {}
    since = time.perf_counter()

    def mark(name: str):
        nonlocal since
        now = time.perf_counter()
        marks[name] = round(now - since, 3)
        since = now

    import torch

    mark("import torch")
    from benchmarks.trainer_speed import JAXMARL_IPPO_SETTINGS
    from trainers.config import Args, with_overrides
    from trainers.ppo import Trainer

    mark("import trainers (gpu_zoo, numba, triton)")
    torch.zeros(1, device=device).tolist()
    mark("CUDA context")
    trainer = Trainer(with_overrides(Args(env_id=env_id), **JAXMARL_IPPO_SETTINGS, device=device, num_envs=num_envs,
                                     total_env_steps=100_000_000))
    mark("env and trainer")
    trainer.rollout()
    trainer.read_metrics()  # a host sync: the stage's GPU work is done
    mark("first rollout: kernels loaded, run eagerly, captured")
    trainer.update()
    trainer.read_metrics()
    mark("first update: run eagerly, captured")
    trainer.rollout()
    trainer.update()
    trainer.read_metrics()
    mark("an iteration replayed")
    return marks


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", default="simple_tag_v3")
    ap.add_argument("--num-envs", type=int, default=4096)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--target", type=float, default=20.0, help="the mean adversary return to reach")
    ap.add_argument("--column", default="return/adversary")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--stages", action="store_true", help="also time one fresh process's start-up by stage")
    ap.add_argument("--stages-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--json", default=None, help="append one JSON line per measurement to this file")
    ns = ap.parse_args(argv)
    if ns.stages_child:
        print(json.dumps(stages(ns.env, ns.num_envs, ns.device)))
        return
    rows = []
    for i in range(ns.runs):
        with tempfile.TemporaryDirectory() as tmp:
            cmd = train_command(ns.env, ns.num_envs, 100_000_000, ns.device, Path(tmp))
            row = {"measure": "command start to target", "run": i, "env": ns.env, "num_envs": ns.num_envs,
                   "target": {ns.column: ns.target},
                   **run_once(cmd, Path(tmp), ns.column, ns.target, ns.timeout),
                   "command": " ".join(cmd[2:]).replace(tmp, "OUT")}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if ns.stages:
        child = [sys.executable, "-m", "benchmarks.trainer_startup", "--stages-child", "--env", ns.env,
                 "--num-envs", str(ns.num_envs), "--device", ns.device]
        done = subprocess.run(child, capture_output=True, text=True, check=True)
        row = {"measure": "start-up by stage (s)", "env": ns.env, "num_envs": ns.num_envs,
               "stages": json.loads(done.stdout.strip().splitlines()[-1])}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if ns.json:
        with open(ns.json, "a") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)


if __name__ == "__main__":
    main()
