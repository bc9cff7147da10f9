"""Taxes: bracket rates and what they take, the planner's rate limits, and the Saez model's rates."""

from __future__ import annotations

import math

import numpy as np

from gpu_zoo.core import Field, kernel_fn
from gpu_zoo.core.api.rng import randint, uniform

from .params import (
    BRACKETS,
    DRAW_RATE,
    F64_ONE,
    F64_ZERO,
    NUM_RATES,
    PARETO_UNIFORM,
    SAEZ_BINS,
    TAX_FIXED,
    TAX_PLANNER,
    TAX_RANDOM,
    TAX_SAEZ,
    EconomyParams,
)
from .welfare import total_coin


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


@kernel_fn
def taxes_due(tax_rate, cutoffs, e, income):
    """Bracket by bracket: ``sum_b rate_b * min(size_b, max(0, income - cutoff_b))``."""
    due = F64_ZERO
    for b in range(BRACKETS):
        lo, hi = cutoffs[e, b], cutoffs[e, b + 1]
        due += tax_rate[e, b] * min(hi - lo, max(F64_ZERO, income - lo))
    return due


@kernel_fn
def marginal_rate(tax_rate, cutoffs, e, income):
    if income < 0:
        return F64_ZERO
    for b in range(BRACKETS):
        if income < cutoffs[e, b + 1]:
            return tax_rate[e, b]
    return tax_rate[e, BRACKETS - 1]


@kernel_fn
def rate_limit(ep_count, p, e):
    """Highest rate allowed now: 1, or the annealed limit ``clip(slope (episodes - warmup), 0, 1)``."""
    if not p.anneal:
        return F64_ONE
    x = p.anneal_slope * (np.float64(ep_count[e]) - p.anneal_warmup)
    return min(F64_ONE, max(F64_ZERO, x))


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
    return F64_ONE if p.pareto_kind == PARETO_UNIFORM else F64_ONE / max(F64_ONE, z)


@kernel_fn
def saez_elasticity(s, e):
    """The running elasticity: 2% of the OLS slope of log income on log(1 - rate) over the ring."""
    m = s.saez_count[e]
    k = 0
    mx, my, mt = F64_ZERO, F64_ZERO, F64_ZERO
    for i in range(m):
        z, tau = s.saez_income[e, i], s.saez_rate[e, i]
        if z > 0 and tau < 1:
            k += 1
            mx += math.log(max(F64_ONE - tau, 1e-9))
            my += math.log(max(z, 1e-9))
            mt += tau
    if k < 10:
        return s.saez_elas[e]
    mx, my, mt = mx / k, my / k, mt / k
    sxx, sxy, stt = F64_ZERO, F64_ZERO, F64_ZERO
    for i in range(m):
        z, tau = s.saez_income[e, i], s.saez_rate[e, i]
        if z > 0 and tau < 1:
            dx = math.log(max(F64_ONE - tau, 1e-9)) - mx
            sxx += dx * dx
            sxy += dx * (math.log(max(z, 1e-9)) - my)
            stt += (tau - mt) * (tau - mt)
    if math.sqrt(stt / k) < 1e-6:
        return s.saez_elas[e]
    slope = sxy / sxx
    return np.float64(0.02) * max(slope, F64_ZERO) + np.float64(0.98) * s.saez_elas[e]


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
        s.saez_bins[e, 0, i] = F64_ZERO
    n_below, n_above = 0, 0
    w_below, w_above, z_above = F64_ZERO, F64_ZERO, F64_ZERO
    for k in range(m):
        z = s.saez_income[e, k]
        if z < 0:
            n_below += 1
            w_below += pareto_weight(p, F64_ZERO)
        elif z > top:
            n_above += 1
            w_above += pareto_weight(p, z)
            z_above += z
        else:
            s.saez_bins[e, 0, saez_bin(top, z)] += F64_ONE
    total = np.float64(m)
    norm = F64_ZERO
    for i in range(B):
        mid = np.float64(0.5) * (saez_edge(top, i) + saez_edge(top, i + 1))
        norm += s.saez_bins[e, 0, i] * pareto_weight(p, mid)
    norm = norm + w_below + w_above + 1e-9
    # A(z): p(z) against P(z' >= z), from the bottom up (NaN where a bin is empty)
    cum = F64_ZERO
    for i in range(B):
        lo, hi = saez_edge(top, i), saez_edge(top, i + 1)
        pz = s.saez_bins[e, 0, i] / total
        cum = pz + np.float64(n_below) / total if i == 0 else min(F64_ONE, max(F64_ZERO, cum + pz))
        if pz == 0:
            s.saez_bins[e, 1, i] = -F64_ONE
        else:
            geq = min(F64_ONE, max(F64_ZERO, F64_ONE - cum + np.float64(0.5) * pz))
            s.saez_bins[e, 1, i] = np.float64(0.5) * (lo + hi) * pz / (geq + 1e-9) / (hi - lo)
    a_top = F64_ZERO
    if n_above > 0:
        mean = z_above / np.float64(n_above)
        a_top = mean / (mean - top + 1e-9)
    s.saez_bins[e, 1, B] = a_top
    # G(z) and the rates, from the top down: G is the Pareto weight at or above z over the share there
    density = w_above / norm
    share = np.float64(n_above) / total
    g_up = density / (share + 1e-9)
    s.saez_bins[e, 0, B] = (F64_ONE - g_up) / (F64_ONE - g_up + a_top * elas + 1e-9)
    for i in range(B - 1, -1, -1):
        count = s.saez_bins[e, 0, i]
        mid = np.float64(0.5) * (saez_edge(top, i) + saez_edge(top, i + 1))
        density += count * pareto_weight(p, mid) / norm
        share += count / total
        g_here = density / (share + 1e-9)
        g = np.float64(0.5) * (g_here + g_up)
        g_up = g_here
        a = s.saez_bins[e, 1, i]
        s.saez_bins[e, 0, i] = (F64_ONE - g) / (F64_ONE - g + a * elas + 1e-9) if a >= 0 else F64_ZERO
    # bins without incomes: on a line from the last rate below (0 before the first) to the next one
    last, last_i = F64_ZERO, -1
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
    levied = F64_ZERO
    for b in range(BRACKETS):
        if b < BRACKETS - 1:
            cut = s.cutoffs[e, b + 1]
            due = F64_ZERO
            for i in range(B + 1):
                size = saez_edge(top, i + 1) - saez_edge(top, i) if i < B else np.inf
                due += s.saez_bins[e, 0, i] * min(size, max(F64_ZERO, cut - saez_edge(top, i)))
            due = max(F64_ZERO, due)
            rate = (due - levied) / (cut - s.cutoffs[e, b])
            levied = due
        else:
            rate = s.saez_bins[e, 0, B]
        rate = min(limit, max(F64_ZERO, rate))
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
        collected = F64_ZERO
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
