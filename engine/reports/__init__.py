"""Projections of a scorecard: scorecard.md (CI step summaries), scorecard.html (one
self-contained, autoescaped file with inline SVG) and junit.xml. They show the scorecard's
evidence and nothing else; the signed JSON stays the only source of truth."""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

import jinja2

from engine.reports.junit import junit

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


# Characters that can start Markdown or HTML markup inside a line are written escaped, and
# so are the starts of autolinks (scheme://, www., user@host).
_MD_TABLE = str.maketrans({**{c: "\\" + c for c in "\\`*[]()#!|~@"},
                           "&": "&amp;", "<": "&lt;", ">": "&gt;",
                           **{chr(c): " " for c in (*range(32), 127)}})
_AUTOLINK = re.compile(r"(?i)://|\bwww\.")


def _md(text: Any) -> str:
    """Text shown as itself in Markdown, also inside a table cell: no links, images, HTML,
    code spans or column breaks, and one line (control characters are spaces)."""
    return _AUTOLINK.sub(lambda m: "\\" + m.group(0) if m.group(0) == "://"
                         else m.group(0)[:3] + "\\.", str(text).translate(_MD_TABLE))


def _code(text: Any) -> str:
    """Text for inside a code span (spec paths, codes): no backticks, pipes or line breaks."""
    return str(text).translate(_CODE)


_CODE = str.maketrans({"`": "'", "|": "\\|", **{chr(c): " " for c in range(32)}})


def markdown(card: dict[str, Any]) -> str:
    """scorecard.md, ready for a CI step summary."""
    decision = card["decision"]
    note = " (not a release decision)" if decision in ("TRIAGE", "SELF_TEST") else ""
    lines = [f"## {_md(card['evaluation']['name'])}: **{decision}**{note}", "",
             f"Policy `{_code(card['policy']['name'])} {_code(card['policy']['version'])}`, "
             f"purpose {card['purpose']}, policy_sha256 `{card['policy_sha256']}`.", "",
             "| category | state | n | passed | rate | Wilson 95% | threshold |",
             "|---|---|---|---|---|---|---|"]
    for name, c in card["categories"].items():
        lines.append(f"| {_md(name)} | {c['state']} | {c['n']} | {c['passed']} | "
                     f"{fmt(c['rate'])} | [{fmt(c['wilson_lower'])}, "
                     f"{fmt(c['wilson_upper'])}] | {fmt(c['threshold'])} |")
    if card["reasons"]:
        lines += ["", "| decision | code | message | spec path |", "|---|---|---|---|"]
        lines += [f"| {r['decision']} | `{_code(r['code'])}` | {_md(r['message'])} | "
                  f"`{_code(r['spec_path'])}` |" for r in card["reasons"]]
    if card.get("waivers"):
        lines += ["", f"Waivers (as of {_md(card['waivers']['as_of'])}):", ""]
        lines += [f"- {_md(w['id'])}: {w['status']}, {w['rows_waived']} FAIL row(s) "
                  f"waived, approved by {_md(w['approver'])} until {_md(w['expires'])}"
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
              "`engine verify scorecard.json --trusted-key governance-signing.pub.pem`, "
              "pinning the signer's public key obtained out of band, never a key shipped "
              "beside the evidence.", ""]
    return "\n".join(lines)


def project(card: dict[str, Any]) -> dict[str, bytes]:
    """The three projection files of one scorecard."""
    return {"scorecard.md": markdown(card).encode(), "scorecard.html": html(card).encode(),
            "junit.xml": junit(card)}
