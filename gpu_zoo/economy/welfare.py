"""Coin, utility and the planner's social welfare."""

from __future__ import annotations

import math

import numpy as np

from gpu_zoo.core import kernel_fn

from .params import F64_ONE, F64_ZERO, SWF_COIN_EQUALITY, SWF_INV_INCOME_COIN


@kernel_fn
def total_coin(coin, coin_escrow, e, a):
    return coin[e, a] + coin_escrow[e, a]


@kernel_fn
def utility(s, p, e, a):
    """Isoelastic utility of coin (hand + escrow) minus weighted cumulative labor."""
    eta = np.float64(p.isoelastic_eta)
    c = total_coin(s.coin, s.coin_escrow, e, a)
    if abs(eta - F64_ONE) < 1e-12:
        u = math.log(max(F64_ONE, c))
    else:
        u = (math.pow(max(F64_ZERO, c), F64_ONE - eta) - F64_ONE) / (F64_ONE - eta)
    weight = F64_ONE
    if p.energy_warmup_constant > 0:
        done = np.float64(s.warmup_steps[e]) if p.warmup_auto else np.float64(s.ep_count[e])
        weight = F64_ONE - math.exp(-done / np.float64(p.energy_warmup_constant))
    return u - np.float64(p.energy_cost) * weight * s.labor[e, a]


@kernel_fn
def gini(s, p, e):
    """The normalised Gini of the workers' coin (hand + escrow), as the AI Economist computes it."""
    n = p.num_workers
    diff, total = F64_ZERO, F64_ZERO
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
        total = F64_ZERO
        for i in range(n):
            total += total_coin(s.coin, s.coin_escrow, e, i)
        w = F64_ONE - np.float64(p.mixing_weight_gini_vs_coin)
        equality = F64_ONE - gini(s, p, e)
        return (w * equality + (F64_ONE - w)) * (total / np.float64(n))
    norm = F64_ZERO
    for i in range(n):
        norm += F64_ONE / max(F64_ONE, total_coin(s.coin, s.coin_escrow, e, i))
    out = F64_ZERO
    for i in range(n):
        c = total_coin(s.coin, s.coin_escrow, e, i)
        weight = F64_ONE / max(F64_ONE, c) / norm
        out += weight * (c if p.swf_kind == SWF_INV_INCOME_COIN else utility(s, p, e, i))
    return out
