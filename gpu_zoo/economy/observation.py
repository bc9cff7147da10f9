"""What workers and the planner observe, and their action masks."""

from __future__ import annotations

import numpy as np

from gpu_zoo.core import kernel_fn

from .layouts import TILE_STONE, TILE_WATER, TILE_WOOD
from .market import market_rate, open_orders, price_levels
from .params import BRACKETS, F32_ONE, F32_ZERO, NUM_RATES, TAX_PLANNER
from .taxes import marginal_rate, rate_limit, rate_of, taxes_due
from .welfare import total_coin
from .world import can_build, can_enter, occupied_by_other


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
def window(tile, res, house, row, col, R, e, a, i):
    """Egocentric map element: channel i // V**2, cell i % V**2 of the V x V window (V = 2R + 1)."""
    V = 2 * R + 1
    ch, cell = i // (V * V), i % (V * V)
    r = row[e, a] + cell // V - R
    c = col[e, a] + cell % V - R
    if r < 0 or r >= tile.shape[1] or c < 0 or c >= tile.shape[2]:
        return F32_ZERO
    kind = tile[e, r, c]
    if ch == 0:
        return F32_ONE if kind == TILE_STONE and res[e, r, c] else F32_ZERO
    if ch == 1:
        return F32_ONE if kind == TILE_WOOD and res[e, r, c] else F32_ZERO
    if ch == 2:
        return F32_ONE if kind == TILE_WATER else F32_ZERO
    if ch == 3:
        return F32_ONE if kind == TILE_STONE else F32_ZERO
    if ch == 4:
        return F32_ONE if kind == TILE_WOOD else F32_ZERO
    if ch == 5:
        return F32_ONE
    h = house[e, r, c]
    if ch == 6:
        return F32_ONE if h == a + 1 else F32_ZERO
    if ch == 7:
        return F32_ONE if h != 0 and h != a + 1 else F32_ZERO
    return F32_ONE if occupied_by_other(row, col, row.shape[1] - 1, e, a, r, c) else F32_ZERO


@kernel_fn
def tax_block(tax_rate, tax_pos, sorted_income, period, e, j):
    """The tax slots shared by both groups: rates (7), first day, tax day, sorted incomes (n)."""
    if j < BRACKETS:
        return np.float32(tax_rate[e, j])
    j -= BRACKETS
    if j == 0:
        return F32_ONE if tax_pos[e] == 1 else F32_ZERO
    if j == 1:
        return F32_ONE if tax_pos[e] >= period else F32_ZERO
    return sorted_income[e, j - 2]


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
        return F32_ZERO  # the planner's own inventory: it holds nothing
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
