"""A judged rate corrected for the judge's measured error (policy ``judge.correct``).

The Rogan-Gladen estimator turns a rate the judge passed, ``p``, into the rate a human would
have passed, given the judge's sensitivity and specificity (positive = the human passes):
``(p + spec - 1) / (sens + spec - 1)``, clipped to [0, 1]. It is defined only when the
Youden index ``sens + spec - 1`` is above 0 (a judge no better than chance corrects nothing).

The interval is a Bonferroni box of Wilson score limits: ``p``, ``sens`` and ``spec`` each
get a Wilson interval at confidence ``1 - alpha/3``, where ``alpha`` is the two-sided level
of the policy's ``wilson_z``; the corrected rate's limits are its minimum and maximum over
the box, clipped to [0, 1]. The estimator is monotone in each of the three when the others
are held (linear in ``p``, linear-fractional in ``sens`` and in ``spec``), so the extremes
are at the box's 8 corners. When the box reaches a Youden index of 0 or below, the corrected
rate is unbounded there and the interval is [0, 1]. By Bonferroni's inequality the three
intervals hold together with confidence at least ``1 - alpha`` (as far as each Wilson
interval holds its own level), and then so does the box's.
"""

from __future__ import annotations

from itertools import product
from statistics import NormalDist
from typing import Any

from engine.stats import wilson

METHOD = "rogan_gladen"
INTERVAL = "bonferroni_wilson_box"


def rate(p: float, sens: float, spec: float) -> float:
    """The corrected rate, clipped to [0, 1]; the Youden index must be above 0."""
    youden = sens + spec - 1
    if not youden > 0:
        raise ValueError(f"the Youden index sens + spec - 1 is {youden:.6g}: not above 0")
    return min(1.0, max(0.0, (p + spec - 1) / youden))


def box_z(z: float, parts: int = 3) -> float:
    """The z of each of the box's Wilson intervals: two-sided ``alpha = 2(1 - Phi(z))``,
    split ``parts`` ways (three: the rate, sensitivity and specificity; four when a category
    also has rows the judge did not decide), so ``Phi^-1(1 - alpha/(2 parts))``."""
    normal = NormalDist()
    alpha = 2 * (1 - normal.cdf(z))
    return normal.inv_cdf(1 - alpha / (2 * parts))


def interval(passed: int, n: int, cells: dict[str, int], z: float,
             parts: int = 3) -> tuple[float, float]:
    """(lower, upper) of the corrected rate over the Bonferroni box at the policy's ``z``."""
    zb = box_z(z, parts)
    limits = [wilson(passed, n, zb), wilson(cells["tp"], cells["tp"] + cells["fn"], zb),
              wilson(cells["tn"], cells["tn"] + cells["fp"], zb)]
    if any(b is None for b in limits):
        raise ValueError("a Wilson interval of the box has no rows")
    (p_lo, p_hi), (se_lo, se_hi), (sp_lo, sp_hi) = limits  # type: ignore[misc]
    if not se_lo + sp_lo - 1 > 0:  # the box reaches Youden <= 0: unbounded there
        return 0.0, 1.0
    values = [rate(p, se, sp) for p, se, sp in product((p_lo, p_hi), (se_lo, se_hi),
                                                        (sp_lo, sp_hi))]
    return min(values), max(values)


def why_not(entry: dict[str, Any]) -> str | None:
    """Why a verified calibration entry cannot correct (None when it can)."""
    sens, spec = entry.get("sensitivity"), entry.get("specificity")
    if sens is None or spec is None:
        which = "sensitivity" if sens is None else "specificity"
        return (f"its calibration has no {which} (no hold-out row the human "
                f"{'passed' if sens is None else 'failed'})")
    if not sens + spec - 1 > 0:
        return (f"its judge is no better than chance: sensitivity {sens:.4g} + specificity "
                f"{spec:.4g} - 1 = {sens + spec - 1:.4g} (Youden index) is not above 0")
    return None


def corrected(passed: int, n: int, judged: tuple[int, int], entry: dict[str, Any],
              z: float) -> dict[str, Any]:
    """The category's ``corrected`` block from its counts, the part of them the judge
    decided (``judged``: passed, n) and its calibration entry (which ``why_not`` accepts).

    Only the judge's rows are corrected: the calibration measured the judge on those alone,
    and a deterministic row (a must_include, an injection row its canary decided) has no
    judge error to correct. The category's corrected rate is the judged part corrected plus
    the other rows as they are, over n; its limits add the judged part's box limits and the
    other rows' Wilson limits, each weighted by its rows, alpha then split four ways."""
    cells = entry["cells"]
    sens, spec = entry["sensitivity"], entry["specificity"]
    judged_passed, judged_n = judged
    other_passed, other_n = passed - judged_passed, n - judged_n
    parts = 4 if judged_n and other_n else 3  # a fourth interval shares alpha
    if judged_n:
        point = rate(judged_passed / judged_n, sens, spec)
        lower, upper = interval(judged_passed, judged_n, cells, z, parts)
    if other_n:
        other = wilson(other_passed, other_n, box_z(z, parts))
        assert other is not None
        if not judged_n:
            point, (lower, upper) = other_passed / other_n, other
        else:  # weighted by rows: the judged part corrected, the rest as observed
            point = (point * judged_n + other_passed) / n
            lower = (lower * judged_n + other[0] * other_n) / n
            upper = min(1.0, (upper * judged_n + other[1] * other_n) / n)
    return {"method": METHOD, "interval": INTERVAL, "rate": point, "lower": lower,
            "upper": upper, "sensitivity": sens, "specificity": spec,
            "judged": {"passed": judged_passed, "n": judged_n},
            "calibration": {k: cells[k] for k in ("tp", "fp", "tn", "fn")}}
