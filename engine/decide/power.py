"""Power of a baseline comparison: could it have seen a regression of the size that matters?

One function per comparison test gives the power to detect a drop of ``effect`` (a rate, 0 to
1) at ``alpha``; ``assess_*`` adds the minimum detectable effect at ``min_power`` and the
scored units (pairs) and cases that would reach ``min_power`` at ``effect``, in a ``Power``.
Everything here is pure arithmetic on numbers: no evidence is read, and nothing in it chooses
``alpha``, ``effect`` or ``min_power`` (governance's policy does). docs/decisions.md, "Power:
could the comparison have seen a regression?", names each method.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

MCNEMAR_EXACT_MAX = 2_000  # pairs up to which McNemar's power is enumerated exactly
# and, beyond them, the expected discordant pairs up to which it still is: Connor's normal
# approximation is close only when many pairs are discordant (at 2,000 pairs with 4
# expected discordant it said 0.516 where the test has 0.371; a hostile review)
MCNEMAR_EXACT_DISCORDANT = 400
MAX_UNITS = 10_000_000  # units (pairs) searched for `pairs_needed`; beyond it: None
EFFECT_TOLERANCE = 1e-6  # bisection stops when the effect is known to this width
_TAIL = 1e-17  # a binomial sum stops when what is left is below this share of it
_NORMAL = NormalDist()


@dataclass(frozen=True)
class Power:
    """What a comparison could see, for the scorecard."""

    power: float
    """The probability that the test flags a drop of ``effect``."""
    mde: float | None
    """The smallest drop whose power reaches ``min_power`` (to EFFECT_TOLERANCE); None if none."""
    pairs_needed: int | None
    """Scored units (pairs) that would reach ``min_power`` at ``effect``; None if no count
    up to MAX_UNITS does."""
    cases_needed: int | None
    """``pairs_needed`` in cases of ``trials_per_case`` trials, rounded up."""
    method: str
    """How ``power`` was computed."""


# --- the binomial distribution, exact in doubles for n up to MAX_UNITS ---

def _log_pmf(k: int, n: int, p: float) -> float:
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
            + k * math.log(p) + (n - k) * math.log1p(-p))


def _lower_sum(k: int, n: int, p: float) -> float:
    """P(X <= k) for k below the mode: terms shrink going down, summed relative to pmf(k)."""
    total = term = 1.0
    j = k
    while j > 0:
        ratio = j * (1 - p) / ((n - j + 1) * p)  # pmf(j-1) / pmf(j); smaller further down
        term *= ratio
        total += term
        if ratio < 1 and term * ratio / (1 - ratio) < total * _TAIL:
            break
        j -= 1
    return math.exp(_log_pmf(k, n, p) + math.log(total))


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Bin(n, p), summed from the near end so that tails keep their digits."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0:
        return 1.0
    if p >= 1:
        return 0.0
    if k < math.floor((n + 1) * p):
        return _lower_sum(k, n, p)
    if 1 - p >= 1:  # p below the double's resolution next to 1: X is 0 to that precision
        return 1.0
    return 1.0 - _lower_sum(n - k - 1, n, 1 - p)  # 1 - P(X >= k+1), at least about 1/2 here


def binom_sf(k: int, n: int, p: float) -> float:
    """P(X > k) for X ~ Bin(n, p)."""
    return binom_cdf(n - k - 1, n, 1 - p)


def binom_pmf(k: int, n: int, p: float) -> float:
    """P(X = k) for X ~ Bin(n, p)."""
    if k < 0 or k > n:
        return 0.0
    if p <= 0 or p >= 1:
        return float(k == (0 if p <= 0 else n))
    return math.exp(_log_pmf(k, n, p))


def _around_mode(n: int, p: float) -> Iterator[tuple[int, float]]:
    """(k, P(X = k)) for X ~ Bin(n, p), from the mode up and then down, each way while the
    weights matter (until one is below _TAIL of those seen): a sum over them is the sum
    over every k to that precision, and costs the width of the distribution, not n."""
    mode = min(n, math.floor((n + 1) * p))
    seen = 0.0
    for k, step in ((mode, 1), (mode - 1, -1)):
        while 0 <= k <= n:
            weight = binom_pmf(k, n, p)
            yield k, weight
            seen += weight
            if weight <= _TAIL * seen:
                break
            k += step


# --- the default rule: the current rate below the baseline's Wilson lower bound ---

def wilson_lower_power(*, n: int, baseline_rate: float, baseline_lower: float,
                       effect: float) -> float:
    """P(passes / n < baseline_lower) when the current rate is baseline_rate - effect.

    The comparison is the engine's: passes / n against the bound in doubles. Exact.
    """
    p = min(1.0, max(0.0, baseline_rate - effect))
    return binom_cdf(_below(n, baseline_lower), n, p) if n > 0 else 0.0


def _below(n: int, bound: float) -> int:
    """The largest k with k / n < bound (compared as doubles), or -1."""
    k = min(n, max(-1, math.ceil(bound * n) - 1))
    while k + 1 <= n and (k + 1) / n < bound:
        k += 1
    while k >= 0 and not k / n < bound:
        k -= 1
    return k


def assess_wilson_lower(*, n: int, baseline_rate: float, baseline_lower: float, effect: float,
                        min_power: float, trials_per_case: int) -> Power:
    """The default rule's power, minimum detectable effect and the units that reach min_power.

    More current units never move the bound, so no count reaches min_power when
    baseline_rate - effect is not below it.
    """
    def at(e: float, units: int) -> float:
        return wilson_lower_power(n=units, baseline_rate=baseline_rate,
                                  baseline_lower=baseline_lower, effect=e)

    reachable = baseline_rate - effect < baseline_lower
    return _assess(at, n, effect, min_power, trials_per_case, baseline_rate, reachable,
                   "exact binomial")


# --- McNemar's mid-p test on paired units ---

def midp(b: int, m: int) -> float:
    """Two-sided mid-p of b pass-to-fail among m discordant pairs (b >= m - b).

    The exact p-value min(1, 2 P(X <= m - b)), X ~ Bin(m, 1/2), minus P(X = m - b).
    """
    c = m - b
    return min(1.0, 2 * binom_cdf(c, m, 0.5)) - binom_pmf(c, m, 0.5)


def discordance(*, discordant: int, pairs: int, effect: float) -> float:
    """psi, the share of discordant pairs: observed (b + c) / pairs, raised to at least effect.

    A drop of effect needs at least that share of pass-to-fail pairs.
    """
    return max(discordant / pairs if pairs else 0.0, effect)


def mcnemar_power(*, pairs: int, psi: float, effect: float, alpha: float) -> tuple[float, str]:
    """Power of the mid-p test at alpha to flag a drop (b > c) of effect = p10 - p01.

    Exact enumeration over the discordant count m ~ Bin(pairs, psi) and b ~ Bin(m, q),
    q = (psi + effect) / (2 psi), up to MCNEMAR_EXACT_MAX pairs; Connor's (1987) normal
    approximation above it. Returns the power and the method.
    """
    if pairs <= 0 or psi <= 0 or effect < 0:
        return 0.0, "exact enumeration"
    psi = min(1.0, max(psi, effect))
    if pairs > MCNEMAR_EXACT_MAX and pairs * psi > MCNEMAR_EXACT_DISCORDANT:
        return _connor(pairs, psi, effect, alpha), "Connor (1987) normal approximation"
    return _mcnemar_exact(pairs, psi, effect, alpha), "exact enumeration"


def _connor(pairs: int, psi: float, effect: float, alpha: float) -> float:
    if psi - effect * effect <= 0:
        return 1.0 if effect > 0 else 0.0
    z = _NORMAL.inv_cdf(1 - alpha / 2)
    return _NORMAL.cdf((effect * math.sqrt(pairs) - z * math.sqrt(psi))
                       / math.sqrt(psi - effect * effect))


def _mcnemar_exact(pairs: int, psi: float, effect: float, alpha: float) -> float:
    q = min(1.0, (psi + effect) / (2 * psi))
    centre = min(pairs, math.floor((pairs + 1) * psi))
    cr = centre // 2 + 1  # each m's critical b starts from its neighbour's
    total = 0.0
    for m, weight in _around_mode(pairs, psi):
        cr = _critical(m, cr, alpha)
        total += weight * binom_sf(cr - 1, m, q)
    return min(1.0, total)


def _critical(m: int, guess: int, alpha: float) -> int:
    """The smallest b > m / 2 whose mid-p is at most alpha; m + 1 when none is."""
    low = m // 2 + 1
    b = min(max(guess, low), m + 1)
    while b > low and midp(b - 1, m) <= alpha:
        b -= 1
    while b <= m and midp(b, m) > alpha:
        b += 1
    return b


def assess_mcnemar(*, pairs: int, discordant: int, effect: float, alpha: float,
                   min_power: float, trials_per_case: int, floor: float = 0.0) -> Power:
    """McNemar's power at the observed discordance (raised to ``floor``, governance's
    least discordant share), its minimum detectable effect, and the pairs that reach
    min_power at effect with the same discordance."""
    observed = max(discordant / pairs if pairs else 0.0, floor)

    def at(e: float, units: int) -> float:
        return mcnemar_power(pairs=units, psi=max(observed, e), effect=e, alpha=alpha)[0]

    method = mcnemar_power(pairs=pairs, psi=max(observed, effect), effect=effect,
                           alpha=alpha)[1]
    return _assess(at, pairs, effect, min_power, trials_per_case, 1.0, effect > 0, method)


# --- the paired bootstrap, approximated ---

BOOTSTRAP_EXACT_MAX = 200  # units up to which the ideal bootstrap's power is enumerated,
# and beyond them while at most this many units are expected discordant: with few the normal
# approximation is far off (0.170 for 0.019 at 201 units and 1 expected; a hostile review),
# with 40 or more it is within 0.01 (docs/decisions.md)
BOOTSTRAP_EXACT_DISCORDANT = 30


def _resampled(b: int, c: int, n: int) -> tuple[float, float]:
    """(P*(D <= 0), P*(D >= 0)) for the ideal bootstrap (infinitely many resamples) of n
    units of which b changed pass to fail (-1) and c fail to pass (+1): D is the sum of n
    draws. K ~ Bin(n, (b + c) / n) of them are discordant and C* | K ~ Bin(K, c / (b + c));
    D >= 0 when C* >= K / 2."""
    m = b + c
    if m == 0:
        return 1.0, 1.0
    rise = c / m
    low = high = 0.0
    for k, weight in _around_mode(n, m / n):
        low += weight * binom_cdf(k // 2, k, rise)  # C* <= K/2: D <= 0
        high += weight * binom_sf((k + 1) // 2 - 1, k, rise)  # C* >= K/2: D >= 0
    return low, high


def bootstrap_p(b: int, c: int, n: int) -> float:
    """The ideal two-sided percentile-bootstrap p-value of the paired test on n units,
    min(1, 2 min(P*(D <= 0), P*(D >= 0))): what engine/decide/paired.py's bootstrap
    estimates with its resamples."""
    low, high = _resampled(b, c, n)
    return min(1.0, 2 * min(low, high))


@lru_cache(maxsize=1 << 16)
def _boot_critical(m: int, n: int, alpha: float) -> int:
    """The fewest drops b of m discordant units among n that the ideal bootstrap flags at
    alpha (b > m - b; bootstrap_p falls as b rises: a bisection); m + 1 when none is. It
    depends on neither psi nor the effect, so a search over either reuses it."""
    low, high = m // 2 + 1, m + 1
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if bootstrap_p(mid, m - mid, n) <= alpha else (mid + 1, high)
    return low


def _bootstrap_exact(units: int, psi: float, effect: float, alpha: float) -> float:
    """The ideal bootstrap's power, enumerated: m ~ Bin(units, psi) discordant units, b of
    them drops ~ Bin(m, (psi + effect) / (2 psi)); flagged when b > m - b and
    bootstrap_p <= alpha (from m's critical b up)."""
    q = min(1.0, (psi + effect) / (2 * psi))
    total = 0.0
    for m, weight in _around_mode(units, psi):
        crit = _boot_critical(m, units, alpha)
        if crit <= m:
            total += weight * binom_sf(crit - 1, m, q)
    return min(1.0, total)


def bootstrap_power(*, units: int, psi: float, effect: float, alpha: float) -> float:
    """The paired bootstrap's power to flag a drop of effect on ``units`` independent units
    (pairs, or whole cases) of which a share psi (at least effect) is discordant: the ideal
    bootstrap's, enumerated exactly up to BOOTSTRAP_EXACT_MAX units; above, the normal
    approximation Phi(effect sqrt(units) / sqrt(psi - effect^2) - z(1 - alpha/2)) (the
    percentile bootstrap of a mean is asymptotically the Wald test)."""
    if units <= 0 or effect <= 0:
        return 0.0
    psi = min(1.0, max(psi, effect))
    if units <= BOOTSTRAP_EXACT_MAX or units * psi <= BOOTSTRAP_EXACT_DISCORDANT:
        return _bootstrap_exact(units, psi, effect, alpha)
    spread = (psi - effect * effect) / units
    if spread <= 0:
        return 1.0
    return _NORMAL.cdf(effect / math.sqrt(spread) - _NORMAL.inv_cdf(1 - alpha / 2))


def assess_bootstrap(*, units: int, discordant: int, effect: float, alpha: float,
                     min_power: float, trials_per_case: int, floor: float = 0.0,
                     per_unit: int = 1) -> Power:
    """The bootstrap's power, minimum detectable effect and the pairs that reach min_power,
    on ``units`` independent units (pairs; or cases, each of ``per_unit`` pairs that move
    together) of which ``discordant`` changed, the share raised to ``floor``."""
    observed = max(discordant / units if units else 0.0, floor)

    def at(e: float, n: int) -> float:
        return bootstrap_power(units=n, psi=max(observed, e), effect=e, alpha=alpha)

    exact = units <= BOOTSTRAP_EXACT_MAX or \
        units * min(1.0, max(observed, effect)) <= BOOTSTRAP_EXACT_DISCORDANT
    method = "exact enumeration of the ideal bootstrap" if exact else "normal approximation"
    seen = _assess(at, units, effect, min_power, trials_per_case if per_unit == 1 else 1,
                   1.0, effect > 0, method)
    if per_unit == 1:
        return seen
    needed = None if seen.pairs_needed is None else seen.pairs_needed * per_unit
    return Power(seen.power, seen.mde, needed, seen.pairs_needed, method)


# --- shared: the minimum detectable effect and the units needed ---

def _assess(at: Callable[[float, int], float], n: int, effect: float, min_power: float,
            trials_per_case: int, top: float, reachable: bool, method: str) -> Power:
    needed = _units_needed(lambda units: at(effect, units), min_power) if reachable else None
    cases = None if needed is None else -(-needed // max(trials_per_case, 1))
    return Power(at(effect, n), _mde(lambda e: at(e, n), min_power, top), needed, cases,
                 method)


def _mde(power: Callable[[float], float], min_power: float, top: float) -> float | None:
    """The smallest effect in (0, top] whose power reaches min_power, by bisection (power
    rises with the effect); the upper end of the final bracket."""
    if power(top) < min_power:
        return None
    low, high = 0.0, top
    while high - low > EFFECT_TOLERANCE:
        mid = (low + high) / 2
        low, high = (low, mid) if power(mid) >= min_power else (mid, high)
    return high


def _units_needed(power: Callable[[int], float], min_power: float) -> int | None:
    """A count n with power(n) >= min_power > power(n - 1): doubling, then bisection.

    Exact tests' power saw-tooths in n, so a count below it may reach min_power too.
    """
    high = 1
    while power(high) < min_power:
        if high >= MAX_UNITS:
            return None
        high = min(2 * high, MAX_UNITS)
    low = high // 2 if high > 1 else 0
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if power(mid) >= min_power else (mid, high)
    return high
