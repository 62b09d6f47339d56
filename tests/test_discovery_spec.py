"""The discovery spec package is checked when it loads: gates against the check table,
every YAML file against its schema, kinds against kinds.yaml; each problem located."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.protocols.discovery import check_submission, load_corpus, load_protocol

from . import discovery_kit as kit
from .conftest import ROOT

SPEC = ROOT / "specs" / "finding-quality-discovery"


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    folder = tmp_path / "finding-quality-discovery"
    shutil.copytree(SPEC, folder)
    return folder


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), "utf-8")


def place(path: Path, needle: str, nth: int = 0) -> str:
    """``name:line:col`` of a text in a file, found by reading the file here."""
    hits = [(n + 1, line.index(needle) + 1) for n, line in
            enumerate(path.read_text("utf-8").splitlines()) if needle in line]
    line, col = hits[nth]
    return f"{path.name}:{line}:{col}"


def validate(spec: Path, capsys: Any) -> tuple[int, str]:
    code = main(["validate", str(spec)])
    printed = capsys.readouterr()
    return code, printed.out + printed.err


def run(spec: Path, capsys: Any) -> tuple[int, str]:
    code = main(["run", str(spec), "--out", str(spec.parent / "out")])
    printed = capsys.readouterr()
    return code, printed.out + printed.err


def test_a_misspelt_check_is_located_with_a_suggestion(spec: Path, capsys: Any) -> None:
    gates = spec / "gates.yaml"
    edit(gates, "check: finding_count,", "check: finding_cont,")
    want = f"{place(gates, 'finding_cont')}: UNKNOWN_CHECK: gates[2].check: 'finding_cont' " \
           "is not a known gate check (did you mean 'finding_count'?)"
    for command in (validate, run):
        code, out = command(spec, capsys)
        assert code == 2 and want in out, out
        assert "INTERNAL_ERROR" not in out and "Traceback" not in out


def test_a_parameter_a_check_reads_is_required_in_protocol_yaml(spec: Path,
                                                               capsys: Any) -> None:
    protocol = spec / "protocol.yaml"
    edit(protocol, "  max_filters: 3\n", "")
    code, out = validate(spec, capsys)
    want = f"{place(protocol, 'gates:')}: MISSING_KEY: gates: 'max_filters' is required by " \
           "check 'filter_count' (gate G4.3 in gates.yaml)"
    assert code == 2 and want in out, out


def test_a_missing_message_limit_is_located_in_gates_yaml(spec: Path, capsys: Any) -> None:
    gates = spec / "gates.yaml"
    edit(gates, "message_limit: 500              # code points kept of a message in reports\n",
         "")
    code, out = validate(spec, capsys)
    first = next(n + 1 for n, line in enumerate(gates.read_text().splitlines())
                 if line and not line.startswith("#"))
    assert code == 2 and f"gates.yaml:{first}:1: MISSING_KEY: $: 'message_limit' is " \
                         "required here" in out, out
    assert "policy.yaml" not in out and "KeyError" not in out


def test_a_gate_placed_before_what_it_needs_is_located(spec: Path, capsys: Any) -> None:
    gates = spec / "gates.yaml"
    text = gates.read_text("utf-8")
    g8 = re.search(r"  - \{id: G8,.*?\}\n", text, re.S)
    assert g8 is not None
    text = text.replace(g8.group(0), "")
    gates.write_text(text.replace("  - {id: G6,", g8.group(0) + "  - {id: G6,"), "utf-8")
    code, out = validate(spec, capsys)
    where = place(gates, "statistics,")
    assert code == 2 and out.count("GATE_ORDER") == 1
    assert f"{where}: GATE_ORDER: gates[24].check: gate G8 (check 'statistics') needs " \
           "'labels', which no gate before it establishes for compound_association, " \
           "group_difference, temporal_change (place a gate with check partition before " \
           "it)" in out, out


def test_a_phase_b_gate_listed_early_still_runs_after_phase_a(spec: Path, capsys: Any) -> None:
    gates = spec / "gates.yaml"
    text = gates.read_text("utf-8")
    g93 = re.search(r"  - \{id: G9.3,.*?\}\n", text, re.S)
    assert g93 is not None
    text = text.replace(g93.group(0), "")
    gates.write_text(text.replace("  - {id: G3,", g93.group(0) + "  - {id: G3,"), "utf-8")
    assert validate(spec, capsys)[0] == 0


def test_codes_must_match_the_parts_a_check_reports(spec: Path, capsys: Any) -> None:
    gates = spec / "gates.yaml"
    edit(gates, "codes: {field: FILTER_FIELD, op: FILTER_OP, values: FILTER_VALUES}",
         "codes: {field: FILTER_FIELD, opp: FILTER_OP, values: FILTER_VALUES}")
    edit(gates, "{id: G3, phase: A, check: finding_fields",
         "{id: G3, phase: submission, check: finding_fields")
    code, out = validate(spec, capsys)
    assert code == 2
    where = place(gates, "{field: FILTER_FIELD, opp")
    assert f"{where}: MISSING_KEY: gates[8].codes: 'op' is required" in out
    assert f"{place(gates, 'opp')}: UNKNOWN_KEY: gates[8].codes.opp: check 'filter_rules' " \
           "has no part 'opp' (did you mean 'op'?)" in out
    assert f"{place(gates, 'submission, check: finding_fields')}: GATE_PHASE: " \
           "gates[4].phase: check 'finding_fields' runs on a finding" in out, out


@pytest.mark.parametrize("name, old, new, needle, code", [
    ("protocol.yaml", "operators: [eq, in, gte, lte]", "operators: [eq, in, gte, ne]", "ne]",
     "BAD_VALUE"),
    ("gates.yaml", "{id: G5.2, phase: A,", "{id: G5.2, phase: C,", "C,", "BAD_VALUE"),
    ("statistics.yaml", "tolerance: 1.0e-6", "tolerance: -1", "-1", "OUT_OF_RANGE"),
    ("audit.yaml", "quota_divisor: 2 ", "quota_divisor: 0 ", "0 ", "OUT_OF_RANGE"),
    ("scoring.yaml", "partial: 0.5,", "partial: half,", "half", "BAD_TYPE"),
    ("blind_check.yaml", "batch_documents: 12", "batch_documents: twelve", "twelve",
     "BAD_TYPE"),
    ("statistics.yaml", "p0: G0 & P", "p0: G0 & Q", "G0 & Q", "UNKNOWN_SET"),
    ("protocol.yaml", "compound_association: 2}", "compound_association: 3}", "3}",
     "KIND_CONDITIONS"),
    ("gates.yaml", "kinds: [compound_association], check: comparison_null",
     "kinds: [compound_asociation], check: comparison_null", "compound_asociation",
     "UNKNOWN_KIND"),
    # inside one branch of a oneOf (counts, not same_as): the wrong value, not "give one of"
    ("statistics.yaml", "n0: G0", "n0: 7", "7", "BAD_TYPE"),
])
def test_a_bad_value_in_each_file_is_located(spec: Path, capsys: Any, name: str, old: str,
                                             new: str, needle: str, code: str) -> None:
    path = spec / name
    edit(path, old, new)
    status, out = validate(spec, capsys)
    name_, line, col = place(path, new).split(":")
    where = f"{name_}:{line}:{int(col) + new.index(needle)}"
    assert status == 2 and f"{where}: {code}: " in out, out


def test_a_bad_judge_yaml_stops_engine_review(spec: Path, capsys: Any, tmp_path: Path) -> None:
    path = spec / "judge.yaml"
    edit(path, "timeout_s: 180", "timeout_s: soon")
    code = main(["review", str(spec), "--reviews-dir", str(tmp_path / "r"), "--judge-base-url",
                 "http://127.0.0.1:9/v1", "--judge-model", "m"])
    out = capsys.readouterr().err
    assert code == 2 and f"{place(path, 'soon')}: BAD_TYPE: timeout_s: must be a number" in out


def test_engine_validate_checks_judge_yaml_too(spec: Path, capsys: Any) -> None:
    # found by the issue 13 audit: a bad judge.yaml passed validate, caught only by review
    path = spec / "judge.yaml"
    edit(path, "timeout_s: 180", "timeout_s: 180\nbogus_key: 1")
    code, out = validate(spec, capsys)
    assert code == 2 and "judge.yaml:" in out and "UNKNOWN_KEY" in out and "bogus_key" in out, \
        out


def test_a_task_of_a_kind_the_package_does_not_define(tmp_path: Path) -> None:
    rows = kit.corpus_rows()
    path, sha = kit.write_corpus(tmp_path, rows)
    task = {**kit.task(sha), "kind": "causal_effect"}
    result = check_submission(load_protocol(SPEC), task, load_corpus(path, sha, 32),
                              json.dumps(kit.submission(rows, task["task_id"])).encode())
    assert result["valid"] is False and result["error"]["code"] == "TASK_KIND"
