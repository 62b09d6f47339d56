"""``engine migrate-assevra``: an Assevra 0.6 config becomes a release-gate spec folder whose
runs gate on the team's own thresholds and scope, with every key accounted for.

Expected outcomes are worked out from the refund fixture's counts (agent-release-gate
§16.2: before the fix tool_call passes 9/12 = 0.75, action_correctness 6/12 = 0.5, pii
12/12; after it every dimension 12/12, Wilson lower bound 0.757505993345).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import main

from . import refund
from .conftest import GATE, ROOT


def migrate(tmp_path: Path, config: str, name: str = "team.yml") -> tuple[int, Path]:
    path = tmp_path / name
    path.write_text(config)
    out = tmp_path / "migrated"
    return main(["migrate-assevra", str(path), "--out", str(out), "--from", str(GATE)]), out


def run(tmp_path: Path, spec: Path, rows: list[dict[str, Any]] | None = None,
        out: str = "out") -> tuple[int, dict[str, Any]]:
    extra = []
    if rows is not None:
        data = tmp_path / "runs.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        extra = ["--input", f"runs={data}"]
    code = main(["run", str(spec), "--out", str(tmp_path / out), *extra])
    return code, json.loads((tmp_path / out / "scorecard.json").read_bytes())


def met(card: dict[str, Any]) -> dict[str, Any]:
    return {name: c["met"] for name, c in card["categories"].items() if c["n"]}


TEAM = """\
version: 1
judge: {provider: none}
gate:
  enabled: true
  required_dimensions: [pii, tool_call]
thresholds:
  tool_call: 0.7
  action_correctness: 0.5
"""


def test_the_teams_thresholds_and_scope_carry_over(tmp_path: Path) -> None:
    code, out = migrate(tmp_path, TEAM)
    assert code == 0
    assert main(["validate", str(out)]) == 0
    categories = yaml.safe_load((out / "policy.yaml").read_text())["spec"]["categories"]
    assert categories["tool_call"]["threshold"] == 0.7
    assert categories["action_correctness"]["threshold"] == 0.5
    assert categories["pii"]["threshold"] == 1.0  # not in the config: the protocol default
    assert {n for n, c in categories.items() if c["required"]} == {"pii", "tool_call"}
    assert not any("min_cases" in c for c in categories.values())
    # Before the fix: 0.75 >= 0.7 and 0.5 >= 0.5, so the team's gate passes ...
    code, card = run(tmp_path, out, refund.rows(fixed=False))
    assert (code, card["decision"]) == (0, "PASS")
    assert card["required_categories"] == ["pii", "tool_call"]
    # ... where the shipped thresholds (0.95) would have failed the same data.
    code, card = run(tmp_path, GATE, refund.rows(fixed=False), out="shipped")
    assert (code, card["decision"]) == (1, "FAIL")


def test_a_threshold_above_the_rate_fails(tmp_path: Path) -> None:
    code, out = migrate(tmp_path, TEAM.replace("tool_call: 0.7", "tool_call: 0.8"))
    assert code == 0
    code, card = run(tmp_path, out, refund.rows(fixed=False))
    assert (code, card["decision"]) == (1, "FAIL")  # 0.75 < 0.8
    assert met(card) == {"pii": True, "tool_call": False, "action_correctness": True}
    assert [r["code"] for r in card["reasons"]] == ["BELOW_THRESHOLD"]


@pytest.mark.parametrize("threshold, decision", [(0.75, "PASS"), (0.76, "FAIL")])
def test_a_wilson_gate_on_the_shipped_dataset(tmp_path: Path, threshold: float,
                                              decision: str) -> None:
    config = ("gate: {gate_on: wilson_lower}\n"
              f"thresholds: {{pii: {threshold}, tool_call: 0.75, action_correctness: 0.75,"
              " safety: 0.99, injection: 0.99}\n")
    assert migrate(tmp_path, config)[0] == 0
    code, card = run(tmp_path, tmp_path / "migrated")  # the shipped, pinned dataset
    assert card["decision"] == decision  # 12/12: lower bound 0.7575
    assert met(card) == {"pii": decision == "PASS", "tool_call": True,
                         "action_correctness": True}


def test_a_required_dimension_the_data_lacks_is_incomplete(tmp_path: Path) -> None:
    config = TEAM.replace("[pii, tool_call]", "[pii, safety]")
    assert migrate(tmp_path, config)[0] == 0
    code, card = run(tmp_path, tmp_path / "migrated")
    assert (code, card["decision"]) == (3, "INCOMPLETE")
    assert "REQUIRED_DIMENSION_MISSING" in [r["code"] for r in card["reasons"]]


def test_every_key_is_accounted_for_in_migration_md(tmp_path: Path) -> None:
    config = TEAM + ("history: {path: h.jsonl, baseline: v1}\n"
                     "calibration: {kappa_bar: 0.9, label_field: gold}\n"
                     "telemetry: true\nbudgets: {cost_usd: 0.05, currency: EUR}\n")
    code, out = migrate(tmp_path, config)
    assert code == 0
    text = (out / "MIGRATION.md").read_text()
    unknown = text.split("## Unknown keys")[1].split("## Next steps")[0]
    assert re.findall(r"^\| `([^`]+)` \|", unknown, re.M) == ["telemetry", "budgets.currency"]
    dropped = text.split("## Not carried over")[1].split("## Unknown keys")[0]
    for key in ("version", "gate.enabled", "history.path", "history.baseline"):
        assert f"| `{key}` |" in dropped
    assert "calibration" not in dropped
    carried = text.split("## Carried over")[1].split("## Shipped settings")[0]
    for key in ("judge", "gate.required_dimensions", "thresholds.tool_call",
                "thresholds.action_correctness", "budgets.cost_usd", "calibration.kappa_bar",
                "calibration.label_field"):
        assert f"| `{key}` |" in carried
    policy = yaml.safe_load((out / "policy.yaml").read_text())["spec"]
    assert policy["budgets"]["cost_usd"] == 0.05
    # §11: Assevra's kappa bar and label field are the policy's judge calibration settings
    assert policy["judge"]["calibration"] == {"min_kappa": 0.9, "label_field": "gold"}


def test_a_json_config_as_assevras_reference_writes_it(tmp_path: Path) -> None:
    config = json.dumps({"judge": {"provider": "none"}, "gate": {
        "purpose": "scan", "required_dimensions": ["action_correctness", "tool_call", "pii"]},
        "thresholds": {"action_correctness": 1, "tool_call": 1, "pii": 1}})
    code, out = migrate(tmp_path, config, "policy.json")
    assert code == 0
    spec = yaml.safe_load((out / "policy.yaml").read_text())["spec"]
    assert spec["gate"]["purpose"] == "triage"
    evaluation = yaml.safe_load((out / "evaluation.yaml").read_text())["spec"]
    assert evaluation["judge"] == {"provider": "none"}


@pytest.mark.parametrize("config, where", [
    ("thresholds:\n  pii: [0.9\n", "team.yml:3:1: YAML_SYNTAX"),
    ("thresholds:\n  pii: 90\n", "team.yml:2:8: ASSEVRA_CONFIG_VALUE: thresholds.pii: "
                                 "must be a rate between 0 and 1 (did you mean 0.9?)"),
    ("gate:\n  required_dimensions: [pii, tool_cal]\n",
     "team.yml:2:30: BAD_REQUIRED_DIMENSIONS: gate.required_dimensions[1]"),
    ("gate:\n  required_dimensions: pii\n",
     "team.yml:2:24: BAD_REQUIRED_DIMENSIONS: gate.required_dimensions: required_dimensions "
     "must be a list of dimensions"),
    ("judge: {provider: openai, max_tokens: '512'}\n",
     "team.yml:1:39: ASSEVRA_CONFIG_VALUE: judge.max_tokens"),
    ("version: 2\n", "team.yml:1:10: ASSEVRA_CONFIG_VALUE: version"),
    ("- pii\n", "team.yml:1:1: ASSEVRA_CONFIG_NOT_MAPPING"),
    ("gate: {gate_on: wilson_lower}\n", "team.yml:1:17: UNATTAINABLE_GATE: gate.gate_on: the "
     "Wilson lower bound never reaches a threshold of 1.0 (safety, pii, injection)"),
])
def test_a_malformed_config_is_a_located_error(tmp_path: Path, capsys: Any, config: str,
                                               where: str) -> None:
    code, out = migrate(tmp_path, config)
    err = capsys.readouterr().err
    assert code == 2 and where in err, err
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["team.yml"]


def test_a_non_empty_output_folder_is_refused(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "migrated").mkdir()
    (tmp_path / "migrated" / "keep.txt").write_text("mine")
    code, out = migrate(tmp_path, TEAM)
    assert code == 2 and "OUTPUT_EXISTS" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    (out / "keep.txt").unlink()  # an empty folder is fine
    assert migrate(tmp_path, TEAM)[0] == 0


def _doc_commands() -> list[str]:
    text = (ROOT / "docs" / "release-gate.md").read_text()
    section = text.split("## Migrating an Assevra config")[1].split("\n## ")[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def test_the_docs_commands_run_as_written(tmp_path: Path, monkeypatch: Any) -> None:
    shutil.copytree(GATE, tmp_path / "specs" / "agent-release-gate")
    shutil.copytree(ROOT / "docs" / "examples", tmp_path / "docs" / "examples")
    monkeypatch.chdir(tmp_path)
    commands = _doc_commands()
    assert len(commands) == 9
    for command in commands:
        words = shlex.split(command)
        assert words[0] == "engine" and main(words[1:]) == 0, command
    card = json.loads((tmp_path / "out" / "v2" / "scorecard.json").read_bytes())
    assert card["comparison"]["status"] == "comparable"
    assert card["categories"]["tool_call"]["threshold"] == 0.9  # docs/examples/assevra.yml
    # by label: v3 is the only run labelled prod, so v4 compares with it
    v3 = (tmp_path / "out" / "v3" / "scorecard.json").read_bytes()
    card = json.loads((tmp_path / "out" / "v4" / "scorecard.json").read_bytes())
    assert card["comparison"]["status"] == "comparable"
    assert card["comparison"]["baseline"]["scorecard_sha256"] == hashlib.sha256(v3).hexdigest()


@pytest.mark.parametrize("judge, want", [
    ("{provider: openai, model: gpt-x, max_tokens: 256}",
     {"provider": "openai-compatible", "model": "gpt-x", "max_tokens": 256}),
    ("{provider: local, model: llama}",
     {"provider": "openai-compatible", "base_url": "http://localhost:11434/v1",
      "model": "llama"}),
    ("{provider: anthropic, panel: ['anthropic:m1', m2]}",
     {"provider": "anthropic", "panel": ["m1", "m2"]}),
    ("{provider: auto}", None),
    ("{provider: gemini, model: g}", None),
    ("{provider: anthropic}", None),
    ("{provider: anthropic, panel: ['openai:m1', m2, 'local:l3']}",  # §11: mixed panels
     {"provider": "anthropic", "panel": [
         {"provider": "openai-compatible", "model": "m1",
          "base_url": "https://api.openai.com/v1", "api_key_env": "OPENAI_API_KEY"},
         "m2",
         {"provider": "openai-compatible", "model": "l3",
          "base_url": "http://localhost:11434/v1"}]}),
    ("{provider: anthropic, model: m, panel: ['bedrock:b1', m2, m3]}", None),
])
def test_assevra_judges_as_specgate_judges(tmp_path: Path, judge: str,
                                           want: dict[str, Any] | None) -> None:
    code, out = migrate(tmp_path, f"judge: {judge}\n")
    assert code == 0
    evaluation = yaml.safe_load((out / "evaluation.yaml").read_text())["spec"]
    assert evaluation.get("judge") == want
    text = (out / "MIGRATION.md").read_text()
    section = "## Carried over" if want else "## Not carried over"
    assert "| `judge` |" in text.split(section)[1].split("\n## ")[0]


def test_a_baseline_key_is_copied_into_the_spec_and_a_bad_one_refused(
        tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "team.yml").write_text(TEAM)
    assert main(["keygen", "--out-dir", str(tmp_path / "keys")]) == 0
    base = ["migrate-assevra", str(tmp_path / "team.yml"), "--from", str(GATE)]
    (tmp_path / "not-a-key.pem").write_text("-----BEGIN PUBLIC KEY-----\nxx\n")
    capsys.readouterr()
    code = main([*base, "--out", str(tmp_path / "bad"), "--trusted-key",
                 str(tmp_path / "not-a-key.pem")])
    assert code == 2 and "BAD_KEY" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()  # nothing written
    out = tmp_path / "good"
    assert main([*base, "--out", str(out), "--trusted-key",
                 str(tmp_path / "keys" / "public.pem")]) == 0
    evaluation = yaml.safe_load((out / "evaluation.yaml").read_text())["spec"]
    assert evaluation["history"]["trusted_keys"] == ["keys/baseline-1.pub.pem"]
    assert (out / "keys" / "baseline-1.pub.pem").read_bytes() == \
        (tmp_path / "keys" / "public.pem").read_bytes()
