"""Host time of one env step launched eagerly (no CUDA graph), and the step rate with and without a graph.

    python -m benchmarks.launch_cost simple_tag_v3 --num-envs 1024
    python -m benchmarks.launch_cost tag_continuous_v0 --num-envs 2000 --kw num_taggers=5 num_runners=95

Without a CUDA graph every step is a launch from Python (the PettingZoo face, a trainer that does
not capture): at small batches its host time, not the kernel, sets the rate. Run it on two trees
in turn, on one machine, to compare launch paths; the suite (``python -m benchmarks run``) is
where figures against peers come from.
"""

from __future__ import annotations

import argparse

from benchmarks.probe import ready_env
from benchmarks.timing import host_us_per_step, time_steps


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.launch_cost", description=__doc__.splitlines()[0])
    ap.add_argument("env_id")
    ap.add_argument("--num-envs", type=int, default=1024)
    ap.add_argument("--kw", nargs="*", default=[], metavar="NAME=VALUE", help="env constructor arguments")
    ap.add_argument("--seconds", type=float, default=0.5, help="timed seconds per repeat")
    args = ap.parse_args(argv)
    for graph in (False, True):
        env = ready_env(args.env_id, args.num_envs, args.kw, cuda_graph=graph)
        host = host_us_per_step(env.step, env.device)
        rate = time_steps(env.step, env.device, target_s=args.seconds, repeats=3).summary(args.num_envs)
        print(f"{args.env_id} {args.num_envs} envs, {'graph' if graph else 'eager'}: host {host:.1f} us a step, "
              f"{rate['median']:.3e} env-steps/s", flush=True)


if __name__ == "__main__":
    main()
