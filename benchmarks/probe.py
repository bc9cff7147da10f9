"""One env configuration under several CUDA launch shapes, timed; or a few plain launches for a profiler.

    python -m benchmarks.probe tag_gridworld_v0 --num-envs 2000 --kw num_taggers=50 --tpe 64 128 256
    ncu --clock-control none -k regex:step -c 1 python -m benchmarks.probe tag_gridworld_v0 --profile
    python -m benchmarks.probe tag_continuous_v0 --kw num_taggers=5 num_runners=95 --split   # fused and split

The suite (``python -m benchmarks run``) is where figures come from; this is the tool for choosing
a launch shape or a kernel variant, and for giving ``ncu`` one step kernel without CUDA graphs.
"""

from __future__ import annotations

import argparse
import ast

import torch

import gpu_zoo
from benchmarks.timing import time_steps


def _kwargs(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
    return out


def ready_env(env_id: str, num_envs: int, kw: list[str], cuda_graph: bool = True, **launch):
    """A CUDA env reset with seed 0, its actions drawn once and left in place: ``env.step()`` steps it."""
    env = gpu_zoo.make(env_id, num_envs=num_envs, device="cuda", validate=False, cuda_graph=cuda_graph,
                       **launch, **_kwargs(kw))
    env.reset(seed=0)
    gen = torch.Generator(device="cuda").manual_seed(0)
    for g, a in env.sample_actions(gen).items():
        env.actions[g].copy_(a)
    return env


def _env(args, tpe, regs=0, split=None):
    return ready_env(args.env_id, args.num_envs, args.kw, cuda_graph=not args.profile, threads_per_env=tpe or None,
                     max_registers=regs or None, split_observe=split)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.probe", description=__doc__.splitlines()[0])
    ap.add_argument("env_id")
    ap.add_argument("--num-envs", type=int, default=2000)
    ap.add_argument("--kw", nargs="*", default=[], metavar="NAME=VALUE", help="env constructor arguments")
    ap.add_argument("--tpe", nargs="*", type=int, default=[0], help="threads per env to try (0: the default choice)")
    ap.add_argument("--regs", nargs="*", type=int, default=[0], help="register caps to try (0: none)")
    ap.add_argument("--seconds", type=float, default=0.5, help="timed seconds per repeat")
    ap.add_argument("--split", action="store_true",
                    help="also time each shape with the step split in three kernels (split_observe)")
    ap.add_argument("--profile", action="store_true", help="no timing, no CUDA graph: 3 plain step launches")
    args = ap.parse_args(argv)
    if args.profile:
        env = _env(args, args.tpe[0], args.regs[0], True if args.split else None)
        for _ in range(3):
            env.step()
        torch.cuda.synchronize()
        print(f"{args.env_id} {args.num_envs} envs, launch {env._launcher.shape}: 3 steps launched")
        return
    print(f"{args.env_id} num_envs={args.num_envs} {_kwargs(args.kw)}")
    splits = (False, True) if args.split else (None,)  # None: the env's own choice
    for tpe, regs, split in ((t, r, x) for t in args.tpe for r in args.regs for x in splits):
        try:
            env = _env(args, tpe, regs, split)
        except Exception as exc:  # e.g. too many registers for the block: a result, not a crash
            print(f"  threads_per_env={tpe} max_registers={regs} split_observe={split}: {type(exc).__name__}: {exc}",
                  flush=True)
            continue
        rate = time_steps(env.step, env.device, target_s=args.seconds, repeats=3).summary(args.num_envs)
        print(f"  {str(env._launcher.shape):<70} {rate['median']:.3e} env-steps/s "
              f"(spread {rate['spread'][0]:.2e}..{rate['spread'][1]:.2e})", flush=True)
        del env
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
