"""gather_trade_build_v0 step for step against the ai-economist package's own env.

Both envs start from the same state: after each reset the package's positions and skills are set to
ours (the maps, and the coin from ``starting_agent_coin``, already agree); staged cases also crowd
the workers or stock them with goods, in both. Then both take the same masked random actions
(ours's masks, checked equal to the package's), and after every step
the whole state is compared: positions, inventories, escrow, labor, houses, the resource map, the
order books with their lifetimes, traded-price histories, tax rates, incomes and lump sums,
rewards, every observation and every action mask.

The package draws its random numbers from NumPy's global generator; ours from its counter-based
one. So that both see the same dice, the package is handed ours: the gather order (ours's
``move_key`` ranks the movers), the bonus-unit draw of each gathering worker and the regrowth draw
of each tile. Nothing else in its step is random; that it draws nothing more from NumPy's
generator is checked on every step.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import torch

import gpu_zoo
from gpu_zoo.core.api.rng import hash_u64
from gpu_zoo.economy.layouts import TILE_STONE, TILE_WOOD
from gpu_zoo.economy.params import DRAW_BONUS, DRAW_MOVE_ORDER, DRAW_RATE, DRAW_TILE
from tests.economy.helpers import ECON_SMALL, P, econ_env
from tests.helpers import ECON_SAEZ, SAEZ_INCOME, reference

with contextlib.redirect_stdout(io.StringIO()):  # it prints a GPU census on import
    foundation = reference("ai_economist.foundation")
    from ai_economist.foundation.components import move as aie_move

from benchmarks.peers.ai_economist import CONFIG as AIE_CONFIG  # noqa: E402

N = P.num_workers
V = 2 * P.obs_range + 1
RESOURCES = ("Stone", "Wood")  # the package's sorted order, ours's index order
SUB_ACTIONS = (*(f"ContinuousDoubleAuction.{side}_{r}" for r in RESOURCES for side in ("Buy", "Sell")),)


def draw(s, agent: int, k: int, t: int) -> float:
    """Ours's draw ``k`` of ``agent`` in env 0 at step ``t`` of the current episode (gpu_zoo.core.api.rng.uniform)."""
    lo, hi = (int(x) & 0x7FFFFFFF for x in s.seed[0])  # the generator takes each input mod 2**31
    bits = int(hash_u64(lo, hi, 0, agent, int(s.episode[0]), t, k))
    return (bits >> 40) / (1 << 24)  # bits_to_unit: the top 24 bits, exact in float32


def package_env(regen: float, coin: float, tax_model: str, rules: dict = ECON_SMALL, **config):
    config = {**AIE_CONFIG, "episode_length": rules["max_cycles"], "starting_agent_coin": coin, **config}
    tax = {"period": rules["tax_period"], "tax_model": tax_model}
    config["components"] = [(name, {**kw, **tax} if name == "PeriodicBracketTax" else kw)
                            for name, kw in AIE_CONFIG["components"]]
    with contextlib.redirect_stdout(io.StringIO()):
        env = foundation.make_env_instance(**config, seed=1)
    for res in ("Wood", "Stone"):
        env.layout_specs[res]["regen_weight"] = regen
    return env


# Four empty tiles in a square (rows 7 and 8 of the quadrant map hold no source and no water).
CROWD = ((7, 2), (7, 3), (8, 2), (8, 3))


def reset_both(theirs, ours, seed: int | None, crowd: bool = False, stock: int = 0):
    """Resets both and gives the package ours's start; returns the package's first observations.

    ``seed=None`` starts ours's next episode as its auto-reset would (what lasts across episodes
    stays). ``crowd`` puts the workers on a 2 x 2 square, so that who moves first decides who gets a
    tile; ``stock`` gives each that many units of stone and of wood, so that builds and asks start at once.
    """
    if seed is None:
        ours.reset(envs=torch.ones(1, dtype=torch.bool))
    else:
        ours.reset(seed=seed)
    with contextlib.redirect_stdout(io.StringIO()):
        theirs.reset()
    s, world = ours.state, theirs.world
    if crowd:
        for a, (r, c) in enumerate(CROWD):
            s.row[0, a], s.col[0, a] = r, c
    s.goods[0, :N] = stock
    build = theirs.get_component("Build")
    world.clear_agent_locs()
    for i, agent in enumerate(world.agents):
        agent.state["inventory"]["Stone"] = agent.state["inventory"]["Wood"] = stock
        assert world.set_agent_loc(agent, int(s.row[0, i]), int(s.col[0, i])) == [int(s.row[0, i]), int(s.col[0, i])]
        agent.state["build_payment"] = float(s.build_pay[0, i])
        agent.state["build_skill"] = build.sampled_skills[agent.idx] = float(s.build_skill[0, i])
        multiplier = P.payment_max_skill_multiplier  # the payment follows from the raw skill as in the package
        assert float(s.build_pay[0, i]) == pytest.approx(
            min(multiplier, (multiplier - 1) * float(s.build_skill[0, i]) + 1) * P.build_payment, rel=1e-6)
        agent.state["bonus_gather_prob"] = float(s.gather_bonus[0, i])
    return theirs._generate_observations(flatten_observations=True, flatten_masks=True)


def step_both(theirs, ours, workers: np.ndarray, planner: np.ndarray, monkeypatch):
    """One step of each with the same actions, the package rolling ours's dice."""
    s = ours.state
    t = int(s.t[0]) + 1
    bonus = [draw(s, a, DRAW_BONUS, t) for a in range(N)]
    keys = [draw(s, a, DRAW_MOVE_ORDER, t) for a in range(N)]
    rates = np.array([draw(s, N, DRAW_RATE + b, t) for b in range(7)])  # the planner's: random Saez rates
    regrowth = np.array([draw(s, N + 1 + k, DRAW_TILE, t) for k in range(P.height * P.width)],
                        dtype=np.float64).reshape(P.height, P.width)
    ours.step({"worker": ours.actions["worker"].new_tensor(workers[None]),
               "planner": ours.actions["planner"].new_tensor(planner[None, None])})
    np.testing.assert_array_equal(s.move_key[0, :N].numpy(), keys)
    order = sorted(range(N), key=lambda a: (keys[a], a))

    gathering = [None]

    def in_our_order():
        for a in order:
            gathering[0] = a
            yield theirs.world.agents[a]

    def rand(*shape):
        assert shape == (P.height, P.width), shape  # the regrowth draws
        return regrowth.copy()

    monkeypatch.setattr(theirs.world, "get_random_order_agents", in_our_order)
    monkeypatch.setattr(aie_move, "rand", lambda: bonus[gathering[0]])
    def uniform(low, high, size):
        assert size == rates.shape, size  # rates drawn until the Saez model has its samples
        return low + (high - low) * rates

    monkeypatch.setattr(np.random, "rand", rand)
    monkeypatch.setattr(np.random, "uniform", uniform)
    before = np.random.get_state()[1].copy()
    actions = {str(a): int(workers[a]) for a in range(N)}
    if theirs.get_component("PeriodicBracketTax").tax_model == "model_wrapper":  # other models: no planner actions
        actions["p"] = [int(k) for k in planner]
    obs, rew, done, _ = theirs.step(actions)
    np.testing.assert_array_equal(np.random.get_state()[1], before)  # nothing else drawn
    monkeypatch.undo()
    return obs, rew, done


def order_book(ours, res: int) -> tuple[list, list]:
    s = ours.state
    kind, price, life = (x[0, :, res].numpy() for x in (s.order_kind, s.order_price, s.order_life))
    bids = sorted((a, int(price[a, m]), int(life[a, m])) for a in range(N) for m in range(P.max_num_orders)
                  if kind[a, m] == 1)
    asks = sorted((a, int(price[a, m]), int(life[a, m])) for a in range(N) for m in range(P.max_num_orders)
                  if kind[a, m] == 2)
    return bids, asks


def compare_state(theirs, ours):
    s, world = ours.state, theirs.world
    for i, agent in enumerate(world.agents):
        st = agent.state
        assert [int(v) for v in agent.loc] == [int(s.row[0, i]), int(s.col[0, i])], f"worker {i}'s position"
        assert st["inventory"]["Coin"] == pytest.approx(float(s.coin[0, i]), abs=1e-9), f"worker {i}'s coin"
        assert st["escrow"]["Coin"] == pytest.approx(float(s.coin_escrow[0, i]), abs=1e-9), f"worker {i}'s escrow"
        for r, name in enumerate(RESOURCES):
            assert st["inventory"][name] == int(s.goods[0, i, r]), f"worker {i}'s {name}"
            assert st["escrow"][name] == int(s.goods_escrow[0, i, r]), f"worker {i}'s {name} in escrow"
        assert st["endogenous"]["Labor"] == pytest.approx(float(s.labor[0, i]), abs=1e-9), f"worker {i}'s labor"
    maps, tile, res = world.maps, s.tile[0].numpy(), s.res[0].numpy()
    np.testing.assert_array_equal(maps.get("Stone"), (tile == TILE_STONE) & (res == 1), err_msg="stone units")
    np.testing.assert_array_equal(maps.get("Wood"), (tile == TILE_WOOD) & (res == 1), err_msg="wood units")
    owners = maps.get("House", owner=True)  # -1 where none
    np.testing.assert_array_equal(owners + 1, s.house[0].numpy(), err_msg="houses")
    market = theirs.get_component("ContinuousDoubleAuction")
    for r, name in enumerate(RESOURCES):
        bids, asks = order_book(ours, r)
        assert sorted((b["buyer"], b["bid"], b["bid_lifetime"]) for b in market.bids[name]) == bids, f"{name} bids"
        assert sorted((a["seller"], a["ask"], a["ask_lifetime"]) for a in market.asks[name]) == asks, f"{name} asks"
        traded = sum(market.price_history[name][agent.idx] for agent in world.agents)
        np.testing.assert_allclose(traded, s.price_hist[0, r].numpy(), rtol=1e-12, atol=1e-12,
                                   err_msg=f"{name} price history")
    tax = theirs.get_component("PeriodicBracketTax")
    np.testing.assert_allclose(tax.curr_marginal_rates, s.tax_rate[0].numpy(), rtol=0, atol=1e-12, err_msg="rates")
    assert tax.tax_cycle_pos == int(s.tax_pos[0])
    np.testing.assert_allclose(tax.last_coin, s.last_coin[0, :N].numpy(), rtol=1e-12, atol=1e-9, err_msg="last coin")
    np.testing.assert_allclose(tax.last_income, s.last_income[0, :N].numpy(), rtol=1e-12, atol=1e-9)


def compare_obs(theirs_obs, ours, where: str):
    obs, masks = ours.obs, ours.action_masks
    for i in range(N):
        mine, their = obs["worker"][0, i].numpy(), theirs_obs[str(i)]
        channels = mine[:9 * V * V].reshape(9, V, V)
        world_map, idx = np.asarray(their["world-map"]), np.asarray(their["world-idx_map"])
        expect = np.stack([world_map[0], world_map[1], world_map[3], world_map[4], world_map[5], world_map[6],
                           idx[0] == 1, idx[0] >= 2, idx[1] >= 2]).astype(np.float32)
        np.testing.assert_array_equal(channels, expect, err_msg=f"{where}: worker {i}'s map")
        np.testing.assert_array_equal(world_map[2], expect[6] + expect[7], err_msg=f"{where}: worker {i}'s houses")
        np.testing.assert_allclose(mine[9 * V * V:], their["flat"], rtol=1e-6, atol=1e-6,
                                   err_msg=f"{where}: worker {i}'s flat observation")
        np.testing.assert_array_equal(masks["worker"][0, i].numpy(), their["action_mask"],
                                      err_msg=f"{where}: worker {i}'s mask")
    planner = theirs_obs["p"]
    expect = np.concatenate([planner["flat"], *(planner[f"p{i}"] for i in range(N))])
    np.testing.assert_allclose(obs["planner"][0, 0].numpy(), expect, rtol=1e-6, atol=1e-6,
                               err_msg=f"{where}: the planner's observation")
    if np.size(planner["action_mask"]) > 1:
        np.testing.assert_array_equal(masks["planner"][0, 0].numpy(), planner["action_mask"],
                                      err_msg=f"{where}: the planner's mask")
    else:  # rates not the planner's to set (the package's planner holds a placeholder): only no-ops are open
        assert masks["planner"][0, 0].numpy().reshape(7, 22).nonzero()[1].tolist() == [0] * 7, where


def choose(rng, ours):
    """Masked random actions, tilted towards what moves the economy: orders, builds and moves."""
    masks = ours.action_masks
    workers = np.zeros(N, dtype=np.int64)
    for a in range(N):
        ok = np.flatnonzero(masks["worker"][0, a].numpy())
        kind = rng.choice(["order", "build", "move", "any"], p=[0.35, 0.15, 0.35, 0.15])
        pick = {"order": ok[(ok >= 2) & (ok < 2 + 4 * P.num_prices)], "build": ok[ok == 1],
                "move": ok[ok >= 2 + 4 * P.num_prices], "any": ok}[kind]
        workers[a] = rng.choice(pick if pick.size else ok)
    planner = np.array([rng.choice(np.flatnonzero(m)) for m in masks["planner"][0, 0].numpy().reshape(7, 22)])
    return workers, planner


@pytest.fixture(scope="module")
def envs():
    """Ours per tax model, made once: each is a kernel the other economy tests compile too."""
    made = {}
    return lambda tax_model: made.setdefault(tax_model, econ_env(autoreset=False, tax_model=tax_model))


@pytest.mark.parametrize(("seed", "regen", "coin", "crowd", "stock", "tax_model"), [
    (0, 0.1, 30.0, False, 0, "model_wrapper"),  # from the reset as drawn, a planner setting the rates
    (5, 0.05, 12.0, True, 3, "model_wrapper"),  # crowded and stocked: contested moves, builds, asks at once
    (9, 0.05, 12.0, True, 3, "us-federal-single-filer-2018-scaled"),  # the US rates, no planner actions
])
def test_whole_episodes_step_for_step(envs, seed, regen, coin, crowd, stock, tax_model, monkeypatch):
    ours = envs(tax_model)
    theirs = package_env(regen, coin, tax_model)
    ours.set_params(resource_regen_prob=regen, starting_agent_coin=coin)
    obs = reset_both(theirs, ours, seed, crowd, stock)
    compare_state(theirs, ours)
    if not (crowd or stock):  # ours's first observations are of the start before it was staged
        compare_obs(obs, ours, "reset")
    rng = np.random.default_rng(seed)
    seen = dict(builds=0, trades=0, gathers=0, expiries=0, tax_days=0, taxes=0)
    market = theirs.get_component("ContinuousDoubleAuction")
    s = ours.state
    for t in range(1, ECON_SMALL["max_cycles"] + 1):
        workers, planner = choose(rng, ours)
        expiring = (s.order_kind[0] != 0) & (s.order_life[0] == P.order_duration)
        obs, rew, done = step_both(theirs, ours, workers, planner, monkeypatch)
        where = f"step {t}"
        compare_state(theirs, ours)
        compare_obs(obs, ours, where)
        mine = ours.rewards
        np.testing.assert_allclose(mine["worker"][0].numpy(), [rew[str(a)] for a in range(N)], rtol=1e-5,
                                   atol=1e-6, err_msg=f"{where}: workers' rewards")
        np.testing.assert_allclose(float(mine["planner"][0, 0]), rew["p"], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{where}: the planner's reward")
        assert done["__all__"] == bool(ours.truncated["worker"][0].all()), where
        seen["trades"] += len(market.executed_trades[-1])
        seen["builds"] += len(theirs.get_component("Build").builds[-1])
        seen["gathers"] += len(theirs.get_component("Gather").gathers[-1])
        seen["expiries"] += int(expiring.sum()) - int(((s.order_kind[0] != 0) & expiring).sum())
        if t % ECON_SMALL["tax_period"] == 0:
            day = theirs.get_component("PeriodicBracketTax").taxes[-1]
            paid = sum(day[str(a)]["tax_paid"] for a in range(N))
            assert float(s.tax_collected[0]) == pytest.approx(paid, abs=1e-9), where
            assert float(s.lump_sum[0]) == pytest.approx(day["0"]["lump_sum"], abs=1e-9), where
            seen["tax_days"] += 1
            seen["taxes"] += int(paid > 0)
    assert done["__all__"]
    assert min(seen.values()) > 0, f"an episode meant to exercise every rule left some unused: {seen}"


def test_the_saez_model_step_for_step_across_episodes(monkeypatch):
    """Rates drawn until the ring of incomes fills, then the formula's, its elasticity carried over episodes.

    The energy cost warms up over the episodes too (``decay``: the weight of labor grows with the
    episodes finished), which the rewards show.
    """
    ours = gpu_zoo.make("gather_trade_build_v0", num_envs=1, device="cpu", autoreset=False, **ECON_SAEZ)
    theirs = package_env(0.05, 12.0, "saez", ECON_SAEZ, energy_warmup_constant=2.0)
    tax = theirs.get_component("PeriodicBracketTax")
    tax._buffer_size = ECON_SAEZ["saez_buffer_size"]  # the package fixes it at 500
    ours.set_params(resource_regen_prob=0.05, starting_agent_coin=12.0, energy_warmup_constant=2.0)
    rng = np.random.default_rng(11)
    drawn = formula = 0
    for episode in range(5):
        obs = reset_both(theirs, ours, 3 if episode == 0 else None, crowd=True, stock=2 + episode)
        compare_state(theirs, ours)
        for t in range(1, ECON_SAEZ["max_cycles"] + 1):
            workers, planner = choose(rng, ours)
            # coin handed to both, spread over the brackets: incomes for the fit of the elasticity
            for a, gift in enumerate(rng.uniform(1.0, SAEZ_INCOME, N)):
                ours.state.coin[0, a] += gift
                theirs.world.agents[a].state["inventory"]["Coin"] += gift
            first_day = t % ECON_SAEZ["tax_period"] == 1
            full = len(tax.saez_buffer) >= ECON_SAEZ["saez_buffer_size"]
            obs, rew, done = step_both(theirs, ours, workers, planner, monkeypatch)
            where = f"episode {episode}, step {t}"
            compare_state(theirs, ours)
            compare_obs(obs, ours, where)
            np.testing.assert_allclose(ours.rewards["worker"][0].numpy(), [rew[str(a)] for a in range(N)],
                                       rtol=1e-5, atol=1e-6, err_msg=where)
            assert float(ours.state.saez_elas[0]) == pytest.approx(tax.elas_t, rel=1e-9, abs=1e-12), where
            drawn += first_day and not full
            formula += first_day and full
        assert done["__all__"]
    np.testing.assert_allclose(tax.running_avg_tax_rates, ours.state.saez_avg_rates[0].numpy(), rtol=1e-9, atol=1e-12)
    assert drawn > 0 and formula > 0, (drawn, formula)
    assert tax.elas_t != 0.5  # the elasticity moved off its start
