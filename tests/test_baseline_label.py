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
from engine.decide import fixcheck

from . import refund
from .conftest import ROOT, Gate, Spec


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
    gate.trust(keys["trusted"] / "public.pem")  # a release: the Evaluation's key
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

    code, card, _ = gate.run(refund.rows(fixed=True), "--baseline-label", "prod",
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
    _, card, _ = gate.run(refund.rows(fixed=True), "--baseline-label", "prod",
                          "--history", str(history))
    assert card["comparison"]["baseline"]["scorecard_sha256"] == sha(older)
    assert card["comparison"]["categories"]["tool_call"]["status"] == "now passing"


def test_no_verifying_labelled_scorecard_is_a_missing_baseline(
        gate: Gate, keys: dict[str, Path], tmp_path: Path) -> None:
    gate.trust(keys["trusted"] / "public.pem")
    # a triage whose comparison gates: a release's gating comparison takes no label
    gate.policy(lambda spec: spec["gate"].update(purpose="triage", comparison={
        "required": True}))
    history = tmp_path / "history"
    history.mkdir()
    _, _, out = gate.run(refund.rows(fixed=True), "--label", "prod")  # unsigned
    shutil.copytree(out, history / "unsigned")
    code, card, _ = gate.run(refund.rows(fixed=True), "--baseline-label", "prod",
                             "--history", str(history))
    comparison = card["comparison"]
    assert comparison["status"] == "missing" and comparison["selection"]["skipped"] == 1
    assert comparison["reasons"] == ["no scorecard labelled 'prod' under the history folder "
                                     "verifies against a trusted key (1 skipped)"]
    assert (code, card["decision"]) == (4, "TRIAGE") and "BASELINE_MISSING" in codes(card)
    # another label, and a folder that does not exist: nothing skipped, nothing found
    for label, folder in (("staging", history), ("prod", tmp_path / "nowhere")):
        _, card, _ = gate.run(refund.rows(fixed=True), "--baseline-label", label,
                              "--history", str(folder))
        assert card["comparison"]["status"] == "missing"
        assert card["comparison"]["selection"]["skipped"] == 0
    # no trusted key at all: nothing can verify
    gate.trust()
    _, card, _ = gate.run(refund.rows(fixed=True), "--baseline-label", "prod",
                          "--history", str(history))
    assert "BASELINE_UNTRUSTED" in codes(card) and card["decision"] == "TRIAGE"


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


# Fix verification (§9): a finding of the baseline is fixed only by a rerun with the same
# suite digest, at least as many trials, and every trial of the case passing. The refund
# fixture before its fix refunds everything: over-limit (250 > the contract's 100) fails
# tool_call, and over-limit and unauthorized (both should escalate) fail
# action_correctness, each in all 3 trials.
BEFORE_FINDINGS = {"tool_call:over-limit", "action_correctness:over-limit",
                   "action_correctness:unauthorized"}


def fixes(card: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {f["id"]: (f["status"], f["reason"]) for f in card["comparison"]["fixes"]}


def test_each_baseline_finding_is_verified_still_failing_or_not_verifiable(
        gate: Gate, keys: dict[str, Path]) -> None:
    gate.trust(keys["trusted"] / "public.pem")  # a release: the Evaluation's key
    _, before, before_out = gate.run(refund.rows(fixed=False), "--key",
                                     str(keys["trusted"] / "private.pem"))
    assert {f["id"] for f in before["findings"]} == BEFORE_FINDINGS
    against = ["--baseline", str(before_out / "scorecard.json")]
    _, card, _ = gate.run(refund.rows(fixed=True), *against)
    assert card["comparison"]["status"] == "comparable"
    assert fixes(card) == {i: ("verified", "every one of 3 trials passed (the baseline ran 3)")
                           for i in BEFORE_FINDINGS}
    # one trial of over-limit still refunds 250: that tool_call finding is not fixed
    broken = {r["id"]: r for r in refund.rows(fixed=False)}
    mixed = [broken[r["id"]] if r["id"] == "over-limit-1-tool_call" else r
             for r in refund.rows(fixed=True)]
    _, card, _ = gate.run(mixed, *against)
    assert fixes(card)["tool_call:over-limit"] == (
        "still failing", "1 of its rows in 3 trials did not pass")
    assert fixes(card)["action_correctness:over-limit"][0] == "verified"
    # the third trial of over-limit left out: another suite, so nothing can be verified
    fewer = [r for r in refund.rows(fixed=True) if not r["id"].startswith("over-limit-2-")]
    _, card, _ = gate.run(fewer, *against)
    assert card["comparison"]["status"] == "incompatible"
    assert set(fixes(card).values()) == {
        ("not verifiable", "the comparison is not comparable: suite_sha256 differs")}
    assert set(fixes(card)) == BEFORE_FINDINGS


def test_fewer_trials_under_the_same_suite_cannot_verify_a_fix(
        spec: Spec, keys: dict[str, Path]) -> None:
    # specs/example declares its Suite (2 trials a case), so its digest stays the same when
    # a run is left out. Its run-004 misses "30 days" (resolution FAIL in 1 of 2 trials) and
    # card-on-file's first trial is too slow (efficiency FAIL).
    _, base = spec.run("--key", str(keys["trusted"] / "private.pem"), out="base")
    assert {f["id"] for f in spec.scorecard("base")["findings"]} == {
        "resolution:refund-outside-window", "efficiency:card-on-file"}
    spec.trust(keys["trusted"] / "public.pem")  # a release: the Evaluation's key
    against = ["--baseline", str(base / "scorecard.json")]
    runs = spec.runs()
    spec.write_runs([r for r in runs if r["id"] != "run-004"])
    spec.run(*against, out="fewer")
    card = spec.scorecard("fewer")
    assert card["suite_sha256"] == spec.scorecard("base")["suite_sha256"]
    assert fixes(card) == {
        "resolution:refund-outside-window": ("not verifiable",
                                             "1 trials, fewer than the baseline's 2"),
        "efficiency:card-on-file": ("still failing", "1 of its rows in 2 trials did not pass")}
    fixed = [dict(r, output=dict(r["output"], reply=r["output"]["reply"].replace(
        "thirty days", "30 days"))) for r in runs]
    spec.write_runs(fixed)
    spec.run(*against, out="fixed")
    assert fixes(spec.scorecard("fixed"))["resolution:refund-outside-window"] == (
        "verified", "every one of 2 trials passed (the baseline ran 2)")


def test_no_fix_is_verified_against_a_baseline_that_is_not_comparable(
        gate: Gate, keys: dict[str, Path]) -> None:
    # The same suite, every trial passing, but the policy changed since the baseline (a
    # threshold): the comparison is incompatible, so not one fix counts as verified.
    gate.trust(keys["trusted"] / "public.pem")  # a release: the Evaluation's key
    _, _, before_out = gate.run(refund.rows(fixed=False), "--key",
                                str(keys["trusted"] / "private.pem"))
    gate.policy(lambda spec: spec["categories"]["tool_call"].update(threshold=0.5))
    _, card, _ = gate.run(refund.rows(fixed=True), "--baseline",
                          str(before_out / "scorecard.json"))
    assert card["comparison"]["status"] == "incompatible"
    assert set(fixes(card).values()) == {
        ("not verifiable", "the comparison is not comparable: policy_sha256 differs")}
    assert set(fixes(card)) == BEFORE_FINDINGS


def test_a_baseline_short_of_the_suites_trials_verifies_no_fix(
        spec: Spec, keys: dict[str, Path]) -> None:
    # specs/example declares 2 trials a case. A baseline that ran refund-outside-window
    # once (its passing run-003 left out; run-004 says "thirty days") is INCOMPLETE, and a
    # rerun that also runs it once, passing, does not verify the fix: one passing trial is
    # as many as the baseline ran, fewer than the suite wants.
    runs = spec.runs()
    spec.write_runs([r for r in runs if r["id"] != "run-003"])
    spec.run("--key", str(keys["trusted"] / "private.pem"), out="base")
    base = spec.scorecard("base")
    assert base["decision"] == "INCOMPLETE" and "CASE_MISSING" in codes(base)
    assert "resolution:refund-outside-window" in {f["id"] for f in base["findings"]}
    spec.write_runs([dict(r, output=dict(r["output"], reply=r["output"]["reply"].replace(
        "thirty days", "30 days"))) for r in runs if r["id"] != "run-003"])
    spec.trust(keys["trusted"] / "public.pem")  # a release: the Evaluation's key
    spec.run("--baseline", str(spec.root / "base" / "scorecard.json"), out="rerun")
    card = spec.scorecard("rerun")
    assert card["comparison"]["status"] == "incompatible"
    assert fixes(card)["resolution:refund-outside-window"] == (
        "not verifiable", "the comparison is not comparable: the baseline decision is "
        "INCOMPLETE, not PASS or FAIL")


def test_the_suites_declared_trials_bound_a_fix_even_where_the_baseline_ran_fewer() -> None:
    # Defence in depth behind the INCOMPLETE baseline above: the count a fix needs is the
    # larger of the baseline's trials and the suite's.
    key = ("resolution", "refund-outside-window")
    now = {key: ({"run-004"}, 0)}
    before = {key: ({"run-004"}, 1)}
    assert fixcheck._one(key, now, before, 2) == (
        "not verifiable", "1 trials, fewer than the 2 the suite declares")
    assert fixcheck._one(key, now, before, 1) == (
        "verified", "every one of 1 trials passed (the baseline ran 1)")


def test_the_comparison_names_the_baselines_signed_time_and_evaluation(
        gate: Gate, keys: dict[str, Path]) -> None:
    gate.trust(keys["trusted"] / "public.pem")  # a release: the Evaluation's key
    _, before, before_out = gate.run(refund.rows(fixed=False), "--key",
                                     str(keys["trusted"] / "private.pem"))
    _, card, _ = gate.run(refund.rows(fixed=True), "--baseline",
                          str(before_out / "scorecard.json"))
    statement = json.loads(__import__("base64").b64decode(json.loads(
        (before_out / "scorecard.intoto.jsonl").read_text().splitlines()[0])["payload"]))
    chosen = card["comparison"]["baseline"]
    assert chosen["generated_at"] == statement["predicate"]["generated_at"]
    assert chosen["evaluation"] == before["evaluation"]["name"]
    assert chosen["scorecard_sha256"] == sha(before_out)


@pytest.mark.parametrize("plant", ["nested", "fifo", "nested-envelope"])
def test_a_hostile_file_in_the_history_is_skipped_never_a_crash_or_a_hang(
        gate: Gate, keys: dict[str, Path], tmp_path: Path, plant: str) -> None:
    # The history folder sits on the evaluated party's runner: what they put there can
    # only be skipped, with its reason, beside the real labelled baseline.
    gate.trust(keys["trusted"] / "public.pem")  # a release: the Evaluation's key
    sign = ["--key", str(keys["trusted"] / "private.pem"), "--label", "prod"]
    history = tmp_path / "history"
    _, _, out = gate.run(refund.rows(fixed=False), *sign)
    shutil.copytree(out, history / "real")
    (history / "planted").mkdir()
    if plant == "nested":
        (history / "planted" / "scorecard.json").write_text("[" * 200000 + "]" * 200000)
    elif plant == "fifo":
        os.mkfifo(history / "planted" / "scorecard.json")
    else:  # a copy of the real run whose envelope nests too deep to parse
        shutil.rmtree(history / "planted")
        shutil.copytree(out, history / "planted")
        (history / "planted" / "scorecard.intoto.jsonl").write_text(
            "[" * 200000 + "]" * 200000)
    code, card, _ = gate.run(refund.rows(fixed=True), "--baseline-label",
                             "prod", "--history", str(history))
    assert code in (0, 1), code
    assert card["comparison"]["status"] == "comparable"
    assert card["comparison"]["baseline"]["scorecard_sha256"] == sha(history / "real")
    reasons = card["comparison"]["selection"]["skipped_reasons"]
    want = {"nested": "UNSIGNED", "fifo": "NOT_A_FILE", "nested-envelope": "BAD_ENVELOPE"}
    assert [r.split(": ")[1] for r in reasons] == [want[plant]], reasons


def test_the_reports_show_the_chosen_baseline_and_each_fix(
        gate: Gate, keys: dict[str, Path], tmp_path: Path) -> None:
    gate.trust(keys["trusted"] / "public.pem")  # a release: the Evaluation's key
    history = tmp_path / "history"
    _, before, out = gate.run(refund.rows(fixed=False), "--key",
                              str(keys["trusted"] / "private.pem"), "--label", "prod")
    shutil.copytree(out, history / "v1")
    _, card, now = gate.run(refund.rows(fixed=True), "--baseline-label", "prod",
                            "--history", str(history))
    chosen = card["comparison"]["baseline"]
    assert chosen["label"] == "prod"
    md = (now / "scorecard.md").read_text()
    assert (f"Baseline `{sha(history / 'v1')}` of {before['evaluation']['name']}, label prod, "
            f"signed {chosen['generated_at']}, decision FAIL") in md
    assert "Chosen by label prod from the history folder; 0 scorecard(s) skipped." in md
    # Markdown escapes the parentheses of the evidence's text
    assert "| tool_call:over-limit | verified | every one of 3 trials passed \\(the baseline " \
        "ran 3\\) |" in md, md
    html = (now / "scorecard.html").read_text()
    assert "<td>tool_call:over-limit</td><td>verified</td><td>every one of 3 trials passed " \
        "(the baseline ran 3)</td>" in html
    assert f"label prod, signed {chosen['generated_at']}" in html


def test_a_release_trusts_no_baseline_key_from_the_command_line(
        gate: Gate, keys: dict[str, Path], tmp_path: Path) -> None:
    # issue 26: whoever runs CI signs a weaker, newer "prod" run with a key of their own
    # and hands that key in with --trusted-key
    gate.trust(keys["trusted"] / "public.pem")
    history = tmp_path / "history"
    _, _, out = gate.run(refund.rows(fixed=True), "--key",
                         str(keys["trusted"] / "private.pem"), "--label", "prod")
    shutil.copytree(out, history / "governance")
    next_second()
    _, _, out = gate.run(refund.rows(fixed=False), "--key",
                         str(keys["other"] / "private.pem"), "--label", "prod")
    shutil.copytree(out, history / "weaker")  # the team's own, newer and as bad as now
    team = ["--trusted-key", str(keys["other"] / "public.pem")]
    code, card, _ = gate.run(refund.rows(fixed=False), *team, "--baseline-label", "prod",
                             "--history", str(history))
    # the governance-signed baseline is still the one compared with: a regression
    assert card["comparison"]["baseline"]["scorecard_sha256"] == sha(history / "governance")
    assert card["comparison"]["regressed"] is True
    # the team's scorecard named by file: not trusted, and said why
    code, card, _ = gate.run(refund.rows(fixed=False), *team, "--baseline",
                             str(history / "weaker" / "scorecard.json"))
    assert card["comparison"]["status"] == "untrusted"
    assert any("history.trusted_keys only" in r for r in card["comparison"]["reasons"])
    # outside a release (triage), a --trusted-key still vouches for a baseline (verified:
    # not comparable only because the policy, now a triage, has another digest)
    gate.policy(lambda spec: spec["gate"].update(purpose="triage"))
    _, card, _ = gate.run(refund.rows(fixed=False), *team, "--baseline",
                          str(history / "weaker" / "scorecard.json"))
    assert card["comparison"]["status"] == "incompatible"
    assert card["comparison"]["reasons"] == ["policy_sha256 differs"]


def test_a_gating_release_comparison_is_against_governances_baseline_only(
        gate: Gate, keys: dict[str, Path], tmp_path: Path, capsys: Any) -> None:
    # hostile review (issue 26): the release job itself, driven by the team, signed a
    # weaker run labelled prod (9 wrong of 100 against a baseline of 0); the next candidate
    # (8 wrong) then compared with it: PASS, no regression. The runner picks --history,
    # --label and --baseline, so no choice of theirs can be the baseline of a release
    # whose comparison gates: it is the Evaluation's history.baseline, by review.
    gate.trust(keys["trusted"] / "public.pem")
    gate.policy(required)
    sign = ["--key", str(keys["trusted"] / "private.pem")]
    _, first, strong = gate.run(refund.rows(fixed=True), *sign, "--label", "prod")
    assert first["metrics_decision"] == "PASS"  # INCOMPLETE only for want of a baseline
    history = tmp_path / "history"
    shutil.copytree(strong, history / "strong")
    next_second()
    _, _, weak = gate.run(refund.rows(fixed=False), *sign, "--label", "prod")
    shutil.copytree(weak, history / "minted")  # the release key signed it, on request
    capsys.readouterr()
    for chosen in (["--baseline-label", "prod", "--history", str(history)],
                   ["--baseline", str(weak / "scorecard.json")]):
        code, card, out = gate.run(refund.rows(fixed=False), *sign, *chosen)
        assert code == 2 and not out.exists()
        assert "engine: BASELINE_NOT_GOVERNED: 'agent-release-gate' is a release whose " \
            "comparison gates" in capsys.readouterr().err
    gate.approve(strong)  # governance's reviewed baseline: the regression shows
    code, card, _ = gate.run(refund.rows(fixed=False), *sign)
    assert card["comparison"]["baseline"]["scorecard_sha256"] == sha(strong)
    assert (code, card["decision"]) == (1, "FAIL") and "REGRESSED" in codes(card)
    gate.approve(None)  # none approved: INCOMPLETE, never a PASS on the runner's word
    code, card, _ = gate.run(refund.rows(fixed=True), *sign)
    assert (code, card["decision"]) == (3, "INCOMPLETE") and "BASELINE_MISSING" in codes(card)
    # third hostile review: the file at history.baseline lies in a checkout the runner
    # writes; it copied its own signed FAIL run there (no link, no argument, no digest of
    # the specs changed) and the release PASSed. Only the pinned digest counts.
    gate.approve(strong)
    shutil.rmtree(gate.dir / "baseline")
    shutil.copytree(weak, gate.dir / "baseline")  # the runner's swap
    code, card, _ = gate.run(refund.rows(fixed=True), *sign)
    assert (code, card["decision"]) == (3, "INCOMPLETE") and "BASELINE_UNTRUSTED" in codes(card)
    assert "is not the one governance pinned" in card["comparison"]["reasons"][0]
    gate.approve(weak, pin=False)  # a baseline without its digest pinned: not governance's
    code, card, _ = gate.run(refund.rows(fixed=True), *sign)
    assert (code, card["decision"]) == (3, "INCOMPLETE") and "BASELINE_UNTRUSTED" in codes(card)
    assert "history.baseline_sha256 is not set" in card["comparison"]["reasons"][0]


@pytest.mark.parametrize("anchor", ["baseline", "trusted key", "link/.."])
def test_a_trust_anchor_through_a_link_is_a_spec_error(
        gate: Gate, keys: dict[str, Path], tmp_path: Path, capsys: Any, anchor: str) -> None:
    # second hostile review: a link in the spec folder to a place the runner writes, with
    # the spec root widened on the command line (engine run .), let the runner put its own
    # signed scorecard where history.baseline points
    gate.policy(required)
    _, _, before = gate.run(refund.rows(fixed=False), "--key",
                            str(keys["trusted"] / "private.pem"))
    planted = tmp_path / "artifacts"
    shutil.copytree(before, planted / "prod")
    shutil.copy(keys["other"] / "public.pem", planted / "other.pub.pem")
    if anchor == "baseline":
        gate.trust(keys["trusted"] / "public.pem")
        gate.approve(before)
        shutil.rmtree(gate.dir / "baseline")
        (gate.dir / "baseline").symlink_to(planted / "prod", target_is_directory=True)
        where = "spec.history.baseline"
    elif anchor == "link/..":  # x/.. read as text is the spec folder; followed, it is not
        gate.trust(keys["trusted"] / "public.pem")
        (planted / "area").mkdir()
        (gate.dir / "x").symlink_to(planted / "area", target_is_directory=True)
        path = gate.dir / "evaluation.yaml"
        path.write_text(path.read_text().replace(
            "history:\n", "history:\n    baseline: x/../prod/scorecard.json\n", 1))
        where = "spec.history.baseline"
    else:
        gate.trust(keys["other"] / "public.pem")
        (gate.dir / "keys" / "trusted-0.pub.pem").unlink()
        (gate.dir / "keys" / "trusted-0.pub.pem").symlink_to(planted / "other.pub.pem")
        where = "spec.history.trusted_keys[0]"
    capsys.readouterr()
    for root in (gate.dir, tmp_path):  # as given, and widened to hold the planted folder
        assert main(["validate", str(root)]) == 2
        err = capsys.readouterr().err
        assert "PATH_THROUGH_LINK" in err and where in err, err
