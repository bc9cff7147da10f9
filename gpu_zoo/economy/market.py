"""The continuous double auction: order slots, matching, and the price history."""

from __future__ import annotations

import numpy as np

from gpu_zoo.core import kernel_fn

from .params import F64_ZERO, ORDER_ASK, ORDER_BID, ORDER_FREE


@kernel_fn
def open_orders(order_kind, e, a, res):
    n = 0
    for m in range(order_kind.shape[3]):
        if order_kind[e, a, res, m] != ORDER_FREE:
            n += 1
    return n


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
def market_rate(price_hist, e, res):
    num, den = F64_ZERO, F64_ZERO
    for q in range(price_hist.shape[2]):
        num += np.float64(q) * price_hist[e, res, q]
        den += price_hist[e, res, q]
    return np.float32(num / max(np.float64(0.001), den))


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
