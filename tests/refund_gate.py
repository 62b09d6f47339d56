"""A release gate over generic JSONL records the evaluated party writes: one tool-call
category held to the suite's refund contract (tests of issue 36's first lever)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main

# one tool_call inspection; the caller appends its parameters (or guard) after the type,
# and chooses the purpose
POLICY = """apiVersion: specgate/v1
kind: Policy
metadata: {name: refunds, version: 1.0.0}
spec:
  scoring_version: refunds/1
  gate: {purpose: PURPOSE, gate_on: point, min_n: 1}
  categories:
    tools:
      description: every tool call within its contract
      weight: 1
      threshold: 1.0
      inspections: [refund-contract]
  overall: {threshold: 1.0}
  inspections:
    - id: refund-contract
      type: tool_call
"""

EVALUATION = """apiVersion: specgate/v1
kind: Evaluation
metadata: {name: refunds, version: 1.0.0}
spec:
  policy: policy.yaml
  suite: suite.yaml
  inputs:
    runs: {path: runs.jsonl, format: jsonl}
  units: {id: id, case: case_id}
"""


def folder(tmp_path: Path, policy: str, suite: str, records: list[dict[str, Any]],
           judge: str = "") -> Path:
    """A spec folder (``gate``) over the JSONL records the evaluated party wrote;
    ``judge`` is appended to the Evaluation's spec."""
    out = tmp_path / "gate"
    out.mkdir()
    (out / "policy.yaml").write_text(policy)
    (out / "suite.yaml").write_text(suite)
    (out / "evaluation.yaml").write_text(EVALUATION + judge)
    (out / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return out


def run(spec: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, dict[str, Any]]:
    """engine run: the exit code, stderr, and the scorecard when one was written."""
    out = spec.parent / "out"
    code = main(["run", str(spec), "--out", str(out)])
    card = out / "scorecard.json"
    return (code, capsys.readouterr().err,
            json.loads(card.read_text()) if card.exists() else {})
