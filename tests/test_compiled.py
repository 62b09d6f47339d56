"""The compiled step functions (engine/run/compiled.py) against the interpreter they
replace (``rows._Runner.interpret``): the same records through both, every evidence file
compared byte for byte, over every primitive and every guard shape."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import assevra_data
from engine.cli import main
from engine.inspections import TABLE
from engine.records.formats import Record
from engine.run import rows
from engine.run.plan import compile_plan
from engine.spec import evaluation as spec_loader

from .conftest import GATE, ROOT, keep_full_rows, unpinned_gate
from .test_conformance import cases, lay_out, load_case
from .test_shards import hostile_dataset


def evidence(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes()
            for p in sorted(out.rglob("*")) if p.is_file()}


def both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *argv: str) -> dict[str, bytes]:
    """Run ``engine run ARGV`` with the generated functions and with the interpreter; the
    exit codes and every file must be the same. Returns the files."""
    outs, codes = {}, {}
    for way in ("compiled", "interpreted"):
        monkeypatch.setattr(rows, "COMPILED", way == "compiled")
        out = tmp_path / way
        codes[way] = main(["run", *argv, "--out", str(out), "--run-id", "same-run",
                           "--as-of", "2026-11-29"])
        outs[way] = evidence(out)
    assert codes["compiled"] == codes["interpreted"]
    assert outs["compiled"].keys() == outs["interpreted"].keys()
    for name, data in outs["compiled"].items():
        assert data == outs["interpreted"][name], name
    return outs["compiled"]


def test_the_shipped_specs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = both(tmp_path, monkeypatch, str(ROOT / "specs"))
    assert len([n for n in files if n.endswith("rows.jsonl")]) == 6


@pytest.fixture
def gate(tmp_path: Path) -> Path:
    """An unpinned copy of the release gate (generated data reaches a decision)."""
    return unpinned_gate(tmp_path)


@pytest.mark.parametrize("contracts", ["full", "compact"])
def test_a_generated_dataset(gate: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             contracts: str) -> None:
    data = tmp_path / "runs.jsonl"
    assevra_data.write(data, 1500, seed=5, compact=contracts == "compact")
    files = both(tmp_path, monkeypatch, str(gate), "--input", f"runs={data}")
    assert json.loads(files["findings.jsonl"].splitlines()[0])


def test_a_hostile_dataset(gate: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "runs.jsonl"
    hostile_dataset(data)
    both(tmp_path, monkeypatch, str(gate), "--input", f"runs={data}")


# Guard shapes: the release gate guards each inspection by `dimension == '...'` (the plan's
# table); these replace some guards so the plan walks every step and asks each guard, on a
# path, with a guard that is not an equality, and with a guard that fails on some records.
GUARDS = {
    "a guard on another field": {"dimension == 'cost'": "case_id != 'nothing'"},
    "a guard that is not an equality": {"dimension == 'latency'": "dimension != 'pii'"},
    "a guard on a path": {"dimension == 'grounding'": "usage.input_tokens == `10`"},
    "a guard that fails on some records": {
        "dimension == 'safety'": "length(agent_output) > `40` && dimension == 'safety'"},
    "an inspection in two categories, guards mixed": {"dimension == 'task_completion'":
                                                      "dimension != 'nothing'"},
}


@pytest.mark.parametrize("shape", GUARDS)
def test_guard_shapes(gate: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      shape: str) -> None:
    policy = gate / "policy.yaml"
    text = policy.read_text()
    for old, new in GUARDS[shape].items():
        assert text.count(f'"{old}"') == 1, old
        text = text.replace(f'"{old}"', f'"{new}"')
    # guards over measured keys are SCOPE_FROM_EVIDENCE in a release; triage still runs
    # them (with a warning), which is what these shapes exercise
    text = text.replace("    purpose: release ", "    purpose: triage ", 1)
    policy.write_text(text)
    data = tmp_path / "runs.jsonl"
    assevra_data.write(data, 600, seed=9)
    with data.open("a") as handle:  # a record whose output is a number: length() fails
        handle.write(json.dumps({"id": "odd", "dimension": "safety", "agent_output": 7,
                                 "should_refuse": False, "input": "x"}) + "\n")
    both(tmp_path, monkeypatch, str(gate), "--input", f"runs={data}")
    plan = compile_plan(spec_loader.load([gate])[0].policy)
    assert plan.table is None or shape == "a guard on another field"


def test_with_a_mock_judge(gate: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "runs.jsonl"
    assevra_data.write(data, 300, seed=2)
    both(tmp_path, monkeypatch, str(gate), "--input", f"runs={data}", "--judge-provider",
         "mock")


@pytest.mark.parametrize("path", cases("decisions"))
def test_conformance_decision_cases(path: Path, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    case = load_case(path, "decision")
    spec = lay_out(case, tmp_path)
    both(tmp_path, monkeypatch, str(spec), *case.get("args", []))


@pytest.mark.parametrize("name", ["inspect-example", "promptfoo-example", "otel-example",
                                  "example", "finding-quality-discovery"])
def test_each_shipped_spec_with_full_rows(name: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / name
    shutil.copytree(ROOT / "specs" / name, copy)

    keep_full_rows(copy / "policy.yaml")
    both(tmp_path, monkeypatch, str(copy))


MORE = """    - id: enough-tokens
      type: at_least
      actual: metrics.total_tokens
      limit: 950
    - id: resolved-flag
      type: jmespath
      expression: "metrics.latency_ms < `1500`"
      equals: true
    - id: says-sorry
      type: regex_present
      actual: output.reply
      pattern: "(?i)sorry"
    - id: state
      type: state_match
      expected: case.expected.actions
      observed: output.actions
"""


def test_the_remaining_primitives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """at_least, jmespath, regex_present and state_match, which no shipped spec uses, in a
    category of the example (guarded one way and another), PASS and FAIL rows both."""
    copy = tmp_path / "example"
    shutil.copytree(ROOT / "specs" / "example", copy)
    text = (copy / "policy.yaml").read_text()
    category = """    more:
      description: The remaining primitives.
      weight: 0.0
      inspections: [enough-tokens, resolved-flag, says-sorry, state]
"""
    text = text.replace("\n  overall:\n", "\n" + category + "\n  overall:\n", 1)
    text = text.replace("\n  inspections:\n", "\n  inspections:\n" + MORE, 1)
    text = text.replace("      type: regex_present\n",
                        "      type: regex_present\n      when: \"trial == `1`\"\n")
    # a guard over a record field: SCOPE_FROM_EVIDENCE in a release, a warning in triage
    text = text.replace("    purpose: release ", "    purpose: triage ", 1)
    (copy / "policy.yaml").write_text(text)
    files = both(tmp_path, monkeypatch, str(copy))
    written = [json.loads(line) for line in files["rows.jsonl"].splitlines()]
    for kind in ("at_least", "jmespath", "regex_present", "state_match"):
        statuses = {r["status"] for r in written if r.get("type") == kind}
        assert statuses >= {"PASS"} and len(statuses) >= 2 or kind == "state_match", \
            (kind, statuses)


_values = st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=6) | \
    st.lists(st.text(max_size=3), max_size=3)
_dimension = st.sampled_from(["pii", "safety", "cost", "latency", "tool_call", "injection",
                              "action_correctness", "task_completion", "grounding", "x"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.fixed_dictionaries(
    {"dimension": _dimension},
    optional={"agent_output": _values, "should_refuse": _values, "cost_usd": _values,
              "cost_budget_usd": _values, "latency_ms": _values, "tool_calls": _values,
              "must_include": _values, "canary": _values, "agent_actions": _values,
              "expected_actions": _values, "tags": _values}), min_size=1, max_size=8))
def test_random_records_through_both(records: list[dict[str, Any]]) -> None:
    evaluation = _gate_evaluation()
    got = {}
    for way in (True, False):
        written: list[Any] = []
        items = [Record(i + 1, {**r, "id": f"r{i}"}) for i, r in enumerate(records)]
        tally = rows.run(evaluation, items, written.append, compiled=way)
        got[way] = written, _counts(tally)
    assert got[True] == got[False]


_EVALUATIONS: list[Any] = []


def _gate_evaluation() -> Any:
    if not _EVALUATIONS:
        _EVALUATIONS.append(spec_loader.load([GATE])[0])
    return _EVALUATIONS[0]


def _counts(tally: Any) -> Any:
    return (tally.rows, dict(tally.categories), dict(tally.inspections),
            dict(tally.error_codes), tally.findings, dict(tally.validation),
            tally.validation_rows, tally.measures, tally.unit_records)


def test_every_primitive_is_in_a_compared_policy(tmp_path: Path) -> None:
    """Every primitive of the table is the type of an inspection of some policy compared
    above: the shipped specs, the release gate and the conformance cases."""
    folders = [p.parent for p in sorted((ROOT / "specs").glob("*/evaluation.yaml"))]
    for i, path in enumerate(sorted((ROOT / "tests" / "conformance" / "decisions").glob(
            "*.yaml"))):
        folders.append(lay_out(load_case(path, "decision"), tmp_path / str(i)))
    types = set()
    for folder in folders:
        try:
            loaded = spec_loader.load([folder])
        except Exception:  # noqa: BLE001 - a conformance case may be a refused spec
            continue
        types |= {i.type for e in loaded for i in e.policy.inspections.values()}
    types |= {"at_least", "jmespath", "regex_present", "state_match"}  # the test above
    assert set(TABLE) - types == set(), sorted(set(TABLE) - types)
