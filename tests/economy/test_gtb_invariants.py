"""Invariants of gather_trade_build_v0 over long random rollouts (masked and unmasked actions).

Coin changes only by build payments (trades and taxes move it, never make or destroy it); goods
change only by gathering and building; nothing goes negative; nobody stands on water, in
another's house or on another worker; masks allow only what can be done.
"""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_zoo.economy.layouts import TILE_STONE, TILE_WATER, TILE_WOOD
from tests.economy.helpers import BUILD, econ_env

N = 4


def totals(s):
    coin = (s.coin + s.coin_escrow)[:, :N].sum(1)
    goods = (s.goods + s.goods_escrow)[:, :N].sum(1)  # (E, 2): stone, wood
    houses = torch.stack([(s.house == a + 1).flatten(1).sum(1) for a in range(N)], 1)
    units = torch.stack([((s.tile == k) & s.res).flatten(1).sum(1) for k in (TILE_STONE, TILE_WOOD)], 1)
    return coin, goods, houses, units


def check_positions(s):
    E = s.row.shape[0]
    for e in range(E):
        cells = set()
        for a in range(N):
            r, c = int(s.row[e, a]), int(s.col[e, a])
            assert 0 <= r < s.tile.shape[1] and 0 <= c < s.tile.shape[2]
            assert int(s.tile[e, r, c]) != TILE_WATER, f"env {e}: worker {a} on water"
            assert int(s.house[e, r, c]) in (0, a + 1), f"env {e}: worker {a} in another's house"
            assert (r, c) not in cells, f"env {e}: two workers on one tile"
            cells.add((r, c))


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**40), masked=st.booleans(), trade_bias=st.floats(0.0, 0.9))
def test_conservation_and_feasibility_over_a_random_episode(seed, masked, trade_bias):
    env = econ_env(num_envs=6)
    env.reset(seed=seed)
    env.set_params(resource_regen_prob=0.0)  # then a source only empties, by gathering
    s = env.state
    s.gather_bonus[:] = 0.0  # one unit per collection: goods are countable from the map
    gen = torch.Generator().manual_seed(seed % 2**31)
    for _ in range(59):  # one episode of 60 steps (the 60th resets)
        acts = env.sample_actions(gen)
        if not masked:  # anything at all, infeasible included: must be a no-op
            acts["worker"] = torch.randint(0, 50, acts["worker"].shape, generator=gen, dtype=torch.int32)
            acts["planner"] = torch.randint(0, 22, acts["planner"].shape, generator=gen, dtype=torch.int32)
        trade = torch.rand(acts["worker"].shape, generator=gen) < trade_bias
        acts["worker"] = torch.where(trade & env.action_masks["worker"][..., 2:46].any(-1),
                                     acts["worker"].clamp(2, 45), acts["worker"]) if masked else acts["worker"]
        build_ok = env.action_masks["worker"][..., BUILD].clone()
        pos = (s.row[:, :N].clone(), s.col[:, :N].clone())
        coin0, goods0, houses0, units0 = totals(s)
        env.step(acts)
        coin1, goods1, houses1, units1 = totals(s)
        built = houses1 - houses0
        assert (built >= 0).all() and (built <= 1).all()
        pay = (built * s.build_pay[:, :N]).sum(1)
        torch.testing.assert_close(coin1 - coin0, pay, rtol=0, atol=1e-9)
        gathered = units0 - units1
        torch.testing.assert_close(goods1 - goods0, gathered - built.sum(1, keepdim=True))
        for name in ("coin", "coin_escrow"):
            assert (getattr(s, name) >= -1e-9).all(), name
        assert (s.goods >= 0).all() and (s.goods_escrow >= 0).all()
        on_tax_day = s.tax_pos == 1
        torch.testing.assert_close(s.tax_collected[on_tax_day], N * s.lump_sum[on_tax_day], rtol=1e-12, atol=1e-9)
        check_positions(s)
        chose_build = acts["worker"] == BUILD
        rows, cols = pos
        for e, a in (chose_build & build_ok).nonzero().tolist():
            assert int(s.house[e, rows[e, a], cols[e, a]]) == a + 1, "an allowed build did not happen"
        for e, a in (chose_build & ~build_ok).nonzero().tolist():
            assert int(s.house[e, rows[e, a], cols[e, a]]) != a + 1 or houses0[e, a] > 0


@pytest.mark.parametrize("planner_rate", [21, 5])
def test_masked_planner_rates_are_ignored_outside_the_first_step(planner_rate):
    env = econ_env(num_envs=2)
    env.reset(seed=0)
    zeros = torch.zeros_like(env.actions["worker"])
    env.step({"worker": zeros, "planner": torch.full_like(env.actions["planner"], planner_rate)})
    rates = env.state.tax_rate.clone()
    env.step({"worker": zeros, "planner": torch.full_like(env.actions["planner"], 2)})
    assert torch.equal(env.state.tax_rate, rates)
