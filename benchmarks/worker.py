"""Runs one `Case` in this process and prints its record as the last line: ``python -m benchmarks.worker CASE_JSON``."""

from __future__ import annotations

import json
import sys
import traceback

from benchmarks.cases import OUR_IDS, SB3, TRAINER_SETTINGS, Case, action_mode, env_kwargs, episode_window
from benchmarks.skip import Skipped

RECORD_PREFIX = "BENCH_RECORD "


def train_config(case: Case) -> tuple[str | None, dict, dict]:
    """A training case's env id, env constructor arguments and run settings.

    The env's arguments are the config's ``env_kwargs`` when it has them, else every key that is
    not a setting; ``run`` names the peer's run a case matches and only distinguishes the id.
    """
    kw = {k: v for k, v in case.config.items() if k != "run"}
    settings = {k: kw.pop(k) for k in ("iterations", "repeats", *TRAINER_SETTINGS) if k in kw}
    env_id = kw.pop("env_id", None)
    return env_id, kw.pop("env_kwargs", kw), settings


def run_case(case: Case, tiny: bool) -> dict:
    """The measurement of ``case`` (raises `Skipped` when it cannot be taken here)."""
    t = {"target_s": 0.02, "repeats": 2} if tiny else {"target_s": 0.15, "repeats": 5}
    kw = env_kwargs(case)
    actions = action_mode(case)
    window = episode_window(case)
    if window is not None:  # whole episode lengths, twice: the timing spans every phase of an episode
        t = {**t, "repeats": 2, "window": window}
    if case.workload.startswith("train_"):
        env_id, train_kw, settings = train_config(case)
        timing = {k: settings.pop(k) for k in ("iterations", "repeats")}
        if case.system == "warpdrive":
            from benchmarks.peers import warpdrive

            return warpdrive.measure_a2c(case.num_envs, case.device, train_kw, **timing)
        from benchmarks import training

        return training.measure(env_id, case.num_envs, case.device, train_kw, **timing, **settings)
    if case.workload == SB3:
        from benchmarks import sb3

        return sb3.measure(case.system, case.num_envs, repeats=1 if tiny else 3, tiny=tiny)
    if case.system == "gpu_zoo":
        from benchmarks import ours

        return ours.measure(OUR_IDS[case.workload], case.num_envs, case.device, kw, **t, actions=actions)
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

        return vmas.measure(case.num_envs, case.device, **t, workload=case.workload, actions=actions)
    if case.system in ("jaxmarl", "jaxmarl_scan"):
        from benchmarks.peers import jaxmarl

        return jaxmarl.measure(case.num_envs, case.device, "scan" if case.system == "jaxmarl_scan" else "step", **t,
                               workload=case.workload, actions=actions)
    if case.system == "warpdrive":
        from benchmarks.peers import warpdrive

        return warpdrive.measure(case.workload, case.num_envs, case.device, kw, **t, actions=actions)
    raise ValueError(f"no measurement for system {case.system!r}")


def compiles_ours(case: Case) -> bool:
    """Whether ``case`` steps one of our envs, whose kernels `warm` can compile ahead of the timing."""
    return case.system == "gpu_zoo" and case.workload != SB3


def warm(case: Case) -> dict:
    """Compiles (into the on-disk kernel cache) the kernels ``case`` will run, without timing anything.

    Kernels depend on the env's configuration and, on CUDA, on the launch shape num_envs picks,
    so the env is built at the case's own size, reset and stepped once.
    """
    import time

    import torch

    import gpu_zoo
    from benchmarks.timing import sync

    if case.workload.startswith("train_"):
        env_id, env_kw, _ = train_config(case)
    else:
        env_id, env_kw = OUR_IDS[case.workload], env_kwargs(case)
    t = time.perf_counter()
    dev = torch.device(case.device)
    env = gpu_zoo.make(env_id, num_envs=case.num_envs, device=dev, validate=False, **env_kw)
    env.reset(seed=0)
    env.step()
    sync(dev)
    return {"compiled_s": time.perf_counter() - t}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    warming = argv[0] == "--warm"
    spec = json.loads(argv[-1])
    tiny = spec.pop("tiny", False)
    case = Case(**spec)
    try:
        rec = {"status": "ok", **(warm(case) if warming else run_case(case, tiny))}
    except Skipped as why:
        rec = {"status": "skipped", "reason": str(why)}
    except Exception as err:  # noqa: BLE001 - any failure becomes a record, the suite goes on
        rec = {"status": "error", "reason": f"{type(err).__name__}: {err}",
               "traceback": traceback.format_exc()[-3000:]}
    print(RECORD_PREFIX + json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
