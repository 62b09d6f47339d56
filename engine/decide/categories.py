"""Category results and the formulas over them (docs/decisions.md): a category's state and
misses, the weighted score, the overall score and gate conditions."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from engine.decide import correction
from engine.decide.aggregate import Counts
from engine.decide.lattice import Reason, included
from engine.decide.reasons import FAIL, INCOMPLETE
from engine.errors import FormulaError
from engine.formula import Z_KEY, evaluate, why_null
from engine.spec.evaluation import Category, Evaluation
from engine.stats import notes, wilson

Hold = Callable[[str, str, str, str], None]  # (decision, code, spec path, message)


def category(evaluation: Evaluation, name: str, counts: Counts, cases: int,
             error_codes: Any, measures: Any, reasons: list[Reason],
             uncalibrated: str | None = None, calibrated: dict[str, Any] | None = None,
             judged: Counts | None = None) -> dict[str, Any]:
    """One category's result (counts, rate, bounds, state, met), holding its reasons;
    ``uncalibrated`` says why a required judge calibration does not cover it,
    ``calibrated`` (under ``judge.correct``) is the calibration entry that corrects it, and
    ``judged`` counts its rows the judge decided (the only ones corrected)."""
    cat, z = evaluation.policy.categories[name], evaluation.policy.wilson_z
    n = counts.n
    rate = counts.passed / n if n else None
    bounds = wilson(counts.passed, n, z)
    lower, upper = bounds if bounds else (None, None)
    # An ABSTAIN row judge.max_abstained allows leaves n, but the gate counts it as a FAIL:
    # the rows a judge is unsure of are often the borderline ones, and a rate without them
    # would be the agent's best case (fail closed). Without an allowance any ABSTAIN row
    # leaves the category UNRESOLVED (agent-release-gate §3), so nothing changes there.
    worst = counts.abstained if evaluation.policy.max_abstained else 0
    held = None
    if worst and n + worst:
        held_bounds = wilson(counts.passed, n + worst, z)
        assert held_bounds is not None
        held = {"rate": counts.passed / (n + worst), "wilson_lower": held_bounds[0],
                "wilson_upper": held_bounds[1]}
    uncorrectable = fixed = None
    if calibrated is not None and uncalibrated is None and n:
        uncorrectable = correction.why_not(calibrated)
        if uncorrectable is None:
            part = judged or Counts()
            fixed = correction.corrected(counts.passed, n + worst,
                                         (part.passed, part.n + worst), calibrated, z)

    def hold(decision: str, code: str, where: str, message: str) -> None:
        reasons.append(Reason(decision, code, where, message, name))

    state, met = _state(cat, counts, cases, error_codes.get((name, "NO_JUDGE"), 0), hold,
                        uncalibrated, uncorrectable, evaluation.policy.max_abstained)
    # Misses are reported even when the category is unresolved (the reason list shows
    # every condition that holds); only a resolved category's state becomes NOT_MET.
    # Corrected, the threshold and minimum test the corrected rate and its lower limit.
    gated, gated_lower = (fixed["rate"], fixed["lower"]) if fixed else \
        (held["rate"], held["wilson_lower"]) if held else (rate, lower)
    which = "corrected " if fixed else "with its ABSTAIN rows as FAIL, " if held else ""
    if _misses(cat, gated_lower if cat.gate_on == "wilson_lower" else gated, gated, hold,
               which) and state == "MET":
        state, met = "NOT_MET", False
    # agent-release-gate §3: `attempted` counts every row, and is 0 when the category is
    # skipped (its rows were never attempted); the rows stay counted under `skipped`.
    result = {
        "n": n, "passed": counts.passed, "failed": counts.failed, "errors": counts.errors,
        "abstained": counts.abstained, "skipped": counts.skipped, "waived": counts.waived,
        "attempted": 0 if state == "SKIPPED" else counts.attempted, "cases": cases,
        "rate": rate, "wilson_lower": lower, "wilson_upper": upper,
        "threshold": cat.threshold, "minimum": cat.minimum,
        "gate_on": cat.gate_on, "weight": cat.weight, "required": cat.required,
        "mode": _mode(evaluation, cat.inspections),
        "notes": notes(*measures) if measures else None,
        "state": state, "met": met,
    }
    if held is not None:
        result["abstained_as_failed"] = held
    if fixed is not None:
        result["corrected"] = fixed
    return result


def _state(cat: Category, counts: Counts, cases: int, no_judge: int, hold: Hold,
           uncalibrated: str | None = None, uncorrectable: str | None = None,
           max_abstained: float = 0.0) -> tuple[str, bool | None]:
    """MISSING, NOT_INCLUDED, SKIPPED, UNRESOLVED or MET, holding why it is not resolved.
    ABSTAIN rows unresolve it when they exceed ``max_abstained`` of its attempted rows
    (judge.max_abstained; 0, the default: any does); ERROR rows always do."""
    name, n, path = cat.name, counts.n, cat.spec_path
    if counts.attempted == 0:
        if cat.required:
            hold(INCOMPLETE, "REQUIRED_CATEGORY_MISSING", path, f"no rows for '{name}'")
        return ("MISSING" if cat.required else "NOT_INCLUDED"), None
    if counts.skipped == counts.attempted:
        hold(INCOMPLETE, "CATEGORY_SKIPPED", path, f"every row of '{name}' was skipped")
        return "SKIPPED", None
    if counts.skipped + no_judge == counts.attempted:
        # Nothing here could be judged (e.g. no canary anywhere and no judge): skipped, not
        # unresolved, as agent-release-gate §2 says for injection.
        hold(INCOMPLETE, "CATEGORY_SKIPPED", path,
             f"no row of '{name}' can be verified without a judge")
        return "SKIPPED", None
    # as written: 0.1 allows 1 row of 10, not the double just above 0.1
    abstained = counts.abstained > 0 and \
        Fraction(counts.abstained, counts.attempted) > Fraction(str(max_abstained))
    if uncalibrated is not None:
        hold(INCOMPLETE, "CALIBRATION_MISSING", "policy:spec.judge.calibration",
             f"'{name}' is judged without a verified calibration: {uncalibrated}")
    elif uncorrectable is not None:
        hold(INCOMPLETE, "CORRECTION_UNDEFINED", "policy:spec.judge.correct",
             f"'{name}' cannot be corrected for judge error: {uncorrectable}")
    elif not (n == 0 or counts.errors or abstained or n < cat.min_n
              or cases < cat.min_cases):
        return "MET", True
    if cases < cat.min_cases:
        hold(INCOMPLETE, "BELOW_MIN_CASES", f"{path}.min_cases",
             f"'{name}' has {cases} scored cases, fewer than min_cases {cat.min_cases}")
    if counts.errors or abstained:
        allowed = f" of {counts.attempted} (judge.max_abstained {max_abstained})" \
            if max_abstained else ""
        hold(INCOMPLETE, "CATEGORY_UNRESOLVED", path,
             f"'{name}' has {counts.errors} ERROR and {counts.abstained} ABSTAIN rows{allowed}")
    if n < cat.min_n:
        hold(INCOMPLETE, "BELOW_MIN_N", f"{path}.min_n",
             f"'{name}' has {n} scored rows, fewer than min_n {cat.min_n}")
    return "UNRESOLVED", None


def _misses(cat: Category, statistic: float | None, rate: float | None, hold: Hold,
            which: str = "") -> bool:
    """Hold a FAIL for a missed threshold and a missed mandatory minimum; whether either
    (``which`` is "corrected " when they test the corrected rate)."""
    missed = False
    if cat.threshold is not None and statistic is not None and not statistic >= cat.threshold:
        hold(FAIL, "BELOW_THRESHOLD", f"{cat.spec_path}.threshold",
             f"'{cat.name}' {which}{cat.gate_on} {statistic:.6g} is below the threshold "
             f"{cat.threshold}")
        missed = True
    if cat.minimum is not None and rate is not None and not rate >= cat.minimum:
        hold(FAIL, "BELOW_MINIMUM", f"{cat.spec_path}.minimum",
             f"'{cat.name}' {which}rate {rate:.6g} is below its mandatory minimum {cat.minimum}")
        missed = True
    return missed


def _mode(evaluation: Evaluation, ids: list[str]) -> str:
    """How the category's verdicts are reached (a judged inspection without a judge falls
    back to its fallback's mode)."""
    modes = set()
    for inspection_id in ids:
        inspection = evaluation.policy.inspections[inspection_id]
        fallback = inspection.params.get("fallback")
        if fallback and evaluation.judge.provider == "none":
            inspection = evaluation.policy.inspections[fallback]
        modes.add(inspection.primitive.mode)
    return "+".join(sorted(modes))


def gated_rate(result: dict[str, Any]) -> float | None:
    """The rate a category is gated on: its corrected rate when corrected, else its rate
    with the ABSTAIN rows judge.max_abstained allowed counted as FAIL, else its rate."""
    fixed = result.get("corrected") or result.get("abstained_as_failed")
    return fixed["rate"] if fixed is not None else result["rate"]


def _weighted(evaluation: Evaluation, categories: dict[str, dict[str, Any]]) -> float | None:
    """Weighted mean of the gated rates (corrected when corrected) of included categories
    with weight > 0; null if one is unresolved."""
    total = weight = 0.0
    for name, cat in evaluation.policy.categories.items():
        result = categories[name]
        if cat.weight > 0 and included(result):
            rate = gated_rate(result)
            if rate is None or result["state"] in ("SKIPPED", "UNRESOLVED"):
                return None
            total += cat.weight * rate
            weight += cat.weight
    return total / weight if weight else None


def _formula(formula: Any, env: dict[str, Any], reasons: list[Reason], path: str) -> Any:
    try:
        return evaluate(formula, env)
    except FormulaError as exc:
        reasons.append(Reason(INCOMPLETE, "GATE_ERROR", path, f"{exc.code}: {exc}"))
        return None


def formulas(evaluation: Evaluation, categories: dict[str, dict[str, Any]],
             reasons: list[Reason]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The overall score and each gate condition, holding a reason for each that fails."""
    policy = evaluation.policy
    env: dict[str, Any] = {Z_KEY: policy.wilson_z, "weighted": _weighted(evaluation, categories)}
    for name, result in categories.items():
        env[name] = gated_rate(result) if result["state"] in ("MET", "NOT_MET") else None
        for count in ("n", "passed", "failed", "errors"):
            env[f"{count}_{name}"] = result[count]
        if "abstained_as_failed" in result:  # the gate's worst case, in counts too
            env[f"n_{name}"] += result["abstained"]
            env[f"failed_{name}"] += result["abstained"]
    overall = None
    if policy.overall is not None:
        score = _formula(policy.overall, env, reasons, "policy:spec.overall.formula")
        met = None if score is None or policy.overall_threshold is None else \
            score >= policy.overall_threshold
        if score is None and policy.overall_threshold is not None:
            why = why_null(policy.overall, env) if policy.overall else ""
            reasons.append(Reason(INCOMPLETE, "GATE_NULL", "policy:spec.overall.formula",
                                  "the overall score is null: " + (
                                      why or "some category it needs has no resolved rate")))
        elif met is False:
            reasons.append(Reason(FAIL, "OVERALL_BELOW_THRESHOLD",
                                  "policy:spec.overall.threshold",
                                  f"overall score {score:.6g} is below {policy.overall_threshold}"))
        overall = {"score": score, "threshold": policy.overall_threshold, "met": met,
                   "formula": policy.overall.source}
        env["overall"] = score
    else:
        env["overall"] = env["weighted"]
    conditions = []
    for cond in policy.conditions:
        value = _formula(cond.formula, env, reasons, cond.spec_path)
        if value is None:
            why = why_null(cond.formula, env)
            reasons.append(Reason(INCOMPLETE, "GATE_NULL", cond.spec_path,
                                  f"condition '{cond.id}' is null: " + (
                                      why or "evidence it needs is missing")))
        elif value is False:
            reasons.append(Reason(FAIL, "CONDITION_FALSE", cond.spec_path,
                                  cond.message or f"condition '{cond.id}' does not hold"))
        conditions.append({"id": cond.id, "formula": cond.formula.source, "value": value})
    return overall, conditions


