"""A real browser opens the HTML report offline: it renders, and hostile agent output in it
executes nothing. Needs Debian's chromium: skipped without it, except under
SPECGATE_REQUIRE_TOOLS=1 (.ci/run installs it and sets that)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from . import refund
from .conftest import Gate, need_tool

MARK = "document.body.setAttribute('data-pwned','1')"
PAYLOADS = [f"<script>{MARK}</script>", f'<img src=x onerror="{MARK}">',
            f'<svg onload="{MARK}"></svg>']
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    binary = need_tool("chromium", "chromium-browser")
    profile = tmp / "profile"
    return subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, timeout=120)


def test_the_report_renders_and_hostile_output_stays_text(gate: Gate, tmp_path: Path) -> None:
    rows = refund.rows(fixed=True)
    for i, payload in enumerate(PAYLOADS):
        rows.append({"id": f"t{i}", "case_id": f"t{i}", "dimension": "task_completion",
                     "agent_output": payload, "must_include": [payload]})
        rows.append({"id": f"x{i}", "case_id": f"x{i}", "dimension": "tool_call",
                     "tool_calls": [{"name": payload}], "allowed_tools": ["lookup_order"]})
    _, card, out = gate.run(rows)
    page = (out / "scorecard.html").resolve().as_uri()
    shot = tmp_path / "report.png"
    done = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,1600", page)
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 20_000
    dom = chromium(tmp_path, "--dump-dom", page).stdout.decode()
    body = re.search(r"<body[^>]*>", dom)
    assert body is not None and "data-pwned" not in body.group(0)
    assert "Decision: FAIL" in dom and card["policy_sha256"] in dom
    assert "&lt;script&gt;" in dom  # the payload is there, as text
    # protocol §14 as the browser shows it: the findings digest, each fix's verification
    # beside the rule that re-scoring old output verifies nothing, and the signature state
    text = " ".join(re.sub(r"<[^>]+>", " ", dom).replace("&amp;", "&").split())
    assert f"findings_sha256 {card['findings_sha256']} (findings.jsonl)" in text
    verifications = [f["fix"]["verification"] for f in card["findings"] if f.get("fix")]
    assert verifications and all(f"Verify: {v}" in text for v in verifications)
    assert "does not verify the changed agent" in text
    assert "Signature Unsigned." in text


def test_the_compare_page_renders_its_anchors_and_hostile_ids_stay_text(
        gate: Gate, tmp_path: Path) -> None:
    from engine.cli import main

    assert main(["keygen", "--out-dir", str(tmp_path / "keys")]) == 0
    key = str(tmp_path / "keys" / "private.pem")
    rows = refund.rows(fixed=True)
    for i, payload in enumerate(PAYLOADS):
        rows.append({"id": f"t{i}", "case_id": payload, "dimension": "task_completion",
                     "agent_output": "the refund is done", "must_include": ["refund"]})
    code, _, before = gate.run(rows, "--key", key)
    for row in rows[-len(PAYLOADS):]:
        row["agent_output"] = "nothing useful"  # measured: the suite stays the same
    code, _, after = gate.run(rows, "--key", key)
    page = tmp_path / "compare.html"
    assert main(["compare", str(before), str(after), "--trusted-key",
                 str(tmp_path / "keys" / "public.pem"), "--out", str(page)]) == 1
    uri = page.resolve().as_uri()
    done = chromium(tmp_path, "--enable-logging=stderr", "--v=0", "--dump-dom", uri)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout.decode()
    body = re.search(r"<body[^>]*>", dom)
    assert body is not None and "data-pwned" not in body.group(0)
    assert "&lt;script&gt;" in dom and "something got worse" in dom
    assert b"CONSOLE" not in done.stderr.upper().replace(b"CONSOLE_", b"")
    links = set(re.findall(r'href="#([^"]+)"', dom))
    assert links and links <= set(re.findall(r'id="([^"]+)"', dom))
    shot = tmp_path / "compare.png"
    done = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,1600", uri)
    assert done.returncode == 0 and shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
