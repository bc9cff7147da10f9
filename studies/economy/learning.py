"""Does PPO learn the economy? Workers trained under each tax regime, compared on the same episodes.

    python -m studies.economy.learning --env-steps 20000000 --out /tmp/econ
    python -m studies.economy.learning --report studies/economy/results   # the docs page

Regimes, each trained from scratch with the same budget, seed and PPO settings:

- ``free_market``: no taxes (``disable_taxes=True``); the workers learn.
- ``us_federal``: the 2018 US federal brackets, scaled (``tax_model="us-federal-single-filer-2018-scaled"``).
- ``saez``: the AI Economist's adaptation of Saez's optimal-tax formula (``tax_model="saez"``), its rates
  fitted in each env to the incomes of its last 500 worker-periods; evaluated with what it learnt in training.
- ``ai_planner``: the workers and the tax-setting planner learn together (``tax_model="model_wrapper"``).
- ``flat_tax``, only when named in ``--regimes``: 40% in every bracket (``tax_model="fixed-bracket-rates"``),
  to ask whether a fixed tax beats the free market once the workers have adapted to it; ``--schedule
  NAME=R1,...,R7`` adds a regime of any fixed rates (the lowest bracket's first) under that name.

With ``--two-phase``, as in the AI Economist, workers first train without taxes (phase 1,
``pretrain``); then every regime starts from those workers (``Args.init_from``) and trains on for
its own budget (phase 2), so the regimes differ only in their taxes. In phase 2 the planner's
highest allowed rate is annealed, as the AI Economist's ``tax_annealing_schedule`` does: from 10%
to 100% over ``--anneal-episodes`` episodes per env, so workers are not taxed out of work by an
untrained planner. The phases can run apart (each within a time limit): ``--pretrain-only``
writes ``OUT/pretrain/workers.pt``, and ``--init-from`` that file runs phase 2.
``--pretrain-taxes random`` trains phase 1 under rates drawn afresh per bracket and period
(``tax_model="random-bracket-rates"``) instead of none: workers that never saw the rates change
have no reason to respond to them, and a planner facing such workers learns that taxes move coin
and cost no work. ``--planner-settings`` and ``--worker-settings`` give the planner and the workers
PPO settings of their own, e.g. the AI Economist's (``AI_ECONOMIST_PLANNER``, ``AI_ECONOMIST_WORKER``).

    python -m studies.economy.learning --pretrain-only --max-minutes 8 --out /tmp/econ
    python -m studies.economy.learning --init-from /tmp/econ/pretrain/workers.pt --max-minutes 7 --out /tmp/econ

A run longer than one sitting continues with ``--resume`` and the same arguments: every run ends by
writing ``OUT/REGIME/resume.pt`` (policies, optimiser state and each env's episode count, a few
MB; not the env state, tens of MB at 1024 envs), and a resumed regime trains on from it for
another ``--max-minutes`` on fresh episodes, its tax annealing where it was, its ``progress.csv``
and record carried on (keep ``result.json`` and ``progress.csv`` beside ``resume.pt``).

Each regime's trained policies then play ``--eval-episodes`` episodes (auto-reset off, so the final
state can be read), as do uniformly random workers without taxes (the floor). Reported per regime:
productivity (mean coin per worker at the end, escrow included), equality (1 - Gini of coin) and
social welfare (their product: the env's own figure, which the planner maximises). The regimes
run in parallel processes on one device, or on several GPUs with ``--gpus`` (one index per regime;
each process sees its GPU alone). A run writes its page into ``--out``; ``--report OUT``
writes it as ``docs/economy_learning.md`` with its figure.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import torch

from studies.economy.evaluation import SAEZ_STATE, figures, final_economy, schedule_rates

REGIMES = {
    "free_market": (dict(disable_taxes=True), "worker"),
    "us_federal": (dict(tax_model="us-federal-single-filer-2018-scaled"), "worker"),
    "ai_planner": (dict(tax_model="model_wrapper"), "worker,planner"),
    # Not run unless asked (--regimes): can a fixed tax beat the free market once the workers have adapted
    # to it? 40% in every bracket is where welfare peaked when the free market's workers played under flat
    # rates (studies.economy.response, docs/economy_learning.md).
    "flat_tax": (dict(tax_model="fixed-bracket-rates", fixed_bracket_rates=(0.4,) * 7), "worker"),
    # The AI Economist's adaptation of Saez's formula, its rates fitted per env to the incomes it sees.
    "saez": (dict(tax_model="saez"), "worker"),
}
DEFAULT_REGIMES = ["free_market", "us_federal", "saez", "ai_planner"]  # the AI Economist's comparison
BUILT_IN_REGIMES = frozenset(REGIMES)
# The AI Economist's phase-2 planner policy (tutorials/rllib/phase2/config.yaml), as far as our PPO can
# say it: a third of the workers' learning rate, wider networks, an entropy weight annealed from 2.0 to
# 0.125 over 50M steps against advantages left unnormalised (RLlib's PPO does not normalise them), its
# clip range, lambda, value weight, value clipping and gradient clip, and its one SGD pass over a batch in
# two minibatches (num_sgd_iter 1, sgd_minibatch_size half of train_batch_size); not its LSTM.
# Not the default. Its learning rate, width and final entropy weight alone, with normalised advantages,
# kept the planner's rates near uniform (welfare 142 against 179 with the workers' settings); the set
# without the one pass, after the planner's credit ran through its forced steps, learnt the same high
# rates as the default (welfare 85 against 82 at 118M env-steps; docs/economy_learning.md).
AI_ECONOMIST_PLANNER = {"learning_rate": 1e-4, "ent_coef": 2.0, "ent_coef_final": 0.125,
                        "ent_anneal_env_steps": 50_000_000, "norm_adv": False, "hidden": 256, "clip_coef": 0.3,
                        "gae_lambda": 0.98, "vf_coef": 0.05, "vf_clip": 50.0, "max_grad_norm": 10.0,
                        "update_epochs": 1, "num_minibatches": 2}
# The AI Economist's worker policy (tutorials/rllib/phase1/config.yaml, agent_policy), as far as our PPO can
# say it: its clip range, lambda, value weight, value clipping and gradient clip, one SGD pass over a batch in
# four minibatches (num_sgd_iter 1, sgd_minibatch_size a quarter of train_batch_size) and advantages left
# unnormalised; not its LSTM. Not the default (--worker-settings).
AI_ECONOMIST_WORKER = {"learning_rate": 3e-4, "ent_coef": 0.025, "gamma": 0.998, "gae_lambda": 0.98, "clip_coef": 0.3,
                       "vf_coef": 0.05, "vf_clip": 50.0, "max_grad_norm": 10.0, "update_epochs": 1,
                       "num_minibatches": 4, "norm_adv": False}
# What the Saez model learns across episodes: its fields but the per-period scratch
PRETRAIN = "pretrain"  # phase 1 of --two-phase: the workers alone, without taxes or (--pretrain-taxes) others'
# Phase 1's taxes: none, as the AI Economist; or rates drawn afresh per bracket and period, so the workers see
# them change and can learn to respond to them before a planner sets them.
PRETRAIN_TAXES = {"none": dict(disable_taxes=True), "random": dict(tax_model="random-bracket-rates")}
DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGE_HEAD = """# Training the economy

What PPO learns in `gather_trade_build_v0` under each tax regime, written by
`python -m studies.economy.learning` (module docstring: how it runs). Each regime trains (how,
below the table); then its policies and, as a floor, uniformly random workers without taxes play
the same evaluation episodes. *Productivity* is the mean coin per worker at the end of an episode (escrow
included), *equality* is 1 - Gini of coin, and *social welfare* is their product, the figure the
planner is rewarded for raising. A worker's return is its change in isoelastic utility of coin
minus its weighted labor. The AI Economist trained its policies for hundreds of millions of
steps, the workers first without taxes and then with the planner; read the budgets below against
that.

"""


def schedule_regime(text: str) -> tuple[str, tuple[float, ...]]:
    """``NAME=R1,...,R7`` or ``NAME=RATE`` (``--schedule``): a regime of fixed marginal rates, lowest bracket first."""
    name, values = schedule_rates(text)
    taken = sorted({*BUILT_IN_REGIMES, PRETRAIN, "runs"})  # "runs" is a folder of the results
    if not name.isidentifier() or name in taken:
        raise argparse.ArgumentTypeError(f"takes NAME=R1,...,R7 with a name of its own, an identifier not in {taken}; "
                                         f"got {text!r}")
    return name, values


def add_schedules(schedules) -> None:
    """Registers each (name, rates) of ``--schedule`` as a regime: here, and in the children by their command line."""
    for name, rates in schedules:
        REGIMES[name] = (dict(tax_model="fixed-bracket-rates", fixed_bracket_rates=rates), "worker")


def recorded_schedules(out: Path) -> list[tuple[str, tuple[float, ...]]]:
    """The ``--schedule`` regimes of the records under ``out`` and ``out/runs``, for a report to register."""
    found = []
    for path in sorted([*out.glob("*/result.json"), *out.glob("runs/*/result.json")]):
        rec = json.loads(path.read_text())
        rates = rec.get("env_kwargs", {}).get("fixed_bracket_rates")
        if rec.get("regime") not in BUILT_IN_REGIMES and rates is not None:
            found.append((rec["regime"], tuple(rates)))
    return found


def regime_label(regime: str) -> str:
    """A regime's name in the tables; a ``--schedule``'s with its rates."""
    rates = REGIMES[regime][0].get("fixed_bracket_rates") if regime not in BUILT_IN_REGIMES else None
    name = regime.replace("_", " ")
    return f"{name} ({'/'.join(f'{100 * r:g}' for r in rates)}%)" if rates else name


def anneal_schedule(episodes: float) -> tuple[float, float]:
    """(warmup, slope) of a limit that starts at 10% and reaches 100% after ``episodes`` episodes."""
    slope = 0.9 / episodes
    return (-0.1 / slope, slope)


def regime_kwargs(regime: str, anneal_episodes: float = 0.0, pretrain_taxes: str = "none") -> dict:
    kwargs = dict(PRETRAIN_TAXES[pretrain_taxes] if regime == PRETRAIN else REGIMES[regime][0])
    if regime == "ai_planner" and anneal_episodes:
        kwargs["tax_annealing_schedule"] = anneal_schedule(anneal_episodes)
    return kwargs


def ppo_args(regime: str, env_steps: int, out: Path, num_envs: int, device: str | None, init_from: str = "",
             anneal_episodes: float = 0.0, planner_settings: dict | None = None, env_kw: dict | None = None,
             pretrain_taxes: str = "none", worker_settings: dict | None = None):
    """The run's trainer settings; ``env_kw`` are env arguments of every regime (the regime's own win).

    ``worker_settings`` replace the preset's PPO settings (the planner's too, unless it has its own).
    """
    from trainers.config import preset, with_overrides

    kwargs = {**(env_kw or {}), **regime_kwargs(regime, anneal_episodes, pretrain_taxes)}
    groups = REGIMES.get(regime, (None, "worker"))[1]
    per_group = {"planner": planner_settings} if "planner" in groups.split(",") and planner_settings else {}
    return with_overrides(with_overrides(preset("gather_trade_build_v0"), **(worker_settings or {})),
                          env_kwargs=kwargs, train_groups=groups,
                          total_env_steps=env_steps, num_envs=num_envs, out=str(out / regime), device=device,
                          init_from=init_from, group_settings=per_group,
                          eval_episodes=0, gif=False, checkpoint_every=10_000)


@torch.no_grad()
def saez_state(env, n: int) -> dict[str, torch.Tensor]:
    """The Saez model's learnt state in ``env`` (its ring of past incomes, elasticity, mean rates), for n envs.

    With each env's episode count, at least 1: a reset that finds 0 starts the model afresh. A trained
    env's state is reused cyclically when ``n`` is more than it has envs.
    """
    index = torch.arange(n, device=env.device) % env.num_envs
    out = {name: getattr(env.state, name)[index].clone() for name in SAEZ_STATE}
    out["ep_count"] = env.state.ep_count[index].clamp(min=1)
    return out



def eval_kwargs(regime: str, anneal_episodes: float, episodes_done: float) -> tuple[dict, float]:
    """The env arguments of the evaluation, and the highest rate the planner may set in it.

    An annealed planner is evaluated under the limit its training reached (a fresh env starts its
    episode count at zero), never under rates it was not yet allowed to try.
    """
    kwargs = regime_kwargs(regime)
    if regime != "ai_planner" or not anneal_episodes:
        return kwargs, 1.0
    warmup, slope = anneal_schedule(anneal_episodes)
    limit = min(1.0, max(0.0, slope * (episodes_done - warmup)))
    if limit < 1.0:
        kwargs["tax_annealing_schedule"] = (-limit / slope, slope)
    return kwargs, limit


def checkpoint_summary(path: str) -> dict:
    """Where a warm start came from: its path, regime folder, env-steps and training seconds."""
    from trainers.config import Args

    saved = torch.load(path, map_location="cpu", weights_only=False)
    per_iteration = Args(**saved["args"]).env_steps_per_iteration
    return {"path": path, "env_steps": saved["iteration"] * per_iteration, "seconds": saved["seconds"],
            "env_kwargs": saved["args"]["env_kwargs"], "train_groups": saved["args"]["train_groups"]}


RESUME = "resume.pt"  # in a regime's folder: its policies, optimiser and episode counts, without env state


def resume_point(args, folder: Path) -> Path:
    """``folder/resume.pt``, checked to continue a run with ``args``'s settings; SystemExit naming what differs."""
    from trainers.config import Args, changed_settings

    path = folder / RESUME
    if not path.is_file():
        raise SystemExit(f"--resume: no {path} (a run writes it when it ends)")
    saved = Args(**torch.load(path, map_location="cpu", weights_only=False)["args"])
    mine = {k: v for k, v in dataclasses.asdict(args).items() if k != "init_from"}  # its path may move
    differ = changed_settings(saved, mine)
    if differ:
        raise SystemExit(f"--resume: {path} was trained with other settings: "
                         + ", ".join(f"{k} {getattr(saved, k)!r} (now {mine[k]!r})" for k in differ))
    return path


def train_for(args, max_seconds: float = 0.0, resume: Path | None = None):
    """``trainers.loop.train`` stopped after ``max_seconds`` (0: its budget); (trainer, seconds)."""
    from trainers.loop import train

    t0 = time.perf_counter()
    seen = {}

    def stop_at_deadline(trainer):
        seen["trainer"] = trainer
        if max_seconds and time.perf_counter() - t0 > max_seconds:
            raise KeyboardInterrupt  # train() then checkpoints and re-raises; the record says how far it got

    try:
        trainer = train(args, resume=resume, callback=stop_at_deadline)
    except KeyboardInterrupt:
        if "trainer" not in seen:
            raise
        trainer = seen["trainer"]
    return trainer, time.perf_counter() - t0


def train_one(regime: str, env_steps: int, out: Path, num_envs: int, eval_episodes: int, device: str | None,
              max_seconds: float = 0.0, command: str = "", init_from: str = "", anneal_episodes: float = 0.0,
              run_with: tuple[str, ...] = (), planner_settings: dict | None = None, env_kw: dict | None = None,
              resume: bool = False, pretrain_taxes: str = "none", worker_settings: dict | None = None):
    """Child process: trains one regime, evaluates it, writes ``out/regime/result.json``.

    The ``pretrain`` regime only trains, and writes its workers' policies to ``out/pretrain/workers.pt``.
    Every run ends by writing ``out/regime/resume.pt``; ``resume`` continues from it (and from the
    ``result.json`` and ``progress.csv`` beside it), so a run can span several sessions of a machine.
    """
    import gpu_zoo

    args = ppo_args(regime, env_steps, out, num_envs, device, init_from, anneal_episodes, planner_settings, env_kw,
                    pretrain_taxes, worker_settings)
    folder = out / regime
    earlier = json.loads((folder / "result.json").read_text()) if resume and (folder / "result.json").exists() else {}
    trainer, seconds = train_for(args, max_seconds, resume_point(args, folder) if resume else None)
    trainer.save(folder / RESUME, env_state=False)
    resumed = [*earlier.get("resumed_at_env_steps", []), earlier["env_steps"]] if earlier else []
    record = {"regime": regime, "env_kwargs": args.env_kwargs, "trained_groups": args.train_groups,
              "init_from": checkpoint_summary(init_from) if init_from else None,
              "command": command, "run_with": run_with, "device_name": torch.cuda.get_device_name(trainer.device)
              if trainer.device.type == "cuda" else "CPU", "visible_gpus": os.environ.get("CUDA_VISIBLE_DEVICES"),
              "env_steps": trainer.iteration * args.env_steps_per_iteration,
              "train_seconds": earlier.get("train_seconds", 0.0) + seconds, "resumed_at_env_steps": resumed,
              "eval_episodes": eval_episodes, "ppo": dataclasses.asdict(args), "worker_settings": worker_settings or {}}
    if regime == PRETRAIN:
        # The policies alone (1.4 MB, not the checkpoint's env state): what phase 2 starts from.
        torch.save({"args": dataclasses.asdict(args), "iteration": trainer.iteration, "seconds": trainer.seconds,
                    "policies": trainer.policies.state_dict()}, out / regime / "workers.pt")
        (out / regime / "result.json").write_text(json.dumps(record, indent=1))
        print(f"pretrained workers: {out / regime / 'workers.pt'}", flush=True)
        return
    episodes_done = float(trainer.env.state.ep_count.double().mean())
    kwargs, limit = eval_kwargs(regime, anneal_episodes, episodes_done)
    kwargs = {**(env_kw or {}), **kwargs}
    env = gpu_zoo.make("gather_trade_build_v0", num_envs=eval_episodes, device=trainer.device, autoreset=False,
                       validate=False, **kwargs)
    tax_state = saez_state(trainer.env, eval_episodes) if kwargs.get("tax_model") == "saez" else None
    trained = final_economy(env, trainer.policies.eval(), seed=12345, tax_state=tax_state)
    record.update({"eval_env_kwargs": kwargs, "max_rate_in_eval": limit, "anneal_episodes": anneal_episodes,
                   "tax_rates": trained["tax_rates"].mean(0).round(4).tolist(), **figures(trained)})
    if regime == "free_market":
        record["random_workers"] = figures(final_economy(env, {}, seed=12345))
    # Whether the workers work less under higher rates they see (studies.economy.response)
    from studies.economy.response import flat_rate_figures

    record["response"] = flat_rate_figures(trainer.policies["worker"], kwargs, episodes=min(64, eval_episodes),
                                           device=trainer.device)
    (out / regime / "result.json").write_text(json.dumps(record, indent=1))
    print(json.dumps({k: record[k] for k in ("regime", "productivity", "equality", "welfare")}), flush=True)



SETTING_NAMES = {"learning_rate": "learning rate", "ent_coef": "entropy weight", "hidden": "hidden width",
                 "gae_lambda": "GAE lambda", "gamma": "discount", "clip_coef": "clip range", "vf_coef": "value weight",
                 "max_grad_norm": "gradient clip", "vf_clip": "value clipping range",
                 "ent_coef_final": "entropy weight at the end",
                 "ent_anneal_env_steps": "entropy annealed over env-steps", "update_epochs": "epochs",
                 "num_minibatches": "minibatches"}
# Switches, in words when on and when off
SWITCH_NAMES = {"norm_adv": ("advantages normalised", "advantages not normalised"),
                "stagger_starts": ("every env's first episode started at a random step", "episodes started together")}


def settings_words(settings: dict) -> list[str]:
    """PPO settings in words, in their order."""
    return [SWITCH_NAMES[k][0 if v else 1] if k in SWITCH_NAMES else f"{SETTING_NAMES.get(k, k)} {v:g}"
            for k, v in settings.items()]


def worker_note(rec: dict) -> str:
    """The PPO settings a record's run gave its workers in place of the preset's ("" when none)."""
    return ", ".join(settings_words(rec.get("worker_settings") or {}))


def planner_note(rec: dict) -> str:
    """How a record's planner trained, in words, where it differs from the defaults ("" when it does not).

    Its own PPO settings, a value clipping set for every group, and the usual GAE through its
    forced steps in records from before ``gae_skip_forced``.
    """
    ppo = rec.get("ppo", {})
    own = ppo.get("group_settings", {}).get("planner", {})
    words = settings_words(own)
    if ppo.get("vf_clip") is not None and "vf_clip" not in own and "vf_clip" not in (rec.get("worker_settings") or {}):
        words.append(f"value clipping range {ppo['vf_clip']:g} (every group)")
    # Records from before Args.gae_skip_forced existed ran the usual GAE through the forced steps.
    lam = own.get("gae_lambda", ppo.get("gae_lambda"))
    if rec.get("regime") == "ai_planner" and not ppo.get("gae_skip_forced") and lam != 1.0:
        words.append("the usual GAE through its forced steps (no gae_skip_forced)")
    return ", ".join(words)


def phase1_taxes(env_kwargs: dict, short: bool = False) -> str:
    """How phase 1 taxed the workers, in words, from its env arguments."""
    if env_kwargs.get("tax_model") == "random-bracket-rates":
        return "random rates" if short else "under random rates, every bracket's drawn afresh each period"
    return "no taxes" if short else "without taxes"


def phase1_setup(env_kwargs: dict, phase2_kwargs: dict) -> str:
    """Phase 1's taxes in words, then its env arguments that phase 2 does not share (the page says those)."""
    taxes = {*PRETRAIN_TAXES["random"], *PRETRAIN_TAXES["none"]}
    own = [f", `{k}={v!r}`" for k, v in env_kwargs.items() if k not in taxes and phase2_kwargs.get(k) != v]
    return phase1_taxes(env_kwargs) + "".join(own)


def setup_note(rec: dict, main: dict) -> str:
    """What sets a run apart from the main table's: its start, env arguments, envs, and resume points."""
    words = []
    start, main_start = rec.get("init_from") or {}, main.get("init_from") or {}
    if start.get("env_steps") != main_start.get("env_steps"):
        words.append(f"from other phase-1 workers ({start['env_steps'] / 1e6:.0f}M env-steps "
                     f"{phase1_taxes(start['env_kwargs'])})" if start else "from scratch")
    own, shared = rec["env_kwargs"], main["env_kwargs"]
    for k in sorted(set(own) | set(shared)):
        if k in regime_kwargs(rec["regime"], 1.0) or k in regime_kwargs(main["regime"], 1.0):
            continue  # the regime's own arguments
        if k not in own:
            words.append(f"without `{k}`")
        elif own[k] != shared.get(k):
            words.append(f"`{k}={own[k]!r}`")
    if rec["ppo"]["num_envs"] != main["ppo"]["num_envs"]:
        words.append(f"{rec['ppo']['num_envs']} envs")
    if rec.get("resumed_at_env_steps"):
        words.append(f"resumed at {', '.join(f'{x / 1e6:.0f}M' for x in rec['resumed_at_env_steps'])}")
    return "".join(f", {w}" for w in words)


def response_section(out: Path) -> str:
    """The page's part on `studies.economy.response`: this page's runs first, then ``OUT/response.json``'s.

    ``response.json`` holds the figures of checkpoints measured apart: under the key ``pretrain``
    this page's phase-1 workers, under a folder name of ``OUT/runs`` that earlier run's workers.
    Runs that measured their own workers as they ended (``response`` in their ``result.json``) add
    theirs: the table's under the regime's name, earlier ones under their folder's.
    """
    from studies.economy.response import table

    def own_response(folder: Path) -> dict | None:
        record = folder / "result.json"
        rec = json.loads(record.read_text()) if record.exists() else {}
        if "response" not in rec:
            return None
        return {"env_steps": rec["env_steps"], "episodes": min(64, rec["eval_episodes"]), "rates": rec["response"]}

    path = out / "response.json"
    measured = json.loads(path.read_text()) if path.exists() else {}
    results = {PRETRAIN: measured.pop(PRETRAIN)} if PRETRAIN in measured else {}
    results.update({regime: r for regime in REGIMES if (r := own_response(out / regime))})
    results.update(measured)
    results.update({d.name: r for d in sorted((out / "runs").glob("*"))
                    if d.name not in measured and (r := own_response(d))})
    if not results:
        return ""
    episodes = next(iter(results.values()))["episodes"]
    return ("\n\n## Do the workers respond to the rates they see?\n\n"
            "Productivity (social welfare) of each run's workers under flat rates, every bracket alike from "
            f"the first step, on the same {episodes} episodes, each run under its own env arguments "
            "(`python -m studies.economy.response`). "
            "The first rows are this page's runs (its phase 1 where measured, then the table's); rows named by a "
            "folder of "
            "`studies/economy/results/runs` are earlier ones:\n\n"
            + table(results) + "\n\nWorkers that respond produce less at high rates. Workers that produce "
            "the same at every rate leave a planner nothing to learn but that taxes move coin: its best reply within "
            "an episode is then the highest rate, and training teaches the workers to work less whatever the rates. "
            "Workers learn to respond only where the rates they see change: beside a planner, or in a phase 1 "
            "under random rates (`--pretrain-taxes random`); without taxes or under one fixed schedule there is "
            "nothing to respond to. The observations hold the rates, but by default not "
            "the income a worker has earned so far in the period, which the AI Economist's LSTM policies can add "
            "up and ours, without memory, cannot: nothing then tells them what a period's work will cost on tax "
            "day. `observe_period_income=True` adds it.")


def swap_section(out: Path) -> str:
    """The page's part on `studies.economy.swap` ("" when there is none).

    ``OUT/swap.json`` holds this page's runs; earlier runs' are kept as ``OUT/runs/swap_<name>.json``.
    """
    from studies.economy.swap import table

    paths = [p for p in (out / "swap.json", *sorted((out / "runs").glob("swap_*.json"))) if p.exists()]
    if not paths:
        return ""
    parts = []
    for path in paths:
        result = json.loads(path.read_text())
        whose = ("This page's runs" if path.name == "swap.json"
                 else f"Earlier runs, {path.stem.removeprefix('swap_').replace('_', ' ')}")
        drawn = f", drawn from seed {result['seed']}" if "seed" in result else ""
        parts.append(f"{whose}, on the same {result['episodes']} episodes{drawn}:\n\n{table(result)}")
    return ("\n\n## Each set of workers under each tax setter\n\n"
            "Sets of workers, each named by its run (a regime of the table or a folder of "
            "`studies/economy/results/runs`), under each tax setter (`python -m studies.economy.swap`): "
            "a trained planner's policy, its average schedule held fixed, and fixed schedules. Social welfare (the "
            "workers' mean utility at the end of the episode, their own objective).\n\n" + "\n\n".join(parts)
            + "\n\nA column compares one setter's rates across sets of workers; a row, what one set of workers "
            "makes of each setter. Where workers that never trained under a setter's rates earn more utility under "
            "them than the workers that did, those did not learn a best reply to their taxes: their lower "
            "productivity is a failure of training, not the workers' answer to the rates.")


def report(out: Path, docs: Path = DOCS):
    """Table (markdown) and curves (PNG) from the regimes' results and progress logs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    add_schedules(recorded_schedules(out))
    found = [r for r in REGIMES if (out / r / "result.json").exists()]
    results = {r: json.loads((out / r / "result.json").read_text()) for r in found}
    if not results:
        raise SystemExit(f"no results under {out}")
    docs.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    init = next((rec["init_from"] for rec in results.values() if rec.get("init_from")), None)
    # Phase 1's folder: under OUT when the results were gathered there, else where the run left it.
    phase1 = (out / PRETRAIN if (out / PRETRAIN).is_dir() else Path(init["path"]).parent) if init else None
    curves = {regime: (out / regime / "progress.csv", init["env_steps"] if init else 0) for regime in results}
    if phase1 and (phase1 / "progress.csv").exists():
        curves = {f"pretrain ({phase1_taxes(init['env_kwargs'], short=True)})": (phase1 / "progress.csv", 0),
                  **curves}
    for name, (path, offset) in curves.items():
        rows = list(csv.DictReader(open(path)))
        for ax, col in zip(axes, ("return/worker", "return/planner"), strict=True):
            points = [((offset + int(r["env_steps"])) / 1e6, float(r[col])) for r in rows
                      if r.get(col) not in (None, "")]
            ax.plot(*zip(*points, strict=True), label=name.replace("_", " "),
                    color="black" if name.startswith(PRETRAIN) else None)
    if init:
        for ax in axes:
            ax.axvline(init["env_steps"] / 1e6, color="gray", linewidth=0.8)
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
            trained += " (from the pretrained workers)"
        lines.append(row(regime_label(regime), trained, rec))
    def annealed(rec):  # only a planner's rates are annealed
        return rec["regime"] == "ai_planner" and rec.get("anneal_episodes")

    def company(regime, rec):
        others = [r.replace("_", " ") for r in rec.get("run_with", []) if r != regime]
        return f" alongside {' and '.join(others)}" if others else (" alone" if rec.get("run_with") else "")

    steps = ", ".join(f"{r.replace('_', ' ')} {rec['env_steps'] / 1e6:.1f}M in {rec['train_seconds'] / 60:.1f} min"
                      f"{company(r, rec)}" for r, rec in results.items())
    gpus = {rec.get("visible_gpus") for rec in results.values()}  # set by --gpus
    on_gpu = first.get("device_name", "CPU") != "CPU"
    where = f"on {len(gpus)} GPUs" if on_gpu and len(gpus) > 1 else f"on one {'GPU' if on_gpu else 'CPU'}"
    if init:
        intro = (f"Phase 1: the workers trained {phase1_setup(init['env_kwargs'], first['env_kwargs'])} for "
                 f"{init['env_steps'] / 1e6:.1f}M env-steps "
                 f"({init['seconds'] / 60:.1f} min). Phase 2: every regime started from those workers and "
                 f"trained on for its own budget {where}: ")
    else:
        intro = f"Each regime trained from scratch {where}: "
    meta = (f"{intro}{steps} ({first['ppo']['num_envs']} envs, seed {first['ppo']['seed']}); then "
            f"{first['eval_episodes']} evaluation episodes each, the same seeds for all.")
    shared = {k: v for k, v in first["env_kwargs"].items() if k not in regime_kwargs(first["regime"], 1.0)}
    if shared:
        meta += " Env arguments of every regime: " + ", ".join(f"`{k}={v!r}`" for k, v in shared.items()) + "."
    planner = results.get("ai_planner", {})
    if planner.get("anneal_episodes"):
        meta += (f" The planner's highest allowed rate was annealed from 10% to 100% over "
                 f"{planner['anneal_episodes']:g} episodes per env; it reached "
                 f"{100 * planner['max_rate_in_eval']:.0f}% "
                 "by the end of training, the limit it was evaluated under.")
    if worker_note(first):
        meta += f" The workers trained with the PPO settings: {worker_note(first)}."
    if planner_note(planner):
        meta += f" The planner trained with its own PPO settings: {planner_note(planner)}."
    taxed = {r: rec["tax_rates"] for r, rec in results.items() if any(rec.get("tax_rates", []))}
    if taxed:
        meta += (" Marginal rates in the evaluation episodes, averaged over their steps, brackets from the lowest: "
                 + "; ".join(f"{r.replace('_', ' ')} " + " / ".join(f"{100 * x:.0f}" for x in rates) + "%"
                             for r, rates in taxed.items()) + ".")
    earlier = {d.name: json.loads((d / "result.json").read_text())
               for d in sorted((out / "runs").glob("*")) if (d / "result.json").exists()}
    others = {name: rec for name, rec in earlier.items() if rec["regime"] != PRETRAIN}
    if others:
        meta += ("\n\nOther runs of a regime, evaluated on the same episodes; each started from the same "
                 "phase-1 workers, with the same env arguments, unless it says otherwise:\n\n"
                 + "| run | training | productivity (coin) | equality | social welfare |\n"
                 + "| --- | --- | --- | --- | --- |\n"
                 + "\n".join(row(regime_label(rec["regime"]) + (f", rates annealed over "
                                  f"{rec['anneal_episodes']:g} episodes" if annealed(rec) else ""),
                                  f"{rec['env_steps'] / 1e6:.1f}M env-steps{company(rec['regime'], rec)}"
                                  + setup_note(rec, first)
                                  + (f", rate limit reached {100 * rec['max_rate_in_eval']:.0f}%"
                                     if annealed(rec) else "")
                                  + (f"; workers: {worker_note(rec)}" if worker_note(rec) != worker_note(first)
                                     else "")
                                  + (f"; planner: {planner_note(rec)}" if planner_note(rec) else ""), rec)
                             for name, rec in others.items()))
    phase1_record = phase1 / "result.json" if phase1 else None
    commands = [json.loads(phase1_record.read_text()).get("command", "")] if phase1_record and phase1_record.exists() \
        else []
    for rec in [*results.values(), *earlier.values()]:
        if rec.get("command") and rec["command"] not in commands:
            commands.append(rec["command"])
    command = "Commands, in order:\n\n" + "\n".join(f"    {c}" for c in commands) + "\n\nrun" if len(commands) > 1 \
        else f"Command: `{commands[0] if commands else 'python -m studies.economy.learning'}`"
    page = (PAGE_HEAD + "\n".join(lines) + "\n\n" + meta + f"\n\n{command}"
            f"{' on ' + first['device_name'] if first.get('device_name') else ''}.\n\n"
            "![learning curves](economy_learning.png)\n" + response_section(out) + swap_section(out))
    (docs / "economy_learning.md").write_text(page)
    print("\n".join(lines) + "\n" + meta)


def gpu_plan(regimes, gpus) -> dict[str, int]:
    """Each regime's GPU: ``gpus`` in ``regimes`` order, cycled when shorter; empty without ``gpus``."""
    return {r: gpus[i % len(gpus)] for i, r in enumerate(regimes)} if gpus else {}


def sharing(regime: str, plan: dict[str, int], regimes) -> list[str]:
    """The regimes on ``regime``'s device at the same time, itself included: its record's company."""
    return [r for r in regimes if plan.get(r) == plan.get(regime)]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m studies.economy.learning", description=__doc__.splitlines()[0])
    ap.add_argument("--env-steps", type=int, default=20_000_000, help="training budget per regime")
    ap.add_argument("--num-envs", type=int, default=512)
    ap.add_argument("--eval-episodes", type=int, default=256)
    ap.add_argument("--device", default=None)
    ap.add_argument("--gpus", nargs="*", type=int, default=None, metavar="INDEX",
                    help="the GPU of each regime, in --regimes order (cycled when shorter; phase 1 takes the first): "
                         "regimes on one GPU share it, e.g. --regimes ai_planner free_market us_federal --gpus 0 1 1")
    ap.add_argument("--max-minutes", type=float, default=0.0, help="stop each regime's training after this (0: none)")
    ap.add_argument("--out", default="runs/economy_learning")
    ap.add_argument("--regimes", nargs="*", default=DEFAULT_REGIMES, metavar="REGIME",
                    help=f"regimes to train: of {sorted(REGIMES)} and those named by --schedule")
    ap.add_argument("--schedule", action="append", type=schedule_regime, default=[], metavar="NAME=R1,...,R7",
                    help="a regime of fixed marginal rates per bracket (lowest first), trained as the others are; "
                         "name it in --regimes")
    ap.add_argument("--two-phase", action="store_true",
                    help="workers train without taxes first, then every regime starts from them (as the AI Economist)")
    ap.add_argument("--pretrain-only", action="store_true", help="only phase 1: writes OUT/pretrain/workers.pt")
    ap.add_argument("--init-from", default="", metavar="WORKERS_PT",
                    help="only phase 2, every regime starting from these pretrained workers")
    ap.add_argument("--pretrain-minutes", type=float, default=None,
                    help="phase 1's time limit (default: --max-minutes)")
    ap.add_argument("--pretrain-taxes", default="none", choices=list(PRETRAIN_TAXES),
                    help="phase 1's taxes: none (the AI Economist's), or random rates drawn afresh per bracket and "
                         "period, which teach the workers to respond to the rates they see")
    ap.add_argument("--anneal-episodes", type=float, default=30.0,
                    help="phase 2: episodes per env over which the planner's rate limit rises from 10%% to 100%%")
    ap.add_argument("--planner-settings", type=json.loads, default={}, metavar="JSON",
                    help="the planner's own PPO settings (Args.group_settings; default: the workers'), e.g. the AI "
                         f"Economist's {json.dumps(AI_ECONOMIST_PLANNER)}")
    ap.add_argument("--worker-settings", type=json.loads, default={}, metavar="JSON",
                    help="the workers' PPO settings in place of the preset's (Args fields; the planner's too unless "
                         f"--planner-settings), e.g. the AI Economist's {json.dumps(AI_ECONOMIST_WORKER)}; "
                         '{"stagger_starts": true} starts every env\'s first episode at a random step, for the '
                         "whole run")
    ap.add_argument("--env-kw", type=json.loads, default={}, metavar="JSON",
                    help='env arguments of every regime and phase, e.g. the AI Economist\'s training configuration '
                         '{"fixed_four_skill_and_loc": true}')
    ap.add_argument("--resume", action="store_true",
                    help="continue each regime (or phase 1) from OUT/REGIME/resume.pt, which every run writes when "
                         "it ends, for another --max-minutes; the same settings as the run it continues")
    ap.add_argument("--report", metavar="OUT", default=None, help="only write the table and plot from OUT")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--command", default="", help=argparse.SUPPRESS)
    ap.add_argument("--run-with", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    add_schedules(args.schedule)
    unknown = [r for r in args.regimes if r not in REGIMES]
    if unknown and not args.report:
        ap.error(f"--regimes: unknown {unknown}; choose from {sorted(REGIMES)} or name a --schedule")
    if args.report:
        report(Path(args.report))
        return
    out = Path(args.out)
    if args.child:
        anneal = args.anneal_episodes if args.init_from else 0.0
        run_with = tuple(r for r in args.run_with.split(",") if r)
        train_one(args.child, args.env_steps, out, args.num_envs, args.eval_episodes, args.device,
                  args.max_minutes * 60, args.command, args.init_from, anneal, run_with, args.planner_settings,
                  args.env_kw, args.resume, args.pretrain_taxes, args.worker_settings)
        return
    if sum(map(bool, (args.two_phase, args.pretrain_only, args.init_from))) > 1:
        ap.error("--two-phase, --pretrain-only and --init-from are alternatives")
    if args.anneal_episodes <= 0:
        ap.error("--anneal-episodes must be positive")
    if args.gpus is not None and (not args.gpus or min(args.gpus) < 0 or args.device not in (None, "cuda")):
        ap.error("--gpus takes one or more GPU indices (0, 1, ...), with --device cuda or none")
    if args.init_from and not Path(args.init_from).is_file():
        ap.error(f"--init-from {args.init_from}: no such file")
    try:  # before any child starts: a misspelt setting is refused here, once
        ppo_args(PRETRAIN, args.env_steps, out, args.num_envs, args.device, "", 0.0, args.planner_settings,
                 args.env_kw, args.pretrain_taxes, args.worker_settings)
    except (ValueError, TypeError) as exc:
        ap.error(f"--worker-settings or --planner-settings: {exc}")
    out.mkdir(parents=True, exist_ok=True)
    given = shlex.join(argv if argv is not None else sys.argv[1:])  # quoted: a JSON setting holds spaces
    base = [sys.executable, "-m", "studies.economy.learning", "--env-steps", str(args.env_steps),
            "--num-envs", str(args.num_envs), "--eval-episodes", str(args.eval_episodes), "--out", str(out),
            "--anneal-episodes", str(args.anneal_episodes), "--planner-settings", json.dumps(args.planner_settings),
            "--env-kw", json.dumps(args.env_kw), "--pretrain-taxes", args.pretrain_taxes,
            "--worker-settings", json.dumps(args.worker_settings),
            "--command", f"python -m studies.economy.learning {given}"]
    base += ["--device", args.device] if args.device else []
    base += ["--resume"] if args.resume else []
    for name, rates in args.schedule:
        base += ["--schedule", f"{name}=" + ",".join(map(repr, rates))]

    gpus = gpu_plan(args.regimes, args.gpus)

    def start(regime, minutes, extra=()):
        (out / regime).mkdir(exist_ok=True)
        log = open(out / regime / "log.txt", "w")
        env = None
        if gpus:  # the child sees its GPU alone, as cuda:0
            gpu = gpus.get(regime, args.gpus[0])
            env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu)}
        return subprocess.Popen(base + ["--max-minutes", str(minutes), "--child", regime, *extra], stdout=log,
                                stderr=subprocess.STDOUT, env=env)

    init_from = args.init_from
    if args.two_phase or args.pretrain_only:
        minutes = args.max_minutes if args.pretrain_minutes is None else args.pretrain_minutes
        if start(PRETRAIN, minutes).wait() != 0:
            raise SystemExit(f"phase 1 failed: see {out}/{PRETRAIN}/log.txt")
        init_from = str(out / PRETRAIN / "workers.pt")
        if args.pretrain_only:
            print(f"phase 1 done; run phase 2 with --init-from {init_from}")
            return
    extra = ["--init-from", init_from] if init_from else []
    procs = {r: start(r, args.max_minutes, [*extra, "--run-with", ",".join(sharing(r, gpus, args.regimes))])
             for r in args.regimes}
    failed = [r for r, p in procs.items() if p.wait() != 0]
    if failed:
        raise SystemExit(f"regimes failed: {failed}; see {out}/<regime>/log.txt")
    report(out, docs=out)  # the run's own page; `--report OUT` writes the published one under docs/


if __name__ == "__main__":
    main()
