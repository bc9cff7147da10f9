"""gather_trade_build_v0 against the ai-economist package.

The map, action indices and spaces, and the social-welfare, utility and tax math on random inputs
(computed by our kernels).

The package pins ancient dependencies; it is installed with ``pip install --no-deps
ai-economist==1.7.1`` beside ``lz4 pycryptodome GPUtil`` (the Makefile does it).
"""

import contextlib
import io

import numpy as np
import pytest
import torch

from gpu_zoo.economy.gather_trade_build import worker_action_meanings
from gpu_zoo.economy.layouts import TILE_STONE, TILE_WATER, TILE_WOOD
from gpu_zoo.economy.params import EconomyParams, fixed_starts, ranked_skill_offsets
from tests.economy.helpers import ECON_SMALL, NOOP, act, econ_env, staged
from tests.helpers import reference

with contextlib.redirect_stdout(io.StringIO()):  # it prints a GPU census on import
    foundation = reference("ai_economist.foundation")
    from ai_economist.foundation.scenarios.utils import rewards as aie_rewards
    from ai_economist.foundation.scenarios.utils import social_metrics

from benchmarks.peers.ai_economist import CONFIG as AIE_CONFIG  # noqa: E402


@pytest.fixture(scope="module")
def aie_env():
    with contextlib.redirect_stdout(io.StringIO()):
        env = foundation.make_env_instance(**AIE_CONFIG, seed=1)
        obs = env.reset()
    return env, obs


def test_map_layout_matches(aie_env):
    env, _ = aie_env
    ours = staged()
    tile, res = ours.state.tile[0].numpy(), ours.state.res[0].numpy()
    maps = env.world.maps
    np.testing.assert_array_equal(maps.get("WoodSourceBlock") > 0, tile == TILE_WOOD)
    np.testing.assert_array_equal(maps.get("StoneSourceBlock") > 0, tile == TILE_STONE)
    np.testing.assert_array_equal(maps.get("Water") > 0, tile == TILE_WATER)
    # every source starts full, in both
    np.testing.assert_array_equal(maps.get("Wood") > 0, (tile == TILE_WOOD) & (res == 1))
    np.testing.assert_array_equal(maps.get("Stone") > 0, (tile == TILE_STONE) & (res == 1))


def test_worker_action_indices_match(aie_env):
    env, _ = aie_env
    agent = env.world.agents[0]
    moves = {1: "move_left", 2: "move_right", 3: "move_up", 4: "move_down"}
    theirs = ["noop"]
    for index in range(1, len(agent.single_action_map) + 1):
        name, n = agent.single_action_map[index]
        if name == "Build":
            theirs.append("build")
        elif name == "Gather":
            theirs.append(moves[n])
        else:
            side, res = name.split(".")[1].split("_")
            theirs.append(f"{'bid' if side == 'Buy' else 'ask'}_{res.lower()}_{n - 1}")
    assert worker_action_meanings(EconomyParams()) == theirs


def test_spaces_and_masks_match_in_size(aie_env):
    env, obs = aie_env
    ours = staged()
    assert ours.single_action_space("worker").n == obs["0"]["action_mask"].size == 50
    assert env.world.planner.action_spaces.tolist() == list(ours.single_action_space("planner").nvec)
    assert obs["p"]["action_mask"].size == ours.action_masks["planner"].shape[-1] == 154
    flat = ours.layout.groups["worker"].group.obs_size - 9 * 121
    assert obs["0"]["flat"].size == flat == 136
    planner = ours.layout.groups["planner"].group.obs_size
    assert obs["p"]["flat"].size + sum(obs["p"][f"p{i}"].size for i in range(4)) == planner == 110


def test_utility_and_welfare_match_on_random_coin_and_labor():
    env = staged(num_envs=16, seed=3)
    s = env.state
    gen = torch.Generator().manual_seed(0)
    coin = (torch.rand(16, 4, generator=gen, dtype=torch.float64) ** 3) * 300
    coin[0] = 0.0  # everyone broke: gini of zeros
    coin[1] = torch.tensor([0.0, 0.0, 0.0, 50.0], dtype=torch.float64)
    s.coin[:, :4] = coin
    s.labor[:, :4] = torch.rand(16, 4, generator=gen, dtype=torch.float64) * 200
    act(env, [NOOP] * 4)
    labor = s.labor[:, :4].numpy()
    for e in range(16):
        c = coin[e].numpy()
        expect = aie_rewards.isoelastic_coin_minus_labor(c, labor[e], 0.23, 0.21)
        np.testing.assert_allclose(s.util[e, :4].numpy(), expect, rtol=1e-6, atol=1e-6)
        assert float(s.util[e, 4]) == pytest.approx(aie_rewards.coin_eq_times_productivity(c, 1.0), rel=1e-9, abs=1e-9)
        if c.sum() > 0:  # welfare = (1 - gini) x mean coin
            gini = 1 - float(s.util[e, 4]) / c.mean()
            assert gini == pytest.approx(social_metrics.get_gini(c), rel=1e-9, abs=1e-9)


def test_bracket_taxes_match_on_random_incomes(aie_env):
    env, _ = aie_env
    tax = type(env.get_component("PeriodicBracketTax"))(env.world, 1000, tax_model="model_wrapper", period=10)
    ours = staged(num_envs=12, seed=4)
    s = ours.state
    gen = torch.Generator().manual_seed(1)
    actions = torch.randint(1, 22, (12, 1, 7), generator=gen, dtype=torch.int32)
    ours.step({"worker": torch.zeros_like(ours.actions["worker"]), "planner": actions})
    for _ in range(8):
        act(ours, [NOOP] * 4)
    incomes = torch.rand(12, 4, generator=gen, dtype=torch.float64) ** 2 * 700 - 20
    s.coin[:, :4] = incomes.clamp(min=0)
    s.last_coin[:, :4] = incomes.clamp(min=0) - incomes  # a negative income is one below the last tax day
    before = s.coin[:, :4].clone()
    act(ours, [NOOP] * 4)
    for e in range(12):
        tax.curr_rate_indices = (actions[e, 0] - 1).tolist()
        due = np.array([tax.taxes_due(float(x)) for x in incomes[e]])
        paid = np.minimum(before[e].numpy(), due)
        np.testing.assert_allclose(s.coin[e, :4].numpy(), before[e].numpy() - paid + paid.sum() / 4, rtol=1e-9,
                                   atol=1e-9)
        assert float(s.tax_collected[e]) == pytest.approx(paid.sum(), rel=1e-9, abs=1e-9)
        rates = [float(tax.marginal_rate(float(x))) for x in incomes[e]]
        np.testing.assert_allclose(s.last_marginal[e, :4].numpy(), rates, rtol=1e-6)


def test_fixed_bracket_rates_tax_as_the_package_does(aie_env):
    env, _ = aie_env
    gen = torch.Generator().manual_seed(2)
    rates = [0.0, 1.0, *torch.rand(5, generator=gen, dtype=torch.float64).tolist()]  # off the 5% grid too
    tax = type(env.get_component("PeriodicBracketTax"))(env.world, 1000, tax_model="fixed-bracket-rates",
                                                         fixed_bracket_rates=rates, period=10)
    # The US-federal regime's kernels (tests/test_economy_learning.py): fixed rates are state, not compiled.
    ours = econ_env(12, autoreset=False, tax_model="fixed-bracket-rates", fixed_bracket_rates=tuple(rates))
    ours.reset(seed=4)
    s = ours.state
    in_force = np.tile(tax.curr_marginal_rates, (12, 1))
    np.testing.assert_allclose(s.tax_rate.numpy(), in_force, rtol=0, atol=0)  # from the first step
    for _ in range(9):
        act(ours, [NOOP] * 4, planner=[21] * 7)  # the planner's action is masked and changes nothing
        assert not ours.action_masks["planner"].view(12, 7, 22)[:, :, 1:].any()
    np.testing.assert_allclose(s.tax_rate.numpy(), in_force, rtol=0, atol=0)
    incomes = torch.rand(12, 4, generator=gen, dtype=torch.float64) ** 2 * 700
    s.coin[:, :4] = s.last_coin[:, :4] + incomes
    before = s.coin[:, :4].clone()
    act(ours, [NOOP] * 4)  # step 10: tax day
    for e in range(12):
        paid = np.minimum(before[e].numpy(), [tax.taxes_due(float(x)) for x in incomes[e]])
        np.testing.assert_allclose(s.coin[e, :4].numpy(), before[e].numpy() - paid + paid.sum() / 4, rtol=1e-9,
                                   atol=1e-9)


def test_our_small_config_is_the_package_config_but_shorter():
    p = EconomyParams(**ECON_SMALL)
    assert (p.max_bid_ask, p.max_num_orders, p.order_duration, p.order_labor) == (10, 5, 50, 0.25)
    assert (p.build_payment, p.payment_max_skill_multiplier, p.build_labor) == (10.0, 3.0, 10.0)
    assert (p.isoelastic_eta, p.energy_cost, p.resource_regen_prob) == (0.23, 0.21, 0.01)


@pytest.mark.parametrize("n", [4, 6, 10])
def test_fixed_skills_and_starts_match(n, monkeypatch):
    """The package's fixed payments are a 100,000-sample average of what ours computes exactly."""
    monkeypatch.setattr(np, "int", int, raising=False)  # the package still spells int so (gone from NumPy 1.24)
    config = {**AIE_CONFIG, "fixed_four_skill_and_loc": True, "n_agents": n}
    with contextlib.redirect_stdout(io.StringIO()):
        env = foundation.make_env_instance(**config, seed=1)
        env.reset()
    p = EconomyParams(fixed_four_skill_and_loc=True, num_workers=n)
    ours = [p.build_payment * (1 + (p.payment_max_skill_multiplier - 1) * k) for k in ranked_skill_offsets(n)]
    np.testing.assert_allclose(env._avg_ranked_skill, ours, rtol=3e-3)
    starts = fixed_starts(n, p.height, p.width)
    assert [tuple(int(v) for v in x) for x in env._ranked_locs] == list(starts)
    dealt = sorted((tuple(int(v) for v in a.loc), a.state["build_payment"]) for a in env.world.agents)
    assert dealt == sorted(zip(starts, env._avg_ranked_skill, strict=True))
