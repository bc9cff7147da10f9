"""``simple_tag_v3`` env-steps/s: gpu_zoo (CPU or CUDA target) next to MPE2's own, in one run.

    python -m benchmarks.simple_tag --device cpu --sizes 1,1024,16384
    python -m benchmarks.simple_tag --device cuda --sizes 1,1024,16384,131072,1048576 --out results/st.json

Defaults: 1 good agent, 3 adversaries, 2 obstacles, discrete actions. MPE2 steps one parallel
env on one core with random actions (resets included), the classic baseline. gpu_zoo steps
``num_envs`` environments with random actions written once into its action buffers.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

import gpu_zoo
from benchmarks.timing import fill_random_actions, step_rates, summary, system_info


def mpe2_rate(seconds: float) -> float | None:
    try:
        from mpe2 import simple_tag_v3
    except ImportError:
        print("mpe2 is not installed: skipping its baseline (pip install mpe2)")
        return None
    env = simple_tag_v3.parallel_env(max_cycles=25)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        if not env.agents:
            env.reset()
        env.step({a: int(rng.integers(5)) for a in env.agents})
        steps += 1
    return steps / (time.perf_counter() - start)


def ours_rate(num_envs: int, device: str, steps: int, repeats: int) -> dict:
    dev = torch.device(device)
    env = gpu_zoo.make("simple_tag_v3", num_envs=num_envs, device=dev, validate=False)
    env.reset(seed=0)
    fill_random_actions(env)
    rates = step_rates(env, steps, repeats)
    return {"env": "simple_tag_v3", "system": "gpu_zoo", "device": device, "num_envs": num_envs, **summary(rates)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--sizes", default="1,1024,16384")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--baseline-seconds", type=float, default=5.0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    records = []
    base = mpe2_rate(args.baseline_seconds)
    if base is not None:
        records.append({"env": "simple_tag_v3", "system": "mpe2", "device": "cpu (one core)", "num_envs": 1,
                        "env_steps_per_s": base})
        print(json.dumps(records[-1]), flush=True)
    for n in (int(x) for x in args.sizes.split(",")):
        rec = ours_rate(n, args.device, args.steps, args.repeats)
        if base:
            rec["ratio_to_mpe2"] = rec["env_steps_per_s"] / base
        print(json.dumps(rec), flush=True)
        records.append(rec)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"system": system_info(args.device), "records": records}, fh, indent=1)


if __name__ == "__main__":
    main()
