"""Projections of a scorecard: scorecard.md (CI step summaries), scorecard.html (one
self-contained, autoescaped file with inline SVG) and junit.xml. They show the scorecard's
evidence and nothing else; the signed JSON stays the only source of truth."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from importlib import resources
from typing import Any

import jinja2

from engine.reports import scorecard_md
from engine.reports import text as _text
from engine.reports.charts import interval_svg
from engine.reports.text import fmt

_HTML = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined,
                           loader=jinja2.FunctionLoader(
                               lambda name: (resources.files("engine") / "reports" /
                                             "templates" / name).read_text("utf-8")))


_HTML.filters["fmt"] = fmt


def html(card: dict[str, Any]) -> str:
    """scorecard.html."""
    return _HTML.get_template("scorecard.html.j2").render(
        card=card, interval_svg=interval_svg, gated_on=_text.gated_on, value=_text.value)


markdown = scorecard_md.markdown
_md = _text.md


def junit(card: dict[str, Any]) -> bytes:
    """junit.xml: a suite per evaluation, a case per category and per failing finding."""
    suite = ET.Element("testsuite", name=card["evaluation"]["name"])
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for name, c in card["categories"].items():
        case = ET.SubElement(suite, "testcase", classname="category", name=name)
        counts["tests"] += 1
        stats = f"{c['passed']}/{c['n']} passed, rate {fmt(c['rate'])}"
        if c["state"] == "NOT_MET":
            counts["failures"] += 1
            ET.SubElement(case, "failure", message=f"{name} below its threshold or minimum: "
                          f"{stats} (threshold {fmt(c['threshold'])})").text = stats
        elif c["state"] in ("UNRESOLVED", "MISSING"):
            counts["errors"] += 1
            ET.SubElement(case, "error", message=f"{name} is {c['state'].lower()}: restore the "
                          f"evidence ({c['errors']} ERROR rows)").text = stats
        elif c["state"] in ("SKIPPED", "NOT_INCLUDED"):
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=c["state"].lower())
    for f in card["findings"]:
        case = ET.SubElement(suite, "testcase", classname="finding", name=f["id"])
        counts["tests"] += 1
        counts["failures"] += 1
        fix = f.get("fix") or {}
        detail = [fix.get("title"), fix.get("verification"), *(f.get("evidence") or [])]
        ET.SubElement(case, "failure", message=fix.get("action") or f.get("message") or
                      _finding_message(f)).text = "\n".join(filter(None, detail))
    more = card.get("findings_count", len(card["findings"])) - len(card["findings"])
    if more > 0:
        case = ET.SubElement(suite, "testcase", classname="finding", name="more-findings")
        counts["tests"] += 1
        counts["failures"] += 1
        ET.SubElement(case, "failure", message=f"{more} more findings in findings.jsonl "
                      "beside the scorecard (the scorecard lists the first "
                      f"{len(card['findings'])})")
    for w in (card.get("waivers") or {}).get("entries", []):
        # A waiver is reported, never hidden: active ones as skipped tests that say what
        # they took out and until when; expired ones as plain tests whose output says so.
        case = ET.SubElement(suite, "testcase", classname="waiver", name=w["id"])
        counts["tests"] += 1
        said = (f"{w['id']} {w['status']}: {w['rows_waived']} FAIL row(s) waived; "
                f"approved by {w['approver']} until {w['expires']}: {w['justification']}")
        if w["status"] == "active":
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=said)
        else:
            ET.SubElement(case, "system-out").text = f"{said} ({w['note']})"
    for key, value in counts.items():
        suite.set(key, str(value))
    root = ET.Element("testsuites", name=f"specgate {card['decision']}")
    root.append(suite)
    for element in root.iter():
        element.text = _xml(element.text) if element.text else element.text
        for attribute, text in element.attrib.items():
            element.set(attribute, _xml(text))
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


# What XML 1.0 cannot hold: most control characters, surrogates, U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    """Text XML can hold: each character it cannot is written as its escape (\\x01)."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group(0)):02x}" if ord(m.group(0)) < 256
                        else f"\\u{ord(m.group(0)):04x}", text)


def _finding_message(f: dict[str, Any]) -> str:
    """What to look at for a finding without a fix template."""
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(f.get("statuses", {}).items()))
    where = f"case {f['case']}" if f.get("case") else f["id"]
    rows = ", ".join(str(r) for r in f.get("rows", [])[:5])  # unit ids may be integers
    return (f"{f['category']}: {where} has {statuses or 'failing'} row(s)"
            + (f" ({rows})" if rows else "") + "; inspect these runs in rows.jsonl")


def project(card: dict[str, Any]) -> dict[str, bytes]:
    """The three projection files of one scorecard."""
    return {"scorecard.md": markdown(card).encode(), "scorecard.html": html(card).encode(),
            "junit.xml": junit(card)}
