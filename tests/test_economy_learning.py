"""The economy learning study's annealing, evaluation limit and evaluation report.

Its tax annealing schedule, the limit a planner is evaluated under, and what an evaluation
episode reports.
"""

import argparse
import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import gpu_zoo
from gpu_zoo.economy.gather_trade_build import constants
from gpu_zoo.economy.params import EconomyParams
from gpu_zoo.economy.taxes import rate_limit
from studies.economy.learning import (
    REGIMES,
    anneal_schedule,
    eval_kwargs,
    final_economy,
    planner_note,
    regime_kwargs,
)
from tests.economy.helpers import ECON_SMALL
from tests.helpers import ECON_SAEZ


def env_limit(kwargs: dict, episodes: int) -> float:
    """The highest rate the env itself allows after ``episodes`` episodes (its kernel function, run in Python)."""
    p = SimpleNamespace(**constants(EconomyParams(**kwargs)))
    return float(rate_limit.py_func(np.array([episodes]), p, 0))


def test_schedule_rises_from_a_tenth_to_everything_over_the_given_episodes():
    kwargs = regime_kwargs("ai_planner", anneal_episodes=30)
    assert kwargs["tax_annealing_schedule"] == anneal_schedule(30)
    assert env_limit(kwargs, 0) == pytest.approx(0.1)
    assert env_limit(kwargs, 15) == pytest.approx(0.55)
    assert env_limit(kwargs, 30) == pytest.approx(1.0) and env_limit(kwargs, 31) == 1.0
    assert "tax_annealing_schedule" not in regime_kwargs("us_federal", anneal_episodes=30)


def test_an_annealed_planner_is_evaluated_under_the_limit_its_training_reached():
    kwargs, limit = eval_kwargs("ai_planner", 30, episodes_done=12)
    assert limit == pytest.approx(env_limit(regime_kwargs("ai_planner", 30), 12))
    assert env_limit(kwargs, 0) == pytest.approx(limit)  # a fresh evaluation env starts at that limit
    kwargs, limit = eval_kwargs("ai_planner", 30, episodes_done=45)
    assert limit == 1.0 and "tax_annealing_schedule" not in kwargs
    assert eval_kwargs("us_federal", 30, episodes_done=3) == (REGIMES["us_federal"][0], 1.0)
    assert eval_kwargs("ai_planner", 0.0, episodes_done=3) == (REGIMES["ai_planner"][0], 1.0)


@pytest.mark.parametrize("regime", ["free_market", "us_federal", "ai_planner", "flat_tax"])
def test_an_evaluation_episode_reports_the_rates_in_force(regime):
    # The rule tests' sizes: the planner's regime (the env's defaults) shares their compiled kernels.
    env = gpu_zoo.make("gather_trade_build_v0", num_envs=2, device="cpu", autoreset=False, **ECON_SMALL,
                       **regime_kwargs(regime))
    out = final_economy(env, {}, seed=3)  # random workers, and a random planner
    assert out["tax_rates"].shape == (2, 7) and set(out) == {"productivity", "equality", "welfare", "tax_rates"}
    if regime == "free_market":
        assert not out["tax_rates"].any()
    elif regime in ("us_federal", "flat_tax"):  # in force from the first step
        np.testing.assert_allclose(out["tax_rates"], env.state.fixed_rates.numpy())
        rates = (0.4,) * 7 if regime == "flat_tax" else (0.1, 0.12, 0.22, 0.24, 0.32, 0.35, 0.37)
        np.testing.assert_allclose(out["tax_rates"], np.tile(rates, (2, 1)))
    else:
        # a multiple of 5% set on the first step of each period: the average is one of their means
        assert 0 < out["tax_rates"].max() <= 1
        periods = ECON_SMALL["max_cycles"] // ECON_SMALL["tax_period"]
        twentieths = out["tax_rates"] * periods * 20
        np.testing.assert_allclose(twentieths, np.round(twentieths), atol=1e-9)
    assert torch.isfinite(torch.as_tensor(out["welfare"])).all()


def test_the_planner_credit_check_refuses_a_missing_workers_file(tmp_path, capsys):
    from studies.economy.planner_credit import main

    with pytest.raises(SystemExit):
        main(["--init-from", str(tmp_path / "missing.pt")])
    assert "missing.pt: no such file" in capsys.readouterr().err


def test_a_record_says_how_its_planner_was_credited():
    """Records from before GAE ran through the forced steps say so; lambda 1 needs no word."""
    current = {"regime": "ai_planner", "ppo": {"gae_lambda": 0.95, "gae_skip_forced": True, "group_settings": {}}}
    older = {"regime": "ai_planner", "ppo": {"gae_lambda": 0.95, "group_settings": {}}}
    lambda_one = {"regime": "ai_planner",
                  "ppo": {"gae_lambda": 0.95, "group_settings": {"planner": {"gae_lambda": 1.0}}}}
    fixed = {"regime": "free_market", "ppo": {"gae_lambda": 0.95, "group_settings": {}}}
    assert planner_note(current) == "" and planner_note(fixed) == ""
    assert "usual GAE" in planner_note(older)
    assert planner_note(lambda_one) == "GAE lambda 1"


def test_a_resume_continues_only_a_run_of_the_same_settings(tmp_path):
    from studies.economy.learning import RESUME, ppo_args, resume_point
    from trainers.config import with_overrides

    args = ppo_args("ai_planner", 10_000, tmp_path, 4, "cpu", anneal_episodes=100)
    folder = tmp_path / "ai_planner"
    with pytest.raises(SystemExit, match="no .*resume.pt"):
        resume_point(args, folder)
    folder.mkdir()
    torch.save({"args": dataclasses.asdict(args)}, folder / RESUME)
    moved = with_overrides(args, out="/elsewhere", device="cuda", total_env_steps=20_000)  # run control may change
    assert resume_point(moved, folder) == folder / RESUME
    with pytest.raises(SystemExit, match=r"num_envs 4 \(now 8\)"):
        resume_point(with_overrides(args, num_envs=8), folder)


def test_a_flat_rate_is_in_force_on_every_bracket_from_the_first_step():
    env = gpu_zoo.make("gather_trade_build_v0", num_envs=2, device="cpu", autoreset=False, **ECON_SMALL,
                       **regime_kwargs("ai_planner"))
    out = final_economy(env, {}, seed=3, flat_rate=0.35)
    np.testing.assert_allclose(out["tax_rates"], 0.35)


def test_the_response_check_plays_a_checkpoints_workers_under_each_flat_rate(tmp_path):
    from studies.economy.response import _rate, response, table
    from trainers.config import Args
    from trainers.ppo import make_env, make_policies

    args = Args(env_id="gather_trade_build_v0", env_kwargs={**ECON_SMALL, **regime_kwargs("free_market")},
                num_envs=4, num_steps=8, device="cpu")
    policies = make_policies(make_env(args, num_envs=1), ["worker"], args)
    path = tmp_path / "checkpoint.pt"
    torch.save({"args": dataclasses.asdict(args), "iteration": 3, "policies": policies.state_dict()}, path)
    rec = response(path, rates=(0.0, 1.0), episodes=2, device="cpu")
    assert rec["env_steps"] == 3 * args.env_steps_per_iteration and list(rec["rates"]) == ["0", "1"]
    assert "disable_taxes" not in rec["env_kwargs"]  # the free market's workers face the rates
    assert set(rec["rates"]["1"]) == {"productivity", "equality", "welfare"}
    assert "| 0% | 100% | productivity at 100% / at 0% |" in table({"free_market": rec})
    with pytest.raises(Exception, match="multiple of 0.05"):
        _rate("0.33")


def test_a_run_says_how_its_start_envs_and_calls_differ_from_the_main_table():
    from studies.economy.learning import setup_note

    start = {"env_steps": 214_630_400, "env_kwargs": {"disable_taxes": True, "observe_period_income": True}}
    main = {"regime": "ai_planner", "ppo": {"num_envs": 1024}, "init_from": start,
            "env_kwargs": {"tax_model": "model_wrapper", "observe_period_income": True}}
    same = {"regime": "free_market", "ppo": {"num_envs": 1024}, "init_from": start,
            "env_kwargs": {"disable_taxes": True, "observe_period_income": True}}
    assert setup_note(same, main) == ""  # the regime's own arguments are no difference
    rec = {**same, "ppo": {"num_envs": 4096}, "resumed_at_env_steps": [306_380_800, 626_688_000]}
    assert setup_note(rec, main) == ", 4096 envs, resumed at 306M, 627M"
    earlier = {**same, "init_from": {"env_steps": 139_264_000, "env_kwargs": {"tax_model": "random-bracket-rates"}},
               "env_kwargs": {"disable_taxes": True, "obs_range": 3}}
    assert setup_note(earlier, main) == (", from other phase-1 workers (139M env-steps under random rates, every "
                                         "bracket's drawn afresh each period), `obs_range=3`, without "
                                         "`observe_period_income`")
    assert setup_note({**same, "init_from": None}, main) == ", from scratch"


def test_phase_1_trains_without_taxes_or_under_random_rates():
    from studies.economy.learning import PRETRAIN, ppo_args

    assert regime_kwargs(PRETRAIN) == {"disable_taxes": True}
    args = ppo_args(PRETRAIN, 1000, Path("/tmp/x"), 4, "cpu", env_kw={"observe_period_income": True},
                    pretrain_taxes="random")
    assert args.env_kwargs == {"observe_period_income": True, "tax_model": "random-bracket-rates"}
    assert args.train_groups == "worker"
    EconomyParams(**args.env_kwargs)  # the env takes them


def test_phase_1_is_told_by_its_taxes_and_the_env_arguments_phase_2_does_not_share():
    from studies.economy.learning import phase1_setup

    shared = {"observe_period_income": True, "fixed_four_skill_and_loc": True}
    phase1 = {**shared, "energy_warmup_constant": 10000, "energy_warmup_method": "auto", "disable_taxes": True}
    assert phase1_setup(phase1, shared) == ("without taxes, `energy_warmup_constant=10000`, "
                                            "`energy_warmup_method='auto'`")
    random = {**shared, "tax_model": "random-bracket-rates"}
    assert phase1_setup(random, {**shared, "observe_period_income": False}) == (
        "under random rates, every bracket's drawn afresh each period, `observe_period_income=True`")


def test_regimes_spread_over_the_gpus_given_and_name_only_their_neighbours():
    from studies.economy.learning import gpu_plan, sharing

    regimes = ["ai_planner", "free_market", "us_federal"]
    plan = gpu_plan(regimes, [0, 1, 1])
    assert plan == {"ai_planner": 0, "free_market": 1, "us_federal": 1}
    assert sharing("ai_planner", plan, regimes) == ["ai_planner"]
    assert sharing("us_federal", plan, regimes) == ["free_market", "us_federal"]
    assert gpu_plan(regimes, [0, 1]) == {"ai_planner": 0, "free_market": 1, "us_federal": 0}
    assert gpu_plan(regimes, None) == {} and sharing("us_federal", {}, regimes) == regimes  # one device: all share


def test_the_swap_check_plays_each_checkpoints_workers_under_each_setter(tmp_path):
    from studies.economy.evaluation import schedule_rates as _schedule
    from studies.economy.swap import swap, table
    from trainers.config import Args
    from trainers.ppo import make_env, make_policies

    paths, env = {}, None
    for regime in ("ai_planner", "flat_tax"):  # a flat-tax checkpoint's own rates are replaced by each setter's
        args = Args(env_id="gather_trade_build_v0", env_kwargs={**ECON_SMALL, **regime_kwargs(regime)},
                    num_envs=4, num_steps=8, device="cpu")
        env = env or make_env(args, num_envs=1)  # the planner's env sizes both: no kernels of the flat tax's own
        policies = make_policies(env, REGIMES[regime][1].split(","), args)
        paths[regime] = tmp_path / regime / "checkpoint.pt"
        paths[regime].parent.mkdir()
        torch.save({"args": dataclasses.asdict(args), "iteration": 1, "policies": policies.state_dict()},
                   paths[regime])
    name, flat = _schedule("flat_20=0.2")
    rec = swap({"flat_tax": paths["flat_tax"], "ai_planner": paths["ai_planner"]}, {"ai_planner": paths["ai_planner"]},
               {name: flat}, episodes=2, seed=5, device="cpu")
    assert list(rec["figures"]) == ["ai_planner", "ai_planner mean", "flat_20"] and rec["seed"] == 5
    assert rec["schedules"]["flat_20"] == [0.2] * 7 and len(rec["schedules"]["ai_planner mean"]) == 7
    assert all(0.0 <= r <= 1.0 for r in rec["schedules"]["ai_planner"])
    figs = rec["figures"]["flat_20"]["flat_tax"]
    assert set(figs) == {"productivity", "equality", "welfare", "utility", "labor"} and figs["labor"]["n"] == 2
    assert "fixed_bracket_rates" not in rec["env_kwargs"] and "tax_model" not in rec["env_kwargs"]
    text = table(rec)
    assert text.startswith("| workers from | ai planner | ai planner mean | flat 20 |") and "| flat tax |" in text
    with pytest.raises(Exception, match="NAME=RATE"):
        _schedule("flat=0.2,0.3")


def test_the_page_shows_the_swap_check_when_it_was_run(tmp_path):
    from studies.economy.learning import swap_section

    assert swap_section(tmp_path) == ""
    figs = {k: {"mean": m, "std": 0.0, "n": 2} for k, m in
            (("productivity", 400.0), ("equality", 0.5), ("welfare", 200.0), ("utility", 40.25), ("labor", 300.0))}
    (tmp_path / "swap.json").write_text(json.dumps({
        "env_kwargs": {}, "episodes": 2, "schedules": {"flat_40": [0.4] * 7},
        "figures": {"flat_40": {"free_market": figs}}}))
    text = swap_section(tmp_path)
    assert "This page's runs, on the same 2 episodes:" in text and "| free market | 200 (40.2) |" in text
    assert "flat 40 40/40/40" in text
    (tmp_path / "runs").mkdir()  # an earlier study's, kept apart, follows with its seed
    (tmp_path / "runs/swap_from_old_runs.json").write_text(json.dumps({
        "env_kwargs": {}, "episodes": 3, "seed": 9, "schedules": {"flat_20": [0.2] * 7},
        "figures": {"flat_20": {"old_workers": figs}}}))
    text = swap_section(tmp_path)
    assert text.index("This page's runs") < text.index("Earlier runs, from old runs, on the same 3 episodes, "
                                                       "drawn from seed 9:")
    assert "| old workers | 200 (40.2) |" in text and text.count("## ") == 1


def test_the_page_shows_every_runs_response_once_the_tables_first(tmp_path):
    from studies.economy.learning import response_section

    assert response_section(tmp_path) == ""

    def measured(productivity):
        figs = {rate: {k: {"mean": m, "std": 0.0, "n": 2} for k, m in
                       (("productivity", productivity * (1 - rate)), ("equality", 0.5),
                        ("welfare", productivity * (1 - rate) / 2))} for rate in (0.0, 1.0)}
        return {str(rate): v for rate, v in figs.items()}

    def record(folder, productivity):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "result.json").write_text(json.dumps(
            {"env_steps": 5e6, "eval_episodes": 256, "response": measured(productivity)}))

    record("free_market", 400.0)
    record("runs/saez", 300.0)
    record("runs/front", 200.0)  # also measured apart: that figure is the one shown
    (tmp_path / "runs/old").mkdir(parents=True)  # a run without a response of its own
    (tmp_path / "runs/old/result.json").write_text(json.dumps({"env_steps": 1e6, "eval_episodes": 8}))
    (tmp_path / "response.json").write_text(json.dumps({
        "pretrain": {"env_steps": 2e6, "episodes": 64, "rates": measured(100.0)},
        "front": {"env_steps": 4e6, "episodes": 64, "rates": measured(250.0)}}))
    rows = [line for line in response_section(tmp_path).splitlines() if line.startswith("| ")][2:]
    assert [row.split(" | ")[0] for row in rows] == ["| pretrain", "| free market", "| front", "| saez"]
    assert rows[2].startswith("| front | 4M | 250 (125) | 0 (0) |")
    assert "same 64 episodes" in response_section(tmp_path)


def test_worker_settings_replace_the_presets_where_the_planner_has_none_of_its_own(capsys):
    from studies.economy.learning import AI_ECONOMIST_WORKER, main, ppo_args, worker_note

    args = ppo_args("ai_planner", 1000, Path("/tmp/unused"), 4, "cpu", planner_settings={"learning_rate": 1e-4},
                    worker_settings=AI_ECONOMIST_WORKER)
    assert (args.clip_coef, args.gae_lambda, args.vf_coef, args.update_epochs, args.norm_adv) == (0.3, 0.98, 0.05, 1,
                                                                                                  False)
    assert args.group_settings == {"planner": {"learning_rate": 1e-4}}
    assert ppo_args("free_market", 1000, Path("/tmp/unused"), 4, "cpu").clip_coef == 0.2  # the preset's
    assert worker_note({"worker_settings": {"clip_coef": 0.3, "norm_adv": False}}) == \
        "clip range 0.3, advantages not normalised"
    assert worker_note({}) == ""  # records from before the option
    staggered = ppo_args("free_market", 1000, Path("/tmp/unused"), 4, "cpu", worker_settings={"stagger_starts": True})
    assert staggered.stagger_starts and not ppo_args("free_market", 1000, Path("/tmp/unused"), 4, "cpu").stagger_starts
    assert worker_note({"worker_settings": {"stagger_starts": True}}) == \
        "every env's first episode started at a random step"
    with pytest.raises(SystemExit):
        main(["--worker-settings", '{"clip": 0.3}', "--env-steps", "1000", "--out", "/tmp/unused"])
    assert "unknown settings ['clip']" in capsys.readouterr().err


def test_the_saez_regime_is_evaluated_with_what_its_envs_learnt_in_training():
    from studies.economy.learning import saez_state

    kw = ECON_SAEZ  # the parity test's: the same compiled kernels
    trained = gpu_zoo.make("gather_trade_build_v0", num_envs=2, device="cpu", **kw)
    trained.reset(seed=1)
    gen = torch.Generator().manual_seed(5)
    s = trained.state
    ring = ECON_SAEZ["saez_buffer_size"]
    s.saez_income.copy_(torch.rand(2, ring, generator=gen, dtype=torch.float64) * 400 - 20)
    s.saez_rate.copy_(torch.rand(2, ring, generator=gen, dtype=torch.float64) * 0.6)
    s.saez_count.fill_(ring)
    s.saez_elas.copy_(torch.tensor([0.3, 0.9], dtype=torch.float64))
    s.saez_avg_rates.copy_(torch.rand(2, 7, generator=gen, dtype=torch.float64) * 0.5)
    state = saez_state(trained, 4)  # cyclic: envs 0 and 2 (1 and 3) get the same state
    assert torch.equal(state["saez_elas"], torch.tensor([0.3, 0.9, 0.3, 0.9], dtype=torch.float64))

    def first_rates(tax_state):
        env = gpu_zoo.make("gather_trade_build_v0", num_envs=4, device="cpu", autoreset=False, **kw)
        seen, step, reset = [], env.step, env.reset

        def recording_reset(**reset_kw):  # what the first observation says: the rates in force after the reset
            obs = reset(**reset_kw)
            seen.append(env.state.tax_rate.clone())
            return obs

        env.reset = recording_reset

        def recording_step(actions):
            out = step(actions)
            seen.append((env.state.tax_rate.clone(), env.state.saez_count.clone()))
            return out

        env.step = recording_step
        final_economy(env, {}, seed=3, tax_state=tax_state)
        return seen

    seen = first_rates(state)
    # after the reset: the trained envs' running means; after the first step: the formula's rates
    assert torch.equal(seen[0], state["saez_avg_rates"]) and (state["ep_count"] >= 1).all()
    rates, count = seen[1]  # a full ring: the formula's rates, the same for the same ring
    assert (count == ring).all() and torch.equal(rates[0], rates[2]) and torch.equal(rates[1], rates[3])
    assert not torch.equal(rates[0], rates[1])
    rates, count = first_rates(None)[1]  # a fresh env: uniform draws until its ring fills, env by env
    assert (count == 0).all() and not torch.equal(rates[0], rates[2])


def test_a_schedule_is_a_regime_of_fixed_rates_named_on_the_command_line(capsys):
    from studies.economy.learning import add_schedules, main, regime_kwargs, schedule_regime

    name, rates = schedule_regime("front=1,0.5,0,0,0,0,0.25")
    assert (name, rates) == ("front", (1.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.25))
    try:
        add_schedules([(name, rates)])
        assert regime_kwargs("front") == {"tax_model": "fixed-bracket-rates", "fixed_bracket_rates": rates}
        EconomyParams(**regime_kwargs("front"))  # the env takes them
    finally:
        REGIMES.pop("front", None)
    for bad in ("front=1,0.5", "front=1,0.5,0,0,0,0,1.5", "us_federal=0,0,0,0,0,0,0", "x-y=0,0,0,0,0,0,0", "front",
                "pretrain=0,0,0,0,0,0,0", "runs=0,0,0,0,0,0,0"):
        with pytest.raises(argparse.ArgumentTypeError, match="NAME=R1,...,R7"):
            schedule_regime(bad)
    with pytest.raises(SystemExit):  # on the command line: a usage error before anything runs
        main(["--schedule", "front=1,0.5", "--regimes", "front", "--out", "/tmp/unused"])
    assert "NAME=R1,...,R7" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--regimes", "nowhere", "--out", "/tmp/unused"])
    assert "unknown ['nowhere']" in capsys.readouterr().err


def test_a_report_names_the_schedules_its_records_ran(tmp_path):
    from studies.economy.learning import add_schedules, recorded_schedules, regime_label

    for folder, regime, kwargs in (("free_market", "free_market", {"disable_taxes": True}),
                                   ("runs/lump", "lump", {"tax_model": "fixed-bracket-rates",
                                                          "fixed_bracket_rates": [1.0, 0.5, 0, 0, 0, 0, 0]})):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "result.json").write_text(json.dumps({"regime": regime, "env_kwargs": kwargs}))
    assert recorded_schedules(tmp_path) == [("lump", (1.0, 0.5, 0, 0, 0, 0, 0))]
    try:
        add_schedules(recorded_schedules(tmp_path))
        assert regime_label("lump") == "lump (100/50/0/0/0/0/0%)"
    finally:
        REGIMES.pop("lump", None)
    assert regime_label("flat_tax") == "flat tax" and regime_label("saez") == "saez"
