"""Hostile logs found by the issue 17 review (tests/data/rev17), each through engine run:
a coded problem that leaves the run INCOMPLETE, never INTERNAL_ERROR."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main

from .conftest import ROOT

DATA = ROOT / "tests" / "data" / "rev17"
CASES = [  # (file, example spec, input name, the code it must give)
    ("inspect_hugeint.json", "inspect-example", "samples", "NUMBER_OUT_OF_RANGE"),
    ("promptfoo_hugeint.json", "promptfoo-example", "results", "NUMBER_OUT_OF_RANGE"),
    ("status_list.jsonl", "otel-example", "traces", "OTEL_BAD_SPAN"),
    ("time_sup.jsonl", "otel-example", "traces", "OTEL_BAD_SPAN"),
    ("time_huge.jsonl", "otel-example", "traces", "OTEL_BAD_SPAN"),
]


@pytest.mark.parametrize("name, spec, input_name, code", CASES, ids=[c[0] for c in CASES])
def test_a_hostile_tool_log_is_a_coded_problem(tmp_path: Path, capsys: Any, name: str,
                                               spec: str, input_name: str, code: str) -> None:
    out = tmp_path / "out"
    status = main(["run", str(ROOT / "specs" / spec), "--input",
                   f"{input_name}={DATA / name}", "--out", str(out)])
    printed = capsys.readouterr()
    assert "INTERNAL_ERROR" not in printed.out + printed.err
    card = json.loads((out / "scorecard.json").read_bytes())
    assert status == 3 and card["decision"] == "INCOMPLETE"
    assert code in card["coverage"]["record_problems"], card["coverage"]["record_problems"]


def test_inspect_tool_calls_that_are_not_a_list_are_no_calls(tmp_path: Path,
                                                            capsys: Any) -> None:
    out = tmp_path / "out"
    main(["run", str(ROOT / "specs" / "inspect-example"), "--input",
          f"samples={DATA / 'wrongtypes.json'}", "--out", str(out)])
    printed = capsys.readouterr()
    assert "INTERNAL_ERROR" not in printed.out + printed.err and (out / "scorecard.json").exists()
