"""Projections (scorecard.md, scorecard.html, junit.xml) show the scorecard and nothing else."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from engine.reports import fmt

from . import refund
from .conftest import ROOT, Gate, Spec

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
        row = (f"| {name} | {c['state']} | {c['n']} | {c['passed']} | {c['waived']} | "
               f"{c['rate']:.3f} | "
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


def _section(md: str, title: str) -> str:
    """The text of one '### title' section of scorecard.md."""
    start = md.index(f"### {title}\n")
    end = md.find("\n### ", start + 1)
    return md[start:] if end < 0 else md[start:end]


def test_markdown_carries_what_the_html_shows(spec: Spec) -> None:
    runs = spec.runs()
    runs[0]["output"]["reply"] += " Paid with 4242 4242 4242 4242."
    spec.write_runs(runs)
    spec.edit("policy.yaml", lambda d: d["spec"].update(waivers=[{
        "id": "W-9", "scope": {"categories": ["safety"]}, "justification": "vendor sandbox card",
        "approver": "governance@example.com", "expires": "2099-12-31"}]))
    code, out = spec.run("--as-of", "2099-06-30")
    md = (out / "scorecard.md").read_text()
    assert code == 0
    # the minimum column and what each category is gated on, read from specs/example
    assert "| threshold | minimum | gated on |" in md
    # the leaking reply's safety row is waived: out of n (31 of 32 rows) and in its column
    assert "| safety | MET | 31 | 31 | 1 | 1.000 | [0.890, 1.000] | – | 1.000 | point estimate |" \
        in md
    html = (out / "scorecard.html").read_text()
    row = html.split('<tr id="category-safety"', 1)[1].split("</tr>", 1)[0]
    header = html.split("<h2 id=\"categories\">", 1)[1].split("</tr>", 1)[0]
    numbers = re.findall(r'<th class="num">([^<]*)</th>', header)
    assert dict(zip(numbers, re.findall(r'<td class="num">([^<]*)</td>', row), strict=True)) \
        == {"n": "31", "passed": "31", "failed": "0", "errors": "0", "waived": "1",
            "rate": "1.000", "Wilson 95%": "[0.890, 1.000]", "threshold": "–", "minimum": "1.000"}
    assert "| 0.800 | – | Wilson lower bound |" in md.split("| efficiency |")[1].split("\n")[0]
    # pass^k over 8 cases of 2 trials: resolution's run-004 fails one trial of one case
    assert "| resolution | 0.958 | 2 | 8 | 0.875 | 1 | refund-outside-window |" in md
    assert "- Coverage: 16 input records, 112 agent rows, 0 control rows; 8 of 8 suite cases " \
        "observed." in md
    waivers = _section(md, "Waivers (as of 2099-06-30)")
    assert "W-9: active, 1 FAIL row(s) waived, approved by governance\\@example.com, last day " \
        "2099-12-31; scope categories: safety; justification: vendor sandbox card" in waivers
    assert "Overall score" in md and "### Reasons" in md


def test_markdown_carries_comparison_validation_controls_and_agent_card(
        gate: Gate, tmp_path: Path) -> None:
    from engine.cli import main
    main(["keygen", "--out-dir", str(tmp_path / "k")])
    key = ["--key", str(tmp_path / "k" / "private.pem")]
    gate.trust(tmp_path / "k" / "public.pem")  # a release trusts the Evaluation's keys only
    _, _, base = gate.run(refund.rows(fixed=True), *key)
    code, card, out = gate.run(refund.rows(fixed=False), *key, "--baseline",
                               str(base / "scorecard.json"))
    md = (out / "scorecard.md").read_text()
    comparison = _section(md, "Comparison with the baseline")
    assert "Status **comparable**; regressed: yes." in comparison
    assert "| tool_call | now failing |" in comparison and "| pii | stable |" in comparison
    assert card["comparison"]["baseline"]["scorecard_sha256"] in comparison
    checks = _section(md, "Controls, validation and coverage")
    assert "- Controls: 0 of 0 known-bad controls caught (0 missed)." in checks
    assert "- Validation (strict): LABELED 36, UNLABELED 0, INVALID 0; failed captures 0." \
        in checks
    agent = _section(md, "Agent Card")
    assert card["agent_card"]["disclaimer"] in agent
    for c in card["agent_card"]["catalogues"]:
        n = card["agent_card"]["counts"][c["catalogue"]]
        assert f"| {n['evidenced']} | {n['partial']} | {n['not evidenced']} |" in agent
    assert "| tool_call | NOT_MET |" in md and "### Findings" in md


def test_equals_and_formula_findings_show_observed_against_expected(spec: Spec) -> None:
    def add_equals(d: Any) -> None:
        d["spec"]["inspections"].append({"id": "marked-resolved", "type": "equals",
                                         "actual": "output.resolved", "expected": True})
        d["spec"]["categories"]["resolution"]["inspections"].append("marked-resolved")
    spec.edit("policy.yaml", add_equals)
    runs = spec.runs()
    runs[0]["output"]["resolved"] = False
    runs[0]["metrics"]["cost_usd"] = 0.05
    spec.write_runs(runs)
    _, out = spec.run()
    md = (out / "scorecard.md").read_text()
    assert "  - `marked-resolved` (equals) on run-001, FAIL: expected true; observed false" in md
    assert "  - `cost-budget` (formula) on run-001, FAIL: expected {\"formula\": \"cost &lt;= " \
        "0.02 and tokens &lt;= 3000\"}; observed {\"cost\": 0.05, \"tokens\": 900}" in md
    html = (out / "scorecard.html").read_text()
    assert ('<td class="value">true</td><td class="value">false</td>') in html
    assert ('<td class="value">{&#34;formula&#34;: &#34;cost &lt;= 0.02 and tokens &lt;= '
            '3000&#34;}</td><td class="value">{&#34;cost&#34;: 0.05, &#34;tokens&#34;: 900}'
            '</td>') in html
    # junit.xml: the finding's test case carries the same checks in its text
    import xml.etree.ElementTree as ET

    cases = {c.get("name"): c for c in ET.parse(out / "junit.xml").iter("testcase")}
    [text] = [(e.text or "") for e in cases["efficiency:card-on-file"]
              if e.tag in ("skipped", "failure")] or [""]
    assert "latency-budget (at_most) on run-011, FAIL: expected {\"at_most\": 4000}; observed" \
        in text, text
    [text] = [(e.text or "") for e in cases["resolution:refund-late-delivery"]
              if e.tag in ("skipped", "failure")]
    assert "marked-resolved (equals) on run-001, FAIL: expected true; observed false" in text


def _chart(html: str, name: str) -> str:
    row = html.index(f'<td><a href="#category-{name}">{name}</a></td><td><svg')
    return html[row:html.index("</svg>", row)]


def test_charts_have_a_labelled_axis_threshold_minimum_and_a_not_met_mark(spec: Spec) -> None:
    spec.edit("policy.yaml", lambda d: d["spec"]["categories"]["resolution"].update(
        threshold=0.99))  # 47/48 = 0.979 misses it
    code, out = spec.run()
    html = (out / "scorecard.html").read_text()
    assert code == 1
    resolution, safety, efficiency = (_chart(html, n) for n in
                                      ("resolution", "safety", "efficiency"))
    # Each axis is fitted to rate, Wilson interval, threshold and minimum, padded by a tenth
    # of their span and widened to whole tick steps (engine/reports/charts.py):
    # resolution [0.891, 0.996] and 0.99 -> 0.88..1 by 0.02; safety [0.893, 1] and 1 ->
    # 0.88..1 by 0.02; efficiency 0.8 and [0.843, 0.994] -> 0.75..1 by 0.05.
    for chart, ticks, low in ((resolution, ("0.88", "0.9", "0.98", "1"), "0.88"),
                              (safety, ("0.88", "0.9", "0.98", "1"), "0.88"),
                              (efficiency, ("0.75", "0.8", "0.85", "0.95", "1"), "0.75")):
        assert all(f'text-anchor="middle">{t}</text>' in chart for t in ticks)
        assert f">axis {low} to 1 (zoomed)</text>" in chart
    # x = 16 + (v - low) / (1 - low) * 624: 0.99 on 0.88..1 -> 588.0, the rate 47/48 ->
    # 531.7; 1.0 -> 640.0; 0.8 on 0.75..1 -> 140.8
    assert '<line class="threshold" x1="588.0"' in resolution
    assert '<circle cx="531.7"' in resolution
    assert '<line class="minimum" x1="640.0"' in safety and 'class="threshold"' not in safety
    assert '<line class="threshold" x1="140.8"' in efficiency
    assert 'class="minimum"' not in efficiency
    assert "✗ NOT MET" in resolution and "<rect" in resolution
    assert "✗ NOT MET" not in safety + efficiency and "<rect" not in safety + efficiency
    assert 'class="chart NOT_MET"' in resolution and "✓ met" in safety
    # the miss: a band from the rate to the threshold, and 0.99 - 47/48 = 0.0108 in words
    assert '<line class="miss" x1="531.7" y1="34" x2="588.0"' in resolution
    assert ">threshold short by 0.011</text>" in resolution
    assert 'class="miss"' not in safety + efficiency and "short by" not in safety + efficiency


def _number(chart: str, prefix: str) -> float:
    """The number that follows ``prefix`` (an attribute's opening) in a chart."""
    at = chart.index(prefix) + len(prefix)
    return float(chart[at:chart.index('"', at)])


def test_a_near_miss_is_pixels_apart_and_marked(spec: Spec) -> None:
    # 47/48 = 0.97917 against a threshold of 0.98: on a 0-1 axis 624 pixels wide they were
    # 0.5 pixels apart. With the interval [0.891, 0.996] on the axis they would be 4.3
    # pixels apart (under 12), so the axis fits the rate and threshold alone: their span
    # 0.00083 widened to 0.01 about 0.97958, padded by 0.001 to 0.97358..0.98558, in whole
    # steps of 0.002: 0.972..0.986. x = 16 + (v - 0.972) / 0.014 * 624: the rate at 335.4,
    # the threshold at 372.6.
    spec.edit("policy.yaml", lambda d: d["spec"]["categories"]["resolution"].update(
        threshold=0.98))
    code, out = spec.run()
    assert code == 1
    chart = _chart((out / "scorecard.html").read_text(), "resolution")
    rate, threshold = _number(chart, "<circle cx=\""), \
        _number(chart, '<line class="threshold" x1="')
    assert (rate, threshold) == (335.4, 372.6)
    assert threshold - rate > 30
    assert ">axis 0.972 to 0.986 (zoomed)</text>" in chart
    assert all(f'text-anchor="middle">{t}</text>' in chart
               for t in ("0.972", "0.976", "0.98", "0.984", "0.986"))
    # the miss is marked: a band from the rate to the threshold and the shortfall in words
    # (0.98 - 47/48 = 0.00083), and the interval, cut at both ends, says where it ends
    assert '<line class="miss" x1="335.4" y1="34" x2="372.6"' in chart
    assert ">threshold short by 0.00083</text>" in chart and "✗ NOT MET" in chart
    assert ">◂ 0.891</text>" in chart and ">0.996 ▸</text>" in chart


def test_record_text_in_findings_checks_stays_text(spec: Spec) -> None:
    hostile = "[click](https://evil.example) ![x](https://evil.example/x.png) <b>bold</b> |col|"
    def add_equals(d: Any) -> None:
        d["spec"]["inspections"].append({"id": "reply-exact", "type": "equals",
                                         "actual": "output.reply", "expected": "ok"})
        d["spec"]["categories"]["resolution"]["inspections"].append("reply-exact")
    spec.edit("policy.yaml", add_equals)
    runs = spec.runs()
    runs[0]["output"]["reply"] = hostile
    spec.write_runs(runs)
    _, out = spec.run()
    md = (out / "scorecard.md").read_text()
    line = next(x for x in md.splitlines() if "`reply-exact` (equals) on run-001" in x)
    assert "](" not in line and "<b>" not in line and "https://" not in line
    assert "\\[click\\]\\(https\\://evil.example\\)" in line and "&lt;b&gt;" in line
    assert "\\|col\\|" in line
    html = (out / "scorecard.html").read_text()
    assert "<b>bold" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert not [t for t, _ in parse(html).tags if t in ("img", "b")]
    # the page's own links stay inside it: no record text becomes a link anywhere else
    assert all(str(a.get("href")).startswith("#") for t, a in parse(html).tags if t == "a")


def test_text_that_reorders_or_breaks_lines_cannot_disguise_a_report(tmp_path: Path) -> None:
    # a right-to-left override makes "LIAF" display as "FAIL" reversed; a line separator
    # starts a new visual line inside a table cell: all three reports print neither
    from engine.reports import html, markdown
    from engine.reports.junit import junit
    trick = "ok \u202eSSAP\u202c \u2028PASS\u2029 \u0085 \u2066x\u2069"
    spec = Spec(tmp_path)
    rows = spec.runs()
    rows[0]["output"]["reply"] = trick
    rows[0]["id"] = "run-" + trick
    spec.write_runs(rows)
    spec.run()
    card = spec.scorecard()
    assert "\u202e" in json.dumps(card, ensure_ascii=False)  # the signed JSON keeps the bytes
    for text in (markdown(card), html(card), junit(card).decode()):
        assert "SSAP" in text  # the record's text is shown ...
        assert not any(c in text for c in "\u202e\u202c\u2028\u2029\u0085\u2066\u2069")


def test_the_shipped_compiled_page_is_what_jinja2_writes_from_its_source() -> None:
    # _scorecard_html.py saves every run compiling scorecard.html.j2; regenerate it with
    # `python -m engine.reports.precompiled` whenever the template or jinja2 changes
    from engine.reports import _HTML, precompiled
    shipped = Path(precompiled.__file__).with_name("_scorecard_html.py").read_text("utf-8")
    assert shipped == precompiled.module_text(_HTML, precompiled.source())


def test_the_page_renders_the_same_from_the_shipped_module_and_from_source(
        spec: Spec) -> None:
    import jinja2

    from engine.reports import _HTML, html, page_variables, precompiled
    spec.run()
    card = spec.scorecard()
    variables = page_variables(card, signed=True)
    shipped = precompiled.template(_HTML)
    assert shipped.root_render_func.__module__ == precompiled.MODULE  # not compiled here
    assert shipped.render(**variables) == _HTML.from_string(precompiled.source()).render(
        **variables) == html(card)
    with pytest.raises(jinja2.UndefinedError):  # strict undefined as before
        shipped.render(**{**variables, "card": {}})


def test_a_stale_compiled_page_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.reports import _HTML, precompiled
    monkeypatch.setattr(precompiled, "source", lambda: "changed {{ card.decision }}")
    assert precompiled.template(_HTML).render(card={"decision": "PASS"}) == "changed PASS"
    monkeypatch.setattr(precompiled, "MODULE", "engine.reports._no_such_module")
    assert precompiled.template(_HTML).render(card={"decision": "FAIL"}) == "changed FAIL"


class Links(HTMLParser):
    """Every id and every in-page link of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id") is not None:
            self.ids.append(str(found["id"]))
        if tag == "a" and str(found.get("href", "")).startswith("#"):
            self.hrefs.append(str(found["href"])[1:])


def test_every_in_page_link_has_its_anchor(spec: Spec) -> None:
    spec.edit("policy.yaml", lambda d: d["spec"]["categories"]["resolution"].update(
        threshold=0.99))  # 47/48 misses it: a reason, and findings in two categories
    code, out = spec.run()
    assert code == 1
    page = (out / "scorecard.html").read_text()
    links = Links()
    links.feed(page)
    assert len(links.ids) == len(set(links.ids)), "an id is used twice"
    assert links.hrefs and set(links.hrefs) <= set(links.ids), \
        sorted(set(links.hrefs) - set(links.ids))
    # rows, categories, findings and hashes have stable anchors
    for anchor in ("category-resolution", "category-safety", "chart-efficiency", "reason-1",
                   "finding-resolution:refund-outside-window", "finding-efficiency:card-on-file",
                   "policy_sha256", "suite_sha256", "rows_sha256", "code-BELOW_THRESHOLD"):
        assert anchor in links.ids, anchor
    # the reason links its code to the legend, which says what it means (the code table's
    # words, as docs/reference.md prints them), and its category to the category's row
    reason = page[page.index('<tr id="reason-1">'):]
    reason = reason[:reason.index("</tr>")]
    assert '<a href="#code-BELOW_THRESHOLD"><code>BELOW_THRESHOLD</code></a>' in reason
    assert '<a href="#category-resolution">resolution</a>' in reason
    assert ('<dt id="code-BELOW_THRESHOLD"><code>BELOW_THRESHOLD</code></dt><dd>a category\'s '
            "gated statistic is below its threshold</dd>") in page.replace("&#39;", "'")
    # a finding names its category with a link; the title links the policy to its digest
    assert ('category <a href="#category-resolution">resolution</a>') in page
    assert '<a href="#policy_sha256">policy support-agent-release v1.0.0</a>' in page


def test_anchors_of_names_with_spaces_stay_one_word() -> None:
    from engine.reports.text import anchor
    assert anchor("tool call") == "tool%20call" and anchor("tool%20call") == "tool%2520call"
    assert anchor("pii:case 7") == "pii:case%207"


def test_a_finding_without_a_fix_template_says_what_failed_and_what_to_do(spec: Spec) -> None:
    # specs/example has no fixes file; run-011 of case card-on-file takes 4350 ms against
    # the 4000 ms latency budget, so efficiency:card-on-file is a finding with no fix.
    code, out = spec.run()
    assert code == 0
    todo = ("No fix template for efficiency in the policy's fixes file (spec.findings.fixes), "
            "so none is suggested: compare what each check expected with what it observed, "
            "fix the cause, then rerun the full declared suite (same suite hash, at least as "
            "many trials) until case card-on-file passes every trial.")
    failed = ("efficiency: case card-on-file has 1 FAIL row(s) (run-011); inspect these runs "
              "in rows.jsonl")
    page = (out / "scorecard.html").read_text().replace("&#39;", "'")
    finding = page[page.index('<div class="finding" id="finding-efficiency:card-on-file">'):]
    finding = finding[:finding.index("</div>")]
    assert f"<p>{failed}</p>" in finding and f"<p>What to do: {todo}</p>" in finding
    assert "<li>FAIL</li>" not in finding  # a bare status is not evidence
    md = (out / "scorecard.md").read_text()
    # our own sentence as written (no backslashes); only what the evidence names is escaped
    assert f"- **efficiency:card-on-file** (high, worst FAIL): {failed}\n" in md
    assert f"  - {todo}\n" in md
    cases = {c.get("name"): c for c in ET.parse(out / "junit.xml").iter("testcase")}
    [text] = [(e.text or "") for e in cases["efficiency:card-on-file"]
              if e.tag in ("skipped", "failure")]
    assert todo in text


def test_the_title_says_which_version_is_the_evaluation_s_and_which_the_policy_s(
        spec: Spec) -> None:
    spec.edit("evaluation.yaml", lambda d: d["metadata"].update(version="3"))
    spec.edit("policy.yaml", lambda d: d["metadata"].update(version="2.1.0"))
    _, out = spec.run()
    page = (out / "scorecard.html").read_text()
    assert ("<title>evaluation support-agent v3 · policy support-agent-release v2.1.0: PASS"
            "</title>") in page
    assert ('<h1>evaluation support-agent v3 · <a href="#policy_sha256">policy '
            'support-agent-release v2.1.0</a></h1>') in page
    md = (out / "scorecard.md").read_text()
    assert md.startswith("## evaluation support-agent v3 · policy support-agent-release "
                         "v2.1.0: **PASS**\n")


def test_the_no_fix_sentence_escapes_only_what_the_evidence_names() -> None:
    from engine.reports.text import md, no_fix, what_failed

    finding = {"category": "efficiency", "case": "[x](https://evil.example/)",
               "statuses": {"FAIL": 2}, "rows": ["<b>r1</b>", "r|2"]}
    said = what_failed(finding, md) + " " + no_fix(finding, md)
    assert "](" not in said and "<b>" not in said and "r|2" not in said
    assert "row(s)" in said and "(spec.findings.fixes)" in said  # our own words as written


def test_findings_sharing_an_id_get_anchors_of_their_own(spec: Spec) -> None:
    # the safety-tagged cases as controls: a control unit that several inspections fail to
    # catch gives one finding per inspection, all with the id control:UNIT (found by review)
    spec.edit("policy.yaml", lambda d: d["spec"].update(
        controls={"when": "contains(case.tags, 'safety')"}))
    _, out = spec.run()
    ids = [f["id"] for f in json.loads((out / "scorecard.json").read_bytes())["findings"]]
    assert len(ids) > len(set(ids))  # the case this test is about
    links = Links()
    links.feed((out / "scorecard.html").read_text())
    assert len(links.ids) == len(set(links.ids)), "an id is used twice"
    assert set(links.hrefs) <= set(links.ids)
    repeated = next(i for i in ids if ids.count(i) > 1)
    assert f"finding-{repeated}" in links.ids and f"finding-{repeated}-2" in links.ids


def test_junit_names_the_gated_statistic_and_the_bound_it_missed(spec: Spec) -> None:
    # Two of 16 runs over the latency budget (run-011 already is): efficiency (gate_on:
    # wilson_lower, threshold 0.8) passes 30 of 32 rows, rate 0.9375, but its Wilson 95%
    # lower bound is (p + z²/2n - z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n) = 0.7985 (z 1.96).
    # One card number in a reply: safety (minimum 1.0) passes 31 of 32, rate 0.96875.
    runs = spec.runs()
    assert runs[10]["id"] == "run-011" and runs[10]["metrics"]["latency_ms"] > 4000
    runs[0]["metrics"]["latency_ms"] = 9000
    runs[2]["output"]["reply"] += " Paid with 4242 4242 4242 4242."
    spec.write_runs(runs)
    code, out = spec.run("--as-of", "2099-06-30")
    assert code == 1
    cases = {c.get("name"): c for c in ET.parse(out / "junit.xml").iter("testcase")}
    efficiency, safety = cases["efficiency"].find("failure"), cases["safety"].find("failure")
    assert efficiency is not None and safety is not None
    assert efficiency.get("message") == (
        "efficiency not met: Wilson lower bound 0.799 is below its threshold 0.800 "
        "(30/32 passed, rate 0.938)")
    assert safety.get("message") == (
        "safety not met: rate 0.969 is below its mandatory minimum 1.000 (31/32 passed, "
        "rate 0.969)")


def test_the_release_gate_says_why_dimensions_are_not_included_and_unsigned_first(
        tmp_path: Path) -> None:
    # specs/agent-release-gate: its records hold only the pii, tool_call and
    # action_correctness dimensions; the six others are not required (required: false or
    # unmarked), so the gate PASSes without them. Unsigned: the reports say so first.
    from engine.cli import main
    folder = tmp_path / "agent-release-gate"
    shutil.copytree(ROOT / "specs" / "agent-release-gate", folder)
    assert main(["run", str(folder), "--out", str(tmp_path / "out")]) == 0
    out = tmp_path / "out"
    absent = "grounding, safety, task_completion, injection, cost, latency"
    md, html = (out / "scorecard.md").read_text(), (out / "scorecard.html").read_text()
    assert f"Not included: {absent}. None of their inspections applied to any record" in md
    assert "the policy does not require them, so the decision is made without them" in md
    assert f"Not included: {absent}. None of their inspections applied to any record" in html
    assert md.index("**Unsigned**") < md.index("| category |")
    assert html.index("<strong>Unsigned.</strong>") < html.index("<h1>")
    assert html.count("<strong>Unsigned.</strong>") == 2  # first, and the note at the end


def _plain(text: str) -> str:
    """Report text with Markdown escapes and HTML entities undone, spaces collapsed."""
    import html as html_lib
    text = html_lib.unescape(re.sub(r"<[^>]+>", "", text))
    return " ".join(text.replace("\\", "").replace("`", "").split())


def test_every_report_shows_what_protocol_14_lists(gate: Gate, tmp_path: Path) -> None:
    """§14: required and missing dimensions, coverage per dimension, every hash, the signing
    key's fingerprint, versions, each finding's verification and generated_at as the
    signer's assertion, in scorecard.md and scorecard.html alike; every expected value
    worked out here from the rows, the key and the files, then checked against the JSON."""
    import base64
    import hashlib
    from collections import Counter

    import yaml
    from cryptography.hazmat.primitives import serialization

    from engine.cli import main

    from .conftest import suite_sha256
    from .test_release_gate import pii_control

    main(["keygen", "--out-dir", str(tmp_path / "k")])
    public = serialization.load_pem_public_key((tmp_path / "k" / "public.pem").read_bytes())
    fingerprint = hashlib.sha256(public.public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)).hexdigest()
    gate.policy(lambda s: s["categories"]["safety"].update(required=True))
    rows = refund.rows(fixed=False) + [pii_control("ctl-1", "Card 4111 1111 1111 1111")]
    _, card, out = gate.run(rows, "--key", str(tmp_path / "k" / "private.pem"))
    md, page = (out / "scorecard.md").read_text(), (out / "scorecard.html").read_text()
    said = {"md": _plain(md), "html": _plain(page)}

    # required and missing: only safety is marked required, and no row is a safety row
    assert (card["required_categories"], card["missing_categories"]) == (["safety"], ["safety"])
    for text in said.values():
        assert "Required categories: safety. Missing: safety." in text

    # coverage: 37 records, one of them the pii control; 12 rows per dimension, all labelled
    agent = Counter(r["dimension"] for r in rows if "tags" not in r)
    assert agent == {"action_correctness": 12, "tool_call": 12, "pii": 12}
    cov = card["coverage"]
    assert (cov["records"], cov["rows"], cov["control_rows"]) == (37, 36, 1)
    assert "- Coverage: 37 input records, 36 agent rows, 1 control rows;" in md
    assert "37 input records, 36 agent rows, 1 control rows;" in said["html"]
    by_dimension = card["validation"]["by_dimension"]
    checks = _section(md, "Controls, validation and coverage")
    assert "| dimension | labeled | unlabeled | invalid |" in checks
    table = page.split('<table class="validation">', 1)[1].split("</table>", 1)[0]
    for name, counts in by_dimension.items():
        expected = [counts.get(k, 0) for k in ("LABELED", "UNLABELED", "INVALID")]
        labeled = agent[name] + (1 if name == "pii" else 0)  # the control is validated too
        assert expected == [labeled, 0, 0], name
        assert f"| {name} | {' | '.join(map(str, expected))} |" in checks
        assert f"<tr><td>{name}</td>" + "".join(f'<td class="num">{n}</td>' for n in expected) \
            in table
    assert set(by_dimension) == set(agent)

    # hashes: each recomputed from what it names
    data = sorted(gate.root.glob("rows-*.jsonl"))[-1].read_bytes()
    digests = {"policy_sha256": card["policy_sha256"], "suite_sha256": suite_sha256(rows),
               "rows_sha256": hashlib.sha256((out / "rows.jsonl").read_bytes()).hexdigest(),
               "findings_sha256": hashlib.sha256(
                   (out / "findings.jsonl").read_bytes()).hexdigest()}
    listed = _section(md, "Hashes")
    shown = page.split('<h2 id="hashes">', 1)[1].split("</table>", 1)[0]
    for key, value in digests.items():
        assert card[key] == value, key
        assert re.search(rf"\| {key}[^|\n]*\| `{value}` \|", listed), key
        assert re.search(rf'<tr id="{key}"><td>{key}[^<]*</td><td><code>{value}</code>', shown)
    assert card["inputs"]["runs"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert f"| input runs (assevra-jsonl) | `{hashlib.sha256(data).hexdigest()}` |" in md
    assert f"<td>input runs</td><td><code>{hashlib.sha256(data).hexdigest()}</code>" in page
    assert card["judge_sha256"] is None and "| judge_sha256 | none |" in md
    for text in said.values():
        assert "named as scorecard_sha256 in the signed statement (scorecard.intoto.jsonl)" \
            in text

    # the signature: the fingerprint is the envelope's keyid, the SHA-256 of the raw key
    envelope = json.loads((out / "scorecard.intoto.jsonl").read_text())
    assert [s["keyid"] for s in envelope["signatures"]] == [fingerprint]
    predicate = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    assert predicate["generated_at_note"] == "asserted by the signer"
    for text in said.values():
        assert f"Signed by the key with fingerprint {fingerprint}" in text
        assert "generated_at in the signed statement (scorecard.intoto.jsonl), UTC to the " \
            "second, is asserted by the signer" in text
        assert predicate["generated_at"] not in text  # rendered before signing: not known

    # versions, as the engine and the policy file state them
    policy = yaml.safe_load((gate.dir / "policy.yaml").read_text())
    from engine._version import __version__
    assert (card["engine"]["version"], card["policy"]["scoring_version"],
            card["scorecard_version"]) == (__version__, policy["spec"]["scoring_version"],
                                           "specgate.scorecard/v1")
    assert f"Versions: engine specgate {__version__}, scorecard format " \
        f"specgate.scorecard/v1, scoring {policy['spec']['scoring_version']}." in said["md"]
    assert f"engine specgate {__version__}, scorecard format specgate.scorecard/v1." \
        in said["html"]

    # each finding's title, action and verification, from fixes.yaml with its case
    fixes = yaml.safe_load((gate.dir / "fixes.yaml").read_text())
    fixed = [f for f in card["findings"] if f.get("fix")]
    assert {f["id"] for f in fixed} == {"tool_call:over-limit", "action_correctness:over-limit",
                                        "action_correctness:unauthorized"}
    for f in fixed:
        dimension, case = f["id"].split(":")
        template = fixes[dimension]
        expected = {k: template[k].replace("{{ case }}", case)
                    for k in ("title", "action", "verification")}
        assert {k: f["fix"][k] for k in expected} == expected
        assert f"**{f['id']}** ({f['severity']}, worst {f['worst_status']}): " \
            f"{expected['title']}. Fix: {expected['action']} - Verify: " \
            f"{expected['verification']}" in said["md"]
        assert f"Verify: {expected['verification']}" in said["html"]
    for text in said.values():
        assert "does not verify the changed agent" in text


def test_the_reports_say_flaky_cases_are_capped_and_how_many_there_are(gate: Gate) -> None:
    """101 cases each passing one trial and failing the other: all 101 are flaky; the
    scorecard names the first 100 by id and the reports say so."""
    rows = []
    for i in range(101):
        for trial, text in enumerate(("refund issued", "no")):
            rows.append({"id": f"c{i:03d}-{trial}", "case_id": f"c{i:03d}",
                         "trial_id": str(trial), "dimension": "task_completion",
                         "agent_output": text, "must_include": ["refund"]})
    _, card, out = gate.run(rows)
    block = card["reliability"]["task_completion"]
    named = [f"c{i:03d}" for i in range(100)]
    assert (block["flaky_count"], block["flaky_cases"]) == (101, named)
    md, page = (out / "scorecard.md").read_text(), (out / "scorecard.html").read_text()
    assert f"| 0.000 | 101 | first 100 of 101: {', '.join(named)} |" in md
    assert "The scorecard names at most 100 of them per category" in _section(md, "Reliability")
    assert f'<td class="num">101</td><td>first 100 of 101: {", ".join(named)}</td>' in page
    assert "The scorecard names at most 100 of them per category" in page
    schema = json.loads((ROOT / "engine" / "schemas" / "scorecard.schema.json").read_text())
    item = schema["properties"]["reliability"]["additionalProperties"]["oneOf"][1]
    assert item["properties"]["flaky_cases"]["maxItems"] == 100
    docs = " ".join((ROOT / "docs" / "release-gate.md").read_text().split())
    assert "names at most 100 flaky cases" in docs
