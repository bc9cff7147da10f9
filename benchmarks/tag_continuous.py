"""Throughput, host cost and compile time of ``tag_continuous_v0`` on the CUDA and CPU targets.

    python -m benchmarks.tag_continuous --device cuda --out results/tag_continuous_cuda.json
    python -m benchmarks.tag_continuous --device cpu --sizes 64x12,2000x100

Each size is ``num_envs x agents`` (agents = taggers + runners, taggers = max(1, agents // 20)),
optionally ``x k`` for k-nearest observations. Random actions are written into the env's own
action buffers once, so the timing is the env step alone (auto-resets included). The clock is
read after a device synchronisation; the figure is the median of ``--repeats`` timed runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import torch

from benchmarks.timing import fill_random_actions, step_rates, summary, sync, system_info

DEFAULT_SIZES = "2000x1000x10,2000x640x10,2000x100,16384x5,1x11"


def parse_size(text: str) -> tuple[int, int, int | None]:
    parts = [int(x) for x in text.split("x")]
    if len(parts) not in (2, 3):
        raise argparse.ArgumentTypeError(f"size must be ExA or ExAxK, got {text!r}")
    return parts[0], parts[1], (parts[2] if len(parts) == 3 else None)


def env_kwargs(agents: int, k: int | None) -> dict:
    taggers = max(1, agents // 20)
    kw = {"num_taggers": taggers, "num_runners": agents - taggers}
    if k is not None:
        kw.update(use_full_observation=False, num_other_agents_observed=k)
    return kw


def measure(num_envs: int, agents: int, k: int | None, device: str, steps: int, repeats: int) -> dict:
    import gpu_zoo
    from gpu_zoo.core import launch

    dev = torch.device(device)
    t0 = time.perf_counter()
    env = gpu_zoo.make("tag_continuous_v0", num_envs=num_envs, device=dev, validate=False, **env_kwargs(agents, k))
    make_s = time.perf_counter() - t0
    compile_s = launch.compile_seconds.get(env._launcher.compile_key, 0.0)
    env.reset(seed=0)
    fill_random_actions(env)
    rates = step_rates(env, steps, repeats)
    host = []
    for _ in range(5):
        sync(dev)
        t = time.perf_counter()
        for _ in range(50):
            env.step()
        host.append((time.perf_counter() - t) / 50 * 1e6)
        sync(dev)
    med = summary(rates)["env_steps_per_s"]
    kernel_info = {}
    if env.target == "cuda":
        kern = env._launcher.module.step
        try:
            kernel_info = {"regs_per_thread": list(kern.get_regs_per_thread().values()),
                           "local_bytes_per_thread": list(kern.get_local_mem_per_thread().values())}
        except (AttributeError, TypeError):
            pass
    return {
        **kernel_info,
        "env": "tag_continuous_v0", "device": device, "target": env.target, "num_envs": num_envs, "agents": agents,
        "k_nearest": k, "env_steps_per_s": med, "agent_steps_per_s": med * agents,
        "spread": summary(rates)["spread"], "host_us_per_step": statistics.median(host),
        "make_s": make_s, "compile_s": compile_s, "launch": str(env._launcher.shape),
        "bytes_state": env.buffers.nbytes(),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--sizes", default=DEFAULT_SIZES)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None, help="write the records as JSON here")
    ap.add_argument("--warm-start", action="store_true", help="also time a second process building the first size")
    args = ap.parse_args(argv)
    records = []
    for size in args.sizes.split(","):
        E, A, k = parse_size(size)
        rec = measure(E, A, k, args.device, args.steps, args.repeats)
        print(json.dumps(rec), flush=True)
        records.append(rec)
        if args.out:  # after every size, so a run cut short still leaves its figures
            _write(args.out, args.device, records)
    if args.warm_start:
        E, A, k = parse_size(args.sizes.split(",")[0])
        code = ("import time;t=time.perf_counter();import gpu_zoo;"
                f"e=gpu_zoo.make('tag_continuous_v0',num_envs={E},device='{args.device}',**{env_kwargs(A, k)!r});"
                "print(time.perf_counter()-t)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        warm = {"warm_start_make_s": float(out.stdout.strip().splitlines()[-1]), "size": args.sizes.split(",")[0]}
        print(json.dumps(warm))
        records.append(warm)
    if args.out:
        _write(args.out, args.device, records)


def _write(path: str, device: str, records: list):
    with open(path, "w") as fh:
        json.dump({"system": system_info(device), "records": records}, fh, indent=1)


if __name__ == "__main__":
    main()
