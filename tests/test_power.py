"""engine.decide.power against numbers worked out elsewhere: by hand here, by scipy and
statsmodels (tests only), or by simulation with a fixed seed (tolerance stated)."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom, binomtest, norm

from engine.decide import power
from engine.stats import wilson


@functools.cache
def midp_scipy(b: int, m: int) -> float:
    """The issue's definition: the exact two-sided binomial p-value minus P(observed split)."""
    return binomtest(b, m, 0.5).pvalue - binom.pmf(b, m, 0.5)


def below(n: int, bound: float) -> int:
    """The largest k with k / n < bound, by looking at every k."""
    ks = np.arange(n + 1)
    hits = ks[ks / n < bound]
    return int(hits.max()) if hits.size else -1


def wilson_power_scipy(n: int, p0: float, lower: float, effect: float) -> float:
    return float(binom.cdf(below(n, lower), n, max(0.0, p0 - effect)))


# --- the binomial CDF ---

@pytest.mark.parametrize("n", [1, 2, 7, 100, 1000, 10_000, 1_000_000])
def test_binomial_cdf_matches_scipy_into_the_tails(n: int) -> None:
    for p in (1e-6, 0.03, 0.5, 0.77, 0.999):
        for k in sorted({0, 1, n // 3, int(n * p) - 1, int(n * p), int(n * p) + 5, n - 1}):
            if 0 <= k <= n:
                want = binom.cdf(k, n, p)
                if want > 1e-300:  # relative error below 1e-8 wherever scipy has a double
                    assert power.binom_cdf(k, n, p) == pytest.approx(want, rel=1e-8, abs=0)
                    assert power.binom_sf(k, n, p) == pytest.approx(binom.sf(k, n, p),
                                                                    rel=1e-8, abs=1e-300)


# --- the default rule ---

def test_wilson_rule_by_hand_and_its_saw_tooth_in_n() -> None:
    # Bound 0.5: with n = 3 the rule fires at k <= 1 (1/3 < 0.5), with n = 4 at k <= 1
    # (2/4 is not below 0.5). True current rate 0.8 - 0.5 = 0.3.
    three = 0.7 ** 3 + 3 * 0.3 * 0.7 ** 2  # 0.784
    four = 0.7 ** 4 + 4 * 0.3 * 0.7 ** 3  # 0.6517
    kw = {"baseline_rate": 0.8, "baseline_lower": 0.5, "effect": 0.5}
    assert power.wilson_lower_power(n=3, **kw) == pytest.approx(three, rel=1e-12)
    assert power.wilson_lower_power(n=4, **kw) == pytest.approx(four, rel=1e-12)
    assert power.wilson_lower_power(n=2, **kw) == pytest.approx(0.7 ** 2, rel=1e-12)


@pytest.mark.parametrize("n,base_n,base_passed,effect", [
    (100, 100, 90, 0.1), (1000, 500, 430, 0.03), (10_000, 10_000, 9100, 0.01),
    (1_000_000, 20_000, 17_000, 0.002), (37, 40, 40, 0.2)])
def test_wilson_rule_is_the_binomial_cdf_below_the_bound(n: int, base_n: int, base_passed: int,
                                                         effect: float) -> None:
    bounds = wilson(base_passed, base_n)
    assert bounds is not None
    p0, lower = base_passed / base_n, bounds[0]
    got = power.wilson_lower_power(n=n, baseline_rate=p0, baseline_lower=lower, effect=effect)
    assert got == pytest.approx(wilson_power_scipy(n, p0, lower, effect), rel=1e-8, abs=1e-300)


def test_wilson_rule_mde_and_units_needed() -> None:
    bounds = wilson(180, 200)
    assert bounds is not None
    p0, lower = 0.9, bounds[0]
    got = power.assess_wilson_lower(n=200, baseline_rate=p0, baseline_lower=lower, effect=0.05,
                                    min_power=0.8, trials_per_case=3)
    assert got.method == "exact binomial"
    assert got.power == pytest.approx(wilson_power_scipy(200, p0, lower, 0.05), rel=1e-9)
    assert got.mde is not None
    assert wilson_power_scipy(200, p0, lower, got.mde) >= 0.8
    assert wilson_power_scipy(200, p0, lower, got.mde - 2 * power.EFFECT_TOLERANCE) < 0.8
    assert got.pairs_needed is not None
    assert wilson_power_scipy(got.pairs_needed, p0, lower, 0.05) >= 0.8
    assert wilson_power_scipy(got.pairs_needed - 1, p0, lower, 0.05) < 0.8
    assert got.cases_needed == math.ceil(got.pairs_needed / 3)


def test_wilson_rule_unreachable_is_none() -> None:
    # The rate after the drop (0.85) is not below the bound (0.8), however many units run.
    got = power.assess_wilson_lower(n=50, baseline_rate=0.9, baseline_lower=0.8, effect=0.05,
                                    min_power=0.8, trials_per_case=1)
    assert got.pairs_needed is None and got.cases_needed is None
    # A baseline of 0 passes has lower bound 0: nothing is below it, nothing is detectable.
    nothing = power.assess_wilson_lower(n=50, baseline_rate=0.0, baseline_lower=0.0,
                                        effect=0.0, min_power=0.8, trials_per_case=1)
    assert (nothing.power, nothing.mde, nothing.pairs_needed) == (0.0, None, None)


# --- McNemar's mid-p ---

def test_midp_by_hand_and_by_scipy() -> None:
    assert power.midp(1, 1) == pytest.approx(0.5)  # 2 * 1/2 - 1/2
    assert power.midp(2, 2) == pytest.approx(0.25)  # 2 * 1/4 - 1/4
    assert power.midp(3, 3) == pytest.approx(0.125)  # 2 * 1/8 - 1/8
    assert power.midp(2, 3) == pytest.approx(0.625)  # 2 * 4/8 - 3/8
    assert power.midp(1, 2) == pytest.approx(0.5)  # min(1, 2 * 3/4) - 2/4
    for m in range(1, 61):
        for b in range((m + 1) // 2, m + 1):
            assert power.midp(b, m) == pytest.approx(midp_scipy(b, m), rel=1e-9, abs=1e-15)


def test_mcnemar_power_by_hand() -> None:
    # N = 2 pairs, alpha 0.5: rejected splits are (b=1 of m=1) mid-p 0.5 and (2 of 2) 0.25.
    # power = P(m=1) q + P(m=2) q^2 = 2 psi (1 - psi) q + psi^2 q^2.
    got, method = power.mcnemar_power(pairs=2, psi=0.5, effect=0.5, alpha=0.5)  # q = 1
    assert (got, method) == (pytest.approx(0.75), "exact enumeration")
    got, _ = power.mcnemar_power(pairs=2, psi=0.5, effect=0.1, alpha=0.5)  # q = 0.6
    assert got == pytest.approx(2 * 0.25 * 0.6 + 0.25 * 0.36)
    got, _ = power.mcnemar_power(pairs=2, psi=0.5, effect=0.5, alpha=0.3)  # only (2 of 2)
    assert got == pytest.approx(0.25)
    # N = 3, alpha 0.2: only (3 of 3), mid-p 1/8; psi 0.6, q = 0.8 / 1.2 = 2/3.
    got, _ = power.mcnemar_power(pairs=3, psi=0.6, effect=0.2, alpha=0.2)
    assert got == pytest.approx(0.6 ** 3 * (2 / 3) ** 3)


def mcnemar_brute(pairs: int, psi: float, effect: float, alpha: float) -> float:
    """The issue's double sum, every term, with scipy's binomial (binomtest's p-value up to
    60 discordant pairs; above, its closed form 2 P(X <= c), checked against it below)."""
    q = (psi + effect) / (2 * psi)
    total = 0.0
    for m in range(1, pairs + 1):
        b = np.arange(m // 2 + 1, m + 1)
        if m <= 60:
            p = np.array([midp_scipy(int(x), m) for x in b])
        else:
            p = 2 * binom.cdf(m - b, m, 0.5) - binom.pmf(m - b, m, 0.5)
        total += binom.pmf(m, pairs, psi) * binom.pmf(b[p <= alpha], m, q).sum()
    return float(total)


@pytest.mark.parametrize("pairs,psi,effect,alpha", [
    (10, 0.3, 0.1, 0.05), (37, 0.5, 0.2, 0.1), (120, 0.12, 0.04, 0.05), (300, 0.25, 0.05, 0.01)])
def test_mcnemar_power_is_the_double_sum(pairs: int, psi: float, effect: float,
                                         alpha: float) -> None:
    got, _ = power.mcnemar_power(pairs=pairs, psi=psi, effect=effect, alpha=alpha)
    assert got == pytest.approx(mcnemar_brute(pairs, psi, effect, alpha), rel=1e-9, abs=1e-15)


def test_mcnemar_power_matches_a_simulation_of_paired_runs() -> None:
    # 40 pairs: pass-to-fail 0.2, fail-to-pass 0.05, the rest concordant. 20,000 draws
    # (seed 39); the standard error of the simulated rate is under 0.0036, tolerance 0.011.
    rng = np.random.default_rng(39)
    draws = rng.multinomial(40, [0.2, 0.05, 0.75], size=20_000)
    flagged = [b > c and midp_scipy(int(b), int(b + c)) <= 0.05 for b, c, _ in draws]
    got, _ = power.mcnemar_power(pairs=40, psi=0.25, effect=0.15, alpha=0.05)
    assert got == pytest.approx(float(np.mean(flagged)), abs=0.011)


def connor_scipy(pairs: int, psi: float, effect: float, alpha: float) -> float:
    z = norm.ppf(1 - alpha / 2)
    return float(norm.cdf((effect * math.sqrt(pairs) - z * math.sqrt(psi))
                          / math.sqrt(psi - effect ** 2)))


def test_mcnemar_above_the_exact_bound_is_connor_and_close_to_exact_at_it() -> None:
    big = power.MCNEMAR_EXACT_MAX + 1
    got, method = power.mcnemar_power(pairs=big, psi=0.02, effect=0.005, alpha=0.05)
    assert method == "Connor (1987) normal approximation"
    assert got == pytest.approx(connor_scipy(big, 0.02, 0.005, 0.05), rel=1e-12)
    for psi, effect in ((0.02, 0.005), (0.1, 0.015), (0.3, 0.03)):
        exact, _ = power.mcnemar_power(pairs=power.MCNEMAR_EXACT_MAX, psi=psi, effect=effect,
                                       alpha=0.05)
        assert exact == pytest.approx(connor_scipy(big, psi, effect, 0.05), abs=0.02)


def test_mcnemar_assess_pairs_needed_is_connors_sample_size() -> None:
    # Connor (1987): N = ((z(1-a/2) sqrt(psi) + z(power) sqrt(psi - d^2)) / d)^2, 5,885 here.
    psi, d = 0.3, 0.02
    want = ((norm.ppf(0.975) * math.sqrt(psi) + norm.ppf(0.8) * math.sqrt(psi - d * d)) / d) ** 2
    got = power.assess_mcnemar(pairs=3000, discordant=900, effect=d, alpha=0.05, min_power=0.8,
                               trials_per_case=5)
    assert got.pairs_needed == math.ceil(want)
    assert got.cases_needed == math.ceil(math.ceil(want) / 5)
    assert got.power == pytest.approx(connor_scipy(3000, psi, d, 0.05), rel=1e-12)


def test_mcnemar_discordance_is_raised_to_the_effect() -> None:
    # No discordant pair seen: psi is taken as the effect, every discordant pair a drop.
    got = power.assess_mcnemar(pairs=30, discordant=0, effect=0.2, alpha=0.05, min_power=0.8,
                               trials_per_case=1)
    assert got.power == pytest.approx(mcnemar_brute(30, 0.2, 0.2, 0.05), rel=1e-9)
    assert power.discordance(discordant=0, pairs=30, effect=0.2) == 0.2
    assert power.discordance(discordant=9, pairs=30, effect=0.2) == 0.3
    mde = got.mde
    assert mde is not None
    assert mcnemar_brute(30, max(0.0, mde), mde, 0.05) >= 0.8
    low = mde - 2 * power.EFFECT_TOLERANCE
    assert mcnemar_brute(30, low, low, 0.05) < 0.8


def test_no_drop_cannot_reach_power() -> None:
    got = power.assess_mcnemar(pairs=100, discordant=10, effect=0.0, alpha=0.05, min_power=0.8,
                               trials_per_case=2)
    assert got.pairs_needed is None and got.cases_needed is None
    assert got.power <= 0.025 + 1e-12  # one tail of a two-sided test at 0.05


# --- the paired bootstrap ---

def test_bootstrap_power_is_the_normal_formula() -> None:
    se = math.sqrt(0.19 * 1.6 / 200)
    want = norm.cdf(0.1 / se - norm.ppf(0.975))
    got = power.bootstrap_power(pairs=200, variance=0.19, effect=0.1, alpha=0.05,
                                design_effect=1.6)
    assert got == pytest.approx(want, rel=1e-12)
    # Floors: a variance below effect (1 - effect) and a design effect below 1 are raised.
    floor = power.bootstrap_power(pairs=200, variance=0.09, effect=0.1, alpha=0.05)
    assert power.bootstrap_power(pairs=200, variance=0.0, effect=0.1, alpha=0.05,
                                 design_effect=0.3) == floor


def test_bootstrap_pairs_needed_is_the_normal_sample_size() -> None:
    var, deff, d = 0.19, 1.6, 0.03
    want = math.ceil(deff * var * (norm.ppf(0.975) + norm.ppf(0.8)) ** 2 / d ** 2)
    got = power.assess_bootstrap(pairs=200, variance=var, design_effect=deff, effect=d,
                                 alpha=0.05, min_power=0.8, trials_per_case=4)
    assert got.pairs_needed in (want, want + 1)  # doubles at the boundary
    assert got.cases_needed == math.ceil(got.pairs_needed / 4)  # type: ignore[operator]
    assert got.mde is not None
    assert got.mde == pytest.approx(math.sqrt(deff * var / 200) * (norm.ppf(0.975)
                                                                   + norm.ppf(0.8)), abs=1e-5)


def test_paired_spread_matches_statsmodels_cluster_robust_variance() -> None:
    rng = np.random.default_rng(7)
    cases = [list(rng.choice([-1.0, 0.0, 1.0], size=int(rng.integers(1, 6)),
                             p=[0.2, 0.7, 0.1]) + rng.choice([0.0, -1.0], p=[0.8, 0.2]))
             for _ in range(40)]
    y = np.concatenate(cases)
    groups = np.repeat(np.arange(len(cases)), [len(c) for c in cases])
    plain = sm.OLS(y, np.ones_like(y)).fit()
    clustered = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster",
                                                cov_kwds={"groups": groups})
    variance, deff = power.paired_spread(cases)
    assert variance == pytest.approx(float(np.var(y, ddof=1)), rel=1e-12)
    assert deff == pytest.approx(float(clustered.bse[0] ** 2 / plain.bse[0] ** 2), rel=1e-9)
    assert power.paired_spread([[1.0, 0.0, -1.0]]) == (pytest.approx(1.0), 1.0)


@pytest.mark.parametrize("clustered", [False, True])
def test_bootstrap_power_matches_a_simulated_bootstrap(clustered: bool) -> None:
    # 400 simulated paired runs (seed 39), each judged by a 1,000-draw percentile bootstrap
    # (resampling whole cases when clustered): a drop is flagged when the upper 97.5%
    # bound of the mean difference is below 0. Standard error of the simulated rate <= 0.025;
    # tolerance 0.06 (approximation and simulation together).
    rng = np.random.default_rng(39)
    cases, trials = (60, 4) if clustered else (200, 1)

    def run() -> list[np.ndarray]:
        # Each case has its own chance of dropping (correlated trials when clustered).
        drop = rng.beta(1, 5, size=cases) if clustered else np.full(cases, 0.15)
        out = []
        for p in drop:
            u = rng.random(trials)
            out.append(np.where(u < p, -1.0, np.where(u < p + 0.05, 1.0, 0.0)))
        return out

    pilot = [list(c) for _ in range(50) for c in run()]
    variance, deff = power.paired_spread([c for c in pilot])
    flagged = 0
    for _ in range(400):
        sums = np.array([c.sum() for c in run()])
        draws = rng.integers(0, cases, size=(1000, cases))
        means = sums[draws].sum(axis=1) / (cases * trials)
        flagged += np.quantile(means, 0.975) < 0
    effect = (1 / 6 if clustered else 0.15) - 0.05
    want = flagged / 400
    got = power.bootstrap_power(pairs=cases * trials, variance=variance, effect=effect,
                                alpha=0.05, design_effect=deff if clustered else 1.0)
    assert got == pytest.approx(want, abs=0.06)


# --- monotone in the effect (all) and in the units (the normal approximations) ---

@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.floats(0.5, 1.0), st.floats(0.0, 0.5), st.floats(0, 0.5),
       st.floats(0, 0.5))
def test_power_rises_with_the_effect(n: int, p0: float, gap: float, e1: float,
                                     e2: float) -> None:
    small, large = sorted((e1, e2))
    kw = {"n": n, "baseline_rate": p0, "baseline_lower": p0 - gap}
    assert power.wilson_lower_power(effect=small, **kw) <= \
        power.wilson_lower_power(effect=large, **kw) + 1e-12
    mc = {"pairs": min(n, 120), "alpha": 0.05}
    psi = gap  # the observed share, raised to the effect as assess_mcnemar does
    assert power.mcnemar_power(psi=max(psi, small), effect=small, **mc)[0] <= \
        power.mcnemar_power(psi=max(psi, large), effect=large, **mc)[0] + 1e-12
    bs = {"pairs": n, "variance": gap, "alpha": 0.05, "design_effect": 1.3}
    assert power.bootstrap_power(effect=small, **bs) <= \
        power.bootstrap_power(effect=large, **bs) + 1e-12


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 10**6), st.integers(1, 10**6), st.floats(0.01, 0.6),
       st.floats(0.001, 0.3))
def test_approximate_power_rises_with_the_units(n1: int, n2: int, var: float,
                                                effect: float) -> None:
    small, large = sorted((n1, n2))
    kw = {"variance": var, "effect": effect, "alpha": 0.05}
    assert power.bootstrap_power(pairs=small, **kw) <= power.bootstrap_power(pairs=large, **kw)
    psi = max(var, effect)
    if small > power.MCNEMAR_EXACT_MAX:
        assert power.mcnemar_power(pairs=small, psi=psi, effect=effect, alpha=0.05)[0] <= \
            power.mcnemar_power(pairs=large, psi=psi, effect=effect, alpha=0.05)[0]
