"""tax_model="saez" against the ai-economist package's PeriodicBracketTax on the same samples.

The formula's functions run as plain Python (`.py_func`) on many random rings and every option;
one compiled env checks the kernel path: the ring filling on tax days, random rates until it is
full, the rates it then sets, and a reset's rates.
"""

import contextlib
import io
import types

import numpy as np
import pytest
import torch

import gpu_zoo
import gpu_zoo.economy.gather_trade_build as gtb
from gpu_zoo.economy import taxes
from gpu_zoo.economy.params import BRACKETS, SAEZ_BINS, US_CUTOFFS_USD, EconomyParams
from tests.economy.helpers import NOOP, act
from tests.helpers import ECON_SAEZ, SAEZ_INCOME, reference

with contextlib.redirect_stdout(io.StringIO()):  # it prints a GPU census on import
    foundation = reference("ai_economist.foundation")

from benchmarks.peers.ai_economist import CONFIG as AIE_CONFIG  # noqa: E402

RING = 500  # the package's buffer size, fixed there


@pytest.fixture(scope="module")
def aie_world():
    with contextlib.redirect_stdout(io.StringIO()):
        env = foundation.make_env_instance(**AIE_CONFIG, seed=1)
        env.reset()
    return env


def aie_saez(world_env, **kw):
    cls = type(world_env.get_component("PeriodicBracketTax"))
    return cls(world_env.world, 1000, tax_model="saez", period=10, **kw)


def ring(gen: np.random.Generator, m: int = RING, spread: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Incomes below 0, at 0, inside the bins (some bins empty) and above the top cutoff; their rates."""
    z = np.concatenate([gen.uniform(-30, 0, m // 20), np.zeros(m // 20), gen.pareto(1.2, m) * 40])[:m]
    z[gen.random(m) < 0.05] = gen.uniform(510.3, 900, 1)[0]
    gen.shuffle(z)
    tau = np.clip(gen.uniform(0.0, spread, m), 0, 1)
    tau[gen.random(m) < 0.02] = 1.0  # dropped from the elasticity fit
    return z, tau


def our_saez(z, tau, elas, avg, limit=1.0, **kw):
    """`saez_set_rates` as plain Python on one env: (rates, elasticity, running mean)."""
    p_args = EconomyParams(tax_model="saez", saez_buffer_size=len(z), **kw)
    consts = gtb.constants(p_args)
    p = types.SimpleNamespace(saez_buffer_size=len(z), planner_lo=4, **consts)
    cut = [c / 1000 for c in US_CUTOFFS_USD] + [np.inf]
    s = types.SimpleNamespace(
        saez_income=np.array([z], dtype=np.float64), saez_rate=np.array([tau], dtype=np.float64),
        saez_count=np.array([len(z)], dtype=np.int32), saez_next=np.zeros(1, np.int32),
        saez_elas=np.array([elas], dtype=np.float64), saez_avg_rates=np.array([avg], dtype=np.float64),
        saez_bins=np.zeros((1, 2, SAEZ_BINS + 1)), cutoffs=np.array([cut]), tax_rate=np.zeros((1, BRACKETS)))
    taxes.saez_set_rates.py_func(s, p, 0, limit)
    return s.tax_rate[0], float(s.saez_elas[0]), s.saez_avg_rates[0]


@pytest.fixture()
def plain_python(monkeypatch):
    for name in ("saez_edge", "saez_bin", "pareto_weight", "saez_elasticity", "saez_bin_rates"):
        monkeypatch.setattr(taxes, name, getattr(taxes, name).py_func)  # kernel functions have no Python wrapper


def theirs(tax, z, tau, elas, avg):
    tax._local_saez_buffer = [[float(a), float(b)] for a, b in zip(z, tau, strict=True)]
    tax.elas_t = elas
    tax.running_avg_tax_rates = np.array(avg, dtype=np.float64)
    tax.compute_and_set_new_period_rates_from_saez_formula()
    return np.asarray(tax.curr_bracket_tax_rates, dtype=np.float64), float(tax.elas_t), tax.running_avg_tax_rates


@pytest.mark.parametrize("kw", [{}, {"pareto_weight_type": "uniform"}, {"saez_fixed_elas": 0.8},
                                {"saez_fixed_elas": 0.0, "pareto_weight_type": "uniform"}])
def test_saez_rates_match_the_package(aie_world, plain_python, kw):
    gen = np.random.default_rng(7)
    for trial in range(12):
        z, tau = ring(gen, spread=(1.0, 0.3, 0.0)[trial % 3])  # spread 0: the fit keeps the last estimate
        elas, avg = float(gen.uniform(0, 2)), gen.uniform(0, 1, BRACKETS)
        want = theirs(aie_saez(aie_world, **kw), z, tau, elas, avg)
        got = our_saez(z, tau, elas, avg, **kw)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-9, atol=1e-12, err_msg=f"rates, trial {trial}")
        assert got[1] == pytest.approx(want[1], rel=1e-9)
        np.testing.assert_allclose(got[2], want[2], rtol=1e-9, atol=1e-12)
        assert ((got[0] >= 0) & (got[0] <= 1)).all()


def test_saez_bins_with_gaps_and_one_income(aie_world, plain_python):
    """Empty bins at the bottom, inside and at the top; and every income in one bin."""
    gen = np.random.default_rng(3)
    for z in (np.r_[np.full(250, 55.0), np.full(250, 300.0)], np.full(RING, 120.5), np.r_[np.full(400, 600.0),
                                                                                          np.zeros(100)]):
        tau = gen.uniform(0, 0.9, RING)
        want = theirs(aie_saez(aie_world), z, tau, 0.5, np.zeros(BRACKETS))
        got = our_saez(z, tau, 0.5, np.zeros(BRACKETS))
        np.testing.assert_allclose(got[0], want[0], rtol=1e-9, atol=1e-12)


def test_saez_histogram_bins_as_numpy(plain_python):
    top = 510.3
    edges = np.linspace(0, top, SAEZ_BINS + 1)
    assert [taxes.saez_edge(top, i) for i in range(SAEZ_BINS + 1)] == edges.tolist()
    z = np.r_[edges, np.nextafter(edges, -1)[1:], np.nextafter(edges, np.inf)[:-1], np.random.default_rng(0).uniform(
        0, top, 2000)]
    want = np.searchsorted(edges, z, side="right") - 1
    want[z == top] = SAEZ_BINS - 1
    assert [taxes.saez_bin(top, x) for x in z] == want.tolist()


def test_saez_annealed_limit_caps_the_rates(aie_world, plain_python):
    z, tau = ring(np.random.default_rng(1))
    rates, elas, avg = our_saez(z, tau, 0.5, np.zeros(BRACKETS), limit=0.15)
    want = theirs(aie_saez(aie_world, rate_max=0.15), z, tau, 0.5, np.zeros(BRACKETS))
    np.testing.assert_allclose(rates, want[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(avg, want[2], rtol=1e-9, atol=1e-12)
    assert (rates == 0.15).any() and rates.max() == 0.15  # some clipped


def test_saez_arguments_are_checked():
    with pytest.raises(ValueError, match="saez_fixed_elas"):
        EconomyParams(tax_model="saez", saez_fixed_elas=-0.1)
    with pytest.raises(ValueError, match="pareto_weight_type"):
        EconomyParams(tax_model="saez", pareto_weight_type="inverse")
    with pytest.raises(ValueError, match="saez_buffer_size"):
        EconomyParams(tax_model="saez", saez_buffer_size=0)


def test_saez_env_fills_its_ring_then_sets_the_formulas_rates(aie_world):
    """The compiled kernel, from reset() to the next.

    Random rates while the ring fills, then the formula's (the package agrees on the same ring, incomes
    below 0 and past the top cutoff included), the ring kept across an auto-reset whose rates are the
    running mean, and cleared by reset().
    """
    n = 2
    env = gpu_zoo.make("gather_trade_build_v0", num_envs=n, device="cpu", **ECON_SAEZ)  # the parity test's kernels
    env.reset(seed=3)
    s = env.state
    period, ring_size = ECON_SAEZ["tax_period"], ECON_SAEZ["saez_buffer_size"]
    days = ECON_SAEZ["max_cycles"] // period
    full_after = ring_size // 4  # tax days
    assert (s.tax_rate == 0).all() and (s.saez_count == 0).all() and (s.saez_elas == 0.5).all()
    gen = torch.Generator().manual_seed(0)
    seen = []
    for day in range(days):
        act(env, [NOOP] * 4)  # a period's first step: rates set
        seen.append(s.tax_rate.clone())
        if day == full_after:  # the ring filled on the last tax day: the formula's rates, as the package sets them
            for e in range(n):
                tax = aie_saez(aie_world)
                tax._buffer_size = ring_size
                want = theirs(tax, s.saez_income[e].numpy(), s.saez_rate[e].numpy(), 0.5, np.zeros(BRACKETS))
                np.testing.assert_allclose(s.tax_rate[e].numpy(), want[0], rtol=1e-9, atol=1e-12)
                assert float(s.saez_elas[e]) == pytest.approx(want[1], rel=1e-9) and want[1] != 0.5  # fitted
                np.testing.assert_allclose(s.saez_avg_rates[e].numpy(), want[2], rtol=1e-9, atol=1e-12)
            assert (s.saez_income > 510.3).any() and (s.saez_income < 0).any()
        for _ in range(period - 2):
            act(env, [NOOP] * 4)
        s.coin[:, :4] += torch.rand(n, 4, generator=gen, dtype=torch.float64) * (2 * SAEZ_INCOME)
        if day == 0:
            s.coin[:, 1] += 600.0  # past the top cutoff, 510.3
        if day == 1:
            s.coin[:, 0] = s.last_coin[:, 0] / 2  # a loss: an income below 0
        z = (s.coin[:, :4] - s.last_coin[:, :4]).clone()
        rates = [[float(taxes.marginal_rate.py_func(s.tax_rate.numpy(), s.cutoffs.numpy(), e, float(x))) for x in z[e]]
                 for e in range(n)]
        act(env, [NOOP] * 4)  # tax day; after the last, the episode ends and the env resets
        slots = [(4 * day + k) % ring_size for k in range(4)]
        np.testing.assert_allclose(s.saez_income[:, slots].numpy(), z.numpy(), rtol=1e-12)
        np.testing.assert_allclose(s.saez_rate[:, slots].numpy(), rates, rtol=1e-12)
        assert (s.saez_count == min(ring_size, 4 * (day + 1))).all()
    for r in seen[:full_after]:  # the ring was not full yet: uniform draws, fresh each period and env
        assert ((r >= 0) & (r < 1)).all() and r.unique().numel() == n * BRACKETS
    assert (s.ep_count == 1).all() and (s.saez_count == ring_size).all()  # auto-reset: the ring stays
    torch.testing.assert_close(s.saez_avg_rates, seen[full_after] * 0.01, rtol=1e-12, atol=0)
    torch.testing.assert_close(s.tax_rate, s.saez_avg_rates, rtol=0, atol=0)  # a reset's rates: the running mean
    act(env, [NOOP] * 4)  # and the new episode's first period has the formula's rates again
    assert not torch.equal(s.tax_rate, seen[full_after]) and ((s.tax_rate >= 0) & (s.tax_rate <= 1)).all()
    env.reset(seed=3)  # reset(): the model learns afresh
    assert (s.saez_count == 0).all() and (s.tax_rate == 0).all() and (s.saez_elas == 0.5).all()


def test_a_period_cut_short_by_a_late_start_is_taxed_but_not_sampled():
    env = gpu_zoo.make("gather_trade_build_v0", num_envs=2, device="cpu", **ECON_SAEZ)  # the parity test's kernels
    assert ECON_SAEZ["tax_period"] == 2
    env.reset(seed=3, start_steps=torch.tensor([1, 0]))  # env 0 starts on its period's last step
    s = env.state
    assert s.start_t.tolist() == [1, 0]
    counts = []
    for _ in range(3):
        s.coin[:, :4] += 50.0  # an income in every period, short or not
        act(env, [NOOP] * 4)
        counts.append(s.saez_count.tolist())
    # env 0: its short period's tax day (step 1) records nothing, its first full one (step 3) records the
    # four workers; env 1: full periods only, the first ending on step 2
    assert counts == [[0, 0], [0, 4], [4, 4]]
