"""The decision lattice (docs/decisions.md): the precedence is code, the parameters are data."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from engine.decide import findings as _findings
from engine.decide.aggregate import Counts, Tally, suite_digest
from engine.decide.categories import category, formulas
from engine.decide.lattice import EXIT_CODES, ORDER, Decision, Reason
from engine.decide.lattice import included as _included
from engine.decide.reasons import FAIL, INCOMPLETE, SELF_TEST, TRIAGE
from engine.records import formats
from engine.spec.advice import no_longer_applies
from engine.spec.evaluation import Evaluation
from engine.stats import pass_hat_k

__all__ = ["EXIT_CODES", "ORDER", "Decision", "Reason", "decide", "with_comparison"]

MAX_ROWS = 50  # control rows listed in the scorecard (all are in rows.jsonl)
_PURPOSE = {"self_test": (SELF_TEST, "PURPOSE_SELF_TEST"), "triage": (TRIAGE, "PURPOSE_TRIAGE")}


def decide(evaluation: Evaluation, tally: Tally, judge: dict[str, Any] | None = None,
           calibration: dict[str, Any] | None = None) -> Decision:
    """Categories, overall score, conditions, reasons and the decision for one tally; a
    required ``calibration`` block leaves each judged category it does not cover UNRESOLVED,
    and under ``judge.correct`` each judged category is gated on its corrected rate."""
    policy, reasons = evaluation.policy, []
    suite_sha = suite_digest(evaluation, tally)
    if evaluation.suite_pin is not None and suite_sha != evaluation.suite_pin:
        reasons.append(Reason(INCOMPLETE, "SUITE_MISMATCH", "evaluation:spec.suite_sha256",
                              f"the records' suite digest {suite_sha} is not the pinned "
                              f"{evaluation.suite_pin}: this is not the suite governance "
                              "approved"))
    answered = judge is not None and judge["identity"]["provider"] == "mock"
    if answered or evaluation.judge.provider == "mock":  # any mock judge (docs/decisions.md)
        reasons.append(Reason(SELF_TEST, "MOCK_JUDGE", "evaluation:spec.judge.provider",
                              ("a mock judge answered" if answered else "the judge is a "
                               "mock") + ": simulated evidence can never PASS"))
    if policy.purpose in _PURPOSE:
        decision, code = _PURPOSE[policy.purpose]
        reasons.append(Reason(decision, code, "policy:spec.gate.purpose",
                              f"purpose is {policy.purpose}: this run can never PASS"))
    validation = _validation(evaluation, tally, reasons)
    if validation is not None and validation["failed"]:
        return _result(evaluation, reasons, validation=validation, judge=judge,
                       calibration=calibration)  # no metrics
    reasons += _coverage(evaluation, tally, validation is not None)
    correcting = calibration is not None and policy.judge_correct != "none"
    uncalibrated = {name: entry["why"] for name, entry in calibration["categories"].items()
                    if not entry["calibrated"]} \
        if calibration and (calibration["required"] or correcting) else {}
    judged = calibration["categories"] if correcting and calibration else {}
    categories = {name: category(evaluation, name, tally.categories.get(name, Counts()),
                                  tally.cases.count(name), tally.error_codes,
                                  tally.measures.get(name), reasons, uncalibrated.get(name),
                                  judged.get(name), tally.judged.get(name))
                  for name in policy.categories}
    included = [name for name, c in categories.items() if _included(c)]
    if not included:
        reasons.append(Reason(INCOMPLETE, "NO_CATEGORIES", "policy:spec.categories",
                              "no category has any rows"))
    controls = _controls(evaluation, tally, reasons)
    reliability = {name: pass_hat_k(tally.cases.cases(name), policy.pass_k)
                   for name in included}
    _reliability_gates(evaluation, reliability, reasons)
    overall, conditions = formulas(evaluation, categories, reasons)
    found = _findings.findings(list(policy.categories), tally.findings,
                               {n: c.severity for n, c in policy.categories.items()},
                               policy.fixes)
    return _result(evaluation, reasons, validation=validation, categories=categories,
                   overall=overall, conditions=conditions, controls=controls,
                   reliability=reliability, findings=found, tally=tally, judge=judge,
                   calibration=calibration)


def _result(evaluation: Evaluation, reasons: list[Reason], **parts: Any) -> Decision:
    """Settle the conditions that hold into a Decision (reason codes as the policy
    publishes them), with the findings that are not about agent rows appended."""
    policy, tally = evaluation.policy, parts.pop("tally", None)
    categories = parts.get("categories", {})
    required = [n for n, c in policy.categories.items() if c.required] or \
        [n for n, c in categories.items() if _included(c)]
    missing = [n for n in required if n in categories and not _included(categories[n])]
    found = parts.pop("findings", []) + _blockers(missing, tally)
    names = policy.reason_codes
    return Decision.of([r.published(names) for r in reasons],
                       [r.published(names) for r in _pass_blockers(evaluation)],
                       required_categories=required, missing_categories=missing,
                       waivers=waiver_block(evaluation, tally), findings=found, **parts)


def _pass_blockers(evaluation: Evaluation) -> list[Reason]:
    """What stands between otherwise passing evidence and a release PASS: facts the
    evaluated party chose (docs/decisions.md). They never hide a FAIL the evidence shows."""
    if evaluation.policy.purpose != "release":
        return []
    out = []
    if evaluation.suite.from_evidence and evaluation.suite_pin is None:
        out.append(Reason(INCOMPLETE, "SUITE_NOT_PINNED", "evaluation:spec.suite_sha256",
                          "the records carry their own cases and assertions and the "
                          "Evaluation pins no suite_sha256, so the evidence chose what was "
                          "tested: a release needs the approved suite's digest"))
    if evaluation.judge_overridden:
        out.append(Reason(INCOMPLETE, "JUDGE_OVERRIDDEN", "evaluation:spec.judge",
                          "the command line chose a judge provider, endpoint or model (or "
                          "none) other than the Evaluation declares: a release is judged "
                          "only by the judge governance named"))
    return out


_BASELINE = {"missing": "BASELINE_MISSING", "untrusted": "BASELINE_UNTRUSTED",
             "incompatible": "BASELINE_INCOMPATIBLE"}


def with_comparison(evaluation: Evaluation, outcome: Decision,
                    block: dict[str, Any]) -> Decision:
    """Bind a comparison into the outcome; when the policy requires it, it gates (through
    the same lattice as every other condition)."""
    policy = evaluation.policy
    block["required"] = policy.comparison_required
    extra = _comparison_reasons(block) if policy.comparison_required else []
    # UNDERPOWERED stands in for a PASS (a stable verdict that could not have seen the
    # drop that matters) and is never added to a FAIL, which it would hide
    weak = _underpowered(block) if policy.comparison_required else []
    if not extra and not weak:
        return replace(outcome, comparison=block)
    blocker = {"id": "comparison:baseline", "severity": "blocker",
               "message": (extra or weak)[0].message, "automation": "human_review_required"}
    names = policy.reason_codes
    return outcome.with_reasons([r.published(names) for r in extra], comparison=block,
                                findings=outcome.findings + [blocker],
                                blockers=outcome.blockers + tuple(r.published(names)
                                                                  for r in weak))


def _comparison_reasons(block: dict[str, Any]) -> list[Reason]:
    """What a required comparison holds against the run: no usable baseline, or a regression."""
    path = "policy:spec.gate.comparison.required"
    if block["status"] != "comparable":
        return [Reason(INCOMPLETE, _BASELINE[block["status"]], path,
                       f"the required baseline is {block['status']}: "
                       + "; ".join(block["reasons"]))]
    untested = [n for n, c in block["categories"].items() if c["status"] == "untested"]
    out = [Reason(INCOMPLETE, "COMPARISON_UNTESTED", "policy:spec.gate.comparison.test",
                  "the paired test could not be computed for " + ", ".join(untested))
           ] if untested else []
    if not block["regressed"]:
        return out
    worse = [n for n, c in block["categories"].items()
             if c["status"] in ("now failing", "regressed")]
    return [Reason(FAIL, "REGRESSED", path, "regressed against the baseline" +
                   (f": {', '.join(worse)}" if worse else " (it was PASS)")), *out]


def _underpowered(block: dict[str, Any]) -> list[Reason]:
    """Under ``min_power``: each stable category whose comparison could not see a drop of
    ``effect`` with that power (or whose power could not be computed). A stable verdict
    says something only when a regression could have been seen."""
    weak = []
    for name, entry in block["categories"].items():
        seen = entry.get("power")
        if entry["status"] != "stable" or not seen or seen["min_power"] is None:
            continue
        if seen["power"] is None:
            weak.append(f"'{name}': its power could not be computed ({seen['why']})")
        elif seen["power"] < seen["min_power"]:
            more = seen.get("more_cases")
            weak.append(f"'{name}' sees a drop of {seen['effect']} with power "
                        f"{seen['power']:.3f}, below min_power {seen['min_power']}" +
                        (f" (about {more} more cases would reach it)" if more else
                         " (no number of cases would reach it under this test)"
                         if seen.get("cases_needed") is None else ""))
    return [Reason(INCOMPLETE, "UNDERPOWERED", "policy:spec.gate.comparison.min_power",
                   "the comparison could not have seen the regression that matters: " +
                   "; ".join(weak))] if weak else []


def waiver_block(evaluation: Evaluation, tally: Tally | None) -> dict[str, Any] | None:
    """Every waiver of the policy, active or expired, with the FAIL rows it took out."""
    waivers = evaluation.policy.waivers
    if not waivers:
        return None
    entries = []
    for w in waivers:
        active = evaluation.as_of <= w["expires"]
        entries.append({**w, "status": "active" if active else "expired",
                        "rows_waived": tally.waived[w["id"]] if tally is not None else 0,
                        "note": "" if active else no_longer_applies(w["expires"])})
    block: dict[str, Any] = {"as_of": evaluation.as_of, "entries": entries}
    if evaluation.as_of_requested and evaluation.as_of_requested != evaluation.as_of:
        block["requested_as_of"] = evaluation.as_of_requested
        block["note"] = (f"--as-of {evaluation.as_of_requested} was asked for; a release is "
                         "judged on the real date, never before the signed times it rests "
                         f"on (as_of.set_by), so waivers were judged as of {evaluation.as_of}")
    return block


def _blockers(missing: list[str], tally: Tally | None) -> list[dict[str, Any]]:
    """Findings that are not about agent rows: missing coverage, broken controls."""
    blockers = [{"id": f"coverage:{name}", "category": name, "severity": "blocker",
                 "message": f"required category '{name}' has no rows",
                 "automation": "human_review_required"} for name in missing]
    for row in tally.control_rows if tally is not None else []:
        if row["status"] != "PASS":
            blockers.append({"id": f"control:{row['unit']}", "category": row["category"],
                             "severity": "blocker",
                             "message": f"control gave {row['inspection_status']}, expected "
                                        "it to catch its planted fault: the evaluator is broken",
                             "automation": "human_review_required"})
    return blockers


def _validation(evaluation: Evaluation, tally: Tally,
                reasons: list[Reason]) -> dict[str, Any] | None:
    """Row classes, in all and by the format's group (``by_<group>``); in strict mode any
    non-LABELED row fails validation."""
    units = formats.of_units(evaluation)
    if not evaluation.policy.validate or units.validate is None:
        return None
    policy, source = evaluation.policy, evaluation.inputs[evaluation.unit_input]
    classes = {k: sum(n for (_, klass), n in tally.validation.items() if klass == k)
               for k in ("LABELED", "UNLABELED", "INVALID")}
    by_group: dict[str, dict[str, int]] = {}
    for (group, klass), n in sorted(tally.validation.items()):
        by_group.setdefault(group or "(none)", {})[klass] = n
    bad = classes["INVALID"] + classes["UNLABELED"] + tally.capture_errors
    failed = policy.strict and bad > 0
    if failed:
        reasons.append(Reason(INCOMPLETE, "VALIDATION_FAILED", source.spec_path,
                              f"{classes['INVALID']} INVALID and {classes['UNLABELED']} "
                              f"UNLABELED rows, {tally.capture_errors} failed captures; strict "
                              "validation allows none (see validation.json)"))
    return {"strict": policy.strict, "failed": failed, "rows": classes,
            "capture_errors": tally.capture_errors, f"by_{units.group}": by_group}


def _controls(evaluation: Evaluation, tally: Tally,
              reasons: list[Reason]) -> dict[str, Any] | None:
    if evaluation.policy.controls is None:
        return None
    counts = tally.controls
    broken = [r for r in tally.control_rows if r["status"] != "PASS"]
    if broken:
        listed = ", ".join(f"{r['unit']} ({r['inspection_status']})" for r in broken[:10])
        reasons.append(Reason(INCOMPLETE, "CONTROL_FAILED", "policy:spec.controls",
                              f"{len(broken)} control(s) did not catch their planted fault, "
                              f"so the evaluator is broken: {listed}"))
    return {"total": counts.attempted, "passed": counts.passed,
            "failed": counts.attempted - counts.passed, "rows": tally.control_rows[:MAX_ROWS]}


_GATES = {"min_pass_hat_k": ("pass_hat_k", "BELOW_PASS_HAT_K", lambda v, g: v >= g),
          "min_consistency": ("consistency", "BELOW_CONSISTENCY", lambda v, g: v >= g),
          "max_flaky_cases": ("flaky", "TOO_MANY_FLAKY", lambda v, g: v <= g)}


def _reliability_gates(evaluation: Evaluation, reliability: dict[str, Any],
                       reasons: list[Reason]) -> None:
    for key, gate in evaluation.policy.reliability_gates.items():
        stat, code, holds = _GATES[key]
        path = f"policy:spec.gate.{key}"
        for name, block in reliability.items():
            value = None if block is None else (
                block["flaky_count"] if stat == "flaky" else block[stat])
            if value is None:
                reasons.append(Reason(INCOMPLETE, "GATE_NULL", path,
                                      f"'{name}' has no repeated cases to measure {stat}", name))
            elif not holds(value, gate):
                reasons.append(Reason(FAIL, code, path,
                                      f"'{name}' {stat} {value:.6g} misses {key} {gate}", name))


def _coverage(evaluation: Evaluation, tally: Tally, validated: bool) -> list[Reason]:
    reasons = []
    source = evaluation.inputs[evaluation.unit_input].spec_path
    for code, count in sorted(tally.record_problems.items()):
        if validated and code not in ("UNKNOWN_CASE", "MISSING_CASE_ID", "RESERVED_FIELD",
                                      "EXTRA_RUN"):
            continue  # reported by validation, which the policy's strictness governs
        reasons.append(Reason(INCOMPLETE, code, source,
                              f"{count} record(s) of input '{evaluation.unit_input}' could "
                              "not be used (see coverage.record_problems)"))
    short = [(case, tally.case_units[case], want)
             for case, want in evaluation.suite.trials.items() if tally.case_units[case] < want]
    if short:
        listed = ", ".join(f"{c} ({got}/{want})" for c, got, want in short[:10])
        reasons.append(Reason(INCOMPLETE, "CASE_MISSING", "suite:spec.cases",
                              f"{len(short)} suite case(s) have fewer runs than trials: {listed}"))
    return reasons
