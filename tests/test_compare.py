"""engine compare: two runs, each verified before anything of it is read, side by side.

The runs are real: the shipped release gate signed over its own records (A), and over
the same records with three of the `eligible` case's refunds raised from 25 to 500 (B),
a measured field, so the suite is the same and the two are comparable. What must change
is worked out from that edit: the three trials of case `eligible` in tool_call go from
PASS to FAIL (the contract's maximum is 100), nothing else; tool_call falls from 12/12 to
9/12 = 0.75, below its threshold 0.95; McNemar's mid-p for 3 discordant pairs all one way
is 2 * 0.5**3 - 0.5**3 = 0.125."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.cli import main

from .conftest import GATE


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("compare")
    assert main(["keygen", "--out-dir", str(work / "keys")]) == 0
    key = str(work / "keys" / "private.pem")
    assert main(["run", str(GATE), "--key", key, "--out", str(work / "A")]) == 0
    lines = (GATE / "data" / "refund-after.jsonl").read_text().splitlines(True)
    edited = [line.replace('"amount": 25}', '"amount": 500}') if '-tool_call"' in line
              else line for line in lines]
    assert sum(a != b for a, b in zip(lines, edited, strict=True)) == 3
    (work / "after.jsonl").write_text("".join(edited))
    assert main(["run", str(GATE), "--input", f"runs={work / 'after.jsonl'}", "--key", key,
                 "--out", str(work / "B")]) == 1
    return work


def compare(runs: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["compare", *argv])
    return code, capsys.readouterr().out


def as_json(runs: Path, capsys: pytest.CaptureFixture[str], a: str, b: str,
            *extra: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code, out = compare(runs, capsys, str(runs / a), str(runs / b), "--trusted-key",
                        str(runs / "keys" / "public.pem"), "--json", *extra)
    return code, json.loads(out)


def test_a_regression_is_named_and_exits_1(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, got = as_json(runs, capsys, "A", "B")
    assert code == 1 and got["exit"] == 1 and got["worse"] and got["comparable"]
    assert got["decision"] == {"a": "PASS", "b": "FAIL", "worse": True}
    tool = next(c for c in got["categories"] if c["name"] == "tool_call")
    assert (tool["a"]["rate"], tool["b"]["rate"]) == (1.0, 0.75)
    assert tool["paired"] == {"test": "mcnemar_midp", "pairs": 12, "pass_to_fail": 3,
                              "fail_to_pass": 0, "p_value": 0.125}
    assert tool["worse"] and tool["why"] == ["state MET -> NOT_MET"]  # 0.125 > 0.05
    others = [c for c in got["categories"] if c["name"] != "tool_call"]
    assert not any(c["worse"] or c["paired"]["pass_to_fail"] for c in others)
    flips = got["flips"]
    assert flips["cases_to_fail"] == [{"category": "tool_call", "case": "eligible"}]
    assert sorted(f["unit"] for f in flips["trials_to_fail"]) == [
        "eligible-0-tool_call", "eligible-1-tool_call", "eligible-2-tool_call"]
    assert flips["trials_to_pass_total"] == flips["cases_to_pass_total"] == 0
    assert [(f["category"], f["case"]) for f in got["findings"]["new"]] == [
        ("tool_call", "eligible")] and got["findings"]["gone_total"] == 0


def test_the_same_run_twice_or_the_later_run_first_cannot_say(
        runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, same = as_json(runs, capsys, "A", "A")
    assert code == 3 and same["not_comparable"] == ["A and B are the same run"]
    later = runs / "later"  # signed a second or more after A and B
    time.sleep(1.1)
    assert main(["run", str(GATE), "--key", str(runs / "keys" / "private.pem"), "--out",
                 str(later)]) == 0
    capsys.readouterr()
    code, back = as_json(runs, capsys, "B", "later")
    assert code == 0 and not back["worse"] and back["flips"]["trials_to_pass_total"] == 3
    assert back["findings"]["gone_total"] == 1
    code, reversed_ = as_json(runs, capsys, "later", "B")
    assert code == 3 and reversed_["not_comparable"][0].startswith("B was signed")


def test_the_text_says_what_got_worse(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = compare(runs, capsys, str(runs / "A" / "scorecard.json"), str(runs / "B"),
                        "--trusted-key", str(runs / "keys" / "public.pem"))
    assert code == 1
    assert "decision: PASS -> FAIL (worse)" in out
    assert "tool_call: 1.0000 -> 0.7500, state MET -> NOT_MET" in out
    assert "to FAIL: tool_call case eligible" in out and out.rstrip().endswith(
        "something got worse")


def test_what_does_not_verify_is_never_compared(runs: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    tampered = tmp_path / "B"
    shutil.copytree(runs / "B", tampered)
    rows = tampered / "rows.jsonl"
    rows.write_text(rows.read_text().replace('"status":"FAIL"', '"status":"PASS"'))
    code, out = compare(runs, capsys, str(runs / "A"), str(tampered), "--trusted-key",
                        str(runs / "keys" / "public.pem"))
    assert code == 3 and "B " in out and "INVALID" in out and "nothing was compared" in out
    assert main(["keygen", "--out-dir", str(tmp_path / "other")]) == 0
    code, out = compare(runs, capsys, str(runs / "A"), str(runs / "B"), "--trusted-key",
                        str(tmp_path / "other" / "public.pem"))
    assert code == 3 and "A " in out and "INVALID" in out


def changed_after_verify(runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         change: Callable[[Path], None]) -> Path:
    """A copy of run B that ``change`` edits right after compare has verified it."""
    from engine.evidence import compare as comparing

    copy = tmp_path / "B"
    shutil.copytree(runs / "B", copy)
    real = comparing.verify

    def verify_then_change(path: Path, trusted: object) -> object:
        done = real(path, trusted)
        if path.parent == copy:
            change(copy)
        return done
    monkeypatch.setattr(comparing, "verify", verify_then_change)
    return copy


def test_a_scorecard_swapped_after_verification_is_never_read(
        runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Found by review: the scorecard was read again after verify and trusted as read."""
    def forge(copy: Path) -> None:
        card = copy / "scorecard.json"
        card.write_text(card.read_text().replace('"decision":"FAIL"', '"decision":"PASS"'))
    copy = changed_after_verify(runs, tmp_path, monkeypatch, forge)
    code, out = compare(runs, capsys, str(runs / "A"), str(copy), "--trusted-key",
                        str(runs / "keys" / "public.pem"))
    assert code == 3 and "DIGEST_MISMATCH" in out and "changed after it was verified" in out


def test_rows_that_are_a_fifo_are_refused_not_waited_on(
        runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    def fifo(copy: Path) -> None:
        (copy / "rows.jsonl").unlink()
        os.mkfifo(copy / "rows.jsonl")
    copy = changed_after_verify(runs, tmp_path, monkeypatch, fifo)
    code, out = compare(runs, capsys, str(runs / "A"), str(copy), "--trusted-key",
                        str(runs / "keys" / "public.pem"))
    assert code == 3 and "NOT_A_FILE" in out


def test_without_a_pinned_key_it_cannot_say(runs: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, out = compare(runs, capsys, str(runs / "A"), str(runs / "B"))
    assert code == 3 and "AUTHORSHIP UNVERIFIED" in out and out.rstrip().endswith("cannot say")


def test_runs_under_another_policy_are_not_compared_as_like(
        runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gate = tmp_path / "gate"
    shutil.copytree(GATE, gate)
    policy = gate / "policy.yaml"
    policy.write_text(policy.read_text().replace("threshold: 0.95\n", "threshold: 0.70\n", 1))
    key = str(runs / "keys" / "private.pem")
    assert main(["run", str(gate), "--input", f"runs={runs / 'after.jsonl'}", "--key", key,
                 "--out", str(tmp_path / "C")]) in (0, 1)
    capsys.readouterr()
    code, got = as_json(runs, capsys, "A", str(tmp_path / "C"))
    assert code == 3 and not got["comparable"]
    assert got["not_comparable"] == ["the policy digest differs"]


def test_the_page_is_whole_and_never_overwrites(runs: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "compare.html"
    code, _ = compare(runs, capsys, str(runs / "A"), str(runs / "B"), "--trusted-key",
                      str(runs / "keys" / "public.pem"), "--out", str(page))
    assert code == 1
    html = page.read_text()
    links = set(re.findall(r'href="#([^"]+)"', html))
    anchors = set(re.findall(r'id="([^"]+)"', html))
    assert links and links <= anchors
    assert "<script" not in html and "http" not in html.split("<body>")[0]
    assert "eligible-2-tool_call" in html and "something got worse" in html
    assert main(["compare", str(runs / "A"), str(runs / "B"), "--trusted-key",
                 str(runs / "keys" / "public.pem"), "--out", str(page)]) == 2
    assert page.read_text() == html


def test_a_folder_of_several_runs_is_a_usage_error(runs: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["compare", str(runs), str(runs / "B"), "--trusted-key",
                 str(runs / "keys" / "public.pem")])
    assert code == 2 and "COMPARE_AMBIGUOUS" in capsys.readouterr().err


def test_a_case_flips_only_between_scored_trials() -> None:
    """A case whose trials were all ERROR in A passed nothing: FAIL in B is no flip from PASS
    (worked out by hand: only case c2 went from 2/2 to 1/2, c3 from 0/1 to 1/1)."""
    from engine.evidence.compare import Side, _flips

    # counts per case: [passes, fails, unscored]; _flips reads nothing else of a side
    a = Side(Path("a"), None, {}, counts={"x": {"c1": [0, 0, 2], "c2": [2, 0, 0],
                                                 "c3": [0, 1, 0]}})  # type: ignore[arg-type]
    b = Side(Path("b"), None, {}, counts={"x": {"c1": [0, 2, 0], "c2": [1, 1, 0],
                                                 "c3": [1, 0, 0]}})  # type: ignore[arg-type]
    flips = _flips(a, b)
    assert flips["cases_to_fail"] == [{"category": "x", "case": "c2"}]
    assert flips["cases_to_pass"] == [{"category": "x", "case": "c3"}]
