"""Steps a batch of environments with random actions and reports throughput and episode stats.

    python -m benchmarks.rollout                       # Tag continuous, GPU if usable, else CPU
    python -m benchmarks.rollout --env tag_continuous_v0 --num-envs 4096 --steps 2000 --device cuda

Actions are sampled on the device by torch; the env step stays on the device too. Progress,
throughput and finished-episode returns are read back only every ``--log-every`` steps.
"""

from __future__ import annotations

import argparse
import time

import torch
from tqdm import tqdm

import gpu_zoo
from gpu_zoo.core.runtime.launch import default_device


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", default="tag_continuous_v0", choices=gpu_zoo.registered_envs())
    ap.add_argument("--num-envs", type=int, default=None, help="default: 4096 on a GPU, 256 on a CPU")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda if usable)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--log-every", type=int, default=100)
    args = ap.parse_args(argv)
    device = torch.device(args.device) if args.device else default_device()
    num_envs = args.num_envs or (4096 if device.type == "cuda" else 256)

    print(f"building {args.env}: {num_envs} envs on {device} (first build compiles its kernels)", flush=True)
    t0 = time.perf_counter()
    env = gpu_zoo.make(args.env, num_envs=num_envs, device=device, validate=False)
    print(f"ready in {time.perf_counter() - t0:.1f} s", flush=True)
    env.reset(seed=args.seed)
    gen = torch.Generator(device=device).manual_seed(args.seed)
    returns = {g: torch.zeros((), device=device) for g in env.groups}
    episodes = torch.zeros((), dtype=torch.int64, device=device)
    start = time.perf_counter()
    with tqdm(total=args.steps, unit="step", dynamic_ncols=True) as bar:
        for i in range(1, args.steps + 1):
            _, rew, _, _, info = env.step(env.sample_actions(gen))
            done = info["done"]
            episodes += done.sum()
            for g in env.groups:
                returns[g] += (env.episode_stats()[f"return_{g}"].sum(-1) * done).sum()
            if i % args.log_every == 0 or i == args.steps:
                if device.type == "cuda":
                    torch.cuda.synchronize()
                rate = i * num_envs / (time.perf_counter() - start)
                n = max(1, int(episodes))
                bar.set_postfix({"env-steps/s": f"{rate:.3g}", "episodes": int(episodes),
                                 **{f"ret_{g}": f"{float(returns[g]) / n:.2f}" for g in env.groups}})
                bar.update(i - bar.n)
    elapsed = time.perf_counter() - start
    print(f"{args.steps * num_envs:,} env-steps in {elapsed:.2f} s: {args.steps * num_envs / elapsed:,.0f} env-steps/s "
          f"({args.steps * num_envs * sum(env.group_size(g) for g in env.groups) / elapsed:,.0f} agent-steps/s) "
          f"on {device}; {int(episodes)} episodes finished")


if __name__ == "__main__":
    main()
