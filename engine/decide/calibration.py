"""Judge calibration arithmetic (agent-release-gate §11): the judge's verdicts against human
labels on a hold-out set, as a 2x2 table and its agreement statistics.

The positive class is "the human passes the row". Every statistic is an IEEE double
computed in the order written here, so another implementation gets the same bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

TRUE_WORDS = frozenset({"pass", "true", "yes"})
FALSE_WORDS = frozenset({"fail", "false", "no"})


def label(value: Any) -> bool:
    """A human label as pass (True) or fail (False): JSON true/false, or one of the strings
    pass/fail, true/false, yes/no in any case, surrounding whitespace trimmed. Anything
    else raises ValueError saying what was found."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
    shown = repr(value)[:60] if isinstance(value, str) else type(value).__name__
    raise ValueError(f"a label is true/false, pass/fail or yes/no, not {shown}")


@dataclass
class Table:
    """Judge verdict (rows) against human label (columns), positive = human pass."""

    tp: int = 0  # judge pass, human pass
    fp: int = 0  # judge pass, human fail
    tn: int = 0  # judge fail, human fail
    fn: int = 0  # judge fail, human pass

    def add(self, judge: bool, human: bool) -> None:
        """Count one labelled row."""
        if judge and human:
            self.tp += 1
        elif judge:
            self.fp += 1
        elif human:
            self.fn += 1
        else:
            self.tn += 1

    @property
    def n(self) -> int:
        """Labelled rows counted."""
        return self.tp + self.fp + self.tn + self.fn


def kappa(t: Table) -> float:
    """Cohen's kappa (po - pe) / (1 - pe); when pe = 1 it is 1 if po = 1, else 0."""
    n = t.n
    po = (t.tp + t.tn) / n
    pj = (t.tp + t.fp) / n
    ph = (t.tp + t.fn) / n
    pe = pj * ph + (1 - pj) * (1 - ph)
    return agreement(po, pe)


def agreement(po: float, pe: float) -> float:
    """Kappa from observed and chance agreement; pe = 1 gives 1 if po = 1, else 0."""
    if pe == 1:
        return 1.0 if po == 1 else 0.0
    return (po - pe) / (1 - pe)


def statistics(t: Table) -> dict[str, Any]:
    """n, the four cells, accuracy, sensitivity (null without a human pass), specificity
    (null without a human fail) and kappa; n must be above 0."""
    if t.n == 0:
        raise ValueError("no labelled rows: nothing to calibrate")
    return {"n": t.n, "tp": t.tp, "fp": t.fp, "tn": t.tn, "fn": t.fn,
            "accuracy": (t.tp + t.tn) / t.n,
            "sensitivity": t.tp / (t.tp + t.fn) if t.tp + t.fn else None,
            "specificity": t.tn / (t.tn + t.fp) if t.tn + t.fp else None,
            "kappa": kappa(t)}


def exact_kappa(tp: int, fp: int, tn: int, fn: int) -> Fraction:
    """Kappa as an exact fraction, 2(tp·tn − fp·fn) / ((tp+fp)(fp+tn) + (tp+fn)(fn+tn)),
    the same quantity as ``kappa`` without rounding (pe = 1: 1 if po = 1, else 0)."""
    below = (tp + fp) * (fp + tn) + (tp + fn) * (fn + tn)
    if below == 0:
        return Fraction(1 if fp + fn == 0 else 0)
    return Fraction(2 * (tp * tn - fp * fn), below)


def meets(cells: dict[str, Any], min_kappa: float) -> bool:
    """Whether kappa reaches ``min_kappa``, compared exactly: the bar as written (0.9 is
    9/10) against the exact kappa of the four cells, so a kappa of exactly the bar that a
    double computes as 0.8999999999999999 still meets it."""
    bar = Fraction(repr(float(min_kappa)))
    return exact_kappa(cells["tp"], cells["fp"], cells["tn"], cells["fn"]) >= bar
