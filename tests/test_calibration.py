"""Judge calibration (agent-release-gate §11): the kappa arithmetic worked by hand, label
parsing, and end to end through ``engine calibrate`` and ``engine run`` with a real loopback
judge: the artifact is signed (checked with OpenSSL too) and the gate believes it only when
it verifies against a trusted key, names this run's judge, and covers the judged inspections
as they are now with kappa at or above the policy's current min_kappa.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import main
from engine.decide.calibration import (
    Table,
    agreement,
    exact_kappa,
    kappa,
    label,
    meets,
    statistics,
)
from engine.evidence import signing
from engine.evidence.verify import MAX_SIGNED_BYTES

from . import refund
from .conftest import ROOT, Gate, need_tool
from .judge_server import Judge
from .test_judge import FAST, cache_key, grounding  # noqa: F401 - cache_key: autouse fixture

# ---------------------------------------------------------------- arithmetic, by hand


def test_kappa_of_the_worked_example() -> None:
    # tp=8 fn=2 fp=1 tn=9, n=20: po=(8+9)/20=0.85, pj=(8+1)/20=0.45, ph=(8+2)/20=0.5,
    # pe=0.45*0.5+0.55*0.5=0.5, kappa=(0.85-0.5)/(1-0.5)=0.7
    got = statistics(Table(tp=8, fp=1, tn=9, fn=2))
    assert got["n"] == 20
    assert got["accuracy"] == pytest.approx(0.85)
    assert got["sensitivity"] == pytest.approx(0.8)   # 8/(8+2)
    assert got["specificity"] == pytest.approx(0.9)   # 9/(9+1)
    assert got["kappa"] == pytest.approx(0.7)


def test_kappa_when_chance_agreement_is_certain() -> None:
    # every row passed by both: pj=1, ph=1, pe=1*1+0*0=1 and po=1 -> kappa 1 by the rule
    assert kappa(Table(tp=5)) == 1.0
    # every row failed by both: pj=0, ph=0, pe=0*0+1*1=1 and po=1 -> 1
    assert kappa(Table(tn=3)) == 1.0
    # judge passes all, human fails all: pj=1, ph=0, pe=1*0+0*1=0, po=0 -> (0-0)/(1-0)=0
    assert kappa(Table(fp=4)) == 0.0
    # From whole counts pe=1 needs pj and ph both 0 or both 1, and then po=1: the rule's
    # other branch (pe=1, po<1) is reached only through the formula itself.
    assert agreement(1.0, 1.0) == 1.0
    assert agreement(0.5, 1.0) == 0.0
    assert agreement(0.85, 0.5) == pytest.approx(0.7)  # (0.85-0.5)/(1-0.5)


def test_kappa_of_opposite_verdicts() -> None:
    # tp=0 fp=2 tn=0 fn=2, n=4: po=0, pj=0.5, ph=0.5, pe=0.25+0.25=0.5, kappa=(0-0.5)/0.5=-1
    assert kappa(Table(fp=2, fn=2)) == -1.0
    # tp=1 fp=1 tn=1 fn=1: po=0.5, pj=0.5, ph=0.5, pe=0.5, kappa=0 (chance agreement)
    assert kappa(Table(tp=1, fp=1, tn=1, fn=1)) == 0.0


def test_sensitivity_and_specificity_are_null_without_their_class() -> None:
    only_pass = statistics(Table(tp=3, fn=1))  # no human fail: specificity null
    assert only_pass["specificity"] is None and only_pass["sensitivity"] == 0.75
    only_fail = statistics(Table(tn=2, fp=2))  # no human pass: sensitivity null
    assert only_fail["sensitivity"] is None and only_fail["specificity"] == 0.5
    with pytest.raises(ValueError):
        statistics(Table())


@pytest.mark.parametrize("value, human", [
    (True, True), (False, False), ("pass", True), (" PASS ", True), ("Fail", False),
    ("true", True), ("FALSE", False), ("yes", True), ("\tNo\n", False)])
def test_accepted_labels(value: Any, human: bool) -> None:
    assert label(value) is human


@pytest.mark.parametrize("value", [1, 0, None, "passed", "", "y", 1.0, ["pass"], {"v": 1}])
def test_refused_labels(value: Any) -> None:
    with pytest.raises(ValueError, match="true/false, pass/fail or yes/no"):
        label(value)


# ---------------------------------------------------------------- end to end

HUMAN_PASS = range(1, 11)         # rows g1..g10 the human passes, g11..g20 fails
JUDGE_PASS = {1, 2, 3, 4, 5, 6, 7, 8, 11}  # tp=8 (g1-g8), fn=2 (g9,g10), fp=1 (g11), tn=9


def answers(judge: Judge, passes: set[int] | range) -> None:
    """The judge scores row g<i> 5 (pass_when score >= 4 holds) when i is in ``passes``,
    else 2."""
    def step(body: dict[str, Any]) -> dict[str, Any]:
        found = re.search(r"A-(\d+) ships", json.dumps(body))
        assert found is not None
        score = 5 if int(found[1]) in passes else 2
        return {"verdict": json.dumps({"score": score, "reason": "r"})}
    judge.script["m1"] = step


@pytest.fixture
def judge(monkeypatch: Any) -> Iterator[Judge]:
    monkeypatch.setenv("SPECGATE_TEST_KEY", "k-123")
    server = Judge()
    answers(server, range(1, 21))
    yield server
    server.close()


def configure(gate: Gate, judge: Judge, **extra: Any) -> None:
    path = gate.dir / "evaluation.yaml"
    data = yaml.safe_load(path.read_text())
    data["spec"]["judge"] = {"provider": "openai-compatible", "model": "m1",
                             "base_url": f"{judge.url}/v1", "api_key_env": "SPECGATE_TEST_KEY",
                             **FAST, **extra}
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def holdout(gate: Gate, labels: dict[int, Any] | None = None) -> Path:
    rows = []
    for i in range(1, 21):
        row = grounding(i)
        value = (labels or {}).get(i, "pass" if i in HUMAN_PASS else "fail")
        if value is not None:
            row["human_label"] = value
        rows.append(row)
    path = gate.root / "holdout.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    """Governance's key pair, and an untrusted one."""
    signing.keygen(tmp_path / "gov")
    signing.keygen(tmp_path / "other")
    return tmp_path / "gov", tmp_path / "other"


def calibrate(gate: Gate, data: Path, key: Path | None, *extra: str,
              out: str = "calibration") -> tuple[int, Path]:
    dest = gate.dir / out
    args = ["calibrate", str(gate.dir), "--input", f"runs={data}", "--out", str(dest),
            "--no-judge-cache", *extra]
    return main(args + (["--key", str(key / "private.pem")] if key else [])), dest


def require(gate: Gate, artifact: str | None = "calibration/calibration.json",
            **settings: Any) -> None:
    gate.policy(lambda spec: spec.setdefault("judge", {}).update(
        calibration={"required": True, **settings}))
    if artifact is not None:
        path = gate.dir / "evaluation.yaml"
        data = yaml.safe_load(path.read_text())
        data["spec"]["judge"]["calibration"] = artifact
        path.write_text(yaml.safe_dump(data, sort_keys=False))


def gate_run(gate: Gate, trusted: Path | None, *extra: str,
             runs: Path | None = None) -> tuple[int, dict[str, Any]]:
    """A gated run whose Evaluation declares ``trusted`` (governance's key pair folder) in
    judge.calibration_keys (none when None), and ``runs`` in history.trusted_keys."""
    path = gate.dir / "evaluation.yaml"
    data = yaml.safe_load(path.read_text())
    spec = data["spec"]
    for block, key, pair in (("judge", "calibration_keys", trusted),
                             ("history", "trusted_keys", runs)):
        spec.setdefault(block, {}).pop(key, None)
        if pair is not None:
            (gate.dir / "keys").mkdir(exist_ok=True)
            shutil.copy(pair / "public.pem", gate.dir / "keys" / f"{pair.name}.pub.pem")
            spec[block][key] = [f"keys/{pair.name}.pub.pem"]
        if not spec[block]:
            spec.pop(block)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    rows = refund.rows(fixed=True) + [grounding(1), grounding(2)]
    code, card, _ = gate.run(rows, "--no-judge-cache", *extra)
    return code, card


def reasons(card: dict[str, Any]) -> list[str]:
    return [r["code"] for r in card["reasons"]]


def test_calibrate_writes_a_signed_artifact_and_the_gate_believes_it(
        gate: Gate, judge: Judge, keys: tuple[Path, Path], capsys: Any) -> None:
    configure(gate, judge)
    answers(judge, set(JUDGE_PASS))
    code, out = calibrate(gate, holdout(gate), keys[0])
    said = capsys.readouterr().out
    assert code == 1  # kappa 0.7 < min_kappa 0.85
    value = json.loads((out / "calibration.json").read_bytes())
    grounding_stats = value["categories"]["grounding"]
    assert {k: grounding_stats[k] for k in ("n", "tp", "fp", "tn", "fn")} == \
        {"n": 20, "tp": 8, "fp": 1, "tn": 9, "fn": 2}
    assert grounding_stats["kappa"] == pytest.approx(0.7) and grounding_stats["met"] is False
    assert value["unlabelled"] == 0 and value["label_field"] == "human_label"
    assert set(value["judged"]) == {"grounding", "safety", "injection"}
    assert "grounding" in said and "0.7000" in said and "NO" in said
    assert sorted(p.name for p in out.iterdir()) == [
        "calibration.intoto.jsonl", "calibration.json", "calibration.json.sig",
        "judgements.jsonl", "signer.pub.pem"]
    openssl = need_tool("openssl")
    checked = subprocess.run([openssl, "pkeyutl", "-verify", "-pubin", "-inkey",
                              str(keys[0] / "public.pem"), "-rawin", "-in",
                              str(out / "calibration.json"), "-sigfile",
                              str(out / "calibration.json.sig")],
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # kappa 0.7 is below the default 0.85: the gate holds grounding UNRESOLVED
    require(gate)
    code, card = gate_run(gate, keys[0])
    assert code == 3 and "CALIBRATION_MISSING" in reasons(card)
    assert card["categories"]["grounding"]["state"] == "UNRESOLVED"
    assert card["calibration"]["status"] == "verified"
    assert "kappa 0.7 is below min_kappa 0.85" in card["calibration"]["categories"][
        "grounding"]["why"]
    # governance lowers min_kappa in the policy: the same artifact now calibrates grounding
    require(gate, min_kappa=0.7)
    code, card = gate_run(gate, keys[0])
    assert card["decision"] == "PASS" and code == 0, card["reasons"]
    entry = card["calibration"]["categories"]["grounding"]
    assert entry["calibrated"] is True and entry["n"] == 20


@pytest.fixture
def calibrated(gate: Gate, judge: Judge, keys: tuple[Path, Path]) -> Path:
    """An artifact where the judge agrees with every label (kappa 1), signed by governance."""
    configure(gate, judge)
    answers(judge, set(HUMAN_PASS))
    code, out = calibrate(gate, holdout(gate), keys[0])
    assert code == 0
    answers(judge, set(range(1, 21)))
    return out


def test_required_calibration_without_an_artifact_is_incomplete(
        gate: Gate, calibrated: Path, keys: tuple[Path, Path]) -> None:
    require(gate, artifact=None)
    code, card = gate_run(gate, keys[0])
    assert code == 3 and card["decision"] == "INCOMPLETE"
    missing = [r for r in card["reasons"] if r["code"] == "CALIBRATION_MISSING"]
    assert missing[0]["spec_path"] == "policy:spec.judge.calibration"
    assert "no calibration artifact is named" in missing[0]["message"]
    assert card["calibration"]["status"] == "missing"


def test_a_trusted_artifact_with_the_same_judge_gives_the_ordinary_result(
        gate: Gate, calibrated: Path, keys: tuple[Path, Path]) -> None:
    require(gate)
    code, card = gate_run(gate, keys[0])
    assert code == 0 and card["decision"] == "PASS", card["reasons"]
    block = card["calibration"]
    assert block["status"] == "verified" and block["artifact"]["signer"] == \
        __import__("hashlib").sha256(signing.raw_public(signing.load_public(
            keys[0] / "public.pem"))).hexdigest()
    assert block["categories"]["grounding"]["kappa"] == 1.0
    md = (gate.root / f"out-{gate.runs}" / "scorecard.md").read_text()
    assert "Judge calibration" in md


def test_an_artifact_signed_by_an_untrusted_key_is_not_believed(
        gate: Gate, calibrated: Path, keys: tuple[Path, Path]) -> None:
    require(gate)
    code, card = gate_run(gate, keys[1])  # the run trusts only the other key
    assert code == 3 and "CALIBRATION_MISSING" in reasons(card)
    assert card["calibration"]["status"] == "untrusted"
    code, card = gate_run(gate, None)  # no trusted key at all (signer.pub.pem is never used)
    assert code == 3 and card["calibration"]["status"] == "untrusted"


def test_edited_artifact_bytes_are_not_believed(gate: Gate, calibrated: Path,
                                                keys: tuple[Path, Path]) -> None:
    path = calibrated / "calibration.json"
    path.write_bytes(path.read_bytes().replace(b'"min_kappa":0.85', b'"min_kappa":0.84'))
    require(gate)
    code, card = gate_run(gate, keys[0])
    assert code == 3 and "CALIBRATION_MISSING" in reasons(card)
    assert card["calibration"]["status"] == "untrusted"
    assert "DIGEST_MISMATCH" in card["calibration"]["reason"]


def test_another_judge_model_is_not_the_calibrated_judge(gate: Gate, calibrated: Path,
                                                         keys: tuple[Path, Path]) -> None:
    require(gate)
    code, card = gate_run(gate, keys[0], "--judge-model", "other")
    assert code == 3 and "CALIBRATION_MISSING" in reasons(card)
    assert card["calibration"]["status"] == "mismatch"
    assert "judge identity differs" in card["calibration"]["reason"]


def test_a_changed_pass_when_invalidates_the_calibration(gate: Gate, calibrated: Path,
                                                         keys: tuple[Path, Path]) -> None:
    def stricter(spec: dict[str, Any]) -> None:
        for entry in spec["inspections"]:
            if entry["id"] == "grounding":
                entry["pass_when"] = "score >= 5"
    gate.policy(stricter)
    require(gate)
    code, card = gate_run(gate, keys[0])
    assert code == 3 and "CALIBRATION_MISSING" in reasons(card)
    assert "inspections_sha256 differs" in card["calibration"]["categories"]["grounding"]["why"]


def test_a_signed_scorecard_is_not_a_calibration_artifact(
        gate: Gate, calibrated: Path, keys: tuple[Path, Path]) -> None:
    gate.run(refund.rows(fixed=True), "--no-judge-cache", "--key",
             str(keys[0] / "private.pem"))
    card_dir = gate.dir / "card"
    (gate.root / f"out-{gate.runs}").rename(card_dir)
    require(gate, artifact="card/scorecard.json")
    code, card = gate_run(gate, keys[0])
    assert code == 3 and card["calibration"]["status"] == "untrusted"
    assert "WRONG_PREDICATE" in card["calibration"]["reason"]
    # and the reverse: engine verify refuses the calibration artifact as a scorecard
    assert main(["verify", str(calibrated / "calibration.json"), "--trusted-key",
                 str(keys[0] / "public.pem")]) == 1


def test_unreadable_artifacts_are_a_status_not_a_crash(gate: Gate, calibrated: Path,
                                                       keys: tuple[Path, Path]) -> None:
    import os
    deep = gate.dir / "deep"
    deep.mkdir()
    (deep / "calibration.json").write_bytes(b"[" * 100000 + b"]" * 100000)
    (deep / "calibration.json.sig").write_bytes(b"x")
    (deep / "calibration.intoto.jsonl").write_bytes(b"{}\n")
    fifo = gate.dir / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "calibration.json")  # reading it would block: it is never opened
    huge = gate.dir / "huge"
    huge.mkdir()
    with (huge / "calibration.json").open("wb") as handle:  # sparse: no disk is used
        handle.truncate(MAX_SIGNED_BYTES + 1)
    (gate.dir / "bad").mkdir()
    (gate.dir / "bad" / "calibration.json").write_bytes(b'{"calibration_version": ')
    for artifact in ("deep/calibration.json", "fifo/calibration.json", "huge/calibration.json",
                     "bad/calibration.json", "absent.json"):
        require(gate, artifact=artifact)
        code, card = gate_run(gate, keys[0])
        assert code == 3 and "CALIBRATION_MISSING" in reasons(card), artifact
        assert card["calibration"]["status"] in ("untrusted", "missing"), artifact
        assert card["calibration"]["reason"], artifact


def test_without_calibration_configured_the_scorecard_is_unchanged(
        gate: Gate, judge: Judge, keys: tuple[Path, Path]) -> None:
    configure(gate, judge)
    code, before = gate_run(gate, keys[0])
    gate.policy(lambda spec: spec.setdefault("judge", {}).update(
        calibration={"required": False}))
    code, after = gate_run(gate, keys[0])
    assert code == 0 and "calibration" not in after and "calibration" not in before
    # only the policy's own bytes differ (it now says required: false, and provenance
    # records its file's new digest), and the judge block's judgements digest (answers
    # record their latency); nothing is added
    policy = {"policy_sha256", "policy_document", "judge", "provenance"}
    assert after["provenance"]["specs"]["files"].keys() == \
        before["provenance"]["specs"]["files"].keys()
    assert after["judge_sha256"] == before["judge_sha256"]
    assert {k: v for k, v in after.items() if k not in policy} == \
        {k: v for k, v in before.items() if k not in policy}


def test_judge_errors_on_labelled_rows_leave_the_calibration_incomplete(
        gate: Gate, judge: Judge, keys: tuple[Path, Path], capsys: Any) -> None:
    configure(gate, judge)
    judge.script["m1"] = [{"status": 500}]
    code, out = calibrate(gate, holdout(gate), keys[0])
    assert code == 3 and not out.exists()
    assert not [p for p in gate.dir.iterdir() if "partial" in p.name]
    err = capsys.readouterr().err
    assert "CALIBRATION_INCOMPLETE" in err and "20 labelled row(s)" in err and "20 ERROR" in err


def test_a_bad_label_is_located_and_nothing_is_written(
        gate: Gate, judge: Judge, keys: tuple[Path, Path], capsys: Any) -> None:
    configure(gate, judge)
    code, out = calibrate(gate, holdout(gate, {3: "maybe", 5: None}), keys[0])
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err
    assert "BAD_HUMAN_LABEL" in err and "holdout.jsonl:3:" in err and "'maybe'" in err
    assert not judge.received  # refused before any judge was asked


def test_unlabelled_records_are_counted_and_not_in_the_hold_out(
        gate: Gate, judge: Judge, keys: tuple[Path, Path]) -> None:
    configure(gate, judge)
    answers(judge, set(HUMAN_PASS))
    code, out = calibrate(gate, holdout(gate, {19: None, 20: None}), None)
    value = json.loads((out / "calibration.json").read_bytes())
    assert code == 0 and value["unlabelled"] == 2
    assert value["categories"]["grounding"]["n"] == 18
    assert sorted(p.name for p in out.iterdir()) == ["calibration.json", "judgements.jsonl"]


def test_a_non_empty_out_and_a_missing_judge_are_usage_errors(
        gate: Gate, judge: Judge, keys: tuple[Path, Path], capsys: Any) -> None:
    configure(gate, judge)
    (gate.dir / "calibration").mkdir()
    (gate.dir / "calibration" / "earlier.txt").write_text("x")
    code, _ = calibrate(gate, holdout(gate), keys[0])
    assert code == 2 and "OUTPUT_EXISTS" in capsys.readouterr().err
    code, _ = calibrate(gate, holdout(gate), keys[0], "--judge-provider", "none",
                        out="again")
    assert code == 2 and "CALIBRATION_NO_JUDGE" in capsys.readouterr().err
    everything = main(["calibrate", str(ROOT / "specs"), "--out", str(gate.root / "x")])
    assert everything == 2 and "exactly one Evaluation" in capsys.readouterr().err


def test_a_key_on_the_command_line_cannot_vouch_for_a_calibration(
        gate: Gate, judge: Judge, keys: tuple[Path, Path]) -> None:
    # The evaluated party signs its own artifact (a perfect judge) with its own key and
    # hands the gate that key on the command line: the calibration is not believed.
    configure(gate, judge)
    answers(judge, set(JUDGE_PASS))
    code, _ = calibrate(gate, holdout(gate), keys[1])
    require(gate, min_kappa=0.5)
    code, card = gate_run(gate, None, "--trusted-key", str(keys[1] / "public.pem"))
    assert card["calibration"]["status"] == "untrusted"
    assert "judge.calibration_keys" in card["calibration"]["reason"]
    assert "CALIBRATION_MISSING" in reasons(card) and card["decision"] != "PASS"


# ------------------------------------------------ hostile review (calibration), regressions

def genuine_calibration(gate: Gate, judge: Judge, keys: tuple[Path, Path]) -> None:
    """Governance's genuine artifact for judge m1 (it agrees with every label: kappa 1),
    calibration required, governance's key in the Evaluation's trusted keys."""
    configure(gate, judge)
    answers(judge, set(HUMAN_PASS))
    assert calibrate(gate, holdout(gate), keys[0])[0] == 0
    require(gate)


def test_a_replay_of_answers_from_another_endpoint_never_passes(
        gate: Gate, judge: Judge, keys: tuple[Path, Path], tmp_path: Path) -> None:
    # The evaluated party runs once against its own endpoint (same model name), signs that
    # run with its own key, then replays it trusting that key on the command line.
    genuine_calibration(gate, judge, keys)
    answers(judge, set())  # the declared judge fails the agent's grounding rows
    code, card = gate_run(gate, keys[0])
    assert card["decision"] == "FAIL"
    evil = Judge()
    answers(evil, range(1, 100))
    try:
        code, card = gate_run(gate, keys[0], "--judge-base-url", f"{evil.url}/v1",
                              "--key", str(keys[1] / "private.pem"))
    finally:
        evil.close()
    assert "JUDGE_OVERRIDDEN" in reasons(card)
    source = sorted(gate.root.glob("out-*"))[-1]
    # trusted on the command line: replayed, but the command line's judge, never a PASS
    code, card = gate_run(gate, keys[0], "--judge-replay", str(source), "--trusted-key",
                          str(keys[1] / "public.pem"))
    assert code == 3 and card["decision"] == "INCOMPLETE"
    assert "JUDGE_OVERRIDDEN" in reasons(card)
    # trusted by nobody governance names: refused before a row is scored
    code, card = gate_run(gate, keys[0], "--judge-replay", str(source))
    assert code == 2 and not card


def test_answers_cached_from_another_endpoint_are_not_the_declared_judges(
        gate: Gate, judge: Judge, keys: tuple[Path, Path], tmp_path: Path) -> None:
    genuine_calibration(gate, judge, keys)
    answers(judge, set())
    evil = Judge()
    answers(evil, range(1, 100))
    cache = str(tmp_path / "cache")
    rows = refund.rows(fixed=True) + [grounding(11), grounding(12)]
    gate_run(gate, keys[0])  # trusted_keys set; the next runs use the cache
    try:
        _, card, _ = gate.run(rows, "--judge-cache", cache, "--judge-base-url",
                              f"{evil.url}/v1")
    finally:
        evil.close()
    assert "JUDGE_OVERRIDDEN" in reasons(card)
    before = judge.calls()
    _, card, _ = gate.run(rows, "--judge-cache", cache)
    assert judge.calls() > before  # the declared judge was asked, not the cache
    assert card["decision"] == "FAIL"


def test_an_artifact_signed_by_the_runs_own_key_is_not_believed(
        gate: Gate, judge: Judge, keys: tuple[Path, Path]) -> None:
    # whoever holds the key signing this run must not vouch for a calibration of their own,
    # even when the Evaluation (wrongly) declares it for calibration as well
    genuine_calibration(gate, judge, keys)
    code, card = gate_run(gate, keys[0], "--key", str(keys[0] / "private.pem"))
    assert card["calibration"]["status"] == "untrusted"
    assert "a key that signs runs" in card["calibration"]["reason"]
    assert "CALIBRATION_MISSING" in reasons(card)


def test_a_key_trusted_for_baselines_never_vouches_for_a_calibration(
        gate: Gate, judge: Judge, keys: tuple[Path, Path]) -> None:
    # issue 26, attack 3: the CI signing key is in history.trusted_keys (for baselines); a
    # calibration signed with it used to be refused only when the run was signed with that
    # same key, and the same run unsigned PASSed with status verified
    genuine_calibration(gate, judge, keys)
    # the key only in history.trusted_keys: not a calibration key at all
    code, card = gate_run(gate, None, runs=keys[0])
    assert code == 3 and card["decision"] == "INCOMPLETE"
    assert card["calibration"]["status"] == "untrusted"
    assert "judge.calibration_keys" in card["calibration"]["reason"]
    assert "CALIBRATION_MISSING" in reasons(card)
    # declared for calibration too: a key that signs runs vouches for nothing, signed or not
    code, card = gate_run(gate, keys[0], runs=keys[0])
    assert code == 3 and card["calibration"]["status"] == "untrusted"
    assert "a key that signs runs" in card["calibration"]["reason"]
    # the same key handed in as --trusted-key for a baseline: the same
    code, card = gate_run(gate, keys[0], "--trusted-key", str(keys[0] / "public.pem"))
    assert code == 3 and card["calibration"]["status"] == "untrusted"
    # the honest arrangement: governance's calibration key apart from the run keys
    code, card = gate_run(gate, keys[0], runs=keys[1])
    assert card["calibration"]["status"] == "verified" and code == 0, card["reasons"]


def test_only_the_judges_own_verdicts_are_counted(gate: Gate, judge: Judge,
                                                   keys: tuple[Path, Path]) -> None:
    # grounding gains a deterministic inspection that agrees with every label; it must not
    # inflate n or kappa. Judge as in JUDGE_PASS: tp=8 fp=1 tn=9 fn=2 -> n 20, kappa 0.7.
    def add(spec: dict[str, Any]) -> None:
        spec["inspections"].append({"id": "ships", "type": "contains",
                                    "actual": "agent_output", "values": ["ships"],
                                    "when": "dimension == 'grounding'"})
        spec["categories"]["grounding"]["inspections"].append("ships")
    gate.policy(add)
    configure(gate, judge)
    answers(judge, set(JUDGE_PASS))
    _, out = calibrate(gate, holdout(gate), keys[0])
    stats = json.loads((out / "calibration.json").read_bytes())["categories"]["grounding"]
    assert (stats["n"], stats["kappa"]) == (20, pytest.approx(0.7))


def test_kappa_exactly_at_the_bar_meets_it() -> None:
    # tp=9 fn=1 tn=10 fp=0: po=19/20, pj=9/20, ph=1/2, pe=1/2, kappa=(19/20-1/2)/(1/2)=9/10
    # exactly; in doubles 0.8999999999999999. The bar 0.9 is met.
    cells = {"tp": 9, "fp": 0, "tn": 10, "fn": 1}
    assert kappa(Table(**cells)) < 0.9
    assert exact_kappa(**cells) == Fraction(9, 10) and meets(cells, 0.9)
    assert not meets(cells, 0.9000001)


def test_a_labelled_record_refused_by_the_run_leaves_calibration_incomplete(
        gate: Gate, judge: Judge, keys: tuple[Path, Path], capsys: Any) -> None:
    configure(gate, judge)
    data = holdout(gate)
    lines = data.read_text().splitlines()
    data.write_text("\n".join([*lines, lines[-1]]) + "\n")  # g20 again: DUPLICATE_ID
    code, out = calibrate(gate, data, keys[0])
    assert code == 3 and not out.exists()
    assert "CALIBRATION_INCOMPLETE" in capsys.readouterr().err


def test_a_mock_judge_is_not_calibrated(gate: Gate, judge: Judge, keys: tuple[Path, Path],
                                        capsys: Any) -> None:
    configure(gate, judge)
    code, out = calibrate(gate, holdout(gate), keys[0], "--judge-provider", "mock")
    assert code == 2 and not out.exists()
    assert "CALIBRATION_NO_JUDGE" in capsys.readouterr().err
