"""gather_trade_build_v0 rules on hand-built states: gathering, moving, building, the market, taxes."""

import math

import numpy as np
import pytest
import torch

from gpu_zoo.economy import layouts, taxes
from gpu_zoo.economy.layouts import TILE_EMPTY, TILE_WOOD
from gpu_zoo.economy.params import EconomyParams, fixed_starts, ranked_skill_offsets
from tests.economy.helpers import (
    ASK_STONE,
    BID_STONE,
    BID_WOOD,
    BUILD,
    DOWN,
    ECON_SMALL,
    LEFT,
    NOOP,
    RIGHT,
    UP,
    act,
    econ_env,
    staged,
)
from tests.helpers import ECON_FIXED

STONE, WOOD = 0, 1


def pos(env, a, e=0):
    return int(env.state.row[e, a]), int(env.state.col[e, a])


# ------------------------------------------------------------------ gather and move
def test_moving_onto_a_unit_collects_it_and_costs_labor():
    env = staged()
    s = env.state
    s.tile[0, 7, 3], s.res[0, 7, 3] = TILE_WOOD, 1
    act(env, [RIGHT, NOOP, NOOP, NOOP])
    assert pos(env, 0) == (7, 3)
    assert s.goods[0, 0].tolist() == [0, 1]
    assert float(s.labor[0, 0]) == 2.0  # move + collect
    assert int(s.res[0, 7, 3]) == 0


def test_standing_on_a_regrown_unit_collects_it_without_moving():
    env = staged()
    s = env.state
    s.tile[0, 7, 2], s.res[0, 7, 2] = TILE_WOOD, 1
    s.gather_bonus[0, 0] = 1.0  # the bonus always pays: two units
    act(env, [NOOP] * 4)
    assert s.goods[0, 0].tolist() == [0, 2] and float(s.labor[0, 0]) == 1.0


def test_blocked_moves_fail_without_labor():
    env = staged()
    s = env.state
    s.row[0, 0], s.col[0, 0] = 11, 0       # water below, at (12, 0)
    s.row[0, 1], s.col[0, 1] = 0, 24       # the map's corner: up and right are off the map
    s.row[0, 2], s.col[0, 2] = 8, 10       # workers 2 and 3 face each other
    s.row[0, 3], s.col[0, 3] = 9, 10
    act(env, [DOWN, UP, DOWN, UP])         # 2 and 3 try to swap: both fail
    assert pos(env, 0) == (11, 0) and pos(env, 1) == (0, 24)
    assert pos(env, 2) == (8, 10) and pos(env, 3) == (9, 10)
    assert s.labor[0, :4].tolist() == [0.0, 0.0, 0.0, 0.0]
    act(env, [NOOP, RIGHT, NOOP, NOOP])
    assert pos(env, 1) == (0, 24)


def test_houses_block_everyone_but_their_owner():
    env = staged()
    s = env.state
    s.house[0, 7, 3] = 2  # worker 1's house next to worker 0
    s.house[0, 7, 5] = 2  # and next to worker 1
    act(env, [RIGHT, LEFT, NOOP, NOOP])
    assert pos(env, 0) == (7, 2) and pos(env, 1) == (7, 5)


def test_move_masks_match_what_a_move_can_do():
    env = staged()
    s = env.state
    s.row[0, 0], s.col[0, 0] = 11, 0
    act(env, [NOOP] * 4)
    m = env.action_masks["worker"][0, 0]
    assert m[LEFT].item() is False   # off the map
    assert m[DOWN].item() is False   # water
    assert m[UP].item() and m[RIGHT].item()


# ------------------------------------------------------------------ build
def test_building_pays_skill_times_payment_and_takes_one_of_each():
    env = staged()
    s = env.state
    s.goods[0, 0] = torch.tensor([2, 1], dtype=torch.int32)
    pay = float(s.build_pay[0, 0])
    act(env, [NOOP] * 4)
    assert env.action_masks["worker"][0, 0, BUILD].item()
    act(env, [BUILD, NOOP, NOOP, NOOP])
    assert int(s.house[0, 7, 2]) == 1
    assert s.goods[0, 0].tolist() == [1, 0]
    assert float(s.coin[0, 0]) == pytest.approx(pay)
    assert float(s.labor[0, 0]) == 10.0
    assert env.action_masks["worker"][0, 0, BUILD].item() is False  # no wood left, and a house here


def test_no_building_on_a_source_tile_even_when_empty():
    env = staged()
    s = env.state
    s.tile[0, 7, 2], s.res[0, 7, 2] = TILE_WOOD, 0
    s.goods[0, 0] = torch.tensor([1, 1], dtype=torch.int32)
    act(env, [NOOP] * 4)
    assert env.action_masks["worker"][0, 0, BUILD].item() is False
    act(env, [BUILD, NOOP, NOOP, NOOP])  # sent anyway: a no-op
    assert int(s.house[0, 7, 2]) == 0 and s.goods[0, 0].tolist() == [1, 1] and float(s.labor[0, 0]) == 0.0


def test_build_payment_follows_the_skill_distribution():
    env = staged(num_envs=256)
    pay = env.state.build_pay[:, :4].flatten()
    assert float(pay.min()) >= 10.0 and float(pay.max()) <= 30.0 + 1e-9
    # min(3, 2x + 1) with x ~ Pareto-II(4): P(pay = 30) = P(x >= 1) = 2**-4
    assert 0.02 < float((pay >= 30.0 - 1e-9).double().mean()) < 0.12
    env.reset(seed=1)
    bonus = env.state.gather_bonus[:, :4].flatten()  # min(2, y) / 2, y ~ Pareto-II(3): mean about 0.24
    assert float(bonus.min()) >= 0.0 and float(bonus.max()) <= 1.0
    assert 0.15 < float(bonus.mean()) < 0.33


def test_fixed_skills_deal_four_payments_and_corners_in_a_random_order():
    # 8 envs (the CPU's serial driver, compiled once for this configuration) reset with 8 seeds: 64 deals
    env = econ_env(num_envs=8, **ECON_FIXED)
    s = env.state
    slots = [(*rc, pay) for rc, pay in zip(fixed_starts(4, 25, 25), (11.3333, 13.2693, 16.4705, 22.2603), strict=True)]
    slot_of = torch.full((8, 8, 4), -1)
    for k, seed in enumerate(range(5, 13)):
        env.reset(seed=seed)
        for e in range(8):
            for a in range(4):
                row, col, pay = int(s.row[e, a]), int(s.col[e, a]), float(s.build_pay[e, a])
                i = next(i for i, (r, c, _) in enumerate(slots) if (r, c) == (row, col))
                assert pay == pytest.approx(slots[i][2], abs=1e-4)
                slot_of[k, e, a] = i
            assert sorted(slot_of[k, e].tolist()) == [0, 1, 2, 3]
    # a uniform order: every worker gets every slot somewhere in the 64 deals
    assert all(bool((slot_of[..., a] == i).any()) for a in range(4) for i in range(4))
    env.reset(seed=5)
    first = [x[:, :4].clone() for x in (s.row, s.col, s.build_pay)]
    env.reset(seed=5)  # replays
    assert all(torch.equal(x, y[:, :4]) for x, y in zip(first, (s.row, s.col, s.build_pay), strict=True))
    env.reset(seed=6)
    assert not torch.equal(first[2], s.build_pay[:, :4])


def test_fixed_skills_need_the_configuration_they_were_made_for(monkeypatch):
    for bad in (dict(skill_dist="none"), dict(layout="random")):
        with pytest.raises(ValueError, match="fixed_four_skill_and_loc needs"):
            EconomyParams(fixed_four_skill_and_loc=True, **bad)
    monkeypatch.setitem(layouts.LAYOUTS, "wet_corner", ("     @", "      ", "      ", "      "))
    EconomyParams(layout="wet_corner", height=4, width=6, num_workers=3)
    with pytest.raises(ValueError, match="not distinct dry tiles"):
        EconomyParams(layout="wet_corner", height=4, width=6, num_workers=3, fixed_four_skill_and_loc=True)


def test_fixed_starts_fill_the_corners_four_to_a_row_inward():
    assert fixed_starts(4, 25, 25) == ((0, 24), (24, 0), (0, 0), (24, 24))
    # 6 workers: ranks 0-1 top right, 2 bottom left, 3-4 top left, 5 bottom right
    assert fixed_starts(6, 25, 30) == ((0, 29), (0, 28), (24, 0), (0, 0), (0, 1), (24, 29))
    assert fixed_starts(20, 25, 25)[:5] == ((0, 24), (0, 23), (0, 22), (0, 21), (1, 24))


@pytest.mark.parametrize("n", [2, 4, 7])
def test_ranked_skill_offsets_are_the_expected_order_statistics(n):
    draws = np.random.default_rng(n).pareto(4, size=(200_000, n))
    sample = np.sort(np.minimum(3.0, 2.0 * draws + 1.0), axis=1).mean(0)
    np.testing.assert_allclose(1.0 + 2.0 * np.array(ranked_skill_offsets(n)), sample, rtol=2e-3)


# ------------------------------------------------------------------ market
def trade_setup():
    env = staged()
    s = env.state
    s.coin[0, :4] = torch.tensor([20.0, 20.0, 20.0, 20.0], dtype=torch.float64)
    s.goods[0, :4] = 1
    return env, s


def test_a_new_bid_clears_at_the_resting_ask_price():
    env, s = trade_setup()
    act(env, [NOOP, ASK_STONE + 3, NOOP, NOOP])
    assert int(s.goods_escrow[0, 1, STONE]) == 1 and int(s.goods[0, 1, STONE]) == 0
    act(env, [BID_STONE + 7, NOOP, NOOP, NOOP])
    assert s.goods[0, 0].tolist() == [2, 1] and int(s.goods_escrow[0, 1, STONE]) == 0
    assert float(s.coin[0, 0]) == 17.0 and float(s.coin[0, 1]) == 23.0
    assert float(s.coin_escrow[0, :4].sum()) == 0.0
    assert int(s.order_kind[0].sum()) == 0
    assert float(s.price_hist[0, STONE, 3]) == 1.0
    assert s.labor[0, :2].tolist() == [0.25, 0.25]


def test_a_new_ask_clears_at_the_resting_bid_price():
    env, s = trade_setup()
    act(env, [BID_STONE + 6, NOOP, NOOP, NOOP])
    assert float(s.coin[0, 0]) == 14.0 and float(s.coin_escrow[0, 0]) == 6.0
    act(env, [NOOP, ASK_STONE + 2, NOOP, NOOP])
    assert float(s.coin[0, 0]) == 14.0 and float(s.coin[0, 1]) == 26.0


def test_orders_of_the_same_step_clear_at_the_ask_and_refund_the_rest():
    env, s = trade_setup()
    act(env, [BID_STONE + 9, ASK_STONE + 4, NOOP, NOOP])
    assert float(s.coin[0, 0]) == 16.0 and float(s.coin[0, 1]) == 24.0 and float(s.coin_escrow[0, 0]) == 0.0


def test_best_bid_first_then_the_older_of_equal_bids():
    env, s = trade_setup()
    act(env, [BID_STONE + 6, NOOP, NOOP, NOOP])
    act(env, [NOOP, NOOP, BID_STONE + 6, BID_STONE + 5])
    act(env, [NOOP, ASK_STONE + 1, NOOP, NOOP])  # one unit: the older bid of 6 (worker 0) gets it at 6
    assert int(s.goods[0, 0, STONE]) == 2 and int(s.goods[0, 2, STONE]) == 1
    assert float(s.coin[0, 1]) == 26.0


def test_no_trade_when_the_bid_is_below_the_ask_and_no_trade_with_oneself():
    env, s = trade_setup()
    act(env, [BID_STONE + 2, ASK_STONE + 5, NOOP, NOOP])
    act(env, [ASK_STONE + 1, NOOP, NOOP, NOOP])  # worker 0's own ask below its own bid
    # worker 0's ask of 1 does not meet its bid of 2; worker 1's ask of 5 is above it
    assert int(s.order_kind[0, 0, STONE].bool().sum()) == 2 and int(s.order_kind[0, 1, STONE].bool().sum()) == 1
    assert float(s.coin_escrow[0, 0]) == 2.0 and int(s.goods_escrow[0, 1, STONE]) == 1


def test_unfilled_orders_expire_after_order_duration_steps_with_a_refund():
    env, s = trade_setup()
    act(env, [BID_WOOD + 4, NOOP, NOOP, NOOP])
    for _ in range(49):
        act(env, [NOOP] * 4)
    # placed at step 1 and unfilled for 50 steps: still open
    assert float(s.coin_escrow[0, 0]) == 4.0 and int(s.order_life[0, 0, WOOD].max()) == 50
    act(env, [NOOP] * 4)
    assert float(s.coin_escrow[0, 0]) == 0.0 and float(s.coin[0, 0]) == 20.0
    assert int(s.order_kind[0, 0].sum()) == 0


def test_orders_are_capped_per_resource_and_need_funds_or_goods():
    env, s = trade_setup()
    s.goods[0, 0, STONE] = 9
    for _ in range(5):
        act(env, [ASK_STONE + 10, NOOP, NOOP, NOOP])
    assert env.action_masks["worker"][0, 0, ASK_STONE:ASK_STONE + 11].sum() == 0
    assert env.action_masks["worker"][0, 0, BID_STONE:BID_STONE + 11].sum() == 0
    assert env.action_masks["worker"][0, 0, BID_WOOD:BID_WOOD + 11].all()
    act(env, [ASK_STONE + 10, NOOP, NOOP, NOOP])  # a sixth: refused, no labor
    assert int(s.goods_escrow[0, 0, STONE]) == 5 and float(s.labor[0, 0]) == 1.25
    s.coin[0, 1] = 3.5
    act(env, [NOOP] * 4)
    assert env.action_masks["worker"][0, 1, BID_WOOD:BID_WOOD + 11].tolist() == [True] * 4 + [False] * 7
    act(env, [NOOP, BID_WOOD + 4, NOOP, NOOP])  # unaffordable: a no-op
    assert float(s.coin[0, 1]) == 3.5 and float(s.coin_escrow[0, 1]) == 0.0


# ------------------------------------------------------------------ taxes
def test_bracket_taxes_and_equal_redistribution_by_hand():
    """Rates (.1, .05, 0, 0, 1, .5, .2) on incomes 5, 30, 100, 600 coin, by hand.

    Cutoffs 0, 9.7, 39.475, 84.2, 160.725, 204.1, 510.3: taxes .5, 1.985, 2.45875 and 216.87375.
    """
    env = staged()
    s = env.state
    act(env, [NOOP] * 4, planner=[3, 2, 1, 1, 21, 11, 5])
    assert s.tax_rate[0].tolist() == pytest.approx([0.1, 0.05, 0.0, 0.0, 1.0, 0.5, 0.2])
    for _ in range(8):
        act(env, [NOOP] * 4, planner=[21] * 7)  # ignored between periods (and masked)
    assert env.action_masks["planner"][0, 0].view(7, 22)[:, 1:].sum() == 0
    incomes = torch.tensor([5.0, 30.0, 100.0, 600.0], dtype=torch.float64)
    s.coin[0, :4] = incomes
    act(env, [NOOP] * 4)  # step 10: tax day
    taxes = torch.tensor([0.5, 1.985, 2.45875, 216.87375], dtype=torch.float64)
    lump = float(taxes.sum()) / 4
    assert float(s.tax_collected[0]) == pytest.approx(float(taxes.sum()))
    assert float(s.lump_sum[0]) == pytest.approx(lump) == pytest.approx(55.454375)
    torch.testing.assert_close(s.coin[0, :4], incomes - taxes + lump)
    torch.testing.assert_close(s.last_income[0, :4], incomes)
    assert env.action_masks["planner"][0, 0].view(7, 22).all()  # the next step opens a period


def test_the_period_income_and_its_tax_are_observed_when_asked():
    """observe_period_income: income so far and the tax due on it at the period's rates, / tax_period."""
    env = econ_env(**ECON_FIXED)
    env.reset(seed=0)
    s = env.state
    incomes = torch.tensor([5.0, 30.0, 100.0, 600.0], dtype=torch.float64)
    s.coin[0, :4] = s.last_coin[0, :4] + incomes
    obs = act(env, [NOOP] * 4)[0]  # the period's first step sets the rates (drawn: random-bracket-rates)
    assert float(s.tax_collected[0]) == 0.0  # tax day is the next step
    rates, cutoffs = s.tax_rate[0].tolist(), s.cutoffs[0].tolist()
    assert any(rates)
    brackets = list(zip(rates, cutoffs[:-1], cutoffs[1:], strict=True))
    taxes = torch.tensor([sum(r * min(hi - lo, max(0.0, x - lo)) for r, lo, hi in brackets) for x in incomes.tolist()],
                         dtype=torch.float64)
    expected = torch.stack([incomes, taxes], dim=1).float() / 2  # tax_period 2
    torch.testing.assert_close(obs["worker"][0, :, -2:], expected)
    torch.testing.assert_close(obs["planner"][0, 0, -8:], expected.flatten())
    act(env, [NOOP] * 4)  # tax day levies what was observed
    assert float(s.tax_collected[0]) == pytest.approx(float(taxes.sum()))
    n = env.single_observation_space("worker").shape[0] - econ_env().single_observation_space("worker").shape[0]
    assert n == 2


def test_an_episode_started_late_is_in_the_period_its_step_says_and_ends_on_a_tax_day():
    env = econ_env(num_envs=4)
    period, cycles = ECON_SMALL["tax_period"], ECON_SMALL["max_cycles"]
    env.reset(seed=0, start_steps=torch.tensor([0, 3, period, cycles - 1]))
    s = env.state
    assert s.tax_pos.tolist() == [1, 4, 1, period]
    ends = torch.zeros(4, dtype=torch.int64)
    for _ in range(cycles + 1):  # the last env's second episode ends on the last of these
        before = s.tax_pos.clone()
        done = act(env, [NOOP] * 4)[4]["done"].bool()
        assert bool((before[done] == period).all()), "every episode's last step is a tax day"
        assert torch.equal(s.tax_pos - 1, s.t % period)  # after an auto-reset too
        ends += done.long()
    assert ends.tolist() == [1, 1, 1, 2]


def test_random_bracket_rates_are_drawn_per_bracket_and_period_and_replay():
    # tax_period 2: periods start on steps 1 and 3; step 4 resets. 8 envs (the serial driver) x 8 seeds: 64 episodes
    env = econ_env(num_envs=8, **ECON_FIXED)

    def rates_seen(seed):
        env.reset(seed=seed)
        seen = []
        for _ in range(3):
            act(env, [NOOP] * 4, planner=[21] * 7)  # the planner's choice is ignored, and masked
            assert env.action_masks["planner"].view(8, 7, 22)[:, :, 1:].sum() == 0
            torch.testing.assert_close(env.state.tax_rate, env.state.tax_idx.double() * 0.05, rtol=0, atol=0)
            seen.append(env.state.tax_idx.clone())
        return seen

    runs = [rates_seen(seed) for seed in range(3, 11)]
    seen = [torch.cat([run[t] for run in runs]) for t in range(3)]
    assert torch.equal(seen[0], seen[1])  # fixed within a period
    drawn = torch.stack([seen[0], seen[2]]).long()
    # uniform on the grid 0%, 5%, ..., 100%: all 21 among 896 draws, none far from its share (42.7)
    counts = torch.bincount(drawn.flatten())
    assert len(counts) == 21 and int(counts.min()) > 15 and int(counts.max()) < 75
    assert bool((seen[0] != seen[2]).any(dim=1).all())  # every env draws afresh each period
    assert bool((drawn[:, :, 1:] != drawn[:, :, :1]).any(dim=2).all())  # brackets apart
    assert all(torch.equal(x, y) for x, y in zip(runs[0], rates_seen(3), strict=True))  # the seed replays
    assert not torch.equal(seen[0], rates_seen(4)[0])


def test_random_rates_stay_within_the_annealed_limit(monkeypatch):
    monkeypatch.setattr(taxes, "rate_of", taxes.rate_of.py_func)  # kernel functions have no Python wrapper
    assert [taxes.rates_allowed.py_func(x) for x in (0.0, 0.04, 0.31, 0.999, 1.0)] == [1, 1, 7, 20, 21]


@pytest.mark.parametrize("kw, match", [
    (dict(tax_model="fixed-bracket-rates"), "needed by tax_model='fixed-bracket-rates'"),
    (dict(fixed_bracket_rates=(0.1,) * 7), "and only by it"),
    (dict(tax_model="fixed-bracket-rates", fixed_bracket_rates=(0.1,) * 6), "7 rates in"),
    (dict(tax_model="fixed-bracket-rates", fixed_bracket_rates=(0.1,) * 6 + (1.5,)), "7 rates in"),
    (dict(tax_model="fixed-bracket-rates", fixed_bracket_rates=(0.1,) * 6 + ("high",)), "7 rates in"),
    (dict(energy_warmup_method="linear"), "energy_warmup_method must be one of"),
])
def test_tax_and_warm_up_options_are_checked(kw, match):
    with pytest.raises(ValueError, match=match):
        EconomyParams(**kw)


def test_tax_is_capped_by_coin_in_hand_and_escrow_counts_as_income():
    env = staged()
    s = env.state
    act(env, [NOOP] * 4, planner=[21] * 7)  # 100% everywhere
    for _ in range(8):
        act(env, [NOOP] * 4)
    s.coin[0, 0], s.coin_escrow[0, 0] = 1.0, 9.0  # income 10, but only 1 in hand
    s.order_kind[0, 0, STONE, 0], s.order_price[0, 0, STONE, 0] = 1, 9
    act(env, [NOOP] * 4)
    assert float(s.tax_collected[0]) == pytest.approx(1.0)
    assert float(s.coin[0, 0]) == pytest.approx(0.25)


# ------------------------------------------------------------------ rewards
def test_rewards_are_changes_of_utility_and_welfare():
    env = staged()
    s = env.state
    s.coin[0, :4] = torch.tensor([4.0, 9.0, 0.0, 25.0], dtype=torch.float64)
    _, rew, *_ = act(env, [NOOP] * 4)
    eta, cost = 0.23, 0.21
    util = [(c ** (1 - eta) - 1) / (1 - eta) for c in (4.0, 9.0, 0.0, 25.0)]
    torch.testing.assert_close(s.util[0, :4], torch.tensor(util, dtype=torch.float64), rtol=1e-6, atol=1e-6)
    coins = [4.0, 9.0, 0.0, 25.0]
    gini = sum(abs(x - y) for x in coins for y in coins) / (2 * 3 * sum(coins))
    assert float(s.util[0, 4]) == pytest.approx((1 - gini) * sum(coins) / 4, rel=1e-6)
    # the next step changes nothing but labor (one worker moves): its reward is -cost * 1
    _, rew, *_ = act(env, [UP, NOOP, NOOP, NOOP])
    assert float(rew["worker"][0, 0]) == pytest.approx(-cost, rel=1e-5)
    assert float(rew["worker"][0, 1]) == 0.0 and float(rew["planner"][0, 0]) == 0.0
    assert math.isfinite(float(rew["planner"][0, 0]))



def test_the_decay_warm_up_weighs_labor_by_the_episodes_finished():
    env = staged()
    env.set_params(energy_warmup_constant=2.0)  # a runtime param: the same kernels
    s = env.state
    _, rew, *_ = act(env, [UP, NOOP, NOOP, NOOP])
    assert float(rew["worker"][0, 0]) == 0.0  # no episode finished yet: labor is free
    s.ep_count[0] = 3
    _, rew, *_ = act(env, [DOWN, NOOP, NOOP, NOOP])
    # the utility before this step was taken at weight 0 and labor 1, this one at weight w and labor 2
    w = 1 - math.exp(-3 / 2)
    assert float(rew["worker"][0, 0]) == pytest.approx(-0.21 * w * 2, rel=1e-5)


def test_the_auto_warm_up_counts_steps_whose_mean_worker_reward_was_positive():
    """energy_warmup_method='auto', as the AI Economist's: w = 1 - exp(-steps / constant)."""
    env = econ_env(**ECON_FIXED)  # auto, constant 3
    env.reset(seed=0)
    s = env.state
    mover = next(a for a in range(4) if env.action_masks["worker"][0, a, LEFT:DOWN + 1].any())
    move = LEFT + int(torch.nonzero(env.action_masks["worker"][0, mover, LEFT:DOWN + 1])[0])
    workers = [NOOP] * 4
    workers[mover] = move
    _, rew, *_ = act(env, workers)
    assert float(rew["worker"][0, mover]) == 0.0 and int(s.warmup_steps[0]) == 0  # weight 0; mean reward 0
    s.coin[0, :4] += 10.0
    act(env, [NOOP] * 4)
    assert int(s.warmup_steps[0]) == 1  # every worker gained utility
    back = {LEFT: RIGHT, RIGHT: LEFT, UP: DOWN, DOWN: UP}[move]
    workers[mover] = back
    _, rew, *_ = act(env, workers)
    w = 1 - math.exp(-1 / 3)
    assert float(rew["worker"][0, mover]) == pytest.approx(-0.21 * w * 2, rel=1e-5)  # labor 2 at the new weight
    assert int(s.warmup_steps[0]) == 1  # a mean reward below 0 does not count
    act(env, [NOOP] * 4)  # step 4 ends the episode: the auto-reset keeps the count
    assert int(s.ep_count[0]) == 1 and int(s.warmup_steps[0]) == 1
    env.reset(seed=1)  # reset() starts it over
    assert int(s.warmup_steps[0]) == 0


def test_random_layouts_differ_per_env_and_replay_per_seed():
    from tests.economy.helpers import econ_env

    env = econ_env(num_envs=3, layout="random")
    env.reset(seed=5)
    tiles = env.state.tile.clone()
    assert not torch.equal(tiles[0], tiles[1])
    assert int((tiles == TILE_EMPTY).sum()) > 0.8 * tiles.numel()
    env.reset(seed=5)
    assert torch.equal(env.state.tile, tiles)
    rows, cols = env.state.row[:, :4].long(), env.state.col[:, :4].long()
    for e in range(3):
        assert all(int(tiles[e, r, c]) != 3 for r, c in zip(rows[e], cols[e], strict=True))
