"""The economy's constructor arguments, its constants and the named choices the kernels compare by name."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from gpu_zoo.core import kernel_fn
from gpu_zoo.core.api.params import check_count

from .layouts import LAYOUTS, TILE_WATER, tile_codes

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

MAX_WORKERS = 62  # buyers still able to trade are kept as bits of one int64

F32_ZERO = np.float32(0.0)

F32_ONE = np.float32(1.0)

F64_ZERO = np.float64(0.0)

F64_ONE = np.float64(1.0)

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
        if not 2 <= self.num_workers <= MAX_WORKERS:
            raise ValueError(f"num_workers must be in [2, {MAX_WORKERS}], got {self.num_workers}")
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
