"""PPO throughput: env-steps per second of whole iterations (rollout and update) per env and size.

    python -m trainers.bench --env tag_continuous_v0 --num-envs 256,1024 --device cpu
    python -m trainers.bench --env simple_tag_v3 --num-envs 4096,16384 --device cuda --compile default
    python -m trainers.bench --env tag_gridworld_v0 --num-envs 64 --device cuda --kw '{"cuda_graph": false}'

``--compile`` wraps the policies' networks in ``torch.compile`` (``reduce-overhead`` also
captures them as CUDA graphs on a GPU) to measure whether that pays against eager mode.
Settings start from the env's preset; iterations are timed after one warm-up iteration.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import torch

from trainers.config import preset
from trainers.ppo import Trainer


def sync(device: torch.device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(args, iterations: int, compile_mode: str | None) -> dict:
    if compile_mode == "reduce-overhead":  # its own CUDA graphs cannot sit inside the rollout's capture
        args = dataclasses.replace(args, cuda_graph=False)
    trainer = Trainer(args)
    if compile_mode:
        for pol in trainer.policies.values():
            pol.actor = torch.compile(pol.actor, mode=compile_mode, dynamic=False)
            pol.critic = torch.compile(pol.critic, mode=compile_mode, dynamic=False)
    t0 = time.perf_counter()
    trainer.rollout()
    trainer.update()
    sync(trainer.device)
    warm = time.perf_counter() - t0
    rollout = update = 0.0
    for _ in range(iterations):
        t0 = time.perf_counter()
        trainer.rollout()
        sync(trainer.device)
        t1 = time.perf_counter()
        trainer.update()
        sync(trainer.device)
        rollout, update = rollout + t1 - t0, update + time.perf_counter() - t1
    steps = iterations * args.env_steps_per_iteration
    return {"env": args.env_id, "num_envs": args.num_envs, "num_steps": args.num_steps, "device": str(trainer.device),
            "compile": compile_mode or "eager", "cuda_graph": args.cuda_graph, "warmup_s": round(warm, 2),
            "rollout_env_steps_per_s": round(steps / rollout), "update_s_per_iteration": round(update / iterations, 4),
            "env_steps_per_s": round(steps / (rollout + update))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", default="tag_continuous_v0")
    ap.add_argument("--num-envs", default="256", help="comma-separated sizes")
    ap.add_argument("--num-steps", type=int, default=None, help="default: the preset's")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--device", default=None)
    ap.add_argument("--compile", default=None, choices=["default", "reduce-overhead", "max-autotune-no-cudagraphs"])
    ap.add_argument("--torch-threads", type=int, default=None, help="default: the preset's")
    ap.add_argument("--kw", default="{}", help="JSON object of further `Args` fields over the preset's")
    ap.add_argument("--json", default=None, help="append one JSON line per measurement to this file")
    ns = ap.parse_args(argv)
    base = dataclasses.replace(preset(ns.env), **json.loads(ns.kw))
    if ns.device:
        base = dataclasses.replace(base, device=ns.device)
    if ns.num_steps:
        base = dataclasses.replace(base, num_steps=ns.num_steps)
    threads = ns.torch_threads if ns.torch_threads is not None else base.torch_threads
    if threads:
        torch.set_num_threads(threads)
    for n in (int(x) for x in ns.num_envs.split(",")):
        row = measure(dataclasses.replace(base, num_envs=n), ns.iterations, ns.compile)
        print(json.dumps(row), flush=True)
        if ns.json:
            with open(ns.json, "a") as fh:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
