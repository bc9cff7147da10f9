"""Does PPO learn the economy? Workers trained under three tax regimes, compared on the same episodes.

    python -m benchmarks.economy_learning --env-steps 20000000 --out /tmp/econ
    python -m benchmarks.economy_learning --report benchmarks/results/economy_learning   # the docs page

Regimes, each trained from scratch with the same budget, seed and PPO settings:

- ``free_market``: no taxes (``disable_taxes=True``); the workers learn.
- ``us_federal``: the 2018 US federal brackets, scaled (``tax_model="us-federal-single-filer-2018-scaled"``).
- ``ai_planner``: the workers and the tax-setting planner learn together (``tax_model="model_wrapper"``).

With ``--two-phase``, as in the AI Economist, ``ai_planner`` starts once ``free_market`` has
finished, from its trained workers (``Args.init_from``), and trains them on with the planner for
its own budget; the other regimes run meanwhile.

Each regime's trained policies then play ``--eval-episodes`` episodes (auto-reset off, so the final
state can be read), as do uniformly random workers without taxes (the floor). Reported per regime:
productivity (mean coin per worker at the end, escrow included), equality (1 - Gini of coin) and
social welfare (their product: the env's own figure, which the planner maximises). The regimes
run in parallel processes on one device. ``--report`` writes the page ``docs/economy_learning.md``
with its figure.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

REGIMES = {
    "free_market": (dict(disable_taxes=True), "worker"),
    "us_federal": (dict(tax_model="us-federal-single-filer-2018-scaled"), "worker"),
    "ai_planner": (dict(tax_model="model_wrapper"), "worker,planner"),
}
DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGE_HEAD = """# Training the economy

What PPO learns in `gather_trade_build_v0` under three tax regimes, written by
`python -m benchmarks.economy_learning` (module docstring: how it runs). Each regime trains from
scratch; then its policies and, as a floor, uniformly random workers without taxes play the same
evaluation episodes. *Productivity* is the mean coin per worker at the end of an episode (escrow
included), *equality* is 1 - Gini of coin, and *social welfare* is their product, the figure the
planner is rewarded for raising. A worker's return is its change in isoelastic utility of coin
minus its weighted labor. The AI Economist trained its policies for hundreds of millions of
steps, the workers first without taxes and then with the planner; read the budgets below against
that.

"""


def ppo_args(regime: str, env_steps: int, out: Path, num_envs: int, device: str | None, init_from: str = ""):
    from trainers.config import preset, with_overrides

    kwargs, groups = REGIMES[regime]
    return with_overrides(preset("gather_trade_build_v0"), env_kwargs=kwargs, train_groups=groups,
                          total_env_steps=env_steps, num_envs=num_envs, out=str(out / regime), device=device,
                          init_from=init_from,
                          eval_episodes=0, gif=False, checkpoint_every=10_000)


@torch.no_grad()
def final_economy(env, policies, seed: int) -> dict[str, np.ndarray]:
    """One episode in each env (auto-reset off); productivity, equality and welfare at its end."""
    from trainers.ppo import policy_actions

    generator = torch.Generator(device=env.device).manual_seed(seed)
    env.reset(seed=seed)
    for _ in range(env.params.max_cycles):
        env.step(policy_actions(env, policies, generator))
    if not bool(env.state.done.all()):
        raise RuntimeError("episodes did not end at max_cycles")
    workers = env.layout.groups["worker"]
    coin = (env.state.coin + env.state.coin_escrow)[:, workers.lo:workers.hi].double()
    productivity = coin.mean(1)
    welfare = env.state.util[:, env.layout.groups["planner"].lo].double()  # the env's own welfare figure
    equality = torch.where(productivity > 0, welfare / productivity.clamp_min(1e-12), torch.ones_like(welfare))
    return {k: v.cpu().numpy() for k, v in
            {"productivity": productivity, "equality": equality, "welfare": welfare}.items()}


def train_one(regime: str, env_steps: int, out: Path, num_envs: int, eval_episodes: int, device: str | None,
              max_seconds: float = 0.0, command: str = "", init_from: str = ""):
    """Child process: trains one regime, evaluates it, writes ``out/regime/result.json``."""
    import gpu_zoo
    from trainers.loop import train

    args = ppo_args(regime, env_steps, out, num_envs, device, init_from)
    t0 = time.perf_counter()
    seen = {}

    def stop_at_deadline(trainer):
        seen["trainer"] = trainer
        if max_seconds and time.perf_counter() - t0 > max_seconds:
            raise KeyboardInterrupt  # train() then checkpoints and re-raises; the record says how far it got

    try:
        trainer = train(args, callback=stop_at_deadline)
    except KeyboardInterrupt:
        if "trainer" not in seen:
            raise
        trainer = seen["trainer"]
    seconds = time.perf_counter() - t0
    kwargs = REGIMES[regime][0]
    env = gpu_zoo.make("gather_trade_build_v0", num_envs=eval_episodes, device=trainer.device, autoreset=False,
                       validate=False, **kwargs)
    trained = final_economy(env, trainer.policies.eval(), seed=12345)
    record = {"regime": regime, "env_kwargs": kwargs, "trained_groups": args.train_groups, "init_from": init_from,
              "command": command, "device_name": torch.cuda.get_device_name(trainer.device)
              if trainer.device.type == "cuda" else "CPU",
              "env_steps": trainer.iteration * args.env_steps_per_iteration, "train_seconds": seconds,
              "eval_episodes": eval_episodes, "ppo": dataclasses.asdict(args),
              **{k: _stats(v) for k, v in trained.items()}}
    if regime == "free_market":
        floor = final_economy(env, {}, seed=12345)
        record["random_workers"] = {k: _stats(v) for k, v in floor.items()}
    (out / regime / "result.json").write_text(json.dumps(record, indent=1))
    print(json.dumps({k: record[k] for k in ("regime", "productivity", "equality", "welfare")}), flush=True)


def _stats(x: np.ndarray) -> dict:
    return {"mean": float(np.mean(x)), "std": float(np.std(x)), "n": int(len(x))}


def report(out: Path, docs: Path = DOCS):
    """Table (markdown) and curves (PNG) from the regimes' results and progress logs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    found = [r for r in REGIMES if (out / r / "result.json").exists()]
    results = {r: json.loads((out / r / "result.json").read_text()) for r in found}
    if not results:
        raise SystemExit(f"no results under {out}")
    docs.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for regime in results:
        rows = list(csv.DictReader(open(out / regime / "progress.csv")))
        for ax, col in zip(axes, ("return/worker", "return/planner"), strict=True):
            points = [(int(r["env_steps"]) / 1e6, float(r[col])) for r in rows if r.get(col) not in (None, "")]
            ax.plot(*zip(*points, strict=True), label=regime.replace("_", " "))
    if "free_market" in results:
        floor = results["free_market"]["random_workers"]["welfare"]["mean"]
        axes[1].axhline(floor, color="gray", linestyle="--", label="random workers, no taxes")
    axes[0].set_title("worker return per episode")
    axes[1].set_title("social welfare at episode end (planner return)")
    for ax in axes:
        ax.set_xlabel("env-steps (millions)")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(docs / "economy_learning.png", dpi=110)
    first = next(iter(results.values()))
    lines = ["| regime | trained | productivity (coin) | equality | social welfare |",
             "| --- | --- | --- | --- | --- |"]

    def row(name, trained, rec):
        cells = [f"{rec[k]['mean']:.1f} ± {rec[k]['std']:.1f}" if k != "equality" else
                 f"{rec[k]['mean']:.3f} ± {rec[k]['std']:.2f}" for k in ("productivity", "equality", "welfare")]
        return f"| {name} | {trained} | " + " | ".join(cells) + " |"

    if "free_market" in results:
        lines.append(row("no taxes, random workers", "nothing", results["free_market"]["random_workers"]))
    for regime, rec in results.items():
        trained = rec["trained_groups"].replace(",", " + ")
        if rec.get("init_from"):
            trained += f" (workers from {Path(rec['init_from']).parent.name.replace('_', ' ')})"
        lines.append(row(regime.replace("_", " "), trained, rec))
    steps = ", ".join(f"{r.replace('_', ' ')} {rec['env_steps'] / 1e6:.1f}M in {rec['train_seconds'] / 60:.1f} min"
                      for r, rec in results.items())
    chained = [r for r, rec in results.items() if rec.get("init_from")]
    order = (f"{', '.join(chained)} after the regime it started from, the others in parallel" if chained
             else "the regimes in parallel")
    meta = (f"PPO env-steps per regime: {steps} ({first['ppo']['num_envs']} envs, seed {first['ppo']['seed']}, "
            f"{order} on one {'GPU' if first.get('device_name', 'CPU') != 'CPU' else 'CPU'}); then "
            f"{first['eval_episodes']} evaluation episodes each, the same seeds for all.")
    command = first.get("command", "python -m benchmarks.economy_learning")
    page = (PAGE_HEAD + "\n".join(lines) + "\n\n" + meta + f"\n\nCommand: `{command}`"
            f"{' on ' + first['device_name'] if first.get('device_name') else ''}.\n\n"
            "![learning curves](economy_learning.png)\n")
    (docs / "economy_learning.md").write_text(page)
    print("\n".join(lines) + "\n" + meta)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.economy_learning", description=__doc__.splitlines()[0])
    ap.add_argument("--env-steps", type=int, default=20_000_000, help="training budget per regime")
    ap.add_argument("--num-envs", type=int, default=512)
    ap.add_argument("--eval-episodes", type=int, default=256)
    ap.add_argument("--device", default=None)
    ap.add_argument("--max-minutes", type=float, default=0.0, help="stop each regime's training after this (0: none)")
    ap.add_argument("--out", default="runs/economy_learning")
    ap.add_argument("--regimes", nargs="*", default=list(REGIMES), choices=list(REGIMES))
    ap.add_argument("--two-phase", action="store_true",
                    help="ai_planner starts from free_market's trained workers, after it (as in the AI Economist)")
    ap.add_argument("--report", metavar="OUT", default=None, help="only write the table and plot from OUT")
    ap.add_argument("--init-from", default="", help=argparse.SUPPRESS)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--command", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.report:
        report(Path(args.report))
        return
    out = Path(args.out)
    if args.child:
        train_one(args.child, args.env_steps, out, args.num_envs, args.eval_episodes, args.device,
                  args.max_minutes * 60, args.command, args.init_from)
        return
    if args.two_phase and not {"free_market", "ai_planner"} <= set(args.regimes):
        ap.error("--two-phase needs the regimes free_market and ai_planner")
    out.mkdir(parents=True, exist_ok=True)
    given = " ".join(argv if argv is not None else sys.argv[1:])
    base = [sys.executable, "-m", "benchmarks.economy_learning", "--env-steps", str(args.env_steps),
            "--num-envs", str(args.num_envs), "--eval-episodes", str(args.eval_episodes), "--out", str(out),
            "--max-minutes", str(args.max_minutes),
            "--command", f"python -m benchmarks.economy_learning {given}"]
    base += ["--device", args.device] if args.device else []
    def start(regime, extra=()):
        (out / regime).mkdir(exist_ok=True)
        log = open(out / regime / "log.txt", "w")
        return subprocess.Popen(base + ["--child", regime, *extra], stdout=log, stderr=subprocess.STDOUT)

    later = ("ai_planner",) if args.two_phase else ()
    procs = {r: start(r) for r in args.regimes if r not in later}
    if later:
        if procs["free_market"].wait() != 0:
            raise SystemExit(f"free_market failed: see {out}/free_market/log.txt")
        procs["ai_planner"] = start("ai_planner", ["--init-from", str(out / "free_market" / "checkpoint.pt")])
    failed = [r for r, p in procs.items() if p.wait() != 0]
    if failed:
        raise SystemExit(f"regimes failed: {failed}; see {out}/<regime>/log.txt")
    report(out)


if __name__ == "__main__":
    main()
