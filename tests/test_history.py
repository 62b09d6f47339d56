"""engine history: every scorecard under a folder verified, the verified ones drawn by
evaluation and segment, the others named and left out of every chart.

The runs are real signed runs of the shipped release gate: its own records twice (runs 1
and 2), the same records with three refunds raised to 500 (run 3: tool_call 9/12), and
run 4 under a policy whose tool_call threshold was lowered, which must start a second
segment. A copy of run 2 with an edited row, a run signed by another key, and a second
copy of run 1 are in the same folder: each is named with its code and drawn nowhere."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from engine.cli import main

from .conftest import GATE


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("history")
    for who in ("keys", "other"):
        assert main(["keygen", "--out-dir", str(work / who)]) == 0
    runs = work / "runs"
    key = str(work / "keys" / "private.pem")
    assert main(["run", str(GATE), "--key", key, "--out", str(runs / "1")]) == 0
    assert main(["run", str(GATE), "--key", key, "--out", str(runs / "2")]) == 0
    lines = (GATE / "data" / "refund-after.jsonl").read_text().splitlines(True)
    (work / "after.jsonl").write_text("".join(
        line.replace('"amount": 25}', '"amount": 500}') if '-tool_call"' in line else line
        for line in lines))
    assert main(["run", str(GATE), "--input", f"runs={work / 'after.jsonl'}", "--key", key,
                 "--out", str(runs / "3")]) == 1
    lowered = work / "gate"
    shutil.copytree(GATE, lowered)
    policy = lowered / "policy.yaml"
    policy.write_text(policy.read_text().replace("threshold: 0.95\n", "threshold: 0.70\n", 1))
    assert main(["run", str(lowered), "--input", f"runs={work / 'after.jsonl'}", "--key", key,
                 "--out", str(runs / "4")]) in (0, 1)
    shutil.copytree(runs / "2", runs / "tampered")
    rows = runs / "tampered" / "rows.jsonl"
    rows.write_text(rows.read_text().replace('"status":"PASS"', '"status":"FAIL"', 1))
    assert main(["run", str(GATE), "--key", str(work / "other" / "private.pem"), "--out",
                 str(runs / "unpinned")]) == 0
    shutil.copytree(runs / "1", runs / "copy-of-1")
    return work


def test_left_out_runs_are_named_and_drawn_nowhere(
        folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = folder / "history.html"
    code = main(["history", str(folder / "runs"), "--trusted-key",
                 str(folder / "keys" / "public.pem"), "--out", str(page)])
    out = capsys.readouterr().out
    assert code == 1
    assert "4 verified run(s) of 1 evaluation(s), 2 segment(s)" in out
    left = {line.split(": ")[1].split("/")[-2]: line.split(": ")[2]
            for line in out.splitlines() if line.startswith("left out: ")}
    assert left.keys() == {"tampered", "unpinned", "copy-of-1"}
    assert left["copy-of-1"] == "DUPLICATE_SCORECARD"  # the same run, counted once
    assert left["tampered"] == "DIGEST_MISMATCH" and left["unpinned"] == "KEY_NOT_TRUSTED"
    html = page.read_text()
    body, _, tail = html.partition('<h2 id="left-out">')
    for name in ("tampered", "unpinned"):
        assert f"runs/{name}/" in tail and f"runs/{name}/" not in body
    assert body.count("<svg") == sum(1 for _ in re.finditer(r"<h3 ", body)) - \
        body.count("no run measured a rate here")


def test_a_policy_change_starts_a_segment_and_no_line_joins_them(folder: Path) -> None:
    page = folder / "history-2.html"
    main(["history", str(folder / "runs"), "--trusted-key",
          str(folder / "keys" / "public.pem"), "--out", str(page)])
    html = page.read_text()
    segments = re.search(r"<table><thead><tr><th>segment</th>.*?</table>", html, re.S)
    assert segments is not None
    rows = re.findall(r"<tr><td>(\d)</td><td>(\d)</td><td>([^<]*)</td>", segments.group(0))
    assert rows == [("1", "1", "first run"), ("2", "4", "policy")]
    tool = html.split('id="ev-agent-release-gate%2Ftool_call"')[1].split("<h3 ")[0]
    chart = tool.split("</svg>")[0]
    lines = re.findall(r'<polyline points="([^"]+)"', chart)
    assert [len(p.split()) for p in lines] == [3]  # runs 1-3 joined; run 4 alone, unjoined
    assert chart.count("<circle") == 4 and "new segment" in chart
    assert chart.count('stroke-dasharray="6 3"') == 2  # each segment's own threshold
    table = tool.split("</svg>")[1]
    assert [m for m in re.findall(r"<td>(1\.0000|0\.7500)</td>", table)] == [
        "1.0000", "1.0000", "0.7500", "0.7500"]


def test_an_existing_page_is_never_overwritten(folder: Path) -> None:
    page = folder / "exists.html"
    page.write_text("mine")
    assert main(["history", str(folder / "runs"), "--trusted-key",
                 str(folder / "keys" / "public.pem"), "--out", str(page)]) == 2
    assert page.read_text() == "mine"


def test_the_page_in_a_browser(folder: Path, tmp_path: Path) -> None:
    from .test_browser import chromium

    page = folder / "history-browser.html"
    main(["history", str(folder / "runs"), "--trusted-key",
          str(folder / "keys" / "public.pem"), "--out", str(page)])
    uri = page.resolve().as_uri()
    done = chromium(tmp_path, "--enable-logging=stderr", "--v=0", "--dump-dom", uri)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout.decode()
    assert b"CONSOLE" not in done.stderr.upper().replace(b"CONSOLE_", b"")
    links = set(re.findall(r'href="#([^"]+)"', dom))
    assert links and links <= set(re.findall(r'id="([^"]+)"', dom))
    for chart in dom.split("<svg")[1:]:  # every chart has its table right after it
        assert "</svg>" in chart and "<table>" in chart.split("</svg>")[1].split("<h3")[0]
    evidence = re.findall(r'href="([^"#]+)"', dom)
    assert evidence and all((page.parent / e).is_file() for e in evidence)
    shot = tmp_path / "history.png"
    done = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,1600", uri)
    assert done.returncode == 0 and shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_the_history_bench_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench import history

    assert history.main(["--runs", "4", "--work", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "4 signed runs ready" in out and "engine history over 4 runs: exit 0" in out
    page = (tmp_path / "runs-4" / "history.html").read_text()
    assert page.count("<p>4 verified runs, 2 segment(s).</p>") == 1


def test_labels_links_and_an_empty_folder(folder: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Found by review: labels were read from the wrong key, links were the folders' raw
    names (a folder named javascript:... made a link that runs script), and a folder with
    no scorecard gave a green page."""
    key = str(folder / "keys" / "private.pem")
    odd = tmp_path / "javascript:document.title='x';1"
    assert main(["run", str(GATE), "--key", key, "--label", "lab-1", "--out", str(odd)]) == 0
    page = tmp_path / "h.html"
    assert main(["history", str(tmp_path), "--trusted-key",
                 str(folder / "keys" / "public.pem"), "--out", str(page)]) == 0
    html = page.read_text()
    assert ">lab-1<" in html
    links = re.findall(r'<a href="([^"#]+)">scorecard</a>', html)
    assert links and all(link.startswith("./javascript%3Adocument.title%3D") for link in links)
    assert all((tmp_path / odd.name / "scorecard.html").is_file() for _ in links)
    (tmp_path / "empty").mkdir()
    assert main(["history", str(tmp_path / "empty"), "--trusted-key",
                 str(folder / "keys" / "public.pem"), "--out", str(tmp_path / "e.html")]) == 2
    assert "NO_SCORECARD" in capsys.readouterr().err and not (tmp_path / "e.html").exists()


def test_a_scorecard_swapped_after_verification_is_left_out(
        folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.evidence import history

    runs = tmp_path / "runs"
    shutil.copytree(folder / "runs" / "3", runs / "3")
    card = runs / "3" / "scorecard.json"
    forged = card.read_text().replace('"decision":"FAIL"', '"decision":"PASS"')
    real = history.verify

    def verify_then_swap(path: Path, trusted: object) -> object:
        done = real(path, trusted)
        card.write_text(forged)
        return done
    monkeypatch.setattr(history, "verify", verify_then_swap)
    page = tmp_path / "h.html"
    assert main(["history", str(runs), "--trusted-key", str(folder / "keys" / "public.pem"),
                 "--out", str(page)]) == 1
    assert "DIGEST_MISMATCH" in page.read_text() and "<svg" not in page.read_text()
