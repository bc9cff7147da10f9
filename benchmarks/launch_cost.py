"""Host time of one env step launched eagerly (no CUDA graph), and the rate with a graph, on one GPU.

    python -m benchmarks.launch_cost simple_tag_v3 --num-envs 1024
    python -m benchmarks.launch_cost tag_continuous_v0 --num-envs 2000 --kw num_taggers=5 num_runners=95

Without a CUDA graph every step is a launch from Python (the PettingZoo face, a trainer that does
not capture): at small batches its host time, not the kernel, sets the rate. Run it on two trees
in turn, on one machine, to compare launch paths; the suite (``python -m benchmarks run``) is
where figures against peers come from.
"""

from __future__ import annotations

import argparse
import time

import torch

import gpu_zoo
from benchmarks.probe import _kwargs


def step_seconds(env, steps: int, repeats: int) -> float:
    """The best of ``repeats`` timings of ``steps`` steps, per step, the GPU synchronised at each end."""
    for _ in range(50):
        env.step()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(steps):
            env.step()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t) / steps)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.launch_cost", description=__doc__.splitlines()[0])
    ap.add_argument("env_id")
    ap.add_argument("--num-envs", type=int, default=1024)
    ap.add_argument("--kw", nargs="*", default=[], metavar="NAME=VALUE", help="env constructor arguments")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    for graph in (False, True):
        env = gpu_zoo.make(args.env_id, num_envs=args.num_envs, device="cuda", validate=False, cuda_graph=graph,
                           **_kwargs(args.kw))
        env.reset(seed=0)
        for g, a in env.sample_actions(torch.Generator(device="cuda").manual_seed(0)).items():
            env.actions[g].copy_(a)
        s = step_seconds(env, args.steps, args.repeats)
        print(f"{args.env_id} {args.num_envs} envs, {'graph' if graph else 'eager'}: {s * 1e6:.1f} us a step, "
              f"{args.num_envs / s:.3e} env-steps/s", flush=True)


if __name__ == "__main__":
    main()
