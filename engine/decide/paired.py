"""Paired comparisons with a baseline (``gate.comparison.test``, beyond agent-release-gate §10).

Pairs. Per category and case, each run's scored outcomes (PASS / FAIL rows, controls never)
are counted; ERROR, ABSTAIN and SKIPPED rows are not scored, so they are counted apart
(``unscored``) and never paired. Trials of one case are exchangeable and their ids and order
are written by the evaluated party, so outcomes are not paired by id or by file order: within
a case, each run's outcomes are listed passes first, and the i-th of one run is paired with
the i-th of the other. The pairing depends only on the counts, gives the fewest discordant
pairs the counts allow (with equal trial counts, |passes now - passes before| pairs, all in
one direction), and leaves the excess trials of the run with more unpaired. Outcomes of a
case only one run scored are unpaired too; both are counted, never dropped.

Tests. ``b`` counts pass->fail pairs, ``c`` fail->pass pairs.
- ``mcnemar_midp``: two-sided mid-p McNemar (Fagerland, Lydersen and Laake 2013):
  ``min(1, 2 * P(X <= min(b, c)) - P(X = b))`` with X ~ Binomial(b + c, 1/2); 1 when b + c
  = 0. When b != c this is the exact p-value minus the probability of the observed split.
- ``paired_bootstrap``: the statistic is the paired difference of pass rates,
  ``d = (c - b) / pairs`` (this run minus the baseline). Clusters (each pair, or with
  ``cluster_by: case`` each case's pairs together; listed by case name, and within a case
  its b pairs, its c pairs, then its concordant ones) are drawn with replacement, as many as
  there are, ``iterations`` times by ``random.Random(seed)`` (Mersenne Twister; a draw is
  ``floor(random() * clusters)``), and d* is recomputed each time. The p-value is the
  two-sided percentile-bootstrap one, ``min(1, 2 * min(1 + #{d* <= 0}, 1 + #{d* >= 0}) /
  (iterations + 1))``.
A category regressed when its p-value (Holm-adjusted under ``multiplicity: holm``) is at most
``alpha`` and b > c; improved when it is and c > b.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from engine.decide import power

TESTS = ("wilson_lower", "mcnemar_midp", "paired_bootstrap")
DEFAULT_ITERATIONS = 10000
MAX_ITERATIONS = 100000
DEFAULT_SEED = 20260101
SCORED = ("PASS", "FAIL")

Counts = dict[str, dict[str, list[int]]]  # category -> case -> [passes, fails, unscored]


@dataclass(frozen=True)
class Settings:
    """Governance's choice of test (``spec.gate.comparison``), recorded in the scorecard."""

    test: str = "wilson_lower"
    alpha: float = 0.05
    multiplicity: str = "none"
    cluster_by: str = "unit"
    iterations: int = DEFAULT_ITERATIONS
    seed: int = DEFAULT_SEED
    effect: float | None = None
    """``gate.comparison.effect``: the drop whose power is reported (engine/decide/power.py)."""
    min_power: float | None = None
    """``gate.comparison.min_power``: a required comparison seeing ``effect`` with less
    power is INCOMPLETE (UNDERPOWERED)."""
    discordance: float = 0.0
    """``gate.comparison.discordance``: the least share of discordant pairs the paired
    tests' power assumes, whatever fewer the runs show."""

    @property
    def paired(self) -> bool:
        return self.test != "wilson_lower"

    def record(self) -> dict[str, Any]:
        """The settings block of the scorecard's comparison."""
        out: dict[str, Any] = {"test": self.test, "alpha": self.alpha,
                               "multiplicity": self.multiplicity,
                               "cluster_by": self.cluster_by}
        if self.test == "paired_bootstrap":
            out["bootstrap"] = {"iterations": self.iterations, "seed": self.seed}
        return out

    def power_record(self) -> dict[str, Any]:
        """The power settings block of the scorecard's comparison."""
        return {"effect": self.effect, "min_power": self.min_power,
                "discordance": self.discordance}


EXACT_MIDP = 1000  # discordant pairs up to which mid-p is summed in exact integers


def midp(b: int, c: int) -> float:
    """Two-sided mid-p McNemar p-value on b pass->fail and c fail->pass pairs: in exact
    integers up to EXACT_MIDP discordant pairs, above them from the binomial tails in
    doubles (engine/decide/power.py; relative error below 1e-8), since the exact sum grows
    with the cube of the count (a hostile review waited 47 s at 19,800)."""
    m = b + c
    if m == 0:
        return 1.0
    if m > EXACT_MIDP:
        return min(1.0, 2 * power.binom_cdf(min(b, c), m, 0.5) - power.binom_pmf(b, m, 0.5))
    tail = sum(math.comb(m, i) for i in range(min(b, c) + 1))
    return min(1.0, (2 * tail - math.comb(m, b)) / 2 ** m)


def holm(ps: dict[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p-values (ties in name order)."""
    order = sorted(ps, key=lambda k: (ps[k], k))
    out, running, k = {}, 0.0, len(order)
    for i, name in enumerate(order):
        running = max(running, min(1.0, (k - i) * ps[name]))
        out[name] = running
    return out


def bootstrap(clusters: list[tuple[int, int]], iterations: int, seed: int) -> float:
    """Two-sided percentile-bootstrap p-value of d = sum(diff) / sum(pairs) over clusters of
    (pairs, c - b); 1.0 when there are no clusters."""
    n = len(clusters)
    if n == 0:
        return 1.0
    rng = random.Random(seed)
    draw = rng.random
    low = high = 0
    for _ in range(iterations):
        pairs = diff = 0
        for _ in range(n):
            k, d = clusters[math.floor(draw() * n)]
            pairs += k
            diff += d
        low += diff <= 0
        high += diff >= 0  # pairs > 0: every cluster holds a pair
    return min(1.0, 2 * min(1 + low, 1 + high) / (iterations + 1))


def counts(lines: Iterable[bytes]) -> Counts:
    """Per category and case of the agent's rows: [passes, fails, unscored]."""
    out: Counts = {}
    for line in lines:
        if not line.strip():
            continue
        row = json.loads(line)
        if "category" not in row or row.get("control"):
            continue
        case = row.get("case")
        case = str(row["unit"]) if case is None else str(case)
        cell = out.setdefault(row["category"], {}).setdefault(case, [0, 0, 0])
        cell[SCORED.index(row["status"]) if row["status"] in SCORED else 2] += 1
    return out


def read_counts(path: Path, digest: str | None = None) -> Counts | None:
    """The counts of a rows.jsonl, read once as a stream; with ``digest``, None unless the
    bytes read are the ones it names (the baseline's signed ``rows_sha256``), or when the
    file cannot be read."""
    hasher = hashlib.sha256()

    def lines(handle: BinaryIO) -> Iterator[bytes]:
        for line in handle:
            hasher.update(line)
            yield line
    try:
        with path.open("rb") as handle:
            out = counts(lines(handle))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if digest is not None and hasher.hexdigest() != digest:
        return None
    return out


def pair(now: dict[str, list[int]], before: dict[str, list[int]]) -> dict[str, Any]:
    """The canonical pairing of one category (see the module text): per case (pairs, b, c),
    and the unpaired and unscored outcomes of each run."""
    cases, unpaired, unscored = [], [0, 0], [0, 0]
    for case in sorted(set(now) | set(before)):
        p1, f1, u1 = now.get(case, [0, 0, 0])
        p0, f0, u0 = before.get(case, [0, 0, 0])
        unscored[0] += u1
        unscored[1] += u0
        k = min(p1 + f1, p0 + f0)
        unpaired[0] += p1 + f1 - k
        unpaired[1] += p0 + f0 - k
        if k:
            # passes first on both sides: position i is PASS now iff i < p1
            b = max(0, min(p0, k) - min(p1, k))
            c = max(0, min(p1, k) - min(p0, k))
            cases.append((k, b, c))
    return {"cases": cases, "unpaired": unpaired, "unscored": unscored}


def run(settings: Settings, now: Counts, before: Counts | None, names: list[str],
        family: set[str]) -> dict[str, dict[str, Any]]:
    """The ``paired`` entry of each named category; ``family``: the categories the test
    decides (the others' status came first), adjusted together under ``holm`` (p_adjusted
    is null outside it). With no readable baseline rows, each entry says it could not be
    computed."""
    if before is None:
        return {n: {"test": settings.test, "p_value": None, "p_adjusted": None,
                    "reason": "the baseline's rows.jsonl is missing or is not the bytes its "
                              "signed scorecard names"} for n in names}
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        paired = pair(now.get(name, {}), before.get(name, {}))
        k = sum(x[0] for x in paired["cases"])
        b = sum(x[1] for x in paired["cases"])
        c = sum(x[2] for x in paired["cases"])
        entry: dict[str, Any] = {"test": settings.test, "pairs": k, "b": b, "c": c,
                                 "unpaired": {"current": paired["unpaired"][0],
                                              "baseline": paired["unpaired"][1]},
                                 "unscored": {"current": paired["unscored"][0],
                                              "baseline": paired["unscored"][1]}}
        if k == 0:
            entry.update(statistic=None, p_value=None, reason="no pairs")
        elif settings.test == "mcnemar_midp":
            entry.update(statistic=b + c, p_value=midp(b, c))
        else:
            if settings.cluster_by == "case":
                clusters = [(x[0], x[2] - x[1]) for x in paired["cases"]]
            else:
                clusters = [(1, d) for x in paired["cases"]
                            for d in [-1] * x[1] + [1] * x[2] + [0] * (x[0] - x[1] - x[2])]
            entry.update(statistic=(c - b) / k,
                         p_value=bootstrap(clusters, settings.iterations, settings.seed))
        out[name] = entry
    tested = {n: e["p_value"] for n, e in out.items()
              if e["p_value"] is not None and n in family}
    adjusted = holm(tested) if settings.multiplicity == "holm" else tested
    for name, entry in out.items():
        entry["p_adjusted"] = adjusted.get(name)
    return out


def verdict(entry: dict[str, Any], alpha: float) -> str:
    """regressed, improved, stable, or untested (no p-value could be computed)."""
    p = entry.get("p_adjusted")
    if p is None:
        return "untested"
    if p <= alpha and entry["b"] > entry["c"]:
        return "regressed"
    if p <= alpha and entry["c"] > entry["b"]:
        return "improved"
    return "stable"
