"""What ``engine validate`` and ``engine run`` warn about in a valid Policy: settings that
are allowed but can never have the effect their author wrote them for. A warning never
makes a spec invalid."""

from __future__ import annotations

import datetime as dt
from typing import Any

from engine.errors import Problem
from engine.formula import Formula
from engine.spec.model import Condition
from engine.spec.yaml import Document


def no_longer_applies(expires: str) -> str:
    """How a waiver's end reads: ``expires`` is the last day it applies (UTC), so the day
    after it is the first day it does not."""
    try:
        after = (dt.date.fromisoformat(expires) + dt.timedelta(days=1)).isoformat()
    except ValueError:  # the schema admits only real dates; never reached for a valid spec
        return f"its last day was {expires}; it no longer applies"
    return f"its last day was {expires}; it no longer applies from {after}"


def waiver_ends(doc: Document) -> list[tuple[str, Problem]]:
    """Each waiver's ``expires`` with the WAIVER_EXPIRED warning located at it, which
    ``engine validate`` prints once that day has passed (the date is the caller's)."""
    return [(w["expires"], doc.problem(
        ("spec", "waivers", i, "expires"), "WAIVER_EXPIRED",
        f"waiver {w['id']} has expired: {no_longer_applies(w['expires'])}",
        "renew it with a new approval and expires, or remove it"))
        for i, w in enumerate(doc.data["spec"].get("waivers", []))]


def dead_weights(doc: Document, overall: Formula | None, threshold: float | None,
                 conditions: list[Condition]) -> list[Problem]:
    """WEIGHTS_UNUSED, at the first category weight above 0 the Policy writes, when
    nothing the decision reads depends on the weighted score: no condition names
    ``weighted``, and the overall score either does not use it or decides nothing (no
    threshold, and no condition names ``overall``). Without an ``overall`` block the
    name ``overall`` is the weighted score itself. Weights of 0 say "leave it out" and
    are never dead."""
    categories: dict[str, Any] = doc.data["spec"]["categories"]
    weights = [(name, cat["weight"]) for name, cat in categories.items()
               if cat.get("weight", 0) > 0]
    read = {name for cond in conditions for name in cond.formula.names}
    if not weights or "weighted" in read:
        return []
    if overall is None:
        if "overall" in read:
            return []
        why = "the policy has no overall score, and no condition names 'weighted' or 'overall'"
        hint = "add 'overall: {threshold: ...}' to gate on the weighted score, or remove " \
               "the weights"
    elif "weighted" not in overall.names:
        why = f"overall.formula '{overall.source}' does not use 'weighted', and no " \
              "condition does"
        hint = "use 'weighted' in overall.formula or in a condition, or remove the weights"
    elif threshold is not None or "overall" in read:
        return []
    else:
        why = "overall.formula uses 'weighted', but the overall score has no threshold and " \
              "no condition names 'overall'"
        hint = "give overall a threshold, or remove the weights"
    listed = ", ".join(f"{name} {weight:g}" for name, weight in weights)
    return [doc.problem(("spec", "categories", weights[0][0], "weight"), "WEIGHTS_UNUSED",
                        f"category weights ({listed}) can never change the decision: {why}",
                        hint)]
