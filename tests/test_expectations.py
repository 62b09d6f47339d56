"""Expectations come from governance (DESIGN.md §1b): under ``purpose: release`` an
expectation (allowed tools, contracts, expected calls) is a policy literal, the suite's
``case.expected``, or records whose format carries the pinned suite. The attack: a team
gating its own generic JSONL records writes the refund contract into them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jmespath
import pytest

from engine.cli import main
from engine.inspections import CLASSES, TABLE
from engine.spec import reference
from engine.spec.expectations import governed
from tests import refund_gate

ROOT = Path(__file__).resolve().parent.parent

# The suite governance approved: a refund is at most 50.
SUITE = """apiVersion: specgate/v1
kind: Suite
metadata: {name: refund-cases, version: 1.0.0}
spec:
  trials: 1
  cases:
    - id: refund
      input: {message: "refund my order"}
      expected:
        allowed_tools: [issue_refund]
        tool_schemas:
          issue_refund:
            json_schema:
              type: object
              required: [amount]
              properties: {amount: {type: number, maximum: 50}}
"""

POLICY = refund_gate.POLICY + "PARAMS"

# What the gated team writes: its own permissive contract, and a refund of 5,000.
RECORD = {"id": "run-1", "case_id": "refund", "allowed_tools": ["issue_refund"],
          "tool_schemas": {"issue_refund": {"json_schema": {"type": "object"}}},
          "tool_calls": [{"name": "issue_refund", "arguments": {"amount": 5000}}]}


def gate(tmp_path: Path, params: str = "", purpose: str = "release",
         suite: str = SUITE) -> Path:
    """A spec folder over one JSONL record the evaluated party wrote."""
    return refund_gate.folder(tmp_path, POLICY.replace("PURPOSE", purpose)
                              .replace("PARAMS", params), suite, [RECORD])


run = refund_gate.run


@pytest.mark.parametrize("params", [
    "      contracts: tool_schemas\n",
    "      allowed: allowed_tools\n      contracts: tool_schemas\n",
    # selectors that name the suite but can still reach the record
    "      contracts: case.expected.tool_schemas || tool_schemas\n",
    "      contracts: \"tool_schemas || case.expected.tool_schemas\"\n",
    "      contracts: \"[case.expected.tool_schemas, tool_schemas] | [1]\"\n",
    "      contracts: \"(case.expected | @.tool_schemas) && tool_schemas\"\n",
    "      contracts: \"merge(case.expected.tool_schemas, tool_schemas)\"\n",
    "      contracts: \"case.tool_schemas\"\n",
])
def test_a_release_reading_the_contract_from_its_own_records_is_a_spec_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], params: str) -> None:
    # before: the record's {type: object} contract held the 5,000 refund: PASS
    folder = gate(tmp_path, params)
    assert main(["validate", str(folder)]) == 2
    err = capsys.readouterr().err
    line = next(n for n, text in enumerate(params.splitlines()) if "contracts" in text)
    # the policy's 16 lines before PARAMS, then the parameter's own line; the value starts
    # after "      contracts: " (column 18)
    assert f"policy.yaml:{17 + line}:18: EXPECTATION_FROM_EVIDENCE: " \
           "spec.inspections[0].contracts:" in err, err
    code, err, card = run(folder, capsys)
    assert code == 2 and "EXPECTATION_FROM_EVIDENCE" in err and card == {}


def test_the_default_contract_is_the_suites_so_the_refund_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # before: tool_call's defaults read allowed_tools and tool_schemas from the record: PASS
    folder = gate(tmp_path)
    assert main(["validate", str(folder)]) == 0
    assert "EXPECTATION_FROM_EVIDENCE" not in capsys.readouterr().err
    code, _, card = run(folder, capsys)
    assert (code, card["decision"]) == (1, "FAIL")
    rows = [json.loads(r) for r in (tmp_path / "out" / "rows.jsonl").read_text().splitlines()]
    (row,) = [r for r in rows if r.get("inspection") == "refund-contract"]
    assert row["status"] == "FAIL" and "maximum" in row["message"], row


def test_a_suite_without_the_expectation_never_passes_on_the_records_word(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the suite says nothing about tools: nothing to verify, never the record's contract
    bare = SUITE.split("      expected:")[0] + "      expected: {answer: refunded}\n"
    code, _, card = run(gate(tmp_path, suite=bare), capsys)
    assert card["decision"] == "INCOMPLETE" and code == 3, card["reasons"]


def test_triage_warns_and_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = gate(tmp_path, "      contracts: tool_schemas\n", purpose="triage")
    assert main(["validate", str(folder)]) == 0
    assert "warning: " in (out := capsys.readouterr().out)
    assert "policy.yaml:17:18: EXPECTATION_FROM_EVIDENCE" in out
    code, err, card = run(folder, capsys)
    assert "EXPECTATION_FROM_EVIDENCE" in err
    assert (code, card["decision"]) == (4, "TRIAGE")


@pytest.mark.parametrize("params", [
    "      contracts: case.expected.tool_schemas\n",
    "      allowed: \"`[\\\"issue_refund\\\"]`\"\n      contracts: case.expected.tool_schemas\n",
    "      contracts: \"case.expected.tool_schemas || `{}`\"\n",
])
def test_the_suite_or_a_literal_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            params: str) -> None:
    folder = gate(tmp_path, params)
    assert main(["validate", str(folder)]) == 0, capsys.readouterr().err
    code, _, card = run(folder, capsys)
    assert (code, card["decision"]) == (1, "FAIL")


def test_records_that_are_the_pinned_suite_may_hold_expectations(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # assevra-jsonl: the rows carry the cases, and suite_sha256 pins them (or the release is
    # INCOMPLETE with SUITE_NOT_PINNED), so an explicit record field is governance's
    copy = tmp_path / "agent-release-gate"
    shutil.copytree(ROOT / "specs" / "agent-release-gate", copy)
    policy = copy / "policy.yaml"
    text = policy.read_text()
    assert "      when: \"dimension == 'tool_call'\"\n" in text
    policy.write_text(text.replace("      when: \"dimension == 'tool_call'\"\n",
                                   "      when: \"dimension == 'tool_call'\"\n"
                                   "      contracts: tool_schemas\n      allowed: allowed_tools\n",
                                   1))
    assert main(["validate", str(copy)]) == 0
    assert "EXPECTATION_FROM_EVIDENCE" not in capsys.readouterr().err


@pytest.mark.parametrize(("source", "want"), [
    ("case.expected.tool_schemas", True),
    ("case.expected", True),
    ("`[\"a\"]`", True),
    ("'text'", True),
    ("case.expected.calls[0].name", True),
    ("case.expected.calls[*].name", True),
    ("case.expected.calls[?name == 'x'].arguments", True),
    ("case.expected.a || case.expected.b", True),
    ("case.expected | tool_schemas", True),  # the pipe reads the suite's value, not the record
    ("sort_by(case.expected.calls, &name)", True),
    ("case.expected.calls[?name == @.x]", True),
    ("tool_schemas", False),
    ("case", False),
    ("case.input", False),
    ("case.tool_schemas", False),
    ("@", False),
    ("@.case.expected", True),
    ("case.expected.a || allowed_tools", False),
    ("allowed_tools || case.expected.a", False),
    ("[case.expected.a, allowed_tools]", False),
    ("{a: case.expected.a, b: allowed_tools}", False),
    ("length(allowed_tools)", False),
    ("max_by(case.expected.calls, &name) || x", False),
    ("case.expected.calls[?name == x]", True),  # x is a field of the suite's own elements
    ("tool_calls[?name == 'x']", False),
    ("case.expected.a && allowed_tools", False),
    ("!allowed_tools", False),
    ("not valid [", False),
])
def test_a_selector_is_governed_only_when_every_path_is_under_case_expected(
        source: str, want: bool) -> None:
    assert governed(source) is want


def test_every_parameter_of_every_primitive_is_classed() -> None:
    # a new parameter without x-class fails here: the rule is data, never a list in code
    for name, primitive in TABLE.items():
        for key, prop in primitive.schema["properties"].items():
            assert prop.get("x-class") in CLASSES, f"{name}.{key} is not classed"


def test_the_reference_renders_each_parameters_class() -> None:
    text = reference.render()
    for name, primitive in TABLE.items():
        section = text.split(f"### `{name}`\n", 1)[1].split("\n### ", 1)[0]
        for key, prop in primitive.schema["properties"].items():
            row = next(line for line in section.splitlines() if line.startswith(f"| `{key}` |"))
            assert f"| {prop['x-class']} |" in row or \
                f"; the rest {prop['x-class']} |" in row, (name, row)
    assert "| `allowed` | string | expectation |" in text
    assert "| `calls` | string | observation |" in text


def test_engine_diff_runs_each_policy_as_engine_run_would(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # before: diff compiled each policy on its own, so tool_call's defaults read the
    # record's contract there: PASS -> PASS where engine run says FAIL
    folder = gate(tmp_path)
    policy = str(folder / "policy.yaml")
    assert main(["diff", policy, policy, "--evaluation", str(folder), "--json"]) == 0
    decision = json.loads(capsys.readouterr().out)["decision"]
    assert (decision["old"], decision["new"]) == ("FAIL", "FAIL")


def test_engine_inits_scaffold_shows_where_a_refund_limit_goes(tmp_path: Path) -> None:
    # the newcomer's question: where does "a refund is at most 50" go? The scaffold's
    # suite shows it, and its example, as written, fails a refund of 5,000
    import yaml

    from engine.inspections import Context

    assert main(["init", str(tmp_path / "mine")]) == 0
    text = (tmp_path / "mine" / "suite.yaml").read_text()
    assert '"a refund is at most 50"' in text
    block = [line.split("#", 1)[1][1:] for line in text.splitlines()
             if line.strip().startswith("#   ")]
    case = yaml.safe_load("\n".join(block))
    unit = {"case": case, "tool_calls": [{"name": "issue_refund",
                                          "arguments": {"amount": 5000}}]}
    params = {key: jmespath.compile(f"case.expected.{prop['default']}")
              if prop.get("x-class") == "expectation" else jmespath.compile(prop["default"])
              for key, prop in TABLE["tool_call"].schema["properties"].items()}
    outcome = TABLE["tool_call"].run(unit, params, Context(wilson_z=1.96))
    assert outcome.status == "FAIL" and "maximum" in outcome.message
    assert "EXPECTATION_FROM_EVIDENCE" in (tmp_path / "mine" / "policy.yaml").read_text()
