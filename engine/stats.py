"""Statistics over counters: the Wilson score interval, pass^k and consistency."""

from __future__ import annotations

import math
from math import comb
from typing import Any

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


def pass_hat_k(cases: dict[str, list[int]], k: int) -> dict[str, Any] | None:
    """Repeated-trial statistics over cases given as case -> [scored trials, passes].

    Per case, pass^k is C(c,k)/C(n,k) (the unbiased estimator), 0 when c < k, undefined when
    n < k; ``pass_hat_k`` is the unweighted mean over cases where it is defined. A case is
    repeated when n >= 2; ``consistency`` is the share of repeated cases whose trials all
    agree. None unless some case is repeated.
    """
    repeated = [(case, n, c) for case, (n, c) in cases.items() if n >= 2]
    if not repeated:
        return None
    defined = [comb(c, k) / comb(n, k) if c >= k else 0.0 for n, c in cases.values() if n >= k]
    return {
        "k": k,
        "pass_hat_k": sum(defined) / len(defined) if defined else None,
        "pass_hat_k_cases": len(defined),
        "repeated_cases": len(repeated),
        "consistency": sum(1 for _, n, c in repeated if c in (0, n)) / len(repeated),
        "flaky_cases": sorted(case for case, n, c in repeated if 0 < c < n),
    }


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
