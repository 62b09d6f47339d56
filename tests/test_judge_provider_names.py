"""agent-release-gate §11 names the providers `anthropic`, `openai` and `openai-compatible`:
an Evaluation (or --judge-provider) that writes `openai`, as the protocol spells it, is read
as the OpenAI-compatible API at OpenAI's address, and names the same judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import main
from engine.spec import evaluation as spec

from .conftest import Gate
from .judge_server import Judge
from .test_judge import configure, grounding, judge, run

__all__ = ["judge"]  # a fixture, used by name


def test_provider_openai_is_read_as_the_protocol_spells_it(gate: Gate, judge: Judge,
                                                          monkeypatch: Any) -> None:
    monkeypatch.setenv("SPECGATE_TEST_KEY", "k-9")
    judge.script["m1"] = [{"verdict": '{"score": 5}'}]
    configure(gate, judge, "openai-compatible")
    code, compatible, _ = run(gate, [grounding(1)])
    configure(gate, judge, "openai-compatible")  # the same block, the provider renamed
    data = yaml.safe_load((gate.dir / "evaluation.yaml").read_text())
    data["spec"]["judge"]["provider"] = "openai"
    (gate.dir / "evaluation.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    code, card, _ = run(gate, [grounding(1)])
    assert code == 0 and card["decision"] == "PASS"
    sent = judge.received[-1]
    assert sent["path"] == "/v1/chat/completions"  # OpenAI's API shape, not Anthropic's
    assert sent["headers"]["authorization"] == "Bearer k-9"
    assert card["judge"]["provider"] == "openai-compatible"
    # one judge under two spellings: comparable history is not broken by the name
    assert card["judge_sha256"] == compatible["judge_sha256"]


def test_provider_openai_without_an_address_is_openais_api(tmp_path: Path, gate: Gate) -> None:
    data = yaml.safe_load((gate.dir / "evaluation.yaml").read_text())
    data["spec"]["judge"] = {"provider": "openai", "model": "gpt-x"}
    (gate.dir / "evaluation.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    records = tmp_path / "runs.jsonl"
    records.write_text(json.dumps(grounding(1)) + "\n")
    config = spec.load([gate.dir], {"runs": records})[0].judge
    assert (config.provider, config.base_url, config.api_key_env) == (
        "openai-compatible", "https://api.openai.com/v1", "OPENAI_API_KEY")


def test_judge_provider_openai_on_the_command_line(gate: Gate, judge: Judge, tmp_path: Path,
                                                  monkeypatch: Any) -> None:
    monkeypatch.setenv("SPECGATE_TEST_KEY", "k-9")
    judge.script["m1"] = [{"verdict": '{"score": 5}'}]
    configure(gate, judge, "anthropic")
    code, card, _ = run(gate, [grounding(1)], "--judge-provider", "openai",
                        "--judge-base-url", f"{judge.url}/v1")
    assert code == 3 and card["reasons"][0]["code"] == "JUDGE_OVERRIDDEN"  # still an override
    assert card["judge"]["provider"] == "openai-compatible"
    assert judge.received[-1]["path"] == "/v1/chat/completions"
    with pytest.raises(SystemExit) as refused:  # auto stays refused (§11)
        main(["run", "--judge-provider", "auto", str(gate.dir)])
    assert refused.value.code == 2
