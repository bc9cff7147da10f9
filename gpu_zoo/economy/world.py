"""The map and the workers on it: resets, moving, gathering, regrowth and building."""

from __future__ import annotations

import math

import numpy as np

from gpu_zoo.core import kernel_fn
from gpu_zoo.core.api.rng import randint, uniform

from .layouts import TILE_EMPTY, TILE_STONE, TILE_WATER, TILE_WOOD
from .params import (
    DRAW_BONUS,
    DRAW_BUILD_SKILL,
    DRAW_FIXED_ORDER,
    DRAW_GATHER_SKILL,
    DRAW_MOVE_ORDER,
    DRAW_PLACE,
    DRAW_TILE,
    F64_ONE,
    ORDER_FREE,
    STONE,
    WOOD,
    fixed_start,
)


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
def pareto2(u, shape):
    """A Pareto-II (Lomax) draw, NumPy's ``pareto(shape)``, from a uniform in [0, 1)."""
    return math.pow(F64_ONE - np.float64(u), -F64_ONE / np.float64(shape)) - F64_ONE


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
def deal_fixed_skills(s, p, e):
    """Rank i goes to a worker drawn uniformly from those without one: a random order, as the AI Economist."""
    n = p.num_workers
    taken = np.int64(0)
    spread = np.float64(p.payment_max_skill_multiplier) - F64_ONE
    for i in range(n):
        r = randint(s, e, p.planner_lo, DRAW_FIXED_ORDER + i, n - i)
        a = 0
        while (taken >> a) & 1 or r > 0:
            if not (taken >> a) & 1:
                r -= 1
            a += 1
        taken |= np.int64(1) << a
        s.row[e, a], s.col[e, a] = fixed_start(i, n, p.height, p.width)
        s.build_pay[e, a] = (F64_ONE + spread * s.fixed_skill_k[e, i]) * np.float64(p.build_payment)


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
def regrow(s, p, e, k):
    r, c = k // p.width, k % p.width
    kind = s.tile[e, r, c]
    if (kind == TILE_WOOD or kind == TILE_STONE) and not s.res[e, r, c]:
        if uniform(s, e, p.num_agents + k, DRAW_TILE) < p.resource_regen_prob:
            s.res[e, r, c] = 1
