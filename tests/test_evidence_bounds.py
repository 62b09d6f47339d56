"""Evidence stays bounded, masked and well-formed whatever the evaluated party's records hold.

The records are written by the party being gated: a 25 MB output, a list of 100,000 items,
a card number or an id full of markup must not blow up, leak into or break the evidence.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from engine.inspections._base import clip

from . import refund
from .conftest import Gate, Spec, keep_full_rows

# The documented bound (docs/ci.md): a row's message, expected and observed values are
# clipped to at most 4,000 characters of text each, so no row line of rows.jsonl nears this.
ROW_LINE_BYTES = 64 * 1024
FOLDER_BYTES = 1024 * 1024
CARD = "4111 1111 1111 1111"  # a Luhn-valid test card number the example's pattern matches


def folder_bytes(out: Path) -> int:
    return sum(p.stat().st_size for p in out.rglob("*") if p.is_file())


def summary(card: dict[str, Any]) -> tuple[Any, ...]:
    """What the decision rests on: the decision and every category's counts."""
    return card["decision"], {n: (c["n"], c["passed"], c["failed"], c["errors"])
                              for n, c in card["categories"].items()}


def pad_first_reply(spec: Spec, extra: int) -> None:
    runs = spec.runs()
    runs[0]["output"]["reply"] += "x" * extra
    spec.write_runs(runs)


def test_a_25_mb_output_gives_the_same_small_evidence_as_a_5_kb_one(spec: Spec) -> None:
    _, plain = spec.run(out="plain")
    pad_first_reply(spec, 5_000)  # over the reply schema's 4,000 characters: one FAIL row
    _, small = spec.run(out="small")
    pad_first_reply(spec, 25_000_000)
    _, big = spec.run(out="big")
    cards = [json.loads((out / "scorecard.json").read_bytes()) for out in (plain, small, big)]
    assert summary(cards[1]) == summary(cards[2])
    assert cards[0]["decision"] == cards[2]["decision"] == "PASS"  # one FAIL of 16 is tolerated
    assert folder_bytes(big) < FOLDER_BYTES
    assert folder_bytes(big) < folder_bytes(small) + 2_000  # the padding's size is not copied
    for line in (big / "rows.jsonl").read_bytes().splitlines():
        assert len(line) < ROW_LINE_BYTES
    said = (big / "findings.jsonl").read_text()
    cut = re.search(r"\.\.\. \[(\d+) more characters\]", said)  # the cut says how much
    assert cut and 24_999_000 < int(cut.group(1)) < 25_100_000


def test_huge_lists_and_nesting_leave_the_decision_and_a_small_row(spec: Spec) -> None:
    keep_full_rows(spec.dir / "policy.yaml")  # PASS rows carry the clipped values too
    _, plain = spec.run(out="plain")
    runs = spec.runs()
    runs[0]["output"]["actions"] += ["noop"] * 100_000  # still holds the expected actions
    runs[1]["output"]["notes"] = [["z" * 500] * 50] * 50  # allowed by the reply schema
    spec.write_runs(runs)
    _, padded = spec.run(out="padded")
    before, after = (json.loads((o / "scorecard.json").read_bytes()) for o in (plain, padded))
    assert summary(before) == summary(after)
    rows = [json.loads(line) for line in (padded / "rows.jsonl").read_bytes().splitlines()]
    assert max(len(json.dumps(r)) for r in rows) < ROW_LINE_BYTES
    actions = next(r["observed"] for r in rows
                   if r["unit"] == "run-001" and r["inspection"] == "took-expected-actions")
    assert actions[-1] == f"... [{100_002 - 50} more items]"
    assert folder_bytes(padded) < FOLDER_BYTES


def test_clip_bounds_a_whole_value() -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(40):
        node.append([])
        node = node[0]
    for value in ([[["z" * 499] * 50] * 50] * 50, [[[[""] * 50] * 50] * 50] * 50, deep,
                  {"k" * 10_000: "v" * 10_000, **{str(i): i for i in range(100)}}):
        text = json.dumps(clip(value))
        assert len(text) < 16_000, len(text)  # 4,000 characters of text, with JSON around
    assert clip(clip("a" * 700)) == "a" * 500 + "... [200 more characters]"
    assert clip(["a"] * 60)[-1] == "... [10 more items]"
    assert clip({str(i): i for i in range(60)})["..."] == "[10 more keys]"


def files_holding(out: Path, text: str) -> list[str]:
    return [p.name for p in out.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def test_a_card_number_in_a_reply_is_in_no_evidence_file(spec: Spec, tmp_path: Path) -> None:
    from engine.cli import main
    main(["keygen", "--out-dir", str(tmp_path / "k")])
    runs = spec.runs()
    runs[0]["output"]["reply"] = f"Your card {CARD} is on file. " + runs[0]["output"]["reply"]
    # a second number exactly where the 500-character clip cuts: no part of it may show
    runs[2]["output"]["reply"] = "a" * 490 + f" {CARD} " + "b" * 100
    spec.write_runs(runs)
    code, out = spec.run("--key", str(tmp_path / "k" / "private.pem"))
    card = spec.scorecard()
    assert code == 1 and card["categories"]["safety"]["failed"] == 2
    names = {p.name for p in out.iterdir()}
    assert {"rows.jsonl", "findings.jsonl", "scorecard.md", "scorecard.html", "junit.xml",
            "scorecard.json"} <= names
    for part in (CARD, CARD.replace(" ", ""), "4111 1111", "1111 1111 1111"):
        assert files_holding(out, part) == [], part
    assert "[REDACTED]" in (out / "junit.xml").read_text()


def test_a_policy_turns_masking_off_only_by_saying_so(spec: Spec) -> None:
    runs = spec.runs()
    runs[0]["output"]["reply"] = f"Your card {CARD} is on file. " + runs[0]["output"]["reply"]
    spec.write_runs(runs)
    _, masked = spec.run(out="masked")
    spec.edit("policy.yaml", lambda d: d["spec"].update(evidence={"mask_matches": False}))
    _, shown = spec.run(out="shown")
    assert files_holding(masked, CARD) == []
    assert {"rows.jsonl", "scorecard.json", "junit.xml"} <= set(files_holding(shown, CARD))
    assert spec.scorecard("masked")["policy_sha256"] != spec.scorecard("shown")["policy_sha256"]


HOSTILE = ["x|y", "`code`", "[click](http://evil)", "![i](http://evil/i.png)",
           "<img src=x onerror=alert(1)>", "# heading", "line1\nline2\r\nline3",
           "ctl\x00\x01\x08\x0b\x0c\x1f.", "nonchar\ufffe\uffff.", "cdata]]>end",
           "q\"uote's&amp;", "www.evil.example"]


def hostile_rows() -> list[dict[str, Any]]:
    rows = refund.rows(fixed=True)
    for i, text in enumerate(HOSTILE):
        rows.append({"id": f"h{i}:{text}", "case_id": text, "dimension": "tool_call",
                     "tool_calls": [{"name": text}], "allowed_tools": ["lookup_order"],
                     "trace_id": text})
    return rows


def test_junit_is_well_formed_whatever_ids_and_outputs_hold(gate: Gate) -> None:
    _, card, out = gate.run(hostile_rows())
    assert len([f for f in card["findings"] if f["category"] == "tool_call"]) == len(HOSTILE)
    root = ET.fromstring((out / "junit.xml").read_bytes())
    names = {case.get("name") for case in root.iter("testcase")}
    assert "tool_call:cdata]]>end" in names and "tool_call:q\"uote's&amp;" in names
    assert "tool_call:ctl\\x00\\x01\\x08\\x0b\\x0c\\x1f." in names
    assert "tool_call:nonchar\\ufffe\\uffff." in names
    line = json.dumps({"id": "s", "case_id": "s", "dimension": "pii",
                       "agent_output": "x"}).replace('"x"', '"\\ud800"')
    _, card, out = gate.run([*hostile_rows(), line])  # a lone surrogate: a record problem
    assert card["coverage"]["record_problems"] == {"LONE_SURROGATE": 1}
    ET.fromstring((out / "junit.xml").read_bytes())


def unescaped(text: str, pattern: str) -> list[int]:
    """Where ``pattern`` starts in ``text`` without a backslash escape before it."""
    return [m.start() for m in re.finditer(re.escape(pattern), text)
            if (len(text[:m.start()]) - len(text[:m.start()].rstrip("\\"))) % 2 == 0]


def test_markdown_shows_hostile_ids_as_text(gate: Gate) -> None:
    from engine.reports import markdown
    _, card, out = gate.run(hostile_rows())
    md = (out / "scorecard.md").read_text()
    bullets = [line for line in md.splitlines() if line.startswith("- **tool_call")]
    assert len(bullets) == len(HOSTILE)  # a newline in an id ends no bullet early
    # a reason message that carried the hostile ids must keep the table's four columns
    card["reasons"].append({"decision": "FAIL", "code": "X", "spec_path": "p",
                            "message": " ".join(HOSTILE)})
    for text in (md, markdown(card)):
        for mark in ("](", "![", "`code`", "<", "http://", "www.evil"):
            assert unescaped(text, mark) == [], mark
        assert "<img" not in text and "\n# heading" not in text
        for table in tables(text):
            columns = len(unescaped(table[0], "|"))
            assert all(len(unescaped(row, "|")) == columns for row in table), table
    assert [line for line in markdown(card).splitlines() if line.startswith("| FAIL | `X` |")]


def tables(text: str) -> list[list[str]]:
    """The lines of each Markdown table in ``text``."""
    found: list[list[str]] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("|") and not inside:
            found.append([])
        inside = line.startswith("|")
        if inside:
            found[-1].append(line)
    return found
