"""Gather-trade-build: workers gather wood and stone, trade them and build houses, and a planner taxes them.

After the AI Economist (Zheng et al., "The AI Economist"): its scenario
``layout_from_file/simple_wood_and_stone`` with the components Build, ContinuousDoubleAuction,
Gather and PeriodicBracketTax, in the configuration of its phase-2 training. Written once for the
CPU and the GPU.

## World
An ``height x width`` map (default: the AI Economist's 25 x 25 quadrant layout, four rooms split
by water with doors). Tiles are empty, water (impassable), wood sources or stone sources. A source
holds at most one unit; an empty source regrows its unit with probability ``resource_regen_prob``
per step. Houses are impassable to everyone but their owner. ``layout="random"`` draws a fresh map
per env and episode instead: each tile is water, a wood source or a stone source with probability
``random_water``, ``random_wood`` and ``random_stone``.

## A step, in the AI Economist's order
1. **Build**: a worker that chose build, holds one wood and one stone, and stands on an empty tile
   (no source, no house) builds a house there for ``build_payment x skill`` coin and
   ``build_labor`` labor.
2. **Trade**, a continuous double auction per resource (stone, then wood). A bid at price ``q``
   (0..``max_bid_ask``) moves ``q`` coin into escrow, an ask moves one unit; each costs
   ``order_labor``. A worker has at most ``max_num_orders`` open orders per resource, bids and asks
   together. Orders match greedily: the best bid (highest price, then oldest, then lowest agent
   index) against the best ask from another worker (lowest price, then oldest, then lowest index),
   while the bid is at least the ask. A trade clears at the older order's price (the ask's if both are
   new); the buyer gets back the rest of its escrow. An order unfilled after ``order_duration``
   further steps expires and its escrow is refunded.
3. **Gather**: movers go in a random order drawn per env and step from the seed; a move into water,
   another's house, another worker or off the map fails (no labor); a move costs ``move_labor``.
   Then every worker on a tile holding a unit collects it: one unit, or two with its gather
   bonus probability, for ``collect_labor``.
4. **Tax** (``tax_period`` steps per period, counted from the episode's step 0, so an episode
   started late by ``reset(start_steps=...)`` begins inside a period, taxed as the others but kept
   out of the Saez model's samples, its tax days where a full episode's fall): on the first step of a period the
   planner's action
   sets the marginal rate of each of the 7 brackets (US-federal 2018 cutoffs divided by
   ``usd_scaling``). Other ``tax_model`` values: the US-federal 2018 rates,
   ``"fixed-bracket-rates"``, the 7 rates given as ``fixed_bracket_rates`` (each in [0, 1]), or
   ``"random-bracket-rates"``, rates drawn afresh per bracket and period, uniformly among 0%,
   5%, ..., 100%, or ``"saez"``, the AI Economist's adaptation of Saez's optimal-tax formula (below).
   An annealed limit (``tax_annealing_schedule``) caps every model's rates. On the
   last step each worker's income in the period (coin, escrow included) is taxed bracket by
   bracket, the tax is taken from its coin in hand (never more), and the total is shared out
   equally among the workers.
5. Sources regrow.

Skills are drawn per worker and episode: build payment ``min(pmsm, (pmsm - 1) x + 1) x
build_payment`` with ``x ~ Pareto-II(4)`` and ``pmsm = payment_max_skill_multiplier``; gather bonus
probability ``min(2, y) / 2`` with ``y ~ Pareto-II(3)``. Workers start on random free tiles with
``starting_agent_coin`` coin.

``fixed_four_skill_and_loc=True`` (Pareto skills and a map from a file: the AI Economist's
training configuration) fixes instead the build payments and the starting tiles, and deals them
to the workers in a random order per episode. The i-th smallest payment is the expected i-th
smallest of ``num_workers`` draws, ``build_payment x (1 + (pmsm - 1) k_i)`` (with 4 workers ``k =
(0.0667, 0.1635, 0.3235, 0.6130)``: 11.3, 13.3, 16.5 and 22.3 coin by default). Ranked by
payment, the workers fall into four groups (rank ``i`` in group ``floor(4 i / num_workers)``), the
poorest starting in the top-right corner, then bottom left, top left and bottom right, a group's
j-th member ``j // 4`` rows and ``j % 4`` columns in from its corner (`fixed_starts`). The gather
bonus and the raw build skill observed are still drawn per worker.

## The Saez tax model
``tax_model="saez"`` sets the rates as the AI Economist's ``PeriodicBracketTax`` does. Every tax day
adds each worker's (income, marginal rate) to a ring of the last ``saez_buffer_size`` (500) in the
env, kept across episodes (until ``reset()`` leaves its episode count at 0). Until the ring is full
a period's rates are drawn uniformly in [0, limit). Then, on a period's first step:

1. The elasticity ``e`` is a running estimate: 98% of the last one (0.5 at first) plus 2% of the
   ordinary least-squares slope (floored at 0) of ``log z`` on ``log(1 - tau)`` over the ring's
   samples with income ``z > 0`` and rate ``tau < 1`` (kept unchanged with fewer than 10 such
   samples or rates spread less than 1e-6); ``saez_fixed_elas``, if given, replaces it in the formula.
2. The ring's incomes fall in 100 equal bins from 0 to the top bracket's cutoff, plus the incomes
   below 0 and above it. Per bin, ``G(z)`` is the mean Pareto weight (``1 / max(1, z)``, or 1 with
   ``pareto_weight_type="uniform"``) of the incomes at or above it, averaged over the bin's edges,
   and ``A(z) = z p(z) / P(z' >= z)`` per unit of income (``mean / (mean - cutoff)`` above the top
   cutoff).
3. A bin's rate is ``(1 - G) / (1 - G + A e)``; bins without incomes take rates on a line between
   their neighbours'. A bracket's rate is the mean of the bins' rates over it, weighted by
   income, the top bracket's that of the incomes above its cutoff; each is clipped to [0, limit].

A reset starts from a running average of the formula's rates (1% a period).

## Rewards
A worker gets the change of its utility ``((coin)^(1-eta) - 1) / (1 - eta) - energy_cost x w x
labor`` (coin in hand and in escrow, cumulative labor; ``log(max(1, coin))`` at ``eta = 1``; ``w = 1
- exp(-x / energy_warmup_constant)``, or 1 when the constant is 0, where ``x`` counts the episodes
finished (``energy_warmup_method="decay"``) or the steps whose mean worker reward was positive
(``"auto"``), in each env since its episode count was last 0). The planner gets the
change of social welfare: by default equality x productivity, ``(1 - gini) x mean(coin)``, with
``gini = sum_ij |c_i - c_j| / (2 (n - 1) sum c)``.

## Actions
Worker, ``Discrete(2 + 4 (max_bid_ask + 1) + 4)`` (50 by default), the AI Economist's indices:

| index | action |
| --- | --- |
| 0 | no-op |
| 1 | build |
| 2 + q | bid for stone at price q |
| 2 + P + q | ask for stone at price q (P = max_bid_ask + 1) |
| 2 + 2P + q | bid for wood at price q |
| 2 + 3P + q | ask for wood at price q |
| 2 + 4P + 0..3 | move left (col - 1), right (col + 1), up (row - 1), down (row + 1) |

Planner, ``MultiDiscrete([22] * 7)``: per bracket, 0 keeps the current rate and ``k`` in 1..21 sets
``0.05 (k - 1)``. Rates can change only on the first step of a period.

**Action masks** (``info["action_mask"]``): what is feasible now (build conditions, affordable bids,
asks with goods in hand, free order slots, open moves; for the planner, rates only on a period's
first step). An infeasible action is a no-op, as in the AI Economist; except that a masked planner
rate is ignored too (the AI Economist applies it).

## Observations
Worker: an egocentric ``V x V`` window, ``V = 2 obs_range + 1`` (11), centred on the worker,
channel by channel (``V*V`` values each, row-major from the top-left): stone units, wood units,
water, stone sources, wood sources, inside the map, own houses, others' houses, other workers.
Then, in the AI Economist's flat order (``P = max_bid_ask + 1``, ``n = num_workers``):

| slots | meaning |
| --- | --- |
| 1 | build payment / ``build_payment`` |
| 1 | raw build skill draw ``x`` |
| 4P | other workers' open asks per price: stone, wood; then their bids: stone, wood |
| 2 | market rate (mean traded price, decayed history): stone, wood |
| 4P | own asks per price: stone, wood; own bids: stone, wood |
| 2P | traded-price history x 0.01 (decayed by 0.995 a step): stone, wood |
| 1 | gather bonus probability |
| 7 | current marginal rates |
| 1, 1 | first day of a tax period, tax day |
| n | last period's incomes / ``tax_period``, sorted ascending |
| 1 | own marginal rate on this period's income so far |
| 1 | position in the tax period / ``tax_period`` |
| 1 | t / max_cycles |
| 3 | coin, stone, wood in hand x 0.01 |
| 2 | column / width, row / height |

Planner: other workers' order books (all asks per price: stone, wood; all bids), market rates
(2), price histories (2P), current rates (7), first-day and tax-day flags, sorted last incomes (n),
tax phase, time, its own (empty) inventory (3); then per worker: marginal rate on its income so far,
last income / ``tax_period``, last marginal rate, coin, stone and wood in hand x 0.01.

With ``observe_period_income=True`` (off by default: the observations stay the AI Economist's),
a worker also sees its income so far in this tax period and the tax due on it at the current
rates, each / ``tax_period`` (2 slots at the end), and the planner the same two per worker (2n
slots at the end). The AI Economist's policies are LSTMs, which can add up a period's income from
the coin they saw; a policy without memory cannot, and then nothing it observes tells it the tax
its work of this period will cost on tax day: under flat rates even ``marginal_rate`` is the same
at every income.

## Differences from the AI Economist
Random numbers come from the seed through gpu_zoo's counter-based generator, so a given seed gives
other draws than the AI Economist's NumPy ones (same distributions). ``fixed_four_skill_and_loc``'s
payments are the exact expectations, where the AI Economist averages 100,000 samples when it builds
the env (within 0.1% of them); its last corner is ``(height - 1, width - 1)`` where it writes
``(width - 1, width - 1)`` (the same on a square map). The Gini uses the exact pairwise formula for
every number of workers (the AI Economist switches to an approximation from 30). Tax annealing and
the ``decay`` warm-up count the episodes finished in each env since ``reset()`` (from the
``episode_counts`` it was given, if any), the ``auto`` warm-up the steps since a ``reset()`` that
left the env's episode count at 0; the AI Economist counts per env instance since it was made. The
AI Economist's ``world-idx_map`` (agent indices as values) becomes the own-house, other-house and
other-worker channels.
``tax_model="random-bracket-rates"`` is ours (workers that train under it see the rates change
and can learn to respond before a planner sets them). The ``saez`` model's ring is per env, as the
AI Economist's buffer is per env instance (its RLlib training merges them across workers: not here);
its rates after a reset, the running mean, are in the observations from the reset on, where the
AI Economist's reset observation still shows the rates of the period before.

## Version history
- v0: initial release; ``fixed_four_skill_and_loc`` added (off by default: skills stay drawn per episode);
  ``observe_period_income`` added (off by default); ``tax_model="random-bracket-rates"`` added;
  ``tax_model="fixed-bracket-rates"`` with ``fixed_bracket_rates`` added;
  ``energy_warmup_method="auto"`` added; ``tax_model="saez"`` with ``saez_fixed_elas``,
  ``pareto_weight_type`` and ``saez_buffer_size`` added.
"""

from __future__ import annotations

import math

import gymnasium
import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerItem, PerObs, Tuning, kernel_fn

from .layouts import LAYOUTS, tile_codes
from .market import market, place_order, tally_orders
from .observation import mask_planner, mask_worker, observe_planner, observe_worker, sort_incomes
from .params import (
    BRACKETS,
    CHANNELS,
    F64_ZERO,
    NUM_RATES,
    PARETO_KINDS,
    SWF_KINDS,
    TAX_FIXED,
    TAX_KINDS,
    TAX_NONE,
    TAX_SAEZ,
    US_CUTOFFS_USD,
    US_RATES_2018,
    EconomyParams,
    ranked_skill_offsets,
)
from .render import render
from .taxes import rate_limit, saez_fields, tax
from .welfare import total_coin, utility, welfare
from .world import (
    build,
    collect,
    deal_fixed_skills,
    draw_move_key,
    move,
    place_free,
    regrow,
    reset_agent,
    reset_tile,
    reset_worker,
)


def worker_action_meanings(p: EconomyParams) -> list[str]:
    """Name of each worker action index: ``noop``, ``build``, ``bid_stone_3``, ``ask_wood_0``, ``move_up``..."""
    out = ["noop", "build"]
    for res in ("stone", "wood"):
        for side in ("bid", "ask"):
            out += [f"{side}_{res}_{q}" for q in range(p.num_prices)]
    return out + ["move_left", "move_right", "move_up", "move_down"]


def groups(p: EconomyParams) -> tuple[Group, ...]:
    P, n, V = p.num_prices, p.num_workers, 2 * p.obs_range + 1
    worker_obs = (
        *(ObsBlock(f"map_{c}", V * V, f"egocentric {c} channel") for c in CHANNELS),
        ObsBlock("build_payment", 1), ObsBlock("build_skill", 1),
        ObsBlock("available_asks", 2 * P), ObsBlock("available_bids", 2 * P), ObsBlock("market_rate", 2),
        ObsBlock("my_asks", 2 * P), ObsBlock("my_bids", 2 * P), ObsBlock("price_history", 2 * P),
        ObsBlock("bonus_gather_prob", 1), ObsBlock("curr_rates", BRACKETS), ObsBlock("is_first_day", 1),
        ObsBlock("is_tax_day", 1), ObsBlock("last_incomes", n), ObsBlock("marginal_rate", 1),
        ObsBlock("tax_phase", 1), ObsBlock("time", 1), ObsBlock("inventory", 3), ObsBlock("loc", 2),
    )
    if p.observe_period_income:
        worker_obs += (ObsBlock("period_income", 2, "income so far this tax period and the tax due on it, "
                                                    "each / tax_period"),)
    planner_obs = (
        ObsBlock("full_asks", 2 * P), ObsBlock("full_bids", 2 * P), ObsBlock("market_rate", 2),
        ObsBlock("price_history", 2 * P), ObsBlock("curr_rates", BRACKETS), ObsBlock("is_first_day", 1),
        ObsBlock("is_tax_day", 1), ObsBlock("last_incomes", n), ObsBlock("tax_phase", 1), ObsBlock("time", 1),
        ObsBlock("inventory", 3), ObsBlock("workers", 6 * n, "per worker: marginal rate now, last income, "
                                           "last marginal rate, coin, stone, wood"),
    )
    if p.observe_period_income:
        planner_obs += (ObsBlock("period_incomes", 2 * n, "per worker: income so far this tax period and the "
                                                          "tax due on it, each / tax_period"),)
    return (
        Group("worker", n, worker_obs, gymnasium.spaces.Discrete(p.num_worker_actions), masked=True),
        Group("planner", 1, planner_obs, gymnasium.spaces.MultiDiscrete([1 + NUM_RATES] * BRACKETS), masked=True),
    )


def fields(p: EconomyParams) -> tuple[Field, ...]:
    H, W, n, M, P = p.height, p.width, p.num_workers, p.max_num_orders, p.num_prices
    A = n + 1
    base = tile_codes(LAYOUTS[p.layout]) if p.layout in LAYOUTS else None
    return (
        Field("base", "i32", (H, W), "the named layout's tile codes", init=base),
        Field("tile", "i32", (H, W), "tile kind: 0 empty, 1 wood source, 2 stone source, 3 water"),
        Field("res", "u8", (H, W), "1 if the source tile holds its unit"),
        Field("house", "i32", (H, W), "owner + 1 of the house on the tile, 0 if none"),
        Field("row", "i32", (A,), "worker row (0 at the top); -1 for the planner"),
        Field("col", "i32", (A,), "worker column; -1 for the planner"),
        Field("coin", "f64", (A,), "coin in hand"),
        Field("coin_escrow", "f64", (A,), "coin held by open bids"),
        Field("goods", "i32", (A, 2), "stone and wood in hand"),
        Field("goods_escrow", "i32", (A, 2), "stone and wood held by open asks"),
        Field("labor", "f64", (A,), "labor spent this episode"),
        Field("build_pay", "f64", (A,), "coin earned per house"),
        Field("build_skill", "f32", (A,), "the raw build skill draw"),
        Field("gather_bonus", "f32", (A,), "probability of a second unit when gathering"),
        Field("util", "f64", (A,), "last utility of each worker; the planner's slot holds the last welfare"),
        Field("last_coin", "f64", (A,), "coin (escrow included) after the last tax day"),
        Field("last_income", "f64", (A,), "income of the last tax period"),
        Field("last_marginal", "f32", (A,), "marginal rate on the last period's income"),
        Field("move_key", "f32", (A,), "this step's random priority of each mover"),
        Field("sorted_income", "f32", (n,), "last incomes / tax_period, ascending"),
        Field("order_kind", "i32", (n, 2, M), "open order slots per worker and resource: 0 free, 1 bid, 2 ask"),
        Field("order_price", "i32", (n, 2, M), "order price"),
        Field("order_life", "i32", (n, 2, M), "steps the order has rested"),
        Field("book", "i32", (n, 4, P), "open orders per worker: asks (stone, wood), bids (stone, wood), per price"),
        Field("price_hist", "f64", (2, P), "traded prices per resource, decayed by 0.995 a step"),
        Field("cutoffs", "f64", (BRACKETS + 1,), "bracket edges in coin (the last is infinite)",
              init=(*(c / p.usd_scaling for c in US_CUTOFFS_USD), math.inf)),
        Field("fixed_rates", "f64", (BRACKETS,), "the fixed marginal rates: US-federal 2018 or fixed_bracket_rates",
              init=p.fixed_bracket_rates or US_RATES_2018),
        Field("fixed_skill_k", "f64", (n,), "fixed_four_skill_and_loc: k_i of the i-th smallest payment",
              init=ranked_skill_offsets(n) if p.fixed_four_skill_and_loc else None),
        *saez_fields(p),
        Field("tax_idx", "i32", (BRACKETS,), "index of each bracket's rate among 0%, 5%, ..., 100%"),
        Field("tax_rate", "f64", (BRACKETS,), "current marginal rates"),
        Field("tax_pos", "i32", (), "position in the tax period, 1 on its first step"),
        Field("warmup_steps", "i32", (), "energy_warmup_method='auto': steps whose mean worker reward was positive"),
        Field("tax_collected", "f64", (), "tax collected on the last tax day"),
        Field("lump_sum", "f64", (), "each worker's share of it"),
    )


def constants(p: EconomyParams) -> dict:
    P, V = p.num_prices, 2 * p.obs_range + 1
    tax_kind = TAX_NONE if p.disable_taxes else TAX_KINDS[p.tax_model]
    sched = p.tax_annealing_schedule
    out = {
        "P": P, "MAP_OBS": len(CHANNELS) * V * V, "BUY0": 2, "MOVE0": 2 + 4 * P,
        "tax_kind": tax_kind, "swf_kind": SWF_KINDS[p.planner_reward_type],
        "pareto_kind": PARETO_KINDS[p.pareto_weight_type], "saez_elas_fixed": p.saez_fixed_elas is not None,
        "saez_elas_value": np.float64(p.saez_fixed_elas or 0.0),
        "random_layout": p.layout == "random", "pareto_skills": p.skill_dist == "pareto",
        "fixed_skills": p.fixed_four_skill_and_loc, "warmup_auto": p.energy_warmup_method == "auto",
        "anneal": sched is not None,
        "anneal_warmup": np.float64(sched[0] if sched else 0.0), "anneal_slope": np.float64(sched[1] if sched else 0.0),
        "num_cells": p.height * p.width,
    }
    return out


@kernel_fn
def reset_env(s, p, e):
    if p.fixed_skills:
        deal_fixed_skills(s, p, e)
    else:
        for a in range(p.num_workers):
            place_free(s, p, e, a)
    for res in range(2):
        for q in range(p.P):
            s.price_hist[e, res, q] = 0
    limit = rate_limit(s.ep_count, p, e)
    if p.tax_kind == TAX_SAEZ and s.ep_count[e] == 0:  # reset(): the Saez model learns afresh
        s.saez_count[e] = 0
        s.saez_next[e] = 0
        s.saez_elas[e] = np.float64(0.5)
        for b in range(BRACKETS):
            s.saez_avg_rates[e, b] = F64_ZERO
    for b in range(BRACKETS):
        s.tax_idx[e, b] = 0
        if p.tax_kind == TAX_FIXED:
            s.tax_rate[e, b] = min(s.fixed_rates[e, b], limit)
        elif p.tax_kind == TAX_SAEZ:
            s.tax_rate[e, b] = min(s.saez_avg_rates[e, b], limit)
        else:
            s.tax_rate[e, b] = F64_ZERO
    # Periods run on the episode's clock: an episode started late (BatchedEnv.reset's start_steps)
    # is in the period its step count says, its tax days where a full episode's fall.
    s.tax_pos[e] = s.t[e] % p.tax_period + 1
    s.tax_collected[e] = 0
    s.lump_sum[e] = 0
    if s.ep_count[e] == 0:  # reset(): the auto warm-up starts over, as the episode count does
        s.warmup_steps[e] = 0
    for a in range(p.num_workers):
        s.last_coin[e, a] = total_coin(s.coin, s.coin_escrow, e, a)
        s.util[e, a] = utility(s, p, e, a)
        s.sorted_income[e, a] = 0
    s.util[e, p.planner_lo] = welfare(s, p, e)


@kernel_fn
def rewards(s, p, e):
    total = F64_ZERO
    for a in range(p.num_workers):
        u = utility(s, p, e, a)
        total += u - s.util[e, a]
        s.rew[e, a] = np.float32(u - s.util[e, a])
        s.util[e, a] = u
    if p.warmup_auto and total > 0:  # counted after this step's rewards, which used the weight before it
        s.warmup_steps[e] += 1
    w = welfare(s, p, e)
    s.rew[e, p.planner_lo] = np.float32(w - s.util[e, p.planner_lo])
    s.util[e, p.planner_lo] = w


SPEC = EnvSpec(
    id="gather_trade_build_v0",
    params=EconomyParams,
    groups=groups,
    fields=fields,
    reset=lambda p: (PerItem(reset_tile, p.height * p.width), PerAgent(reset_agent),
                     PerAgent(reset_worker, group="worker"), PerEnv(reset_env)),
    step=lambda p: (PerAgent(build, group="worker"), PerAgent(place_order, group="worker"), PerEnv(market),
                    PerAgent(draw_move_key), PerEnv(move), PerAgent(collect, group="worker"), PerEnv(tax),
                    PerItem(regrow, p.height * p.width), PerEnv(rewards)),
    observe=(PerEnv(sort_incomes), PerAgent(tally_orders, group="worker"), PerAgent(mask_worker, group="worker"),
             PerAgent(mask_planner, group="planner"),
             PerObs(observe_worker, group="worker"), PerObs(observe_planner, group="planner")),
    constants=constants,
    render=render,
    # most of a worker's row is its map window: inlined, it runs as fast as with every helper inlined
    tuning=Tuning(cpu_inline_helpers=("window",)),
    module=__name__,
)
