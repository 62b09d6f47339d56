"""Projections of a scorecard: scorecard.md (CI step summaries), scorecard.html (one
self-contained, autoescaped file with inline SVG) and junit.xml. They show the scorecard's
evidence and nothing else; the signed JSON stays the only source of truth."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from importlib import resources
from typing import Any

import jinja2

_HTML = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined,
                           loader=jinja2.FunctionLoader(
                               lambda name: (resources.files("engine") / "reports" /
                                             "templates" / name).read_text("utf-8")))


def fmt(value: Any) -> str:
    """Numbers with 3 decimals (the JSON keeps full precision); null as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:.3f}" if isinstance(value, float) else str(value)


_HTML.filters["fmt"] = fmt


def interval_svg(cat: dict[str, Any]) -> str:
    """An inline SVG: the 0-1 axis, the Wilson interval, the rate, and the threshold."""
    width, pad = 220, 10

    def x(v: float) -> float:
        return pad + v * (width - 2 * pad)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="28" '
             f'role="img" aria-label="rate and interval">',
             f'<line x1="{x(0)}" y1="14" x2="{x(1)}" y2="14" stroke="#ccc"/>']
    if cat["wilson_lower"] is not None:
        parts.append(f'<line x1="{x(cat["wilson_lower"]):.1f}" y1="14" '
                     f'x2="{x(cat["wilson_upper"]):.1f}" y2="14" stroke="#3465a4" '
                     f'stroke-width="4"/>')
    if cat["rate"] is not None:
        parts.append(f'<circle cx="{x(cat["rate"]):.1f}" cy="14" r="4" fill="#1b1b1b"/>')
    if cat["threshold"] is not None:
        parts.append(f'<line x1="{x(cat["threshold"]):.1f}" y1="3" '
                     f'x2="{x(cat["threshold"]):.1f}" y2="25" stroke="#b3261e" '
                     f'stroke-width="2"/>')
    parts.append("</svg>")
    return "".join(parts)


def html(card: dict[str, Any]) -> str:
    """scorecard.html."""
    return _HTML.get_template("scorecard.html.j2").render(card=card, interval_svg=interval_svg)


def _md(text: Any) -> str:
    """Text made safe for a Markdown table cell (no HTML, no column breaks)."""
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("|", "\\|").replace("\n", " "))


def markdown(card: dict[str, Any]) -> str:
    """scorecard.md, ready for a CI step summary."""
    decision = card["decision"]
    note = " (not a release decision)" if decision in ("TRIAGE", "SELF_TEST") else ""
    lines = [f"## {_md(card['evaluation']['name'])}: **{decision}**{note}", "",
             f"Policy `{_md(card['policy']['name'])} {_md(card['policy']['version'])}`, "
             f"purpose {card['purpose']}, policy_sha256 `{card['policy_sha256']}`.", "",
             "| category | state | n | passed | rate | Wilson 95% | threshold |",
             "|---|---|---|---|---|---|---|"]
    for name, c in card["categories"].items():
        lines.append(f"| {_md(name)} | {c['state']} | {c['n']} | {c['passed']} | "
                     f"{fmt(c['rate'])} | [{fmt(c['wilson_lower'])}, "
                     f"{fmt(c['wilson_upper'])}] | {fmt(c['threshold'])} |")
    if card["reasons"]:
        lines += ["", "| decision | code | message | spec path |", "|---|---|---|---|"]
        lines += [f"| {r['decision']} | `{r['code']}` | {_md(r['message'])} | "
                  f"`{_md(r['spec_path'])}` |" for r in card["reasons"]]
    if card.get("waivers"):
        lines += ["", f"Waivers (as of {card['waivers']['as_of']}):", ""]
        lines += [f"- {_md(w['id'])}: {w['status']}, {w['rows_waived']} FAIL row(s) waived, "
                  f"approved by {_md(w['approver'])} until {w['expires']}"
                  + (f" ({_md(w['note'])})" if w.get("note") else "")
                  for w in card["waivers"]["entries"]]
    fixes = [f for f in card["findings"] if f.get("fix")]
    if fixes:
        lines += ["", "### Findings", ""]
        if card.get("findings_count", 0) > len(card["findings"]):
            lines += [f"{card['findings_count']} findings in all; the scorecard lists the "
                      f"first {len(card['findings'])} and findings.jsonl holds every one.", ""]
        lines += [f"- **{_md(f['id'])}** ({f['severity']}): {_md(f['fix']['action'])}"
                  for f in fixes[:20]]
    lines += ["", f"Scorecard rows_sha256 `{card['rows_sha256']}`; verify with "
              "`engine verify scorecard.json --trusted-key KEY`.", ""]
    return "\n".join(lines)


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
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def _finding_message(f: dict[str, Any]) -> str:
    """What to look at for a finding without a fix template."""
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(f.get("statuses", {}).items()))
    where = f"case {f['case']}" if f.get("case") else f["id"]
    rows = ", ".join(str(r) for r in f.get("rows", [])[:5])
    return (f"{f['category']}: {where} has {statuses or 'failing'} row(s)"
            + (f" ({rows})" if rows else "") + "; inspect these runs in rows.jsonl")


def project(card: dict[str, Any]) -> dict[str, bytes]:
    """The three projection files of one scorecard."""
    return {"scorecard.md": markdown(card).encode(), "scorecard.html": html(card).encode(),
            "junit.xml": junit(card)}
