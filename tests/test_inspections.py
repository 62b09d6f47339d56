"""Inspection primitives, run from data cases through the same compile path as specs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.inspections import TABLE, Context, Outcome
from engine.inspections.agent import COMPACT_TYPES, _contract_problems
from engine.run.rows import inspect
from engine.spec import schema as _schema
from engine.spec import yaml as _yaml
from engine.spec.compile import compile_params
from engine.spec.evaluation import Inspection
from engine.stats import DEFAULT_Z

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "specs" / "agent-release-gate"
CASES = yaml.safe_load((Path(__file__).parent / "data" / "primitives.yaml").read_text())


def build(kind: str, params: dict[str, Any]) -> Inspection:
    primitive = TABLE[kind]
    doc = _yaml.Document("t.yaml", params)
    assert _schema.problems(doc, _schema.validator_for(primitive.schema), params) == []
    problems: list[Any] = []
    compiled = compile_params(doc, (), primitive.schema, params, problems,
                              lambda rel, at: DATA / rel)
    assert problems == []
    return Inspection("t", kind, primitive, compiled, None, "policy:spec.inspections[0]")


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['type']}-{c['want']}")
def test_primitive(case: dict[str, Any]) -> None:
    outcome = inspect(build(case["type"], case["params"]), case["unit"],
                      Context(DEFAULT_Z, case.get("budgets", {})))
    assert outcome.status == case["want"], outcome
    assert outcome.code == case.get("code", "")


def test_every_type_has_cases_for_pass_and_fail() -> None:
    seen = {(c["type"], c["want"]) for c in CASES}
    for kind in TABLE:
        if kind.startswith("discovery_"):  # need task files: tests/test_discovery_run.py
            continue
        if kind == "judge":  # without a judge runtime it can only skip
            assert (kind, "SKIPPED") in seen and (kind, "PASS") not in seen
            continue
        assert (kind, "PASS") in seen and (kind, "FAIL") in seen, kind


def test_a_crashing_primitive_is_an_error_row_not_a_crash() -> None:
    def boom(unit: Any, params: Any, ctx: Any) -> Outcome:
        raise RuntimeError("kaput")

    def nothing(unit: Any, params: Any, ctx: Any) -> None:
        return None

    base = TABLE["equals"]
    for run, code in ((boom, "INSPECTION_FAILED"), (nothing, "NO_OUTCOME")):
        primitive = type(base)(run, base.schema, "test")  # type: ignore[arg-type]
        inspection = Inspection("t", "x", primitive, {}, None, "p")
        outcome = inspect(inspection, {}, Context(DEFAULT_Z))
        assert (outcome.status, outcome.code) == ("ERROR", code)


def test_long_evidence_is_clipped() -> None:
    # primitives hand their evidence over as it is; the row built from it is clipped
    from engine.records.masking import evidence
    outcome = inspect(build("equals", {"actual": "a", "expected": "x"}), {"a": "y" * 5000},
                      Context(DEFAULT_Z))
    assert outcome.status == "FAIL"
    shown = evidence(outcome.observed, None)
    assert len(shown) < 600 and shown.endswith("more characters]")


def test_the_reference_describes_the_compact_contract_the_engine_checks() -> None:
    # docs/reference.md's example contract and call, through the engine's own check
    text = (ROOT / "docs" / "reference.md").read_text()
    part = text.split("**compact contract**", 1)[1].split("## Formula functions", 1)[0]
    contracts = json.loads(part.split("```json\n", 1)[1].split("```", 1)[0])
    call = part.split("with arguments `", 1)[1].split("`", 1)[0]
    said = [p.split("`")[0] for p in part.split("fails with three problems: `", 1)[1]
            .replace("` and `", "`, `").split(", `")]
    assert [p.removeprefix("issue_refund: ") for p in _contract_problems(
        "issue_refund", json.loads(call), contracts["issue_refund"])] == said
    named = part.split("`types`: argument name to one of ", 1)[1].split(" (", 1)[0]
    assert named == ", ".join(f"`{kind}`" for kind in COMPACT_TYPES)
