"""junit.xml: the CI test tab agrees with the gate.

One ``<testsuite>`` per evaluation holding a ``gate`` test, a test per category, per
finding and per waiver. Only a gate that is not PASS makes anything red: its ``gate`` test
fails with the reason codes, and so do the categories and findings behind it (those in a
category that failed or is unresolved, and blockers). Under a PASS gate, or inside a
category that met its threshold, a failing case is a *tolerated* finding, written as a
skipped test whose text says what failed: GitLab shows a skipped test's text and GitHub's
report actions count it as skipped; neither fails the tab.

Every test's ``classname`` is ``<evaluation>.<kind>`` and names within a kind are unique,
so viewers that merge several junit.xml files (GitLab keys a test by class and name) never
drop one as a duplicate.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from engine.reports.text import expected_observed, needs_no_fix_text, no_fix, what_failed

# Category states that fail (or leave unresolved) a gate that is not PASS.
_NOT_MET = "NOT_MET"
_UNRESOLVED = frozenset({"UNRESOLVED", "MISSING"})
_NOT_GATING = frozenset({"SKIPPED", "NOT_INCLUDED"})


def _fmt(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


class _Suite:
    """A ``<testsuite>`` being filled, with its counts and the names it already holds."""

    def __init__(self, evaluation: str) -> None:
        self.evaluation = evaluation
        self.element = ET.Element("testsuite", name=evaluation)
        self.counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        self.names: set[tuple[str, str]] = set()

    def case(self, kind: str, name: str) -> ET.Element:
        """A new test; a repeated name gets a number, never a silent merge."""
        unique, n = name, 1
        while (kind, unique) in self.names:
            n += 1
            unique = f"{name} ({n})"
        self.names.add((kind, unique))
        self.counts["tests"] += 1
        return ET.SubElement(self.element, "testcase", classname=f"{self.evaluation}.{kind}",
                             name=unique)

    def outcome(self, case: ET.Element, tag: str, message: str, text: str = "",
                kind: str | None = None) -> None:
        """Mark ``case`` failed, errored or skipped (tag), with a message and details."""
        self.counts[{"failure": "failures", "error": "errors", "skipped": "skipped"}[tag]] += 1
        element = ET.SubElement(case, tag, message=message)
        if kind:
            element.set("type", kind)
        element.text = text or message  # GitLab shows the element's text, not its message


def _gate(suite: _Suite, card: dict[str, Any]) -> None:
    decision = card["decision"]
    case = suite.case("gate", "gate")
    if decision == "PASS":
        return
    codes = list(dict.fromkeys(r["code"] for r in card["reasons"]))
    note = " (not a release decision)" if decision in ("TRIAGE", "SELF_TEST") else ""
    details = "\n".join(f"{r['decision']} {r['code']}: {r['message']} [{r['spec_path']}]"
                        for r in card["reasons"])
    suite.outcome(case, "failure", f"{decision}{note}: " +
                  (", ".join(codes) if codes else "no reason recorded"), details, decision)


def _category(suite: _Suite, name: str, c: dict[str, Any], red: bool) -> None:
    case = suite.case("category", name)
    stats = f"{c['passed']}/{c['n']} passed, rate {_fmt(c['rate'])}"
    if c["state"] in _NOT_GATING:
        suite.outcome(case, "skipped", c["state"].lower())
    elif c["state"] == _NOT_MET and red:
        suite.outcome(case, "failure", f"{name} not met: {'; '.join(_misses(c)) or 'a bound'} "
                      f"({stats})", stats)
    elif c["state"] in _UNRESOLVED and red:
        suite.outcome(case, "error", f"{name} is {c['state'].lower()}: restore the evidence "
                      f"({c['errors']} ERROR rows)", stats)
    elif c["state"] != "MET":
        suite.outcome(case, "skipped", f"{name} is {c['state'].lower()} but the gate "
                      f"passed: {stats}", stats)


def _below(value: float, bound: float) -> str:
    """``value`` below ``bound``, with enough digits that the two never read alike."""
    shown = f"{value:.3f}"
    return f"{value:.6g}" if shown == f"{bound:.3f}" else shown


def _misses(c: dict[str, Any]) -> list[str]:
    """Each bound a NOT_MET category missed, with the statistic gated on it (the Wilson
    lower bound or the rate for the threshold, the rate for the mandatory minimum)."""
    out = []
    lower = c.get("gate_on") == "wilson_lower"
    gated, rate = c.get("wilson_lower" if lower else "rate"), c.get("rate")
    threshold, minimum = c.get("threshold"), c.get("minimum")  # a scorecard may lack one
    if threshold is not None and gated is not None and not gated >= threshold:
        out.append(f"{'Wilson lower bound' if lower else 'rate'} {_below(gated, threshold)} "
                   f"is below its threshold {_fmt(float(threshold))}")
    if minimum is not None and rate is not None and not rate >= minimum:
        out.append(f"rate {_below(rate, minimum)} is below its mandatory minimum "
                   f"{_fmt(float(minimum))}")
    return out


def _finding(suite: _Suite, f: dict[str, Any], state: str | None, red: bool) -> None:
    case = suite.case("case", f["id"])
    fix = f.get("fix") or {}
    message = fix.get("action") or f.get("message") or what_failed(f)
    checks = [f"{c.get('inspection', '?')} ({c.get('type', '?')}) on {c.get('unit', '?')}, "
              f"{c.get('status', '?')}: {expected_observed(c)}" for c in f.get("checks", [])]
    detail = "\n".join(filter(None, [fix.get("title"), fix.get("verification"),
                                     no_fix(f) if needs_no_fix_text(f) else "",
                                     *(f.get("evidence") or []), *checks]))
    if red and state in _UNRESOLVED:
        suite.outcome(case, "error", message, detail)
    elif red and (state == _NOT_MET or f.get("severity") == "blocker"):
        suite.outcome(case, "failure", message, detail)
    else:
        why = ("the gate passed" if not red else f"category {f.get('category')} is "
               f"{(state or 'not gating').lower()}")
        suite.outcome(case, "skipped", f"tolerated ({why}): {message}",
                      "\n".join(filter(None, [message, detail])))


def _more(suite: _Suite, card: dict[str, Any], red: bool) -> None:
    listed = len(card["findings"])
    more = card.get("findings_count", listed) - listed
    if more > 0:
        case = suite.case("case", "more-findings")
        suite.outcome(case, "failure" if red else "skipped",
                      f"{more} more findings in findings.jsonl beside the scorecard (the "
                      f"scorecard lists the first {listed})")


def _waiver(suite: _Suite, w: dict[str, Any]) -> None:
    # A waiver is reported, never hidden: active ones as skipped tests that say what
    # they took out and their last day; expired ones as plain tests whose output says so.
    case = suite.case("waiver", w["id"])
    said = (f"{w['id']} {w['status']}: {w['rows_waived']} FAIL row(s) waived; "
            f"approved by {w['approver']}, last day {w['expires']}: {w['justification']}")
    if w["status"] == "active":
        suite.outcome(case, "skipped", said)
    else:
        ET.SubElement(case, "system-out").text = f"{said} ({w['note']})"


def junit(card: dict[str, Any]) -> bytes:
    """junit.xml of one scorecard."""
    suite = _Suite(str(card["evaluation"]["name"]))
    red = card["decision"] != "PASS"
    _gate(suite, card)
    for name, c in card["categories"].items():
        _category(suite, name, c, red)
    for f in card["findings"]:
        category = card["categories"].get(f.get("category")) or {}
        _finding(suite, f, category.get("state"), red)
    _more(suite, card, red)
    for w in (card.get("waivers") or {}).get("entries", []):
        _waiver(suite, w)
    for key, value in suite.counts.items():
        suite.element.set(key, str(value))
    root = ET.Element("testsuites", name=f"specgate {card['decision']}")
    root.append(suite.element)
    for element in root.iter():
        element.text = _xml(element.text) if element.text else element.text
        for attribute, text in element.attrib.items():
            element.set(attribute, _xml(text))
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


# What XML 1.0 cannot hold: most control characters, surrogates, U+FFFE and U+FFFF.
# Characters XML cannot hold, and those that would reorder or break what a reader sees
# (bidi controls, line and paragraph separators, NEL): each is written as its escape.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff"
                      "\u0085\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _xml(text: str) -> str:
    """Text XML can hold: each character it cannot is written as its escape (\\x01)."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group(0)):02x}" if ord(m.group(0)) < 256
                        else f"\\u{ord(m.group(0)):04x}", text)
