"""The PPO trainer's speed end to end, and where an iteration's time goes.

    python -m benchmarks.trainer_speed --env simple_tag_v3 --num-envs 4096,16384 --device cuda
    python -m benchmarks.trainer_speed --env simple_tag_v3 --num-envs 4096 --kw '{"fused": false}' --split
    python -m benchmarks.trainer_speed --curves benchmarks/results/trainer --out docs/training_speed.png
    torchrun --standalone --nproc-per-node=2 -m benchmarks.trainer_speed --num-envs 4096   # per GPU, data-parallel

Settings default to JaxMARL IPPO's on simple_tag: 128-step rollouts, 4 epochs of 4 minibatches,
two 64-wide tanh layers (``--preset``: the env's preset instead). Each size runs two warm-up iterations (the first
compiles and runs eagerly, the second captures the CUDA graphs), then ``--iterations`` timed
ones, the clock read after a device synchronisation. Under torchrun every rank trains its own envs
(`trainers.distributed`) and rank 0 reports the run's env-steps/s over all of them. With
``--split``, a profile of one more iteration run without graphs sums the GPU time of its
kernels by part: the env step, the policies' rollout work (inference, sampling, storage), the
values and GAE, and the update.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

from benchmarks.timing import sync
from trainers import distributed, fused
from trainers.config import Args, preset, with_overrides
from trainers.ppo import Trainer

JAXMARL_IPPO_SETTINGS = dict(num_steps=128, update_epochs=4, num_minibatches=4, hidden=64, learning_rate=2.5e-4,
                      anneal_lr=True, gamma=0.99, gae_lambda=0.95, clip_coef=0.2, ent_coef=0.01, vf_coef=0.5,
                      max_grad_norm=0.5, eval_episodes=0, gif=False)
PARTS = (("env step", ("numba", "step", "cudapy")), ("rollout policies", ("_act_kernel", "_record_kernel")),
         ("values and GAE", ("_forward_kernel", "_gae_kernel")), ("update gradients", ("_ppo_grads_kernel",)))


def measure(args: Args, iterations: int, world: distributed.World = distributed.SINGLE) -> dict:
    t0 = time.perf_counter()
    trainer = Trainer(args, world=world)
    built = time.perf_counter() - t0
    for _ in range(2):
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
    steps = iterations * args.env_steps_per_iteration * world.size
    return {"env": args.env_id, "world_size": world.size,
            "num_envs": args.num_envs, "num_steps": args.num_steps, "device": str(trainer.device),
            "fused_groups": list(trainer.fused), "precision": fused.PRECISION, "grad_tile": fused.GRAD_TILE,
            "cuda_graph": args.cuda_graph, "build_s": round(built, 2),
            "warmup_s": round(warm, 2), "rollout_ms": round(1e3 * rollout / iterations, 3),
            "update_ms": round(1e3 * update / iterations, 3), "env_steps_per_s": round(steps / (rollout + update))}


def split(args: Args) -> dict:
    """GPU time per part of one iteration, from a profile of an iteration run without graphs."""
    from torch.profiler import ProfilerActivity, profile

    trainer = Trainer(dataclasses.replace(args, cuda_graph=False))
    trainer.rollout()
    trainer.update()
    sync(trainer.device)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        trainer.rollout()
        trainer.update()
        sync(trainer.device)
    parts = {name: 0.0 for name, _ in PARTS}
    parts["other"] = 0.0
    kernels = 0
    for ev in prof.key_averages():
        us = ev.device_time_total
        if us <= 0:
            continue
        kernels += ev.count
        for name, keys in PARTS:
            if any(k in ev.key for k in keys):
                parts[name] += us
                break
        else:
            parts["other"] += us
    return {"gpu_ms_by_part": {k: round(v / 1e3, 3) for k, v in parts.items()}, "kernels_per_iteration": kernels,
            "top": [(ev.key[:60], round(ev.device_time_total / 1e3, 3), ev.count)
                    for ev in sorted(prof.key_averages(), key=lambda e: -e.device_time_total)[:12]]}


def plot_curves(folder: str, out: str):
    """The adversaries' mean return in each ``simple_tag_4096_*_seed?.csv`` of ``folder``, by env-steps and seconds."""
    import csv
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for path in sorted(Path(folder).glob("simple_tag_4096_*_seed?.csv")):
        rows = [r for r in csv.DictReader(open(path)) if r["return/adversary"]]
        ret = [float(r["return/adversary"]) for r in rows]
        label = path.stem.replace("simple_tag_4096_", "").replace("_", ", ")
        axes[0].plot([int(r["env_steps"]) / 1e6 for r in rows], ret, label=label, lw=1)
        axes[1].plot([float(r["seconds"]) for r in rows], ret, label=label, lw=1)
    for ax, xlabel in zip(axes, ("env-steps (millions)", "training seconds (after start-up)"), strict=True):
        ax.axhline(20, color="grey", ls=":", lw=1)
        ax.axhline(30, color="grey", ls="--", lw=1)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean adversary return per episode")
    axes[1].legend(title="products, seed")
    fig.suptitle("PPO on simple_tag_v3, 4096 envs, JaxMARL IPPO's settings, one H200")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", default="simple_tag_v3")
    ap.add_argument("--num-envs", default="4096", help="comma-separated sizes")
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--kw", default="{}", help="JSON object of further `Args` fields")
    ap.add_argument("--preset", action="store_true", help="start from the env's preset, not JaxMARL IPPO's settings")
    ap.add_argument("--split", action="store_true", help="also profile one iteration's GPU time by part")
    ap.add_argument("--json", default=None, help="append one JSON line per measurement to this file")
    ap.add_argument("--curves", default=None, metavar="FOLDER", help="plot the learning curves kept in FOLDER")
    ap.add_argument("--out", default="docs/training_speed.png", help="where --curves writes its figure")
    ns = ap.parse_args(argv)
    if ns.curves:
        plot_curves(ns.curves, ns.out)
        print(f"wrote {ns.out}")
        return
    start = {"eval_episodes": 0, "gif": False} if ns.preset else JAXMARL_IPPO_SETTINGS
    base = with_overrides(preset(ns.env) if ns.preset else Args(env_id=ns.env),
                          **{**start, "device": ns.device, **json.loads(ns.kw)})
    world = distributed.join(base.device)
    for n in (int(x) for x in ns.num_envs.split(",")):
        args = dataclasses.replace(base, num_envs=n, total_env_steps=100 * n * base.num_steps * world.size)
        row = {**measure(args, ns.iterations, world), "settings": json.loads(ns.kw)}
        if ns.split and not world.distributed:
            row.update(split(args))
        if not world.main:
            continue
        print(json.dumps(row), flush=True)
        if ns.json:
            with open(ns.json, "a") as fh:
                fh.write(json.dumps(row) + "\n")
    distributed.leave()


if __name__ == "__main__":
    main()
