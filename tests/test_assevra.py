"""Row classes of the assevra-jsonl format, from data cases (agent-release-gate §1, §5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.protocols.release_gate.assevra import classify

CASES = yaml.safe_load((Path(__file__).parent / "data" / "assevra_rows.yaml").read_text())


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['row'].get('dimension')}-{c['want']}")
def test_row_class(case: dict[str, Any]) -> None:
    verdict = classify(case["row"], set(), case.get("budgets", {}))
    assert verdict.klass == case["want"], verdict.messages
    errors = [m["code"] for m in verdict.messages if m["level"] == "error"]
    if "code" in case:
        assert errors[0] == case["code"]
    else:
        assert errors == []
    if case.get("warning"):
        assert case["warning"] in [m["code"] for m in verdict.messages]


def test_duplicate_ids_are_invalid_after_the_first() -> None:
    seen: set[str] = set()
    row = {"id": "a", "dimension": "pii", "agent_output": "ok"}
    assert classify(row, seen, {}).klass == "LABELED"
    again = classify(row, seen, {})
    assert (again.klass, again.code) == ("INVALID", "DUPLICATE_ID")
