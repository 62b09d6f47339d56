"""Text helpers the projections share: numbers, values and escaping for Markdown."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from engine.stats import FLAKY_LISTED

SHOWN = 400  # characters of one expected/observed value a report shows (rows.jsonl has more)
GATED_ON = {"point": "point estimate", "wilson_lower": "Wilson lower bound"}


def fmt(value: Any) -> str:
    """Numbers with 3 decimals (the JSON keeps full precision); null as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def anchor(name: Any) -> str:
    """A name as an HTML id and its link's fragment: one word (a space or a character a URL
    would escape is percent-encoded), so two names never share an anchor."""
    return quote(str(name), safe=":")


def titled(kind: str, name: Any, version: Any) -> str:
    """'evaluation refund-gate v1.0.0': a spec's kind, name and version, so that an
    evaluation's version is never read as its policy's."""
    if version is None:
        return f"{kind} {name}"
    said = str(version)
    return f"{kind} {name} {said if said[:1] in ('v', 'V') else 'v' + said}"


RERUN_NOTE = ("Scoring output captured before a change again (a rerun over the old records, "
              "or a judge replay of them) does not verify the changed agent: a fix is "
              "verified only when the changed agent runs the declared suite again and that "
              "new output is scored.")
SCORECARD_DIGEST = (
    "The scorecard's own digest cannot be inside it: it is the SHA-256 of scorecard.json's "
    "bytes, named as `scorecard_sha256` in the signed statement (scorecard.intoto.jsonl) and "
    "printed by engine run and engine verify.")
GENERATED_AT = (
    "When it was signed: `generated_at` in the signed statement (scorecard.intoto.jsonl), "
    "UTC to the second, is asserted by the signer (the runner's clock), not verified by "
    "anyone; engine verify prints it as the signer asserts it.")
FLAKY_NOTE = (f"flaky: every case whose scored trials both passed and failed. The scorecard "
              f"names at most {FLAKY_LISTED} of them per category, the first by case id "
              "(`flaky_cases`); `flaky_count` counts them all.")


def flaky_named(block: dict[str, Any], escape: Callable[[Any], str] = str) -> str:
    """The flaky cases a reliability block names, saying when they are only the first of
    more (the scorecard lists FLAKY_LISTED)."""
    named, count = block["flaky_cases"], block["flaky_count"]
    listed = ", ".join(escape(c) for c in named) or "none"
    return f"first {len(named)} of {count}: {listed}" if count > len(named) else listed


def gated_on(category: dict[str, Any]) -> str:
    """What a category's threshold and minimum are compared with, in words."""
    mode = category.get("gate_on")
    words = GATED_ON.get(mode, str(mode)) if mode is not None else "–"
    if category.get("corrected"):
        return f"corrected {words}"
    held = category.get("abstained_as_failed")
    if held:  # judge.max_abstained: the allowed ABSTAIN rows count as FAIL in the gate
        return (f"{words} with its {category['abstained']} ABSTAIN row(s) as FAIL (rate "
                f"{fmt(held['rate'])}, Wilson lower {fmt(held['wilson_lower'])})")
    return words


CORRECTED_NOTE = ("corrected: the judged rate corrected for the judge's calibrated error "
                  "(Rogan-Gladen, (rate + specificity - 1) / (sensitivity + specificity - 1), "
                  "clipped to [0, 1]) and its interval (a Bonferroni box of Wilson limits that "
                  "carries the calibration's own uncertainty); the category is gated on it.")


def corrected(category: dict[str, Any]) -> str:
    """A category's corrected rate and interval, or '–' when it is not corrected."""
    fixed = category.get("corrected")
    if not fixed:
        return "–"
    return f"{fmt(fixed['rate'])} [{fmt(fixed['lower'])}, {fmt(fixed['upper'])}]"


def value(v: Any) -> str:
    """An expected or observed value as compact JSON text, cut to SHOWN characters."""
    text = json.dumps(v, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= SHOWN else \
        text[:SHOWN] + f"… [{len(text) - SHOWN} more characters in rows.jsonl]"


# Characters that can start Markdown or HTML markup inside a line are written escaped, and
# so are the starts of autolinks (scheme://, www., user@host). Characters that reorder or
# break the text a reader sees (bidi controls, line and paragraph separators, NEL) are
# spaces: record text must not make "FAIL" display as something else.
INVISIBLE = "\u0085\u061c\u200e\u200f\u2028\u2029" + "".join(
    map(chr, (*range(0x202A, 0x202F), *range(0x2066, 0x206A))))
_MD_TABLE = str.maketrans({**{c: "\\" + c for c in "\\`*[]()#!|~@"},
                           "&": "&amp;", "<": "&lt;", ">": "&gt;",
                           **{chr(c): " " for c in (*range(32), 127)},
                           **{c: " " for c in INVISIBLE}})
_AUTOLINK = re.compile(r"(?i)://|\bwww\.")


def md(text: Any) -> str:
    """Text shown as itself in Markdown, also inside a table cell: no links, images, HTML,
    code spans or column breaks, and one line (control characters are spaces)."""
    return _AUTOLINK.sub(lambda m: "\\" + m.group(0) if m.group(0) == "://"
                         else m.group(0)[:3] + "\\.", str(text).translate(_MD_TABLE))


def code(text: Any) -> str:
    """Text for inside a code span (spec paths, codes): no backticks, pipes or line breaks."""
    return str(text).translate(_CODE)


_CODE = str.maketrans({"`": "'", "|": "\\|", **{chr(c): " " for c in range(32)},
                       **{c: " " for c in INVISIBLE}})


def expected_observed(check: dict[str, Any], escape: Callable[[str], str] = str) -> str:
    """'expected X; observed Y' for one check of a finding (each value compact JSON, cut to
    SHOWN characters, then passed through ``escape``)."""
    seen = [f"expected {escape(value(check['expected']))}" if "expected" in check else "",
            f"observed {escape(value(check['observed']))}" if "observed" in check else ""]
    return "; ".join(filter(None, seen)) or "no value recorded"


def what_failed(f: dict[str, Any], esc: Callable[[Any], str] = str) -> str:
    """What failed, for a finding without a fix template: its category, case, row statuses
    and runs (each run id named once); ``esc`` escapes what comes from the evidence and
    the spec (md for Markdown), never the sentence around it."""
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(f.get("statuses", {}).items()))
    where = f"case {esc(f['case'])}" if f.get("case") else esc(f["id"])
    runs = list(dict.fromkeys(str(r) for r in f.get("rows", [])))  # ids may be integers
    rows = ", ".join(esc(r) for r in runs[:5]) + \
        (f" and {len(runs) - 5} more" if len(runs) > 5 else "")
    return (f"{esc(f['category'])}: {where} has {esc(statuses) or 'failing'} row(s)"
            + (f" ({rows})" if rows else "") + "; inspect these runs in rows.jsonl")


def no_fix(f: dict[str, Any], esc: Callable[[Any], str] = str) -> str:
    """What to do about a finding the policy's fixes file has no template for."""
    where = f"case {esc(f['case'])}" if f.get("case") else "the finding"
    return (f"No fix template for {esc(f['category'])} in the policy's fixes file "
            "(spec.findings.fixes), so none is suggested: compare what each check expected "
            "with what it observed, fix the cause, then rerun the full declared suite (same "
            f"suite hash, at least as many trials) until {where} passes every trial.")


def needs_no_fix_text(f: dict[str, Any]) -> bool:
    """A finding about agent rows (it has a category and statuses) without a fix template."""
    return not f.get("fix") and not f.get("message") and bool(f.get("statuses"))


def not_included(card: dict[str, Any], show: Callable[[Any], str] = str,
                 spec_key: Callable[[str], str] = lambda text: f"'{text}'") -> str:
    """Why the categories without rows that the policy does not require decide nothing
    ('' when there are none); ``show`` writes a category's name, ``spec_key`` a spec key."""
    names = [show(name) for name, c in card["categories"].items()
             if c["state"] == "NOT_INCLUDED"]
    if not names:
        return ""
    one = len(names) == 1
    them = "it" if one else "them"
    return (f"Not included: {', '.join(names)}. None of {'its' if one else 'their'} "
            f"inspections applied to any record (an inspection's {spec_key('when')} selected "
            f"none, for example), so there are no rows; the policy does not require {them}, "
            f"so the decision is made without {them} ({spec_key('required: true')} makes a "
            "category without rows INCOMPLETE).")
