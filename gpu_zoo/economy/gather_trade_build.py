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

import functools
import math
from dataclasses import dataclass

import gymnasium
import numpy as np

from gpu_zoo.core import EnvSpec, Field, Group, ObsBlock, PerAgent, PerEnv, PerItem, PerObs, Tuning, kernel_fn
from gpu_zoo.core.api.params import check_count
from gpu_zoo.core.api.rng import randint, uniform

from .layouts import LAYOUTS, TILE_EMPTY, TILE_STONE, TILE_WATER, TILE_WOOD, tile_codes

STONE, WOOD = 0, 1  # resource index: the AI Economist's sorted order
BRACKETS = 7
US_CUTOFFS_USD = (0.0, 9700.0, 39475.0, 84200.0, 160725.0, 204100.0, 510300.0)
US_RATES_2018 = (0.1, 0.12, 0.22, 0.24, 0.32, 0.35, 0.37)
NUM_RATES = 21  # 0%, 5%, ..., 100%
SAEZ_BINS = 100  # the Saez model's income bins below the top cutoff, as the AI Economist's

# Named choices, compared by name in the kernels (Numba reads module-level ints as compile-time
# constants). The string options become int params through the tables beside them (`constants`).
# p.tax_kind: rates the planner's actions set, fixed per env (the `fixed_rates` field), no taxes
# (disable_taxes), rates drawn per bracket and period, or the Saez formula's.
TAX_PLANNER, TAX_FIXED, TAX_NONE, TAX_RANDOM, TAX_SAEZ = 0, 1, 2, 3, 4
TAX_KINDS = {"model_wrapper": TAX_PLANNER, "us-federal-single-filer-2018-scaled": TAX_FIXED,
             "fixed-bracket-rates": TAX_FIXED, "random-bracket-rates": TAX_RANDOM, "saez": TAX_SAEZ}
PARETO_INVERSE_INCOME, PARETO_UNIFORM = 0, 1  # p.pareto_kind: the Saez formula's Pareto weights
PARETO_KINDS = {"inverse_income": PARETO_INVERSE_INCOME, "uniform": PARETO_UNIFORM}
SWF_COIN_EQUALITY, SWF_INV_INCOME_COIN, SWF_INV_INCOME_UTILITY = 0, 1, 2  # p.swf_kind: the planner's welfare
SWF_KINDS = {"coin_eq_times_productivity": SWF_COIN_EQUALITY,
             "inv_income_weighted_coin_endowments": SWF_INV_INCOME_COIN,
             "inv_income_weighted_utility": SWF_INV_INCOME_UTILITY}
ORDER_FREE, ORDER_BID, ORDER_ASK = 0, 1, 2  # an order slot (the `order_kind` field)
CHANNELS = ("stone", "wood", "water", "stone_source", "wood_source", "inside", "own_house", "other_house",
            "other_worker")
_MAX_WORKERS = 62  # buyers still able to trade are kept as bits of one int64
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_F64_ZERO = np.float64(0.0)
_F64_ONE = np.float64(1.0)

# Indices of the random draws within one (env, agent, step): distinct purposes never share one.
# Draw DRAW_FIXED_ORDER + i of the planner (which draws nothing else at a reset) deals fixed skill i;
# its draw DRAW_RATE + b, on a period's first step, bracket b's rate under random-bracket-rates (or under
# saez until its ring fills).
DRAW_BUILD_SKILL, DRAW_GATHER_SKILL, DRAW_MOVE_ORDER, DRAW_BONUS, DRAW_TILE = 0, 1, 2, 3, 4
DRAW_PLACE, DRAW_RATE, DRAW_FIXED_ORDER = 10, 400, 420


@functools.cache
def ranked_skill_offsets(n: int = 4) -> tuple[float, ...]:
    """``k_i``: the i-th smallest of n skills ``min(pmsm, (pmsm - 1) x + 1)`` averages ``1 + (pmsm - 1) k_i``.

    ``x ~ Pareto-II(4)``, as every build skill.

    Exact: with ``u = 1 + (y - 1) / (pmsm - 1)`` a draw exceeds ``y`` with probability ``u^-4`` for
    ``u`` in [1, 2) (the cap sits at u = 2 whatever pmsm), so ``k_i`` integrates the order
    statistic's tail, a polynomial in ``u^-4``, over [1, 2].
    """
    from fractions import Fraction
    from math import comb

    out = []
    for i in range(1, n + 1):
        k = Fraction(0)
        for j in range(i):  # the i-th smallest exceeds y when fewer than i draws are at most y
            for m in range(j + 1):
                power = 4 * (n - j + m)
                k += comb(n, j) * comb(j, m) * (-1) ** m * (1 - Fraction(1, 2 ** (power - 1))) / (power - 1)
        out.append(float(k))
    return tuple(out)


@dataclass(frozen=True)
class EconomyParams:
    """Constructor arguments; defaults are the AI Economist's phase-2 configuration.

    Except ``fixed_four_skill_and_loc``, on there and off here (the package's own default): skills
    are drawn per worker and episode unless asked otherwise.
    """

    num_workers: int = 4
    layout: str = "quadrant_25x25_20each_30clump"
    height: int = 25
    width: int = 25
    max_cycles: int = 1000
    obs_range: int = 5
    starting_agent_coin: float = 0.0
    resource_regen_prob: float = 0.01
    random_water: float = 0.05
    random_wood: float = 0.04
    random_stone: float = 0.04
    skill_dist: str = "pareto"
    build_payment: float = 10.0
    payment_max_skill_multiplier: float = 3.0
    build_labor: float = 10.0
    move_labor: float = 1.0
    collect_labor: float = 1.0
    max_bid_ask: int = 10
    max_num_orders: int = 5
    order_duration: int = 50
    order_labor: float = 0.25
    tax_model: str = "model_wrapper"
    disable_taxes: bool = False
    tax_period: int = 100
    usd_scaling: int = 1000
    tax_annealing_schedule: tuple | None = None
    fixed_bracket_rates: tuple | None = None
    saez_fixed_elas: float | None = None
    pareto_weight_type: str = "inverse_income"
    saez_buffer_size: int = 500
    isoelastic_eta: float = 0.23
    energy_cost: float = 0.21
    energy_warmup_constant: float = 0.0
    energy_warmup_method: str = "decay"
    planner_reward_type: str = "coin_eq_times_productivity"
    mixing_weight_gini_vs_coin: float = 0.0
    fixed_four_skill_and_loc: bool = False
    observe_period_income: bool = False

    def __post_init__(self):
        for name in ("num_workers", "height", "width", "max_cycles", "max_bid_ask", "max_num_orders",
                     "order_duration", "tax_period", "usd_scaling", "saez_buffer_size"):
            check_count(name, getattr(self, name))
        if not 2 <= self.num_workers <= _MAX_WORKERS:
            raise ValueError(f"num_workers must be in [2, {_MAX_WORKERS}], got {self.num_workers}")
        check_count("obs_range", self.obs_range, 0)
        if self.layout != "random":
            if self.layout not in LAYOUTS:
                raise ValueError(f"layout must be 'random' or one of {sorted(LAYOUTS)}, got {self.layout!r}")
            rows = LAYOUTS[self.layout]
            if (self.height, self.width) != (len(rows), len(rows[0])):
                raise ValueError(f"layout {self.layout!r} is {len(rows)} x {len(rows[0])}; got height={self.height}, "
                                 f"width={self.width}")
        if self.num_workers > self.height * self.width // 2:
            raise ValueError(f"{self.num_workers} workers do not fit a {self.height} x {self.width} map")
        choices = (("skill_dist", ("pareto", "none")), ("tax_model", tuple(TAX_KINDS)),
                   ("planner_reward_type", tuple(SWF_KINDS)), ("energy_warmup_method", ("decay", "auto")),
                   ("pareto_weight_type", tuple(PARETO_KINDS)))
        for name, allowed in choices:
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        rates = self.fixed_bracket_rates
        if (rates is not None) != (self.tax_model == "fixed-bracket-rates"):
            raise ValueError("fixed_bracket_rates (7 rates in [0, 1]) is needed by tax_model='fixed-bracket-rates' "
                             f"and only by it; got tax_model={self.tax_model!r}, fixed_bracket_rates={rates!r}")
        if rates is not None and (not isinstance(rates, tuple | list) or len(rates) != BRACKETS or not all(
                isinstance(r, int | float) and not isinstance(r, bool) and 0.0 <= r <= 1.0 for r in rates)):
            raise ValueError(f"fixed_bracket_rates must be {BRACKETS} rates in [0, 1], one per bracket from the "
                             f"lowest; got {rates!r}")
        if rates is not None:
            object.__setattr__(self, "fixed_bracket_rates", tuple(float(r) for r in rates))  # a list from JSON too
        elas = self.saez_fixed_elas
        if elas is not None and (isinstance(elas, bool) or not isinstance(elas, int | float) or not elas >= 0):
            raise ValueError(f"saez_fixed_elas must be None or a number >= 0, got {elas!r}")
        sched = self.tax_annealing_schedule
        if sched is not None and (len(sched) != 2 or not all(isinstance(x, int | float) for x in sched)):
            raise ValueError(f"tax_annealing_schedule must be None or (warmup, slope), got {sched!r}")
        # bounds the AI Economist asserts, and the ones without which a quantity has no meaning
        for name, lo, hi in (("resource_regen_prob", 0.0, 1.0), ("random_water", 0.0, 1.0), ("random_wood", 0.0, 1.0),
                             ("random_stone", 0.0, 1.0), ("isoelastic_eta", 0.0, 1.0),
                             ("mixing_weight_gini_vs_coin", 0.0, 1.0), ("starting_agent_coin", 0.0, None),
                             ("payment_max_skill_multiplier", 1.0, None),
                             ("build_labor", 0.0, None), ("move_labor", 0.0, None), ("collect_labor", 0.0, None),
                             ("order_labor", 0.0, None), ("energy_cost", 0.0, None),
                             ("energy_warmup_constant", 0.0, None)):
            v = getattr(self, name)
            if not (lo <= v and (hi is None or v <= hi)):
                raise ValueError(f"{name} must be {f'in [{lo}, {hi}]' if hi is not None else f'>= {lo}'}, got {v!r}")
        if not self.build_payment > 0:  # the AI Economist takes 0, and its workers then observe NaN
            raise ValueError(f"build_payment must be > 0: each worker observes its payment over it, got "
                             f"{self.build_payment!r}")
        if self.random_water + self.random_wood + self.random_stone > 0.9:
            raise ValueError("random_water + random_wood + random_stone must leave room to stand (at most 0.9)")
        if self.fixed_four_skill_and_loc:
            if self.skill_dist != "pareto" or self.layout == "random":
                raise ValueError("fixed_four_skill_and_loc needs skill_dist='pareto' and a layout from a file; got "
                                 f"skill_dist={self.skill_dist!r}, layout={self.layout!r}")
            tiles, starts = tile_codes(LAYOUTS[self.layout]), fixed_starts(self.num_workers, self.height, self.width)
            bad = [(r, c) for r, c in starts
                   if not (0 <= r < self.height and 0 <= c < self.width) or tiles[r * self.width + c] == TILE_WATER]
            if bad or len(set(starts)) < len(starts):
                raise ValueError(f"fixed_four_skill_and_loc: {self.num_workers} workers' starting tiles on layout "
                                 f"{self.layout!r} are not distinct dry tiles ({bad or 'overlapping'})")

    @property
    def num_prices(self) -> int:
        return self.max_bid_ask + 1

    @property
    def num_worker_actions(self) -> int:
        return 2 + 4 * self.num_prices + 4


def fixed_starts(n: int, height: int, width: int) -> tuple[tuple[int, int], ...]:
    """Starting (row, col) of each fixed skill rank, the smallest first (`fixed_start`, in Python)."""
    return tuple(fixed_start.py_func(i, n, height, width) for i in range(n))


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


def saez_fields(p: EconomyParams) -> tuple[Field, ...]:
    """The Saez model's state: sized 1 under the other models, which never read it."""
    saez = p.tax_model == "saez"
    ring, bins = (p.saez_buffer_size, SAEZ_BINS + 1) if saez else (1, 1)
    return (
        Field("saez_income", "f64", (ring,), "tax_model='saez': incomes of past tax days, a ring of every worker's"),
        Field("saez_rate", "f64", (ring,), "tax_model='saez': the marginal rate each of those incomes was taxed at"),
        Field("saez_count", "i32", (), "tax_model='saez': samples in the ring (at most saez_buffer_size)"),
        Field("saez_next", "i32", (), "tax_model='saez': the ring slot the next sample goes to"),
        Field("saez_elas", "f64", (), "tax_model='saez': the running elasticity estimate", init=(0.5,)),
        Field("saez_avg_rates", "f64", (BRACKETS,), "tax_model='saez': running mean of its rates, a reset's rates"),
        Field("saez_bins", "f64", (2, bins), "tax_model='saez': per income bin, the count then the rate; and A(z)"),
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


# ------------------------------------------------------------------ shared helpers
@kernel_fn
def taxes_due(tax_rate, cutoffs, e, income):
    """Bracket by bracket: ``sum_b rate_b * min(size_b, max(0, income - cutoff_b))``."""
    due = _F64_ZERO
    for b in range(BRACKETS):
        lo, hi = cutoffs[e, b], cutoffs[e, b + 1]
        due += tax_rate[e, b] * min(hi - lo, max(_F64_ZERO, income - lo))
    return due


@kernel_fn
def marginal_rate(tax_rate, cutoffs, e, income):
    if income < 0:
        return _F64_ZERO
    for b in range(BRACKETS):
        if income < cutoffs[e, b + 1]:
            return tax_rate[e, b]
    return tax_rate[e, BRACKETS - 1]


@kernel_fn
def rate_limit(ep_count, p, e):
    """Highest rate allowed now: 1, or the annealed limit ``clip(slope (episodes - warmup), 0, 1)``."""
    if not p.anneal:
        return _F64_ONE
    x = p.anneal_slope * (np.float64(ep_count[e]) - p.anneal_warmup)
    return min(_F64_ONE, max(_F64_ZERO, x))


@kernel_fn
def rate_of(k):
    """The k-th discrete rate, as the AI Economist's float64 ``arange(0, 1.05, 0.05)`` gives it."""
    return np.float64(k) * np.float64(0.05)


@kernel_fn
def rates_allowed(limit):
    """How many of the discrete rates (0%, 5%, ...) are at most ``limit``."""
    count = 0
    for k in range(NUM_RATES):
        if rate_of(k) <= limit:
            count += 1
    return count


@kernel_fn
def total_coin(coin, coin_escrow, e, a):
    return coin[e, a] + coin_escrow[e, a]


@kernel_fn
def utility(s, p, e, a):
    """Isoelastic utility of coin (hand + escrow) minus weighted cumulative labor."""
    eta = np.float64(p.isoelastic_eta)
    c = total_coin(s.coin, s.coin_escrow, e, a)
    if abs(eta - _F64_ONE) < 1e-12:
        u = math.log(max(_F64_ONE, c))
    else:
        u = (math.pow(max(_F64_ZERO, c), _F64_ONE - eta) - _F64_ONE) / (_F64_ONE - eta)
    weight = _F64_ONE
    if p.energy_warmup_constant > 0:
        done = np.float64(s.warmup_steps[e]) if p.warmup_auto else np.float64(s.ep_count[e])
        weight = _F64_ONE - math.exp(-done / np.float64(p.energy_warmup_constant))
    return u - np.float64(p.energy_cost) * weight * s.labor[e, a]


@kernel_fn
def gini(s, p, e):
    """The normalised Gini of the workers' coin (hand + escrow), as the AI Economist computes it."""
    n = p.num_workers
    diff, total = _F64_ZERO, _F64_ZERO
    for i in range(n):
        ci = total_coin(s.coin, s.coin_escrow, e, i)
        total += ci
        for j in range(n):
            diff += abs(ci - total_coin(s.coin, s.coin_escrow, e, j))
    return diff / (np.float64(2 * n) * total + 1e-10) / (np.float64(n - 1) / np.float64(n))


@kernel_fn
def welfare(s, p, e):
    n = p.num_workers
    if p.swf_kind == SWF_COIN_EQUALITY:
        total = _F64_ZERO
        for i in range(n):
            total += total_coin(s.coin, s.coin_escrow, e, i)
        w = _F64_ONE - np.float64(p.mixing_weight_gini_vs_coin)
        equality = _F64_ONE - gini(s, p, e)
        return (w * equality + (_F64_ONE - w)) * (total / np.float64(n))
    norm = _F64_ZERO
    for i in range(n):
        norm += _F64_ONE / max(_F64_ONE, total_coin(s.coin, s.coin_escrow, e, i))
    out = _F64_ZERO
    for i in range(n):
        c = total_coin(s.coin, s.coin_escrow, e, i)
        weight = _F64_ONE / max(_F64_ONE, c) / norm
        out += weight * (c if p.swf_kind == SWF_INV_INCOME_COIN else utility(s, p, e, i))
    return out


@kernel_fn
def occupied_by_other(row, col, n, e, a, r, c):
    for j in range(n):
        if j != a and row[e, j] == r and col[e, j] == c:
            return True
    return False


@kernel_fn
def can_enter(tile, house, row, col, e, a, r, c):
    """Whether worker ``a`` may step onto (r, c) now."""
    if r < 0 or r >= tile.shape[1] or c < 0 or c >= tile.shape[2]:
        return False
    if tile[e, r, c] == TILE_WATER:
        return False
    h = house[e, r, c]
    if h != 0 and h != a + 1:
        return False
    return not occupied_by_other(row, col, row.shape[1] - 1, e, a, r, c)


@kernel_fn
def can_build(goods, tile, house, row, col, e, a):
    r, c = row[e, a], col[e, a]
    return goods[e, a, STONE] >= 1 and goods[e, a, WOOD] >= 1 and tile[e, r, c] == TILE_EMPTY and house[e, r, c] == 0


@kernel_fn
def open_orders(order_kind, e, a, res):
    n = 0
    for m in range(order_kind.shape[3]):
        if order_kind[e, a, res, m] != ORDER_FREE:
            n += 1
    return n


@kernel_fn
def pareto2(u, shape):
    """A Pareto-II (Lomax) draw, NumPy's ``pareto(shape)``, from a uniform in [0, 1)."""
    return math.pow(_F64_ONE - np.float64(u), -_F64_ONE / np.float64(shape)) - _F64_ONE


# ------------------------------------------------------------------ reset phases
@kernel_fn
def reset_tile(s, p, e, k):
    r, c = k // p.width, k % p.width
    kind = s.base[e, r, c]
    if p.random_layout:
        u = uniform(s, e, p.num_agents + k, DRAW_TILE)
        kind = TILE_EMPTY
        if u < p.random_water:
            kind = TILE_WATER
        elif u < p.random_water + p.random_wood:
            kind = TILE_WOOD
        elif u < p.random_water + p.random_wood + p.random_stone:
            kind = TILE_STONE
    s.tile[e, r, c] = kind
    s.res[e, r, c] = 1 if kind == TILE_WOOD or kind == TILE_STONE else 0
    s.house[e, r, c] = 0


@kernel_fn
def reset_agent(s, p, e, a):
    s.coin[e, a] = np.float64(p.starting_agent_coin)
    s.coin_escrow[e, a] = 0
    s.labor[e, a] = 0
    s.last_income[e, a] = 0
    s.last_marginal[e, a] = 0
    s.row[e, a] = -1
    s.col[e, a] = -1
    for res in range(2):
        s.goods[e, a, res] = 0
        s.goods_escrow[e, a, res] = 0


@kernel_fn
def reset_worker(s, p, e, a, act):
    """A worker's orders and skills."""
    for res in range(2):
        for m in range(p.max_num_orders):
            s.order_kind[e, a, res, m] = ORDER_FREE
    if p.pareto_skills:
        x = pareto2(uniform(s, e, a, DRAW_BUILD_SKILL), 4)
        pmsm = np.float64(p.payment_max_skill_multiplier)
        s.build_pay[e, a] = min(pmsm, (pmsm - 1) * x + 1) * np.float64(p.build_payment)
        s.build_skill[e, a] = x
        s.gather_bonus[e, a] = min(2.0, pareto2(uniform(s, e, a, DRAW_GATHER_SKILL), 3)) / 2.0
    else:
        s.build_pay[e, a] = np.float64(p.build_payment)
        s.build_skill[e, a] = 0
        s.gather_bonus[e, a] = 0


@kernel_fn
def place_free(s, p, e, a):
    """Agents in index order, each on a random tile that is not water nor taken (as the AI Economist)."""
    for attempt in range(200):
        r = randint(s, e, a, DRAW_PLACE + 2 * attempt, p.height)
        c = randint(s, e, a, DRAW_PLACE + 2 * attempt + 1, p.width)
        if s.tile[e, r, c] != TILE_WATER and not occupied_by_other(s.row, s.col, p.num_workers, e, a, r, c):
            s.row[e, a], s.col[e, a] = r, c
            return
    for k in range(p.num_cells):  # a crowded random map: the first free tile
        r, c = k // p.width, k % p.width
        if s.tile[e, r, c] != TILE_WATER and not occupied_by_other(s.row, s.col, p.num_workers, e, a, r, c):
            s.row[e, a], s.col[e, a] = r, c
            return


@kernel_fn
def fixed_start(i, n, height, width):
    """(row, col) where fixed skill rank i of n starts: its group's corner, then 4 to a row inward."""
    g = (4 * i) // n
    j = i - (g * n + 3) // 4  # place within the group: ranks before it in the same group
    down, across = j // 4, j % 4
    if g == 0:
        return down, width - 1 - across
    if g == 1:
        return height - 1 - down, across
    if g == 2:
        return down, across
    return height - 1 - down, width - 1 - across


@kernel_fn
def deal_fixed_skills(s, p, e):
    """Rank i goes to a worker drawn uniformly from those without one: a random order, as the AI Economist."""
    n = p.num_workers
    taken = np.int64(0)
    spread = np.float64(p.payment_max_skill_multiplier) - _F64_ONE
    for i in range(n):
        r = randint(s, e, p.planner_lo, DRAW_FIXED_ORDER + i, n - i)
        a = 0
        while (taken >> a) & 1 or r > 0:
            if not (taken >> a) & 1:
                r -= 1
            a += 1
        taken |= np.int64(1) << a
        s.row[e, a], s.col[e, a] = fixed_start(i, n, p.height, p.width)
        s.build_pay[e, a] = (_F64_ONE + spread * s.fixed_skill_k[e, i]) * np.float64(p.build_payment)


# ------------------------------------------------------------------ the Saez tax model
@kernel_fn
def saez_edge(top, i):
    """Edge i of the income bins, as NumPy's ``linspace(0, top, SAEZ_BINS + 1)`` computes it."""
    if i >= SAEZ_BINS:
        return top
    return np.float64(i) * (top / np.float64(SAEZ_BINS))


@kernel_fn
def saez_bin(top, z):
    """The bin of income ``z`` in [0, top], as ``np.histogram`` finds it (the last bin holds ``top``)."""
    i = min(np.int64(z / top * np.float64(SAEZ_BINS)), SAEZ_BINS - 1)
    if z < saez_edge(top, i):
        i -= 1
    elif i != SAEZ_BINS - 1 and z >= saez_edge(top, i + 1):
        i += 1
    return i


@kernel_fn
def pareto_weight(p, z):
    return _F64_ONE if p.pareto_kind == PARETO_UNIFORM else _F64_ONE / max(_F64_ONE, z)


@kernel_fn
def saez_elasticity(s, e):
    """The running elasticity: 2% of the OLS slope of log income on log(1 - rate) over the ring."""
    m = s.saez_count[e]
    k = 0
    mx, my, mt = _F64_ZERO, _F64_ZERO, _F64_ZERO
    for i in range(m):
        z, tau = s.saez_income[e, i], s.saez_rate[e, i]
        if z > 0 and tau < 1:
            k += 1
            mx += math.log(max(_F64_ONE - tau, 1e-9))
            my += math.log(max(z, 1e-9))
            mt += tau
    if k < 10:
        return s.saez_elas[e]
    mx, my, mt = mx / k, my / k, mt / k
    sxx, sxy, stt = _F64_ZERO, _F64_ZERO, _F64_ZERO
    for i in range(m):
        z, tau = s.saez_income[e, i], s.saez_rate[e, i]
        if z > 0 and tau < 1:
            dx = math.log(max(_F64_ONE - tau, 1e-9)) - mx
            sxx += dx * dx
            sxy += dx * (math.log(max(z, 1e-9)) - my)
            stt += (tau - mt) * (tau - mt)
    if math.sqrt(stt / k) < 1e-6:
        return s.saez_elas[e]
    slope = sxy / sxx
    return np.float64(0.02) * max(slope, _F64_ZERO) + np.float64(0.98) * s.saez_elas[e]


@kernel_fn
def saez_bin_rates(s, p, e, elas):
    """Each income bin's Saez rate into ``saez_bins[e, 0]`` (the last entry: incomes above the top cutoff).

    The steps of the AI Economist's ``get_binned_saez_welfare_weight_and_pareto_params`` and
    ``get_saez_marginal_rates``, in its order of operations: bin counts, then A(z) from the bottom
    up, then G(z) and the rate from the top down, then lines across the bins without incomes.
    ``saez_bins[e, 1]`` keeps A(z), -1 for an empty bin where the AI Economist has NaN (A is
    positive otherwise): state without NaN compares equal across targets.
    """
    B = SAEZ_BINS
    top = s.cutoffs[e, BRACKETS - 1]
    m = s.saez_count[e]
    for i in range(B + 1):
        s.saez_bins[e, 0, i] = _F64_ZERO
    n_below, n_above = 0, 0
    w_below, w_above, z_above = _F64_ZERO, _F64_ZERO, _F64_ZERO
    for k in range(m):
        z = s.saez_income[e, k]
        if z < 0:
            n_below += 1
            w_below += pareto_weight(p, _F64_ZERO)
        elif z > top:
            n_above += 1
            w_above += pareto_weight(p, z)
            z_above += z
        else:
            s.saez_bins[e, 0, saez_bin(top, z)] += _F64_ONE
    total = np.float64(m)
    norm = _F64_ZERO
    for i in range(B):
        mid = np.float64(0.5) * (saez_edge(top, i) + saez_edge(top, i + 1))
        norm += s.saez_bins[e, 0, i] * pareto_weight(p, mid)
    norm = norm + w_below + w_above + 1e-9
    # A(z): p(z) against P(z' >= z), from the bottom up (NaN where a bin is empty)
    cum = _F64_ZERO
    for i in range(B):
        lo, hi = saez_edge(top, i), saez_edge(top, i + 1)
        pz = s.saez_bins[e, 0, i] / total
        cum = pz + np.float64(n_below) / total if i == 0 else min(_F64_ONE, max(_F64_ZERO, cum + pz))
        if pz == 0:
            s.saez_bins[e, 1, i] = -_F64_ONE
        else:
            geq = min(_F64_ONE, max(_F64_ZERO, _F64_ONE - cum + np.float64(0.5) * pz))
            s.saez_bins[e, 1, i] = np.float64(0.5) * (lo + hi) * pz / (geq + 1e-9) / (hi - lo)
    a_top = _F64_ZERO
    if n_above > 0:
        mean = z_above / np.float64(n_above)
        a_top = mean / (mean - top + 1e-9)
    s.saez_bins[e, 1, B] = a_top
    # G(z) and the rates, from the top down: G is the Pareto weight at or above z over the share there
    density = w_above / norm
    share = np.float64(n_above) / total
    g_up = density / (share + 1e-9)
    s.saez_bins[e, 0, B] = (_F64_ONE - g_up) / (_F64_ONE - g_up + a_top * elas + 1e-9)
    for i in range(B - 1, -1, -1):
        count = s.saez_bins[e, 0, i]
        mid = np.float64(0.5) * (saez_edge(top, i) + saez_edge(top, i + 1))
        density += count * pareto_weight(p, mid) / norm
        share += count / total
        g_here = density / (share + 1e-9)
        g = np.float64(0.5) * (g_here + g_up)
        g_up = g_here
        a = s.saez_bins[e, 1, i]
        s.saez_bins[e, 0, i] = (_F64_ONE - g) / (_F64_ONE - g + a * elas + 1e-9) if a >= 0 else _F64_ZERO
    # bins without incomes: on a line from the last rate below (0 before the first) to the next one
    last, last_i = _F64_ZERO, -1
    for i in range(B + 1):
        tau = s.saez_bins[e, 0, i]
        if s.saez_bins[e, 1, i] >= 0:
            gap = i - last_i - 1
            if gap > 0:
                step = (tau - last) / np.float64(gap + 1)
                for k in range(1, gap + 1):
                    s.saez_bins[e, 0, last_i + k] = np.float64(k) * step + last
            last, last_i = tau, i


@kernel_fn
def saez_set_rates(s, p, e, limit):
    """A period's rates under tax_model='saez' (``compute_and_set_new_period_rates_from_saez_formula``)."""
    if s.saez_count[e] < p.saez_buffer_size:
        for b in range(BRACKETS):
            s.tax_rate[e, b] = np.float64(uniform(s, e, p.planner_lo, DRAW_RATE + b)) * limit
        return
    s.saez_elas[e] = saez_elasticity(s, e)
    saez_bin_rates(s, p, e, p.saez_elas_value if p.saez_elas_fixed else s.saez_elas[e])
    # bracket by bracket, the tax the bins' rates levy on the bracket's income, per unit of it
    B = SAEZ_BINS
    top = s.cutoffs[e, BRACKETS - 1]
    levied = _F64_ZERO
    for b in range(BRACKETS):
        if b < BRACKETS - 1:
            cut = s.cutoffs[e, b + 1]
            due = _F64_ZERO
            for i in range(B + 1):
                size = saez_edge(top, i + 1) - saez_edge(top, i) if i < B else np.inf
                due += s.saez_bins[e, 0, i] * min(size, max(_F64_ZERO, cut - saez_edge(top, i)))
            due = max(_F64_ZERO, due)
            rate = (due - levied) / (cut - s.cutoffs[e, b])
            levied = due
        else:
            rate = s.saez_bins[e, 0, B]
        rate = min(limit, max(_F64_ZERO, rate))
        s.tax_rate[e, b] = rate
        s.saez_avg_rates[e, b] = s.saez_avg_rates[e, b] * np.float64(0.99) + rate * np.float64(0.01)


@kernel_fn
def saez_record(s, p, e, income, rate):
    """A tax day's (income, marginal rate) into the ring, over its oldest sample once full."""
    k = s.saez_next[e]
    s.saez_income[e, k] = income
    s.saez_rate[e, k] = rate
    s.saez_next[e] = (k + 1) % p.saez_buffer_size
    s.saez_count[e] = min(s.saez_count[e] + 1, p.saez_buffer_size)


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
            s.saez_avg_rates[e, b] = _F64_ZERO
    for b in range(BRACKETS):
        s.tax_idx[e, b] = 0
        if p.tax_kind == TAX_FIXED:
            s.tax_rate[e, b] = min(s.fixed_rates[e, b], limit)
        elif p.tax_kind == TAX_SAEZ:
            s.tax_rate[e, b] = min(s.saez_avg_rates[e, b], limit)
        else:
            s.tax_rate[e, b] = _F64_ZERO
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


# ------------------------------------------------------------------ step phases
@kernel_fn
def build(s, p, e, a, act):
    if act != 1 or not can_build(s.goods, s.tile, s.house, s.row, s.col, e, a):
        return
    s.goods[e, a, STONE] -= 1
    s.goods[e, a, WOOD] -= 1
    s.house[e, s.row[e, a], s.col[e, a]] = a + 1
    s.coin[e, a] += s.build_pay[e, a]
    s.labor[e, a] += np.float64(p.build_labor)


@kernel_fn
def place_order(s, p, e, a, act):
    if act < p.BUY0 or act >= p.MOVE0:
        return
    off = act - p.BUY0
    res, sell, price = off // (2 * p.P), (off % (2 * p.P)) // p.P, off % p.P
    if open_orders(s.order_kind, e, a, res) >= p.max_num_orders:
        return
    if sell:
        if s.goods[e, a, res] <= 0:
            return
        s.goods[e, a, res] -= 1
        s.goods_escrow[e, a, res] += 1
    else:
        if s.coin[e, a] < price:
            return
        s.coin[e, a] -= price
        s.coin_escrow[e, a] += price
    for m in range(p.max_num_orders):
        if s.order_kind[e, a, res, m] == ORDER_FREE:
            s.order_kind[e, a, res, m] = ORDER_ASK if sell else ORDER_BID
            s.order_price[e, a, res, m] = price
            s.order_life[e, a, res, m] = 0
            break
    s.labor[e, a] += np.float64(p.order_labor)


@kernel_fn
def match_resource(s, p, e, res):
    """The AI Economist's greedy matching for one resource (see the module docstring)."""
    n, M = p.num_workers, p.max_num_orders
    possible = (np.int64(1) << np.int64(n)) - np.int64(1)
    while possible != 0:
        ba, bm, bp, bl = -1, -1, -1, -1
        for a in range(n):
            if (possible >> np.int64(a)) & np.int64(1) == 0:
                continue
            for m in range(M):
                if s.order_kind[e, a, res, m] != ORDER_BID:
                    continue
                q, life = s.order_price[e, a, res, m], s.order_life[e, a, res, m]
                if q > bp or (q == bp and life > bl):
                    ba, bm, bp, bl = a, m, q, life
        if ba < 0:
            return
        sa, sm, sp, sl = -1, -1, 0, -1
        for a in range(n):
            if a == ba:
                continue
            for m in range(M):
                if s.order_kind[e, a, res, m] != ORDER_ASK:
                    continue
                q, life = s.order_price[e, a, res, m], s.order_life[e, a, res, m]
                if sa < 0 or q < sp or (q == sp and life > sl):
                    sa, sm, sp, sl = a, m, q, life
        if sa < 0 or bp < sp:
            possible &= ~(np.int64(1) << np.int64(ba))
            continue
        price = sp if bl <= sl else bp
        s.order_kind[e, ba, res, bm] = ORDER_FREE
        s.order_kind[e, sa, res, sm] = ORDER_FREE
        s.goods_escrow[e, sa, res] -= 1
        s.goods[e, ba, res] += 1
        s.coin_escrow[e, ba] -= bp
        s.coin[e, sa] += price
        s.coin[e, ba] += bp - price
        s.price_hist[e, res, price] += 1


@kernel_fn
def market(s, p, e):
    for res in range(2):
        for q in range(p.P):
            s.price_hist[e, res, q] *= np.float64(0.995)
    for res in range(2):
        match_resource(s, p, e, res)
    for a in range(p.num_workers):
        for res in range(2):
            for m in range(p.max_num_orders):
                kind = s.order_kind[e, a, res, m]
                if kind == ORDER_FREE:
                    continue
                s.order_life[e, a, res, m] += 1
                if s.order_life[e, a, res, m] <= p.order_duration:
                    continue
                s.order_kind[e, a, res, m] = ORDER_FREE
                if kind == ORDER_BID:
                    q = s.order_price[e, a, res, m]
                    s.coin_escrow[e, a] -= q
                    s.coin[e, a] += q
                else:
                    s.goods_escrow[e, a, res] -= 1
                    s.goods[e, a, res] += 1


@kernel_fn
def move_one(s, p, e, a):
    act = s.act_worker[e, a] - p.MOVE0
    if act < 0 or act > 3:
        return
    r, c = np.int64(s.row[e, a]), np.int64(s.col[e, a])  # as r - 1 is: one can_enter for all callers
    if act == 0:
        c -= 1
    elif act == 1:
        c += 1
    elif act == 2:
        r -= 1
    else:
        r += 1
    if can_enter(s.tile, s.house, s.row, s.col, e, a, r, c):
        s.row[e, a], s.col[e, a] = r, c
        s.labor[e, a] += np.float64(p.move_labor)


@kernel_fn
def draw_move_key(s, p, e, a):
    s.move_key[e, a] = uniform(s, e, a, DRAW_MOVE_ORDER)


@kernel_fn
def move(s, p, e):
    """Movers one at a time in a random order (ascending random keys, ties by index)."""
    last_key, last_a = np.float32(-1.0), np.int64(-1)  # int64 as `a`: a literal -1 compiled move_one once more
    for _ in range(p.num_workers):
        best_key, best_a = np.float32(2.0), np.int64(-1)
        for a in range(p.num_workers):
            key = s.move_key[e, a]
            after = key > last_key or (key == last_key and a > last_a)
            if after and (key < best_key or (key == best_key and a < best_a)):
                best_key, best_a = key, a
        move_one(s, p, e, best_a)
        last_key, last_a = best_key, best_a


@kernel_fn
def collect(s, p, e, a, act):
    r, c = s.row[e, a], s.col[e, a]
    if not s.res[e, r, c]:
        return
    res = WOOD if s.tile[e, r, c] == TILE_WOOD else STONE
    s.res[e, r, c] = 0
    s.goods[e, a, res] += 2 if uniform(s, e, a, DRAW_BONUS) < s.gather_bonus[e, a] else 1
    s.labor[e, a] += np.float64(p.collect_labor)


@kernel_fn
def tax(s, p, e):
    pos = s.tax_pos[e]
    if pos == 1 and p.tax_kind == TAX_SAEZ:
        saez_set_rates(s, p, e, rate_limit(s.ep_count, p, e))
    elif pos == 1:
        limit = rate_limit(s.ep_count, p, e)
        for b in range(BRACKETS):
            if p.tax_kind == TAX_PLANNER:
                k = s.act_planner[e, 0, b]
                if k > 0 and rate_of(k - 1) <= limit:
                    s.tax_idx[e, b] = k - 1
                s.tax_rate[e, b] = rate_of(s.tax_idx[e, b])
            elif p.tax_kind == TAX_FIXED:
                s.tax_rate[e, b] = min(s.fixed_rates[e, b], limit)
            elif p.tax_kind == TAX_RANDOM:
                s.tax_idx[e, b] = randint(s, e, p.planner_lo, DRAW_RATE + b, rates_allowed(limit))
                s.tax_rate[e, b] = rate_of(s.tax_idx[e, b])
    if pos >= p.tax_period:
        n = p.num_workers
        collected = _F64_ZERO
        for a in range(n):
            income = total_coin(s.coin, s.coin_escrow, e, a) - s.last_coin[e, a]
            paid = min(s.coin[e, a], taxes_due(s.tax_rate, s.cutoffs, e, income))
            s.coin[e, a] -= paid
            collected += paid
            s.last_income[e, a] = income
            rate = marginal_rate(s.tax_rate, s.cutoffs, e, income)
            s.last_marginal[e, a] = rate
            # A period begun before a late-started episode is short; its income would bias the fit.
            if p.tax_kind == TAX_SAEZ and s.start_t[e] <= s.t[e] - p.tax_period:
                saez_record(s, p, e, income, rate)
        share = collected / np.float64(n)
        for a in range(n):
            s.coin[e, a] += share
            s.last_coin[e, a] = total_coin(s.coin, s.coin_escrow, e, a)
        s.tax_collected[e] = collected
        s.lump_sum[e] = share
        pos = 0
    s.tax_pos[e] = pos + 1


@kernel_fn
def regrow(s, p, e, k):
    r, c = k // p.width, k % p.width
    kind = s.tile[e, r, c]
    if (kind == TILE_WOOD or kind == TILE_STONE) and not s.res[e, r, c]:
        if uniform(s, e, p.num_agents + k, DRAW_TILE) < p.resource_regen_prob:
            s.res[e, r, c] = 1


@kernel_fn
def rewards(s, p, e):
    total = _F64_ZERO
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


# ------------------------------------------------------------------ observation phases
@kernel_fn
def sort_incomes(s, p, e):
    """Last incomes / tax_period in ascending order (selection by rank; ties by index)."""
    n = p.num_workers
    for i in range(n):
        x = s.last_income[e, i]
        rank = 0
        for j in range(n):
            y = s.last_income[e, j]
            if y < x or (y == x and j < i):
                rank += 1
        s.sorted_income[e, rank] = np.float32(x / np.float64(p.tax_period))


@kernel_fn
def tally_orders(s, p, e, a, act):
    """A worker's open orders counted per (asks stone, asks wood, bids stone, bids wood) and price."""
    for block in range(4):
        for q in range(p.P):
            s.book[e, a, block, q] = 0
    for res in range(2):
        for m in range(p.max_num_orders):
            kind = s.order_kind[e, a, res, m]
            if kind != ORDER_FREE:
                block = res if kind == ORDER_ASK else 2 + res
                s.book[e, a, block, s.order_price[e, a, res, m]] += 1


@kernel_fn
def mask_planner(s, p, e, a, act):
    """Rates only on a period's first step, under the annealed limit; no-op always."""
    allow = p.tax_kind == TAX_PLANNER and s.tax_pos[e] == 1
    limit = rate_limit(s.ep_count, p, e)
    for b in range(BRACKETS):
        base = b * (1 + NUM_RATES)
        s.mask_planner[e, 0, base] = 1
        for k in range(NUM_RATES):
            s.mask_planner[e, 0, base + 1 + k] = 1 if allow and rate_of(k) <= limit else 0


@kernel_fn
def mask_worker(s, p, e, a, act):
    s.mask_worker[e, a, 0] = 1
    s.mask_worker[e, a, 1] = 1 if can_build(s.goods, s.tile, s.house, s.row, s.col, e, a) else 0
    for res in range(2):
        free = open_orders(s.order_kind, e, a, res) < p.max_num_orders
        has_goods = s.goods[e, a, res] > 0
        for q in range(p.P):
            s.mask_worker[e, a, p.BUY0 + 2 * p.P * res + q] = 1 if free and s.coin[e, a] >= q else 0
            s.mask_worker[e, a, p.BUY0 + 2 * p.P * res + p.P + q] = 1 if free and has_goods else 0
    r, c = np.int64(s.row[e, a]), np.int64(s.col[e, a])
    s.mask_worker[e, a, p.MOVE0] = 1 if can_enter(s.tile, s.house, s.row, s.col, e, a, r, c - 1) else 0
    s.mask_worker[e, a, p.MOVE0 + 1] = 1 if can_enter(s.tile, s.house, s.row, s.col, e, a, r, c + 1) else 0
    s.mask_worker[e, a, p.MOVE0 + 2] = 1 if can_enter(s.tile, s.house, s.row, s.col, e, a, r - 1, c) else 0
    s.mask_worker[e, a, p.MOVE0 + 3] = 1 if can_enter(s.tile, s.house, s.row, s.col, e, a, r + 1, c) else 0


@kernel_fn
def market_rate(price_hist, e, res):
    num, den = _F64_ZERO, _F64_ZERO
    for q in range(price_hist.shape[2]):
        num += np.float64(q) * price_hist[e, res, q]
        den += price_hist[e, res, q]
    return np.float32(num / max(np.float64(0.001), den))


@kernel_fn
def window(tile, res, house, row, col, R, e, a, i):
    """Egocentric map element: channel i // V**2, cell i % V**2 of the V x V window (V = 2R + 1)."""
    V = 2 * R + 1
    ch, cell = i // (V * V), i % (V * V)
    r = row[e, a] + cell // V - R
    c = col[e, a] + cell % V - R
    if r < 0 or r >= tile.shape[1] or c < 0 or c >= tile.shape[2]:
        return _ZERO
    kind = tile[e, r, c]
    if ch == 0:
        return _ONE if kind == TILE_STONE and res[e, r, c] else _ZERO
    if ch == 1:
        return _ONE if kind == TILE_WOOD and res[e, r, c] else _ZERO
    if ch == 2:
        return _ONE if kind == TILE_WATER else _ZERO
    if ch == 3:
        return _ONE if kind == TILE_STONE else _ZERO
    if ch == 4:
        return _ONE if kind == TILE_WOOD else _ZERO
    if ch == 5:
        return _ONE
    h = house[e, r, c]
    if ch == 6:
        return _ONE if h == a + 1 else _ZERO
    if ch == 7:
        return _ONE if h != 0 and h != a + 1 else _ZERO
    return _ONE if occupied_by_other(row, col, row.shape[1] - 1, e, a, r, c) else _ZERO


@kernel_fn
def tax_block(tax_rate, tax_pos, sorted_income, period, e, j):
    """The tax slots shared by both groups: rates (7), first day, tax day, sorted incomes (n)."""
    if j < BRACKETS:
        return np.float32(tax_rate[e, j])
    j -= BRACKETS
    if j == 0:
        return _ONE if tax_pos[e] == 1 else _ZERO
    if j == 1:
        return _ONE if tax_pos[e] >= period else _ZERO
    return sorted_income[e, j - 2]


@kernel_fn
def price_levels(book, P, e, j, who, mine):
    """4P order-book slots: asks (stone, wood) then bids (stone, wood), per price.

    ``who``'s own orders (mine) or everyone else's (not mine); ``who = -1`` counts everyone's.
    """
    block, q = j // P, j % P
    n = 0
    for a in range(book.shape[1]):
        if who < 0 or (a == who) == mine:
            n += book[e, a, block, q]
    return np.float32(n)


@kernel_fn
def period_income(s, p, e, w, k):
    """``observe_period_income``: worker w's income so far this period (k = 0), or the tax due on it (k = 1).

    Both / tax_period, as ``last_incomes``.
    """
    income = total_coin(s.coin, s.coin_escrow, e, w) - s.last_coin[e, w]
    if k == 1:
        income = taxes_due(s.tax_rate, s.cutoffs, e, income)
    return np.float32(income / np.float64(p.tax_period))


@kernel_fn
def observe_worker(s, p, e, a, i):
    """Element ``i`` of worker ``a``'s observation (the layout is in the module docstring).

    Calling only helpers that take arrays: the CPU kernel inlines it, and a call passing the
    whole state per element would cost more than the element itself.
    """
    P, n = p.P, p.num_workers
    if i < p.MAP_OBS:
        return window(s.tile, s.res, s.house, s.row, s.col, p.obs_range, e, a, i)
    j = i - p.MAP_OBS
    if j == 0:
        return np.float32(s.build_pay[e, a] / np.float64(p.build_payment))
    if j == 1:
        return s.build_skill[e, a]
    j -= 2
    if j < 4 * P:
        return price_levels(s.book, P, e, j, a, False)
    j -= 4 * P
    if j < 2:
        return market_rate(s.price_hist, e, j)
    j -= 2
    if j < 4 * P:
        return price_levels(s.book, P, e, j, a, True)
    j -= 4 * P
    if j < 2 * P:
        return np.float32(s.price_hist[e, j // P, j % P] * np.float64(0.01))
    j -= 2 * P
    if j == 0:
        return s.gather_bonus[e, a]
    j -= 1
    if j < BRACKETS + 2 + n:
        return tax_block(s.tax_rate, s.tax_pos, s.sorted_income, p.tax_period, e, j)
    j -= BRACKETS + 2 + n
    if j == 0:
        return np.float32(marginal_rate(s.tax_rate, s.cutoffs, e, total_coin(s.coin, s.coin_escrow, e, a)
                                        - s.last_coin[e, a]))
    if j == 1:
        return np.float32(s.tax_pos[e]) / np.float32(p.tax_period)
    if j == 2:
        return np.float32(s.t[e]) / np.float32(p.max_cycles)
    if j == 3:
        return np.float32(s.coin[e, a] * np.float64(0.01))
    if j < 6:
        return np.float32(s.goods[e, a, j - 4]) * np.float32(0.01)
    if j == 6:
        return np.float32(s.col[e, a]) / np.float32(p.width)
    if j == 7:
        return np.float32(s.row[e, a]) / np.float32(p.height)
    return period_income(s, p, e, a, j - 8)


@kernel_fn
def observe_planner(s, p, e, a, i):
    """Element ``i`` of the planner's observation (the layout is in the module docstring)."""
    P, n = p.P, p.num_workers
    j = i
    if j < 4 * P:
        return price_levels(s.book, P, e, j, np.int64(-1), False)
    j -= 4 * P
    if j < 2:
        return market_rate(s.price_hist, e, j)
    j -= 2
    if j < 2 * P:
        return np.float32(s.price_hist[e, j // P, j % P] * np.float64(0.01))
    j -= 2 * P
    if j < BRACKETS + 2 + n:
        return tax_block(s.tax_rate, s.tax_pos, s.sorted_income, p.tax_period, e, j)
    j -= BRACKETS + 2 + n
    if j == 0:
        return np.float32(s.tax_pos[e]) / np.float32(p.tax_period)
    if j == 1:
        return np.float32(s.t[e]) / np.float32(p.max_cycles)
    if j < 5:
        return _ZERO  # the planner's own inventory: it holds nothing
    j -= 5
    if j >= 6 * n:
        return period_income(s, p, e, (j - 6 * n) // 2, (j - 6 * n) % 2)
    w, k = j // 6, j % 6
    if k == 0:
        return np.float32(marginal_rate(s.tax_rate, s.cutoffs, e, total_coin(s.coin, s.coin_escrow, e, w)
                                        - s.last_coin[e, w]))
    if k == 1:
        return np.float32(s.last_income[e, w] / np.float64(p.tax_period))
    if k == 2:
        return s.last_marginal[e, w]
    if k == 3:
        return np.float32(s.coin[e, w] * np.float64(0.01))
    return np.float32(s.goods[e, w, k - 4]) * np.float32(0.01)


# ------------------------------------------------------------------ render
_TILE_RGB = {TILE_EMPTY: (236, 230, 214), TILE_WATER: (96, 156, 222), TILE_WOOD: (200, 226, 190),
             TILE_STONE: (214, 214, 214)}
_UNIT_RGB = {TILE_WOOD: (46, 125, 50), TILE_STONE: (97, 97, 97)}
_WORKER_RGB = ((220, 50, 47), (38, 139, 210), (133, 153, 0), (211, 54, 130), (181, 137, 0), (42, 161, 152),
               (108, 113, 196), (203, 75, 22))


def render(state: dict, p: EconomyParams, cell: int = 12) -> np.ndarray:
    """Top view: tiles, resource units (dark squares), houses (outlined in the owner's colour), workers (discs)."""
    H, W = p.height, p.width
    img = np.empty((H * cell + 6, W * cell, 3), np.uint8)
    img[:] = (250, 250, 246)
    tile, res, house = state["tile"], state["res"], state["house"]
    yy, xx = np.mgrid[0:cell, 0:cell]
    disc = (yy - (cell - 1) / 2) ** 2 + (xx - (cell - 1) / 2) ** 2 <= (cell * 0.4) ** 2
    for r in range(H):
        for c in range(W):
            block = img[6 + r * cell:6 + (r + 1) * cell, c * cell:(c + 1) * cell]
            kind = int(tile[r, c])
            block[:] = _TILE_RGB[kind]
            if res[r, c] and kind in _UNIT_RGB:
                q = cell // 4
                block[q:cell - q, q:cell - q] = _UNIT_RGB[kind]
            if house[r, c]:
                block[:] = (120, 85, 60)
                rgb = _WORKER_RGB[(int(house[r, c]) - 1) % len(_WORKER_RGB)]
                block[:2], block[-2:], block[:, :2], block[:, -2:] = rgb, rgb, rgb, rgb
    for a in range(p.num_workers):
        r, c = int(state["row"][a]), int(state["col"][a])
        block = img[6 + r * cell:6 + (r + 1) * cell, c * cell:(c + 1) * cell]
        block[disc] = _WORKER_RGB[a % len(_WORKER_RGB)]
    frac = min(1.0, int(state["t"]) / p.max_cycles)
    img[1:4, :int(round(frac * W * cell))] = (120, 120, 120)
    return img


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
