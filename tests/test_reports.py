"""Projections (scorecard.md, scorecard.html, junit.xml) show the scorecard and nothing else."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from engine.reports import fmt

from . import refund
from .conftest import Gate, Spec

HOSTILE = ['<script>alert("x")</script>', '<img src=x onerror=alert(1)>']


class Tags(HTMLParser):
    """Every start tag and its attributes, as a browser's tokenizer would see them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, Any]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def parse(html: str) -> Tags:
    tags = Tags()
    tags.feed(html)
    return tags


def test_every_category_number_in_every_projection(spec: Spec) -> None:
    code, out = spec.run()
    card = json.loads((out / "scorecard.json").read_bytes())
    html = (out / "scorecard.html").read_text()
    md = (out / "scorecard.md").read_text()
    for name, c in card["categories"].items():
        row = (f"| {name} | {c['state']} | {c['n']} | {c['passed']} | {c['rate']:.3f} | "
               f"[{c['wilson_lower']:.3f}, {c['wilson_upper']:.3f}] |")
        assert row in md
        cells = [f'<td class="num">{c["n"]}</td>', f'<td class="num">{c["passed"]}</td>',
                 f'<td class="num">{c["rate"]:.3f}</td>',
                 f'<td class="num">[{c["wilson_lower"]:.3f}, {c["wilson_upper"]:.3f}]</td>']
        assert all(cell in html for cell in cells), name
    assert card["policy_sha256"] in html and card["rows_sha256"] in html
    assert html.count("<svg") == len(card["categories"])


@pytest.mark.parametrize("purpose, decision", [("release", "PASS"), ("triage", "TRIAGE"),
                                               ("self_test", "SELF_TEST")])
def test_the_banner_names_the_decision(spec: Spec, purpose: str, decision: str) -> None:
    spec.edit("policy.yaml", lambda d: d["spec"]["gate"].update(purpose=purpose))
    _, out = spec.run()
    banner = [a for t, a in parse((out / "scorecard.html").read_text()).tags
              if "banner" in (a.get("class") or "")]
    assert banner == [{"class": f"banner {decision}", "role": "status"}]
    text = (out / "scorecard.html").read_text()
    assert ("not a release decision" in text) == (decision != "PASS")


def test_fail_and_incomplete_banners(spec: Spec) -> None:
    spec.edit("policy.yaml", lambda d: d["spec"]["overall"].update(threshold=0.99))
    _, out = spec.run(out="fail")
    assert 'class="banner FAIL"' in (out / "scorecard.html").read_text()
    spec.write_runs(spec.runs()[:-2])
    _, out = spec.run(out="incomplete")
    assert 'class="banner INCOMPLETE"' in (out / "scorecard.html").read_text()


def test_agent_output_cannot_inject_markup(gate: Gate) -> None:
    rows = refund.rows(fixed=True)
    for i, payload in enumerate(HOSTILE):
        rows.append({"id": f"x{i}", "case_id": f"x{i}", "dimension": "tool_call",
                     "tool_calls": [{"name": payload}], "allowed_tools": ["lookup_order"]})
        rows.append({"id": f"t{i}", "case_id": f"t{i}", "dimension": "task_completion",
                     "agent_output": payload, "must_include": [payload + " |pipe|"]})
    _, card, out = gate.run(rows)
    html = (out / "scorecard.html").read_text()
    evidence = json.dumps(card["findings"])
    assert "onerror" in evidence and "<script>" in evidence  # the payloads are in the evidence
    tags = parse(html).tags
    assert not [t for t, _ in tags if t in ("script", "img", "iframe", "object")]
    assert not [a for _, a in tags for name in a if name.startswith("on")]
    assert "&lt;script&gt;" in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    md = (out / "scorecard.md").read_text()
    assert "<script" not in md and "<img" not in md
    ET.fromstring((out / "junit.xml").read_bytes())  # still well-formed XML


def test_junit_counts_and_messages(gate: Gate) -> None:
    _, card, out = gate.run(refund.rows(fixed=False))
    suite = ET.fromstring((out / "junit.xml").read_bytes()).find("testsuite")
    assert suite is not None
    not_met = [n for n, c in card["categories"].items() if c["state"] == "NOT_MET"]
    skipped = [n for n, c in card["categories"].items()
               if c["state"] in ("SKIPPED", "NOT_INCLUDED")]
    # a FAIL gate whose every finding sits in a category below its threshold: each is red,
    # and so is the gate test
    assert card["decision"] == "FAIL" and {f["category"] for f in card["findings"]} <= \
        set(not_met)
    assert suite.get("tests") == str(1 + len(card["categories"]) + len(card["findings"]))
    assert suite.get("failures") == str(1 + len(not_met) + len(card["findings"]))
    assert suite.get("skipped") == str(len(skipped))
    failure = suite.find("testcase[@name='tool_call:over-limit']/failure")
    assert failure is not None
    assert failure.get("message", "").startswith("Validate arguments against the tool contract")


def test_markdown_cells_are_escaped() -> None:
    from engine.reports import _md
    assert _md("a|b <img src=x onerror=y>\nnext") == \
        "a\\|b &lt;img src=x onerror=y&gt; next"


def test_fmt() -> None:
    assert (fmt(None), fmt(0.5), fmt(12), fmt(True)) == ("–", "0.500", "12", "true")


def test_projections_are_bound_into_the_attestation(spec: Spec, tmp_path: Path) -> None:
    import base64
    import hashlib

    from engine.cli import main
    main(["keygen", "--out-dir", str(tmp_path / "k")])
    _, out = spec.run("--key", str(tmp_path / "k" / "private.pem"))
    envelope = json.loads((out / "scorecard.intoto.jsonl").read_text())
    subjects = {s["name"]: s["digest"]["sha256"] for s in
                json.loads(base64.b64decode(envelope["payload"]))["subject"]}
    for name in ("scorecard.html", "scorecard.md", "junit.xml"):
        assert subjects[name] == hashlib.sha256((out / name).read_bytes()).hexdigest()
