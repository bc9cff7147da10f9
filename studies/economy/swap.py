r"""Is a planner's loss its rates' or its workers'? Trained workers under other tax setters.

    python -m studies.economy.swap --workers free_market=runs/econ/free_market/resume.pt \
        ai_planner=runs/econ/ai_planner/resume.pt --planners ai_planner=runs/econ/ai_planner/resume.pt \
        --schedules flat_40=0.4 --out studies/economy/results/swap.json

Each set of workers plays the same episodes under each tax setter: a checkpoint's planner policy,
that planner's average schedule held fixed (its bracket rates averaged over the episodes it played
with its own workers), and fixed schedules given by hand (``tax_model="fixed-bracket-rates"``).
Reported per pair: productivity, equality and social welfare as in ``studies.economy.learning``,
and the workers' own objective, their utility at the end of the episode (coin's isoelastic utility
less weighted labor), with their labor.

Welfare tells whether a setter's rates are good for a given set of workers; utility tells whether
a set of workers plays a setter's rates well for themselves. Where other workers earn more utility
under the same rates than the workers that trained under them, those did not learn a best reply:
their low productivity is a failure of training, not the workers' answer to the taxes.
Planners play without an annealed limit: give checkpoints whose training reached 100%.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from studies.economy.evaluation import figures, final_economy, schedule_rates, stats
from studies.economy.response import TAX_SETUP, named_checkpoints


def play(workers, planner, env_kwargs: dict, schedule=None, episodes: int = 64, seed: int = 12345,
         device=None) -> tuple[dict, list[float]]:
    """Figures of ``workers`` under ``planner`` (a policy) or a fixed ``schedule``, and the mean rates per bracket."""
    import gpu_zoo

    tax = (dict(tax_model="fixed-bracket-rates", fixed_bracket_rates=tuple(schedule)) if schedule is not None
           else dict(tax_model="model_wrapper"))
    env = gpu_zoo.make("gather_trade_build_v0", num_envs=episodes, device=device, autoreset=False, validate=False,
                       **env_kwargs, **tax)
    policies = {"worker": workers} if planner is None else {"worker": workers, "planner": planner}
    out = final_economy(env, policies, seed)
    group = env.layout.groups["worker"]
    end = {"utility": env.state.util[:, group.lo:group.hi].double().mean(1),
           "labor": env.state.labor[:, group.lo:group.hi].double().mean(1)}
    result = {**figures(out), **{k: stats(v.cpu().numpy()) for k, v in end.items()}}
    return result, [float(x) for x in out["tax_rates"].mean(0)]


def swap(workers: dict[str, Path], planners: dict[str, Path], schedules: dict[str, tuple], episodes: int = 64,
         seed: int = 12345, device=None) -> dict:
    """``{"schedules": {setter: rates}, "figures": {setter: {workers: figures}}}``, setters in play order.

    Each planner comes with a setter ``"<name> mean"``: its average schedule with its own workers
    (those of its checkpoint), held fixed. The env arguments other than the taxes are the first
    workers checkpoint's.
    """
    from trainers.evaluate import load_checkpoint

    loaded = {name: load_checkpoint(path, device=device) for name, path in {**workers, **planners}.items()}
    args = loaded[next(iter(workers))][0]
    kwargs = {k: v for k, v in args.env_kwargs.items() if k not in TAX_SETUP}
    setters, rates, figures = {}, {}, {}
    for name in planners:
        own = loaded[name][1]
        if "planner" not in own or "worker" not in own:
            raise SystemExit(f"{planners[name]}: holds no planner and worker policies")
        setters[name] = (own["planner"], None)
        own_figures, rates[name] = play(own["worker"], own["planner"], kwargs, None, episodes, seed, device)
        # its own workers' row, when they are among the workers: played once
        figures[name] = {w: own_figures for w, path in workers.items() if path == planners[name]}
        setters[f"{name} mean"] = (None, tuple(rates[name]))
        rates[f"{name} mean"] = rates[name]
    for name, schedule in schedules.items():
        setters[name], rates[name] = (None, tuple(schedule)), list(schedule)
    for setter, (planner, schedule) in setters.items():
        played, figures[setter] = figures.get(setter, {}), {}
        for name in workers:
            if name not in played:
                print(f"{name} workers under {setter}", file=sys.stderr, flush=True)
                played[name] = play(loaded[name][1]["worker"], planner, kwargs, schedule, episodes, seed, device)[0]
            figures[setter][name] = played[name]
    return {"env_kwargs": kwargs, "episodes": episodes, "seed": seed, "schedules": rates, "figures": figures}


def table(result: dict) -> str:
    """Markdown: a row per set of workers, a column per setter; welfare (the workers' mean utility)."""
    setters = list(result["figures"])
    names = list(next(iter(result["figures"].values())))
    lines = ["| workers from | " + " | ".join(s.replace("_", " ") for s in setters) + " |",
             "| --- | " + " | ".join("---" for _ in setters) + " |"]
    for name in names:
        cells = [result["figures"][s][name] for s in setters]
        lines.append(f"| {name.replace('_', ' ')} | "
                     + " | ".join(f"{c['welfare']['mean']:.0f} ({c['utility']['mean']:.1f})" for c in cells) + " |")
    rates = "; ".join(f"{s.replace('_', ' ')} " + "/".join(f"{100 * r:.0f}" for r in result["schedules"][s]) + "%"
                      for s in setters if s in result["schedules"])
    return "\n".join(lines) + (f"\n\nSchedules, lowest bracket first (mean rates where a planner set them): {rates}."
                               if rates else "")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m studies.economy.swap", description=__doc__.splitlines()[0])
    ap.add_argument("--workers", nargs="+", required=True, metavar="[NAME=]CHECKPOINT",
                    help="checkpoints whose workers play; NAME defaults to the checkpoint's folder (its regime)")
    ap.add_argument("--planners", nargs="*", default=[], metavar="[NAME=]CHECKPOINT",
                    help="checkpoints whose planner sets the rates (and, held fixed, its mean schedule)")
    ap.add_argument("--schedules", nargs="*", type=schedule_rates, default=[], metavar="NAME=RATES",
                    help="fixed schedules: one rate for every bracket, or seven from the lowest")
    ap.add_argument("--episodes", type=int, default=64)
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--device", default=None)
    ap.add_argument("--out", default=None, help="write the figures here as JSON")
    args = ap.parse_args(argv)
    if not args.planners and not args.schedules:
        ap.error("give --planners or --schedules: the setters the workers play under")
    result = swap(named_checkpoints(args.workers, ap), named_checkpoints(args.planners, ap), dict(args.schedules),
                  args.episodes, args.seed, args.device)
    print(table(result))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
