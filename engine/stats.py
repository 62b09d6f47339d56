"""Statistics over counters: the Wilson score interval, pass^k and consistency."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from fractions import Fraction
from math import comb
from typing import Any

from engine.records.clip import clip

DEFAULT_Z = 1.959963984540054  # two-sided 95%, agent-release-gate §7.1


def wilson(passed: int, n: int, z: float = DEFAULT_Z) -> tuple[float, float] | None:
    """Wilson score interval for ``passed`` of ``n``; None when n is 0.

    Computed in IEEE doubles in the order the release-gate protocol prescribes.
    """
    if n == 0:
        return None
    p = passed / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, centre - half), min(1.0, centre + half)


FLAKY_LISTED = 100  # flaky cases named in the scorecard (all are counted)


def pass_hat_k(cases: Iterable[tuple[str, int, int]], k: int) -> dict[str, Any] | None:
    """Repeated-trial statistics over cases given as (case, scored trials, passes).

    Per case, pass^k is C(c,k)/C(n,k) (the unbiased estimator), 0 when c < k, undefined when
    n < k; ``pass_hat_k`` is the unweighted mean over cases where it is defined, computed
    exactly and rounded once (so the order of cases does not matter). A case is repeated
    when n >= 2; ``consistency`` is the share of repeated cases whose trials all agree.
    None unless some case is repeated.
    """
    defined: Counter[tuple[int, int]] = Counter()  # (n, c) -> cases: few distinct pairs
    repeated = agreeing = flaky_count = 0
    flaky: list[str] = []  # the first FLAKY_LISTED by case id (cases come sorted)
    for case, n, c in cases:
        if n >= k:
            defined[n, c] += 1
        if n >= 2:
            repeated += 1
            agreeing += c in (0, n)
            if 0 < c < n:
                flaky_count += 1
                if len(flaky) < FLAKY_LISTED:
                    flaky.append(clip(case))  # a derived suite's case ids come from records
    if not repeated:
        return None
    return {
        "k": k,
        "pass_hat_k": _exact_mean(defined, k),
        "pass_hat_k_cases": sum(defined.values()),
        "repeated_cases": repeated,
        "consistency": agreeing / repeated,
        "flaky_cases": sorted(flaky),
        "flaky_count": flaky_count,
    }


def _exact_mean(defined: Counter[tuple[int, int]], k: int) -> float | None:
    """The mean of C(c,k)/C(n,k) over the counted cases, as the nearest double."""
    cases = sum(defined.values())
    if not cases:
        return None
    total = sum((Fraction(comb(c, k), comb(n, k)) * times for (n, c), times in defined.items()),
                Fraction(0))
    return float(total / cases)


def percentile(values: list[float], q: float) -> float:
    """The value at sorted index round_half_even(q * (m - 1)) (agent-release-gate §2.4)."""
    ordered = sorted(values)
    return ordered[round(q * (len(ordered) - 1))]


def notes(kind: str, values: list[float]) -> dict[str, float] | None:
    """Informational summaries, never gated: cost total, mean, p95; latency p50, p95, max."""
    if not values:
        return None
    if kind == "cost":
        return {"total": math.fsum(values), "mean": math.fsum(values) / len(values),
                "p95": percentile(values, 0.95)}
    return {"p50": percentile(values, 0.5), "p95": percentile(values, 0.95),
            "max": max(values)}
