"""The decision lattice (DESIGN §7, docs/decisions.md): one table of reason sets -> decision,
for the plain decision and for a baseline comparison bound in afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.decide.aggregate import Counts, Tally
from engine.decide.decision import decide, with_comparison
from engine.decide.lattice import Decision, Reason
from engine.spec.evaluation import Evaluation, Input, Suite
from engine.spec.model import Category, Policy

# One reason per decision it can force, with the code the docs list for it.
R = {"SELF_TEST": Reason("SELF_TEST", "MOCK_JUDGE", "evaluation:spec.judge.provider", "m"),
     "TRIAGE": Reason("TRIAGE", "PURPOSE_TRIAGE", "policy:spec.gate.purpose", "t"),
     "INCOMPLETE": Reason("INCOMPLETE", "GATE_NULL", "policy:spec.conditions[0]", "n"),
     "FAIL": Reason("FAIL", "BELOW_THRESHOLD", "policy:spec.categories.a.threshold", "f")}
BLOCKER = Reason("INCOMPLETE", "SUITE_NOT_PINNED", "evaluation:spec.suite_sha256", "pin")
REGRESSED = Reason("FAIL", "REGRESSED", "policy:spec.gate.comparison.required", "worse")
MISSING = Reason("INCOMPLETE", "BASELINE_MISSING", "policy:spec.gate.comparison.required", "?")

# (conditions held in the order found, release blockers, decision, codes shown in order)
PLAIN = [
    ([], [], "PASS", []),
    (["FAIL"], [], "FAIL", ["BELOW_THRESHOLD"]),
    (["FAIL", "INCOMPLETE"], [], "INCOMPLETE", ["GATE_NULL", "BELOW_THRESHOLD"]),
    (["INCOMPLETE", "TRIAGE"], [], "TRIAGE", ["PURPOSE_TRIAGE", "GATE_NULL"]),
    (["FAIL", "TRIAGE", "SELF_TEST"], [], "SELF_TEST",
     ["MOCK_JUDGE", "PURPOSE_TRIAGE", "BELOW_THRESHOLD"]),
    # a blocker stands in for a PASS; it never hides a FAIL; beside another INCOMPLETE
    # reason it is listed (for the auditor) and changes nothing
    ([], [BLOCKER], "INCOMPLETE", ["SUITE_NOT_PINNED"]),
    (["FAIL"], [BLOCKER], "FAIL", ["BELOW_THRESHOLD"]),
    (["INCOMPLETE"], [BLOCKER], "INCOMPLETE", ["GATE_NULL", "SUITE_NOT_PINNED"]),
    (["TRIAGE"], [BLOCKER], "TRIAGE", ["PURPOSE_TRIAGE"]),
]

# (held before, blockers, comparison reasons, decision after, codes after, metrics decision)
COMPARED = [
    ([], [], [REGRESSED], "FAIL", ["REGRESSED"], "PASS"),
    ([], [], [MISSING], "INCOMPLETE", ["BASELINE_MISSING"], "PASS"),
    (["FAIL"], [], [MISSING], "INCOMPLETE", ["BASELINE_MISSING", "BELOW_THRESHOLD"], "FAIL"),
    (["INCOMPLETE"], [], [REGRESSED], "INCOMPLETE", ["GATE_NULL", "REGRESSED"], "INCOMPLETE"),
    (["SELF_TEST"], [], [REGRESSED], "SELF_TEST", ["MOCK_JUDGE", "REGRESSED"], "SELF_TEST"),
    # the blocker gives way to the FAIL the comparison shows, as it would to any other FAIL
    ([], [BLOCKER], [REGRESSED], "FAIL", ["REGRESSED"], "INCOMPLETE"),
    ([], [BLOCKER], [MISSING], "INCOMPLETE", ["BASELINE_MISSING", "SUITE_NOT_PINNED"],
     "INCOMPLETE"),
]

EXIT = {"PASS": 0, "FAIL": 1, "INCOMPLETE": 3, "TRIAGE": 4, "SELF_TEST": 4}  # DESIGN §11


@pytest.mark.parametrize(("held", "blockers", "want", "codes"), PLAIN)
def test_plain_decision(held: list[str], blockers: list[Reason], want: str,
                        codes: list[str]) -> None:
    outcome = Decision.of([R[d] for d in held], blockers)
    assert outcome.decision == outcome.metrics_decision == want
    assert [r.code for r in outcome.reasons] == codes
    assert outcome.overall_pass is (want == "PASS")
    assert outcome.exit_code == EXIT[want]


@pytest.mark.parametrize(("held", "blockers", "extra", "want", "codes", "metrics"), COMPARED)
def test_comparison_combines_through_the_same_lattice(
        held: list[str], blockers: list[Reason], extra: list[Reason], want: str,
        codes: list[str], metrics: str) -> None:
    outcome = Decision.of([R[d] for d in held], blockers).with_reasons(extra)
    assert outcome.decision == want and outcome.metrics_decision == metrics
    assert [r.code for r in outcome.reasons] == codes
    # the same conditions found at once give the same decision and reasons
    at_once = Decision.of([R[d] for d in held] + extra, blockers)
    assert (at_once.decision, at_once.reasons) == (outcome.decision, outcome.reasons)


def test_equally_decisive_reasons_keep_the_order_found() -> None:
    first = Reason("INCOMPLETE", "CASE_MISSING", "suite:spec.cases", "c")
    outcome = Decision.of([R["FAIL"], first, R["INCOMPLETE"]])
    assert [r.code for r in outcome.reasons] == ["CASE_MISSING", "GATE_NULL", "BELOW_THRESHOLD"]


def test_a_decision_is_frozen() -> None:
    outcome = Decision.of([R["FAIL"]])
    with pytest.raises(AttributeError):
        outcome.held = ()  # type: ignore[misc]


def _evaluation(tmp_path: Path, **policy: Any) -> Evaluation:
    """A release whose records carry their own cases (so, unpinned, it has a blocker)."""
    category = Category("a", 1, 0.9, None, "point", 1, True, [], "policy:spec.categories.a")
    compiled = Policy("p", "1", "1", "release", 1.96, {"a": category}, {}, None, None, [],
                      "0" * 64, validate=False, **policy)
    suite = Suite("p-cases", "derived", {}, {}, "", derived=True, from_evidence=True)
    file = tmp_path / "evaluation.yaml"
    return Evaluation("e", "1", file, compiled, suite,
                      {"runs": Input("runs", file, "jsonl", "evaluation:spec.inputs.runs")},
                      "runs", None, None, "", as_of="2030-01-01")


def _tally(passed: int, failed: int) -> Tally:
    tally = Tally()
    tally.categories["a"] = Counts(passed=passed, failed=failed)
    tally.cases.add("a", "c1", passed + failed, passed)
    return tally


REGRESSION = {"status": "comparable", "regressed": True, "reasons": [],
              "categories": {"a": {"status": "regressed"}}}


def test_decide_then_a_required_regression_fails_an_unpinned_release(tmp_path: Path) -> None:
    evaluation = _evaluation(tmp_path, comparison_required=True,
                             reason_codes={"REGRESSED": "GOT_WORSE"})
    outcome = decide(evaluation, _tally(10, 0))
    assert outcome.decision == "INCOMPLETE"
    assert [r.code for r in outcome.reasons] == ["SUITE_NOT_PINNED"]
    compared = with_comparison(evaluation, outcome, dict(REGRESSION))
    assert (compared.decision, compared.metrics_decision) == ("FAIL", "INCOMPLETE")
    assert [r.code for r in compared.reasons] == ["GOT_WORSE"]  # published under its name
    assert compared.findings[-1]["id"] == "comparison:baseline"
    assert compared.comparison is not None and compared.comparison["required"] is True
    assert outcome.comparison is None  # the outcome it started from is unchanged


def test_an_unrequired_comparison_is_bound_but_never_gates(tmp_path: Path) -> None:
    evaluation = _evaluation(tmp_path)
    outcome = decide(evaluation, _tally(5, 5))
    compared = with_comparison(evaluation, outcome, dict(REGRESSION))
    assert compared.decision == outcome.decision == "FAIL"
    assert compared.reasons == outcome.reasons and compared.findings == outcome.findings
    assert compared.comparison is not None and compared.comparison["required"] is False


def _undocumented(path: Path, classes: set[str]) -> list[str]:
    """Fields of the named dataclasses that are not followed by their docstring."""
    import ast
    missing = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef) and node.name in classes:
            classes.discard(node.name)
            body = node.body
            for i, item in enumerate(body):
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    after = body[i + 1] if i + 1 < len(body) else None
                    if not (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                            and isinstance(after.value.value, str)):
                        missing.append(f"{node.name}.{item.target.id}")
    return missing + [f"{name} (not found)" for name in classes]


@pytest.mark.parametrize(("module", "classes"), [
    ("engine/decide/lattice.py", {"Reason", "Decision"}),
    ("engine/decide/aggregate.py", {"Counts", "Tally"}),
    ("engine/spec/model.py", {"Inspection", "Category", "Condition", "Policy"}),
    ("engine/spec/evaluation.py", {"Suite", "Input", "Evaluation"}),
    ("engine/evidence/model.py", {"Named", "EvaluationId", "PolicyId", "Coverage",
                                  "Statistics", "Scorecard"}),
])
def test_every_field_has_a_docstring(module: str, classes: set[str]) -> None:
    root = Path(__file__).resolve().parent.parent
    assert _undocumented(root / module, set(classes)) == []


def test_the_scorecard_model_names_what_the_schema_names() -> None:
    import dataclasses
    import json

    from engine.evidence.model import Scorecard
    root = Path(__file__).resolve().parent.parent
    schema = json.loads((root / "engine/schemas/scorecard.schema.json").read_text())
    names = {f.name for f in dataclasses.fields(Scorecard)} | {"findings_count",
                                                                 "findings_sha256"}
    assert names == set(schema["properties"])
