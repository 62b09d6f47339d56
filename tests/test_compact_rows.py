"""Compact PASS rows (scoring version specgate-primitives/2) and ``evidence.passing_rows:
full``, against a run an engine of scoring version specgate-primitives/1 signed
(tests/data/replay-v1, recorded by its make.py at commit e63d915).

What each PASS row should hold is worked out from DESIGN.md section 6, not from our
output: identity, status, spec path (and any code or message), and expected or observed
values only when they are numbers; a row that is not PASS, or a control row, is whole."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import main
from engine.evidence import signing

from .conftest import ROOT, keep_full_rows

RECORDED = Path(__file__).resolve().parent / "data" / "replay-v1"
SOURCE = RECORDED / "out"
# who answered, and (since issue 36) how many answers were fresh, reused or replayed
REPLAY_FACTS = ("provider", "replayed_from", "fresh", "reused", "replayed", "cache_reuse")


def projected_junit() -> bytes:
    """The recorded junit.xml with its one category message worded as since issue 38
    (the bound missed and the statistic gated on it: grounding gates on the point rate)."""
    recorded = (SOURCE / "junit.xml").read_bytes()
    then = b"grounding below its threshold or minimum: 2/3 passed, rate 0.667 (threshold 0.900)"
    assert recorded.count(then) == 1
    return recorded.replace(then, b"grounding not met: rate 0.667 is below its threshold "
                            b"0.900 (2/3 passed, rate 0.667)")


def compacted(row: dict[str, Any]) -> dict[str, Any]:
    """A full row as a compact PASS row keeps it (DESIGN.md section 6)."""
    if row.get("status") != "PASS" or row.get("control"):
        return row
    return {k: v for k, v in row.items() if k not in ("expected", "observed") or
            isinstance(v, int | float) and not isinstance(v, bool)}


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


@pytest.fixture
def replayed(tmp_path: Path) -> Any:
    """Replay the recorded run's judgements with a copy of its spec (full or compact rows),
    signed with a fresh key; returns (exit code, folder)."""
    keys = tmp_path / "keys"
    signing.keygen(keys)

    def run(passing_rows: str) -> tuple[int, Path]:
        spec = tmp_path / passing_rows / "agent-release-gate"
        shutil.copytree(RECORDED / "spec" / "agent-release-gate", spec)
        if passing_rows == "full":
            keep_full_rows(spec / "policy.yaml")
        out = tmp_path / passing_rows / "out"
        code = main(["run", str(spec), "--out", str(out), "--judge-replay", str(SOURCE),
                     "--no-judge-cache", "--key", str(keys / "private.pem")])
        return code, out

    return run


def test_the_recorded_run_is_a_full_row_run() -> None:
    card = json.loads((SOURCE / "scorecard.json").read_bytes())
    assert card["policy_document"]["scoring_version"] == "specgate-primitives/1"
    rows = lines(SOURCE / "rows.jsonl")
    passing = [r for r in rows if r.get("status") == "PASS" and not r.get("control")]
    assert any("observed" in r and not isinstance(r["observed"], int | float) for r in passing)
    assert any(r["status"] == "FAIL" and r["category"] == "grounding" for r in rows)


def test_an_older_full_row_run_replays_byte_for_byte_with_full_rows(replayed: Any) -> None:
    code, out = replayed("full")
    assert code == 1
    for name in ("rows.jsonl", "findings.jsonl", "judgements.jsonl"):
        assert (out / name).read_bytes() == (SOURCE / name).read_bytes(), name
    assert (out / "junit.xml").read_bytes() == projected_junit()
    before = json.loads((SOURCE / "scorecard.json").read_bytes())
    now = json.loads((out / "scorecard.json").read_bytes())
    # the same policy_sha256 as before the key existed: the key is bound as the scoring
    # version it selects, so earlier baselines of this policy stay comparable
    assert now["policy_sha256"] == before["policy_sha256"]
    assert now["policy_document"] == before["policy_document"]
    assert now["rows_sha256"] == before["rows_sha256"]
    # what differs: who answered (a replay says so), and the edited policy file's digest
    assert {k: v for k, v in now["judge"].items() if k not in REPLAY_FACTS} == \
        {k: v for k, v in before["judge"].items() if k not in REPLAY_FACTS}
    files = now["provenance"]["specs"]["files"]
    assert files.pop("policy.yaml") != before["provenance"]["specs"]["files"].pop("policy.yaml")
    assert now["provenance"] == before["provenance"]
    # and the date it was judged on, which every scorecard names since issue 36 (the run
    # was recorded before): the one signed time it rests on is the replayed scorecard's,
    # days before the clock, so the clock set it
    assert "as_of" not in before and now["as_of"]["set_by"] == "clock"
    assert now["as_of"]["date"] == now["as_of"]["clock"]
    assert list(now["as_of"]["signed"]) == ["replay"]
    assert now["as_of"]["signed"]["replay"][:10] < now["as_of"]["date"]
    assert {k: v for k, v in now.items() if k not in ("judge", "provenance", "as_of")} == \
        {k: v for k, v in before.items() if k not in ("judge", "provenance")}


def test_the_same_replay_with_compact_rows_changes_only_passing_rows(replayed: Any) -> None:
    code, out = replayed("compact")
    assert code == 1
    for name in ("findings.jsonl", "judgements.jsonl"):
        assert (out / name).read_bytes() == (SOURCE / name).read_bytes(), name
    assert (out / "junit.xml").read_bytes() == projected_junit()
    before, now = lines(SOURCE / "rows.jsonl"), lines(out / "rows.jsonl")
    assert now == [compacted(r) for r in before]
    assert now != before and len((out / "rows.jsonl").read_bytes()) < \
        len((SOURCE / "rows.jsonl").read_bytes()) * 0.7
    old = json.loads((SOURCE / "scorecard.json").read_bytes())
    card = json.loads((out / "scorecard.json").read_bytes())
    assert card["policy_document"]["scoring_version"] == "specgate-primitives/2"
    assert card["policy_sha256"] != old["policy_sha256"]
    for key in ("decision", "reasons", "categories", "findings", "coverage", "controls",
                "reliability", "suite_sha256", "judge_sha256", "findings_sha256"):
        assert card[key] == old[key], key


def test_both_forms_verify_and_report_alike(replayed: Any, tmp_path: Path) -> None:
    _, full = replayed("full")
    _, compact = replayed("compact")
    public = str(tmp_path / "keys" / "public.pem")
    recorder = str(RECORDED / "spec" / "agent-release-gate" / "signed-runs.pub.pem")
    for out, key in ((full, public), (compact, public), (SOURCE, recorder)):
        assert main(["verify", str(out), "--trusted-key", key]) == 0, out
    # the reports read the same once the digests that name the rows file are set aside
    old, new = (json.loads((f / "scorecard.json").read_bytes()) for f in (full, compact))
    for name in ("scorecard.md", "scorecard.html"):
        text = (compact / name).read_text()
        for key in ("policy_sha256", "rows_sha256"):
            text = text.replace(new[key], old[key])
        assert text == (full / name).read_text(), name


@pytest.mark.parametrize("passing_rows", ["full", "compact"])
def test_an_older_baseline_stays_comparable_only_with_full_rows(
        replayed: Any, tmp_path: Path, passing_rows: str) -> None:
    replayed(passing_rows)  # lays out the spec copy
    spec = tmp_path / passing_rows / "agent-release-gate"
    against = tmp_path / f"against-{passing_rows}"
    code = main(["run", str(spec), "--out", str(against), "--judge-replay", str(SOURCE),
                 "--no-judge-cache", "--baseline", str(SOURCE / "scorecard.json")])
    assert code == 1
    comparison = json.loads((against / "scorecard.json").read_bytes())["comparison"]
    if passing_rows == "full":  # the policy_sha256 it had: the recorded run is its baseline
        assert comparison["status"] != "incompatible", comparison
        assert comparison["categories"]["grounding"]["mcnemar"] == {"b": 0, "c": 0, "p": 1.0}
    else:  # a new scoring version, as any change of scoring: not comparable
        assert comparison["status"] == "incompatible"
        assert comparison["reasons"] == ["policy_sha256 differs"]


def test_a_compact_pass_row_keeps_its_measures_and_drops_copies(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["run", str(ROOT / "specs" / "inspect-example"), "--out", str(out)]) in (0, 1)
    rows = lines(out / "rows.jsonl")
    budgets = [r for r in rows if r["status"] == "PASS" and r["type"] == "at_most"]
    assert budgets and all(isinstance(r["observed"], int | float) for r in budgets)
    assert all("expected" not in r for r in budgets)  # {"at_most": N}: the spec's, not a measure
    assert all(set(r) >= {"unit", "case", "category", "inspection", "type", "status",
                          "spec_path", "input", "line"} for r in rows if "category" in r)


def test_engine_diff_shows_the_row_form(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "inspect-example"
    shutil.copytree(ROOT / "specs" / "inspect-example", spec)
    data = yaml.safe_load((spec / "policy.yaml").read_text())
    data["spec"].setdefault("evidence", {})["passing_rows"] = "full"
    (spec / "policy-full.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    capsys.readouterr()
    assert main(["diff", str(spec / "policy-full.yaml"), str(spec / "policy.yaml")]) == 0
    said = capsys.readouterr().out
    assert "policy spec.evidence.passing_rows: full -> compact" in said
    assert "decision: PASS -> PASS (unchanged)" in said
