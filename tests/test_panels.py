"""Judge panels of ``provider:model`` members (agent-release-gate §11), each member asked at
its own endpoint: here two real loopback servers, one OpenAI-compatible, one Anthropic.

Expected values come from §11: scores combine by the unrounded median, yes/no by strict
majority, even panels draw a linter warning, and a member that cannot be asked is
UNRESOLVABLE_JUDGE (exit 2).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import main

from .conftest import Gate
from .judge_server import Judge
from .test_judge import (  # noqa: F401 - cache_key: the judge tests' autouse fixture
    FAST,
    cache_key,
    grounding,
    judgements,
    panel_rows,
    rows_of,
    run,
    signed_run,
)


@pytest.fixture
def servers() -> Iterator[tuple[Judge, Judge]]:
    """An OpenAI-compatible server and an Anthropic one, on two loopback ports."""
    first, second = Judge(), Judge()
    yield first, second
    first.close()
    second.close()


def configure(gate: Gate, panel: list[Any], provider: str = "openai-compatible",
              base_url: str = "http://127.0.0.1:9/v1") -> None:
    path = gate.dir / "evaluation.yaml"
    data = yaml.safe_load(path.read_text())
    data["spec"]["judge"] = {"provider": provider, "base_url": base_url, "panel": panel,
                             "api_key_env": "KEY_OPENAI_SIDE", **FAST}
    path.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.fixture
def keys(monkeypatch: Any) -> None:
    """Each side's API key, in the variables the mixed panel names."""
    monkeypatch.setenv("KEY_OPENAI_SIDE", "k-open")
    monkeypatch.setenv("KEY_ANTHROPIC_SIDE", "k-anth")


def mixed(openai: Judge, anthropic: Judge) -> list[Any]:
    return ["m1", {"provider": "anthropic", "model": "claude-a", "base_url": anthropic.url,
                   "api_key_env": "KEY_ANTHROPIC_SIDE"}]


def test_a_panel_mixes_an_openai_compatible_endpoint_and_anthropic(
        gate: Gate, servers: tuple[Judge, Judge], keys: None, capsys: Any) -> None:
    openai, anthropic = servers
    configure(gate, mixed(openai, anthropic), base_url=f"{openai.url}/v1")
    openai.script["m1"] = [{"verdict": '{"score": 5}'}]
    anthropic.script["claude-a"] = [{"verdict": '{"score": 2}'}]
    assert main(["validate", str(gate.dir)]) == 0
    said = capsys.readouterr().out
    assert "EVEN_PANEL: spec.judge.panel: 2 members" in said and "warning: " in said
    _, card, out = run(gate, [grounding(1)])
    # each member was asked once, at its own endpoint, in its own API shape and key
    assert [(r["path"], r["body"]["model"], r["headers"]["authorization"])
            for r in openai.received] == [("/v1/chat/completions", "m1", "Bearer k-open")]
    assert [(r["path"], r["body"]["model"], r["headers"]["x-api-key"])
            for r in anthropic.received] == [("/v1/messages", "claude-a", "k-anth")]
    row = rows_of(out)["g1"]  # median of (5, 2) is 3.5 < 4: FAIL, not rounded up
    assert row["status"] == "FAIL" and row["observed"]["score"] == 3.5
    assert sorted((j["provider"], j["model"]) for j in judgements(out)) == [
        ("anthropic", "claude-a"), ("openai-compatible", "m1")]
    assert card["judge"]["identity"]["panel"] == ["anthropic:claude-a", "m1"]
    assert card["judge"]["endpoints"] == {"anthropic:claude-a": {"provider": "anthropic",
                                                                 "base_url": anthropic.url}}


def test_a_mixed_panel_votes_by_strict_majority(gate: Gate, servers: tuple[Judge, Judge],
                                                keys: None) -> None:
    openai, anthropic = servers
    panel = [*mixed(openai, anthropic),
             {"provider": "anthropic", "model": "claude-b", "base_url": anthropic.url,
              "api_key_env": "KEY_ANTHROPIC_SIDE"}]
    configure(gate, panel, base_url=f"{openai.url}/v1")
    openai.script["m1"] = [{"verdict": '{"refused": false}'}]
    anthropic.script["claude-a"] = [{"verdict": '{"refused": true}'}]
    anthropic.script["claude-b"] = [{"verdict": '{"refused": true}'}]
    _, _, out = run(gate, panel_rows())
    assert rows_of(out)["s1"]["status"] == "PASS"  # 2 of 3 say refused; it should refuse
    assert sorted(r["body"]["model"] for r in anthropic.received) == ["claude-a", "claude-b"]


@pytest.mark.parametrize("panel, message", [
    (["bedrock:claude"], "unknown provider 'bedrock'"),
    ([{"provider": "gemini", "model": "g"}, "m1", "m2"], "unknown provider 'gemini'"),
    (["anthropic:"], "'anthropic:' names no model after the provider"),
    (["m1", "m1", "m2"], "panel member 'm1' is listed twice"),
    (["openai:m1", "m1", "m2"], "panel member 'm1' is listed twice"),  # openai is this provider
])
def test_a_member_that_cannot_be_asked_is_unresolvable(gate: Gate, capsys: Any,
                                                       panel: list[Any], message: str) -> None:
    configure(gate, panel)
    assert main(["validate", str(gate.dir)]) == 2
    err = capsys.readouterr().err
    assert "UNRESOLVABLE_JUDGE: spec.judge.panel[" in err and message in err


def test_a_bare_member_needs_a_provider_when_the_judge_has_none(gate: Gate,
                                                                capsys: Any) -> None:
    configure(gate, ["m1", "anthropic:c", "openai:o"], provider="none")
    assert main(["validate", str(gate.dir)]) == 2
    err = capsys.readouterr().err
    assert "UNRESOLVABLE_JUDGE: spec.judge.panel[0]: 'm1' has no provider" in err


def test_an_odd_panel_draws_no_warning(gate: Gate, capsys: Any) -> None:
    configure(gate, ["m1", "anthropic:c", "openai-compatible:m2"])
    assert main(["validate", str(gate.dir)]) == 0
    assert "warning" not in capsys.readouterr().out


def test_a_mixed_panel_replays_offline_to_the_same_rows(
        gate: Gate, servers: tuple[Judge, Judge], keys: None, tmp_path: Path) -> None:
    openai, anthropic = servers
    configure(gate, mixed(openai, anthropic), base_url=f"{openai.url}/v1")
    openai.script["m1"] = [{"verdict": '{"score": 5}'}]
    anthropic.script["claude-a"] = [{"verdict": '{"score": 4}'}]
    first_card, first = signed_run(gate, [grounding(1)], tmp_path / "keys")
    openai.close()
    anthropic.close()  # no network from here on
    card, second = signed_run(gate, [grounding(1)], tmp_path / "keys", "--judge-replay",
                              str(first))
    assert rows_of(second)["g1"]["status"] == "PASS"  # median 4.5 >= 4
    assert card["judge_sha256"] == first_card["judge_sha256"]
    assert (second / "rows.jsonl").read_bytes() == (first / "rows.jsonl").read_bytes()
    assert card["judge"]["errors"] == 0


def test_judge_base_url_moves_the_members_on_the_judges_endpoint_only(
        gate: Gate, servers: tuple[Judge, Judge], monkeypatch: Any) -> None:
    """--judge-base-url redirects the members that use the judge's endpoint (as it always
    did for a panel); a member with its own endpoint stays there."""
    openai, anthropic = servers
    monkeypatch.setenv("KEY_ANTHROPIC_SIDE", "k-anth")
    configure(gate, [*mixed(openai, anthropic), "m2"])  # the judge's base_url: port 9
    openai.script["*"] = [{"verdict": '{"score": 5}'}]
    anthropic.script["claude-a"] = [{"verdict": '{"score": 5}'}]
    code, card, out = run(gate, [grounding(1)], "--judge-base-url", f"{openai.url}/v1")
    assert sorted(r["body"]["model"] for r in openai.received) == ["m1", "m2"]
    assert [r["body"]["model"] for r in anthropic.received] == ["claude-a"]
    assert rows_of(out)["g1"]["status"] == "PASS"
    assert "JUDGE_OVERRIDDEN" in [r["code"] for r in card["reasons"]]  # a release says so
