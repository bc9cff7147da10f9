"""Runs one `Case` in this process and prints its record as the last line: ``python -m benchmarks.worker CASE_JSON``."""

from __future__ import annotations

import json
import sys
import traceback

from benchmarks.cases import GTB, SB3, Case
from benchmarks.skip import Skipped

RECORD_PREFIX = "BENCH_RECORD "
_OUR_IDS = {"simple_tag": "simple_tag_v3", "tag_continuous": "tag_continuous_v0", "tag_gridworld": "tag_gridworld_v0",
            GTB: "gather_trade_build_v0"}


def run_case(case: Case, tiny: bool) -> dict:
    """The measurement of ``case`` (raises `Skipped` when it cannot be taken here)."""
    t = {"target_s": 0.02, "repeats": 2} if tiny else {"target_s": 0.15, "repeats": 5}
    kw = dict(case.config)
    if case.workload.startswith("train_"):
        if case.system == "warpdrive":
            raise Skipped("WarpDrive's A2C trainer on tag_continuous.yaml is not measured by this suite yet")
        from benchmarks import training

        env_id = kw.pop("env_id")
        n_steps, iterations, repeats = kw.pop("num_steps"), kw.pop("iterations"), kw.pop("repeats")
        return training.measure(env_id, case.num_envs, case.device, kw, num_steps=n_steps, iterations=iterations,
                                repeats=repeats)
    if case.workload == SB3:
        from benchmarks import sb3

        return sb3.measure(case.system, case.num_envs, repeats=1 if tiny else 3, tiny=tiny)
    if case.system == "gpu_zoo":
        from benchmarks import ours

        return ours.measure(_OUR_IDS[case.workload], case.num_envs, case.device, kw, **t)
    if case.system == "mpe2":
        from benchmarks.peers import mpe2

        return mpe2.measure_single(**t)
    if case.system == "ai_economist":
        from benchmarks.peers import ai_economist

        return ai_economist.measure_single(**t)
    if case.system == "supersuit":
        from benchmarks.peers import mpe2

        return mpe2.measure_supersuit(case.num_envs, **t)
    if case.system == "vmas":
        from benchmarks.peers import vmas

        return vmas.measure(case.num_envs, case.device, **t)
    if case.system in ("jaxmarl", "jaxmarl_scan"):
        from benchmarks.peers import jaxmarl

        return jaxmarl.measure(case.num_envs, case.device, "scan" if case.system == "jaxmarl_scan" else "step", **t)
    if case.system == "warpdrive":
        from benchmarks.peers import warpdrive

        return warpdrive.measure(case.workload, case.num_envs, case.device, kw, **t)
    raise ValueError(f"no measurement for system {case.system!r}")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    spec = json.loads(argv[0])
    tiny = spec.pop("tiny", False)
    case = Case(**spec)
    try:
        rec = {"status": "ok", **run_case(case, tiny)}
    except Skipped as why:
        rec = {"status": "skipped", "reason": str(why)}
    except Exception as err:  # noqa: BLE001 - any failure becomes a record, the suite goes on
        rec = {"status": "error", "reason": f"{type(err).__name__}: {err}",
               "traceback": traceback.format_exc()[-3000:]}
    print(RECORD_PREFIX + json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
