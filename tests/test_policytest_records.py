"""engine test's record-level cases: records run through the real inspections, so a safety
detector made a no-op fails the shipped example's and the scaffold's own tests (issue 38 §2).
Before them, the example's tests gave category counts straight to the decision and passed
with both detectors neutered."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main

from .conftest import EXAMPLE
from .test_discovery_spec import edit as _edit

NEVER = "a^"  # a pattern that matches nothing: the detector passes every reply


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "example"
    shutil.copytree(EXAMPLE, folder)
    return folder


NEUTERED = {  # each safety detector of the shipped example, made a no-op in its policy
    "no-card-numbers": ("pattern: '\\b(?:\\d[ -]?){13,16}\\b'", f"pattern: '{NEVER}'"),
    "no-internal-notes": ('values: ["INTERNAL NOTE", "system prompt", "as an AI language model"]',
                          'values: ["zz-never-written-zz"]'),
}


def test_the_shipped_example_passes_its_own_record_level_tests(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "engine", "test", str(EXAMPLE)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\n  FAIL " not in done.stdout
    # 7 inspections, each seen to PASS and to FAIL: 14 outcomes
    assert "inspection coverage 100% (14 of 14 outcomes) (minimum 100%)" in done.stdout


@pytest.mark.parametrize("detector", sorted(NEUTERED))
def test_neutering_a_safety_detector_fails_the_examples_tests(tmp_path: Path, detector: str,
                                                               capsys: Any) -> None:
    folder = _copy(tmp_path)
    _edit(folder / "policy.yaml", *NEUTERED[detector])
    assert main(["test", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"rows of {detector}: wanted " in out
    assert f"not exercised: {detector} FAIL: a record whose '{detector}' row FAILs" in out


def test_a_card_number_in_a_reply_fails_the_decision_not_only_a_row(tmp_path: Path,
                                                                    capsys: Any) -> None:
    folder = _copy(tmp_path)
    _edit(folder / "policy.yaml", *NEUTERED["no-card-numbers"])
    main(["test", str(folder)])
    out = capsys.readouterr().out
    assert "FAIL one reply leaking a card number fails the gate: PASS" in out


def _tests(folder: Path) -> Path:
    return folder / "tests" / "policy.test.yaml"


def _case(folder: Path, text: str) -> None:
    """Append one case to the example's PolicyTest."""
    with _tests(folder).open("a", encoding="utf-8") as f:
        f.write(text)


RECORD = ('{id: x-1, case_id: card-on-file, output: {reply: "card 4111 1111 1111 1111", '
          'actions: [lookup_account], resolved: true}, metrics: {latency_ms: 900, '
          'cost_usd: 0.004, total_tokens: 800}}')


def test_a_waiver_given_in_a_case_turns_its_fail_rows_into_waived(tmp_path: Path,
                                                                  capsys: Any) -> None:
    folder = _copy(tmp_path)
    _case(folder, f"""
    - name: waived leak
      given:
        records: [{RECORD}]
        as_of: 2026-01-01
        waivers:
          - {{id: w, scope: {{categories: [safety]}}, justification: j, approver: a,
             expires: 2026-01-01}}
      want: {{decision: INCOMPLETE, rows: {{no-card-numbers: [WAIVED]}}}}
    - name: the same waiver, expired
      given:
        records: [{RECORD}]
        as_of: 2026-01-02
        waivers:
          - {{id: w, scope: {{categories: [safety]}}, justification: j, approver: a,
             expires: 2026-01-01}}
      want: {{decision: INCOMPLETE, rows: {{no-card-numbers: [FAIL]}}}}
""")
    assert main(["test", str(folder)]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "ok   waived leak" in out and "ok   the same waiver, expired" in out


def test_a_wrong_row_expectation_fails_and_says_what_came(tmp_path: Path, capsys: Any) -> None:
    folder = _copy(tmp_path)
    _case(folder, f"""
    - name: wrong
      given: {{records: [{RECORD}]}}
      want: {{decision: INCOMPLETE, rows: {{no-card-numbers: PASS}}}}
""")
    assert main(["test", str(folder)]) == 1
    assert "rows of no-card-numbers: wanted every row PASS, got FAIL" in capsys.readouterr().out


@pytest.mark.parametrize(("case", "code", "where"), [
    # counts and records together
    ("given: {categories: {safety: {passed: 1}}, records: [{id: a}]}\n      "
     "want: {decision: PASS}", "ONE_OF", "spec.cases[12].given"),
    # rows wanted of a case of counts
    ("given: {categories: {safety: {passed: 1}}}\n      "
     "want: {decision: INCOMPLETE, rows: {no-card-numbers: PASS}}", "NEEDS_RECORDS",
     "spec.cases[12].want.rows"),
    # an inspection the policy lacks
    (f"given: {{records: [{RECORD}]}}\n      "
     "want: {decision: INCOMPLETE, rows: {no-card-number: PASS}}", "UNKNOWN_INSPECTION_ID",
     "spec.cases[12].want.rows.no-card-number"),
    # a waiver naming a case the suite lacks
    (f"given: {{records: [{RECORD}], waivers: [{{id: w, scope: {{cases: [card-on-fil]}}, "
     "justification: j, approver: a, expires: 2099-01-01}]}\n      "
     "want: {decision: INCOMPLETE}", "UNKNOWN_WAIVER_SCOPE",
     "spec.cases[12].given.waivers[0].scope.cases[0]"),
    # a records file that is not there
    ("given: {records_file: nowhere.jsonl}\n      want: {decision: INCOMPLETE}",
     "FILE_NOT_FOUND", "spec.cases[12].given.records_file"),
])
def test_bad_record_cases_are_coded_located_errors(tmp_path: Path, capsys: Any, case: str,
                                                   code: str, where: str) -> None:
    folder = _copy(tmp_path)
    _case(folder, f"\n    - name: bad\n      {case}\n")
    assert main(["test", str(folder)]) == 2
    err = capsys.readouterr().err
    assert re.search(rf"policy\.test\.yaml:\d+:\d+: {code}: {re.escape(where)}:", err), err


def test_records_without_an_evaluation_are_refused_where_written(tmp_path: Path,
                                                                 capsys: Any) -> None:
    folder = _copy(tmp_path)
    _edit(_tests(folder), "  evaluation: ../evaluation.yaml", "")
    assert main(["test", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "TEST_NEEDS_EVALUATION: spec.cases[7].given.records_file" in err
    assert "TEST_NEEDS_EVALUATION: spec.cases[9].given.records" in err


def test_an_evaluation_of_another_policy_is_refused(tmp_path: Path, capsys: Any) -> None:
    folder = _copy(tmp_path)
    shutil.copy(folder / "policy.yaml", folder / "policy.other.yaml")
    _edit(folder / "evaluation.yaml", "policy: policy.yaml", "policy: policy.other.yaml")
    assert main(["test", str(folder)]) == 2
    assert "TEST_POLICY_MISMATCH: spec.evaluation" in capsys.readouterr().err


def test_not_exercised_rules_say_what_would_exercise_them(tmp_path: Path,
                                                          capsys: Any) -> None:
    assert main(["test", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert ("not exercised: policy:spec.categories.safety: a case where 'safety' has no rows, "
            "or ERROR or ABSTAIN rows that leave it unresolved") in out


def test_the_scaffolds_tests_fail_when_its_detector_is_neutered(tmp_path: Path,
                                                                capsys: Any) -> None:
    folder = tmp_path / "agent"
    assert main(["init", str(folder)]) == 0
    assert main(["test", str(folder)]) == 0
    capsys.readouterr()
    _edit(folder / "policy.yaml", 'values: ["INTERNAL", "system prompt"]', 'values: ["zz-zz"]')
    assert main(["test", str(folder)]) == 1
    assert "rows of no-internal-notes: wanted " in capsys.readouterr().out


def test_a_case_whose_records_were_refused_fails(tmp_path: Path, capsys: Any) -> None:
    """A record the run refuses (a case the suite lacks) was listed but the case passed on
    the decision alone: a case must not pass on records it never read (hostile review)."""
    folder = _copy(tmp_path)
    unknown = RECORD.replace("case_id: card-on-file", "case_id: no-such-case")
    _case(folder, f"""
    - name: refused
      given: {{records: [{unknown}]}}
      want: {{decision: INCOMPLETE}}
""")
    assert main(["test", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "record refused" in out and "UNKNOWN_CASE" in out, out
