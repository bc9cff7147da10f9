r"""Do trained workers respond to the tax rates they observe? Their economy under flat rates.

    python -m studies.economy.response free_market=runs/econ/free_market/resume.pt \
        ai_planner=runs/econ/ai_planner/resume.pt --out studies/economy/results/response.json

A learned planner can only find that taxes cost work if the workers it faces work less under
taxes within an episode, seeing the rates. Each checkpoint's workers play the same episodes once
per flat rate (every bracket alike, set from the first step), the planner's policy left out; the
rates are public in their observations. Reported per rate: productivity (mean coin per worker at
the end, which taxes and redistribution conserve: what the workers produced), equality and
social welfare. Workers that respond produce less at high rates; workers that do not produce
the same at every rate, and then a planner's best reply within an episode is the highest rate.
Any checkpoint of the trainer works (``checkpoint.pt``, ``resume.pt``, phase 1's ``workers.pt``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from studies.economy.evaluation import figures, final_economy

RATES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
TAX_SETUP = ("disable_taxes", "tax_model", "tax_annealing_schedule", "fixed_bracket_rates", "saez_fixed_elas",
             "pareto_weight_type", "saez_buffer_size")  # replaced: the flat rates are set by the planner's action



def flat_rate_figures(worker, env_kwargs: dict, rates=RATES, episodes: int = 64, seed: int = 12345,
                      device=None) -> dict:
    """``{rate: figures}``: the ``worker`` policy's economy under each flat rate, the same episodes for each."""
    import gpu_zoo

    kwargs = {k: v for k, v in env_kwargs.items() if k not in TAX_SETUP}
    env = gpu_zoo.make("gather_trade_build_v0", num_envs=episodes, device=device, autoreset=False, validate=False,
                       tax_model="model_wrapper", **kwargs)
    return {f"{rate:g}": figures(final_economy(env, {"worker": worker}, seed, flat_rate=rate)) for rate in rates}


def response(checkpoint: str | Path, rates=RATES, episodes: int = 64, seed: int = 12345, device=None) -> dict:
    """The checkpoint's workers under each flat rate: ``{"env_steps", "env_kwargs", "rates": {rate: figures}}``."""
    from trainers.evaluate import load_checkpoint

    args, policies = load_checkpoint(checkpoint, device=device)
    if "worker" not in policies:
        raise SystemExit(f"{checkpoint}: holds no worker policy")
    saved = torch.load(checkpoint, map_location="cpu", weights_only=False)
    kwargs = {k: v for k, v in args.env_kwargs.items() if k not in TAX_SETUP}
    return {"checkpoint": str(checkpoint), "env_steps": saved["iteration"] * args.env_steps_per_iteration,
            "env_kwargs": kwargs, "episodes": episodes,
            "rates": flat_rate_figures(policies["worker"], kwargs, rates, episodes, seed, device)}


def table(results: dict) -> str:
    """Markdown: productivity (social welfare) per checkpoint and rate."""
    rates = list(next(iter(results.values()))["rates"])
    lo, hi = rates[0], rates[-1]
    lines = ["| workers from | env-steps | " + " | ".join(f"{100 * float(r):.0f}%" for r in rates)
             + f" | productivity at {100 * float(hi):.0f}% / at {100 * float(lo):.0f}% |",
             "| --- | --- | " + " | ".join("---" for _ in rates) + " | --- |"]
    for name, rec in results.items():
        figs = rec["rates"]
        cells = [f"{f['productivity']['mean']:.0f} ({f['welfare']['mean']:.0f})" for f in figs.values()]
        ratio = figs[hi]["productivity"]["mean"] / max(figs[lo]["productivity"]["mean"], 1e-9)
        lines.append(f"| {name.replace('_', ' ')} | {rec['env_steps'] / 1e6:.0f}M | " + " | ".join(cells)
                     + f" | {ratio:.2f} |")
    return "\n".join(lines)


def named_checkpoints(items: list[str], ap: argparse.ArgumentParser) -> dict[str, Path]:
    """``[NAME=]CHECKPOINT`` arguments by name, NAME defaulting to the checkpoint's folder (its regime)."""
    named = {}
    for item in items:
        name, _, path = item.rpartition("=")
        path = Path(path)
        if not path.is_file():
            ap.error(f"{path}: no such file")
        named[name or path.parent.name] = path
    return named


def _rate(text: str) -> float:
    x = float(text)
    if not 0.0 <= x <= 1.0 or abs(x * 20 - round(x * 20)) > 1e-9:
        raise argparse.ArgumentTypeError(f"a rate is a multiple of 0.05 in [0, 1], got {text}")
    return x


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m studies.economy.response", description=__doc__.splitlines()[0])
    ap.add_argument("checkpoints", nargs="+", metavar="[NAME=]CHECKPOINT",
                    help="trainer checkpoints; NAME defaults to the checkpoint's folder (its regime)")
    ap.add_argument("--rates", nargs="+", type=_rate, default=list(RATES))
    ap.add_argument("--episodes", type=int, default=64)
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--device", default=None)
    ap.add_argument("--out", default=None, help="write the figures here as JSON")
    args = ap.parse_args(argv)
    named = named_checkpoints(args.checkpoints, ap)
    results = {}
    for name, path in named.items():
        print(f"{name}: {path}", file=sys.stderr, flush=True)
        results[name] = response(path, args.rates, args.episodes, args.seed, args.device)
    print(table(results))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
