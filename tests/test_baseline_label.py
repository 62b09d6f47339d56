"""Baselines by label (agent-release-gate §10), through the command line with real signed
runs: ``--label`` records a label; ``--baseline-label NAME --history DIR`` compares with the
newest scorecard under DIR that carries the label and verifies against a trusted key."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from engine.cli import main

from . import refund
from .conftest import ROOT, Gate


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name in ("trusted", "other"):
        assert main(["keygen", "--out-dir", str(tmp_path / name)]) == 0
        out[name] = tmp_path / name
    return out


def required(spec: dict[str, Any]) -> None:
    spec["gate"]["comparison"] = {"required": True}


def codes(card: dict[str, Any]) -> list[str]:
    return [r["code"] for r in card["reasons"]]


def sha(folder: Path) -> str:
    return hashlib.sha256((folder / "scorecard.json").read_bytes()).hexdigest()


def next_second() -> None:
    """The signed time has whole seconds: wait into the next one."""
    time.sleep(1.05 - time.time() % 1)


def test_the_newest_verifying_labelled_scorecard_is_the_baseline(
        gate: Gate, keys: dict[str, Path], tmp_path: Path) -> None:
    gate.policy(required)
    sign = ["--key", str(keys["trusted"] / "private.pem")]
    history = tmp_path / "history"
    history.mkdir()

    def keep(name: str, fixed: bool, *extra: str) -> Path:
        _, card, out = gate.run(refund.rows(fixed=fixed), *extra)
        assert card["comparison"]["status"] == "missing"  # each had no baseline itself
        shutil.copytree(out, history / name)
        return history / name

    # Named and touched so that neither the folder names nor the file times point at b.
    older = keep("z-older", False, *sign, "--label", "prod")
    for file in older.iterdir():
        os.utime(file, (time.time() + 3600, time.time() + 3600))
    next_second()
    chosen = keep("b-chosen", True, *sign, "--label", "prod")
    next_second()
    # Newer than b, every one of them, and each worse than b (a FAIL), so choosing any of
    # them would show in the categories as well as in the digest.
    tampered = keep("c-tampered", False, *sign, "--label", "prod")
    with (tampered / "rows.jsonl").open("ab") as rows:
        rows.write(b"\n")
    keep("d-unsigned", False, "--label", "prod")
    keep("e-other-key", False, "--key", str(keys["other"] / "private.pem"), "--label", "prod")
    staging = keep("f-staging", False, *sign, "--label", "staging")
    forged = history / "g-forged"  # the staging run relabelled by hand: its signature fails
    shutil.copytree(staging, forged)
    card = json.loads((forged / "scorecard.json").read_bytes())
    card["label"] = "prod"
    (forged / "scorecard.json").write_bytes(
        json.dumps(card, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())

    code, card, _ = gate.run(refund.rows(fixed=True), "--trusted-key",
                             str(keys["trusted"] / "public.pem"), "--baseline-label", "prod",
                             "--history", str(history))
    comparison = card["comparison"]
    assert comparison["status"] == "comparable" and comparison["reasons"] == []
    assert comparison["baseline"]["scorecard_sha256"] == sha(chosen)
    assert {c["status"] for c in comparison["categories"].values()} == {"stable"}
    assert (code, card["decision"], comparison["regressed"]) == (0, "PASS", False)
    selection = comparison["selection"]
    assert selection["label"] == "prod" and selection["skipped"] == 4
    skipped = sorted(r.split(":")[0] for r in selection["skipped_reasons"])
    assert skipped == ["c-tampered/scorecard.json", "d-unsigned/scorecard.json",
                       "e-other-key/scorecard.json", "g-forged/scorecard.json"]
    assert any("DIGEST_MISMATCH" in r for r in selection["skipped_reasons"])
    assert any("UNSIGNED" in r for r in selection["skipped_reasons"])

    # b gone, z is the newest verifying one: a FAIL, so the same run now passes against it
    shutil.rmtree(chosen)
    _, card, _ = gate.run(refund.rows(fixed=True), "--trusted-key",
                          str(keys["trusted"] / "public.pem"), "--baseline-label", "prod",
                          "--history", str(history))
    assert card["comparison"]["baseline"]["scorecard_sha256"] == sha(older)
    assert card["comparison"]["categories"]["tool_call"]["status"] == "now passing"


def test_no_verifying_labelled_scorecard_is_a_missing_baseline(
        gate: Gate, keys: dict[str, Path], tmp_path: Path) -> None:
    gate.policy(required)
    history = tmp_path / "history"
    history.mkdir()
    _, _, out = gate.run(refund.rows(fixed=True), "--label", "prod")  # unsigned
    shutil.copytree(out, history / "unsigned")
    trust = ["--trusted-key", str(keys["trusted"] / "public.pem")]
    code, card, _ = gate.run(refund.rows(fixed=True), *trust, "--baseline-label", "prod",
                             "--history", str(history))
    comparison = card["comparison"]
    assert comparison["status"] == "missing" and comparison["selection"]["skipped"] == 1
    assert comparison["reasons"] == ["no scorecard labelled 'prod' under the history folder "
                                     "verifies against a trusted key (1 skipped)"]
    assert (code, card["decision"], codes(card)) == (3, "INCOMPLETE", ["BASELINE_MISSING"])
    # another label, and a folder that does not exist: nothing skipped, nothing found
    for label, folder in (("staging", history), ("prod", tmp_path / "nowhere")):
        _, card, _ = gate.run(refund.rows(fixed=True), *trust, "--baseline-label", label,
                              "--history", str(folder))
        assert card["comparison"]["status"] == "missing"
        assert card["comparison"]["selection"]["skipped"] == 0
    # no trusted key at all: nothing can verify
    _, card, _ = gate.run(refund.rows(fixed=True), "--baseline-label", "prod",
                          "--history", str(history))
    assert codes(card) == ["BASELINE_UNTRUSTED"]


def test_the_label_is_in_the_signed_scorecard_and_absent_without_one(
        gate: Gate, keys: dict[str, Path]) -> None:
    _, card, out = gate.run(refund.rows(fixed=True), "--key",
                            str(keys["trusted"] / "private.pem"), "--label", "v1.2_rc-3")
    assert card["label"] == "v1.2_rc-3"
    schema = json.loads((ROOT / "schemas" / "scorecard.schema.json").read_text())
    jsonschema.validate(card, schema)
    assert main(["verify", str(out / "scorecard.json"), "--trusted-key",
                 str(keys["trusted"] / "public.pem")]) == 0
    _, card, _ = gate.run(refund.rows(fixed=True))
    assert "label" not in card


@pytest.mark.parametrize(("extra", "code"), [
    (["--label", ""], "BAD_LABEL"),
    (["--label", "a/b"], "BAD_LABEL"),
    (["--label", "x" * 65], "BAD_LABEL"),
    (["--label", "prod\n"], "BAD_LABEL"),
    (["--baseline-label", "é", "--history", "h"], "BAD_LABEL"),
    (["--baseline", "b.json", "--baseline-label", "prod", "--history", "h"],
     "BASELINE_CONFLICT"),
    (["--baseline-label", "prod"], "BASELINE_CONFLICT"),
    (["--history", "h"], "BASELINE_CONFLICT"),
])
def test_bad_label_options_are_usage_errors(gate: Gate, capsys: Any, extra: list[str],
                                            code: str) -> None:
    status, _, out = gate.run(refund.rows(fixed=True), *extra)
    assert status == 2 and not out.exists()
    assert f"{code}:" in capsys.readouterr().err
