"""Scoring and aggregation (discovery protocol §10, §11): rules and formulas are data."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.errors import FormulaError, Problem
from engine.formula import ANY, NUMBER, Formula, compile_formula, evaluate
from engine.protocols.discovery.files import formula_problem
from engine.spec.yaml import Document

VALID = frozenset({"abstained", "pending_review", "unresolved", "scored"})
COUNTS = ("T", "q_n", "q_sum", "rc_n", "rc_sum", "valid", "abstained", "pending", "missing",
          "invalid")


@dataclass(frozen=True)
class Scoring:
    """Compiled scoring.yaml."""

    factors: dict[str, float | None]
    zero_if: list[Formula]
    formula: Formula
    dimensions: dict[str, str]
    summary: list[tuple[str, Formula]]
    disclaimer: str
    caveats: tuple[str, ...] = ()


def compile_scoring(doc: Document, problems: list[Problem]) -> Scoring:
    """Compile scoring.yaml; a formula that does not compile is a located problem."""
    data = doc.data
    judge = {"task_fulfilled": ANY, "duplicate_of": ANY}
    dims = dict(data["dimensions"])
    counts = dict.fromkeys(COUNTS, NUMBER)

    def formula(where: tuple[str | int, ...], source: Any, names: dict[str, str]) -> Formula:
        try:
            return compile_formula(str(source), names)
        except FormulaError as exc:
            problems.append(formula_problem(doc, where, exc))
            return compile_formula("null", {})

    return Scoring(dict(data["support_factor"]),
                   [formula(("zero_if", i), src, judge) for i, src in enumerate(data["zero_if"])],
                   formula(("formula",), data["formula"],
                           {"factor": NUMBER} | dict.fromkeys(dims, NUMBER)),
                   dims,
                   [(name, formula(("summary", name), src, counts))
                    for name, src in data["summary"].items()],
                   " ".join(str(data["disclaimer"]).split()),
                   tuple(" ".join(str(c).split()) for c in data.get("caveats", [])))


def finding_score(rules: Scoring, assessment: Mapping[str, Any],
                  effective_support: str) -> float | None:
    """One finding's score (§10.1): zero rules first, then a null factor, then the formula."""
    env = {"task_fulfilled": assessment.get("task_fulfilled"),
           "duplicate_of": assessment.get("duplicate_of")}
    if any(evaluate(rule, env) is True for rule in rules.zero_if):
        return 0
    factor = rules.factors[effective_support]
    if factor is None:
        return None
    values = {short: assessment[field] for short, field in rules.dimensions.items()}
    score: float | None = evaluate(rules.formula, {"factor": factor, **values})
    return score


def task_quality(scores: list[float | None]) -> tuple[float | None, str]:
    """(quality, status) from a reviewed task's finding scores (§10.2)."""
    if not scores:
        return None, "abstained"
    if any(s is None for s in scores):
        return None, "unresolved"
    return math.fsum(s for s in scores if s is not None) / len(scores), "scored"


def summary(rules: Scoring, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ten summary metrics over a set of task records (§11.2)."""
    qualities = [r["quality"] for r in records if r.get("quality") is not None]
    coverages = [r["reference_coverage"] for r in records
                 if r.get("reference_coverage") is not None]
    statuses = [r["status"] for r in records]
    counts = {"T": len(records), "q_n": len(qualities), "q_sum": math.fsum(qualities),
              "rc_n": len(coverages), "rc_sum": math.fsum(coverages),
              "valid": sum(s in VALID for s in statuses),
              "abstained": statuses.count("abstained"),
              "pending": statuses.count("pending_review") + statuses.count("unresolved"),
              "missing": statuses.count("missing"), "invalid": statuses.count("invalid")}
    return {name: evaluate(formula, counts) for name, formula in rules.summary}


def report(rules: Scoring, records: Sequence[Mapping[str, Any]],
           tasks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Summary for the inventory, then by kind and by source in order of first appearance."""
    out = summary(rules, records)
    for group in ("kind", "source"):
        names = list(dict.fromkeys(str(t[group]) for t in tasks))
        out[f"by_{group}"] = {name: summary(rules, [r for r, t in zip(records, tasks,
                                                                     strict=True)
                                                    if t[group] == name]) for name in names}
    return out
