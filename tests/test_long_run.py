"""The long run's on-device checks: they pass on healthy play and catch each kind of defect planted in the state."""

import math

import pytest
import torch

import gpu_zoo
from benchmarks.long_run import EconomyChecks, Failures, GenericChecks, run_one
from tests.economy.helpers import ECON_SMALL


def test_a_short_run_of_every_kind_passes_its_checks():
    for env_id in ("simple_tag_v3", "tag_gridworld_v0"):
        rec = run_one(env_id, {}, "cpu", agent_steps=4e3, check_every=200, seed=3, num_envs=4)
        assert rec["ok"], rec["failures"]
        assert rec["episodes"] > 0 and rec["checks"] > 5


def test_the_economy_run_crosses_an_auto_reset_and_its_laws_hold():
    rec = run_one("gather_trade_build_v0", ECON_SMALL, "cpu", agent_steps=4 * 5 * 130, check_every=100, seed=5,
                  num_envs=4)
    assert rec["ok"], rec["failures"]
    assert rec["episodes"] >= 8  # every env ended two episodes
    assert "coin_changes_only_by_build_payments" in rec["checks_named"]


def economy_after_play(steps=55):  # within the first 60-step episode
    env = gpu_zoo.make("gather_trade_build_v0", num_envs=3, device="cpu", **ECON_SMALL, starting_agent_coin=50.0)
    env.reset(seed=1)
    gen = torch.Generator().manual_seed(0)
    for _ in range(steps):
        env.step(env.sample_actions(gen))
    return env


def failed_after(env, plant) -> set[str]:
    fails = Failures(env.device)
    checks, generic = EconomyChecks(env), GenericChecks(env)
    checks.snapshot()
    env.step(env.sample_actions(torch.Generator().manual_seed(1)))
    plant(env.state)
    checks(fails, 1)
    generic(fails, 1)
    return set(fails.read())


def test_healthy_economy_steps_fail_nothing():
    env = economy_after_play()
    s = env.state
    assert bool((s.house != 0).any()) and bool((s.order_kind != 0).any())  # houses built, orders open: laws at work
    assert failed_after(env, lambda s: None) == set()


@pytest.mark.parametrize("plant, caught", [
    (lambda s: s.coin[:, 0].add_(1.0), {"coin_changes_only_by_build_payments"}),
    (lambda s: s.goods[:, 1, 0].add_(3), {"goods_change_only_by_gathering_and_building"}),
    (lambda s: s.coin_escrow[:, 2].add_(1.0), {"coin_escrow_is_open_bids", "coin_changes_only_by_build_payments"}),
    (lambda s: s.goods[:, 0, 1].sub_(500), {"nothing_negative", "goods_change_only_by_gathering_and_building"}),
    (lambda s: (s.row[:, 1].copy_(s.row[:, 0]), s.col[:, 1].copy_(s.col[:, 0])), {"one_worker_a_tile"}),
    (lambda s: s.labor[:, 0].fill_(math.nan), {"finite:labor"}),
    (lambda s: s.obs_worker[:, 0, 0].fill_(math.inf), {"finite:obs_worker", "obs_in_space:worker"}),
    (lambda s: s.mask_planner.zero_(), {"mask_nonempty:planner"}),
])
def test_each_planted_defect_is_caught(plant, caught):
    env = economy_after_play()
    assert caught <= failed_after(env, plant)


def test_an_infinite_table_entry_is_allowed_only_where_it_started_infinite():
    env = economy_after_play(steps=1)
    assert failed_after(env, lambda s: None) == set()  # the top bracket's edge is infinite from the start
    assert "finite:cutoffs" in failed_after(env, lambda s: s.cutoffs[:, 0].fill_(math.inf))


def test_a_step_past_max_cycles_and_an_observation_outside_its_space_are_caught():
    env = gpu_zoo.make("simple_tag_v3", num_envs=2, device="cpu")
    env.reset(seed=0)
    fails, checks = Failures(env.device), GenericChecks(env)
    env.state.t[0] = env.params.max_cycles + 1
    checks(fails, 7)
    assert fails.read() == {"t<=max_cycles": {"failed_checks": 1, "first_step": 7}}
    env = gpu_zoo.make("tag_gridworld_v0", num_envs=2, device="cpu")
    env.reset(seed=0)
    fails, checks = Failures(env.device), GenericChecks(env)
    high = env.single_observation_space("tagger").high.max()
    env.obs["tagger"][1, 0, 0] = float(high) + 1.0
    checks(fails, 2)
    assert set(fails.read()) == {"obs_in_space:tagger"}
