"""Projections of a scorecard: scorecard.md (CI step summaries), scorecard.html (one
self-contained, autoescaped file with inline SVG) and junit.xml. They show the scorecard's
evidence and nothing else; the signed JSON stays the only source of truth."""

from __future__ import annotations

from typing import Any

import jinja2

from engine.reports import scorecard_md
from engine.reports import text as _text
from engine.reports.charts import interval_svg
from engine.reports.junit import junit
from engine.reports.text import fmt

_VISIBLE = str.maketrans({c: " " for c in _text.INVISIBLE})


def _visible(value: Any) -> Any:
    """Every value the page prints: text that reorders or breaks lines is spaces."""
    return value.translate(_VISIBLE) if isinstance(value, str) else value


_HTML = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined,
                           finalize=_visible)
_HTML.filters["fmt"] = fmt
_PAGE: list[jinja2.Template] = []  # built on the first page a process writes


def html(card: dict[str, Any], signed: bool = True, signer: str = "") -> str:
    """scorecard.html (``signed``: whether a signature will cover it; ``signer``: the
    fingerprint of the key that will sign it; the page says which)."""
    if not _PAGE:
        from engine.reports import precompiled  # its module runs as a script too
        _PAGE.append(precompiled.template(_HTML))
    return _PAGE[0].render(**page_variables(card, signed, signer))


def page_variables(card: dict[str, Any], signed: bool = True,
                   signer: str = "") -> dict[str, Any]:
    """What scorecard.html's template is rendered with."""
    return {"card": card, "signed": signed, "signer": signer, "legend": legend(card),
            "groups": scorecard_md.validation_groups(card), "classes": scorecard_md.CLASSES,
            "flaky_listed": _text.FLAKY_LISTED,
            "rerun_note": _text.RERUN_NOTE if any(f.get("fix") for f in card["findings"]) else "",
            "finding_ids": unique_anchors("finding-", [f["id"] for f in card["findings"]]),
            "interval_svg": interval_svg, "gated_on": _text.gated_on, "value": _text.value,
            "anchor": _text.anchor, "titled": _text.titled, "what_failed": _text.what_failed,
            "no_fix": _text.no_fix, "needs_no_fix_text": _text.needs_no_fix_text,
            "not_included": _text.not_included(card), "corrected": _text.corrected,
            "corrected_note": _text.CORRECTED_NOTE,
            "any_corrected": any(c.get("corrected") for c in card["categories"].values())}


def unique_anchors(prefix: str, names: list[Any]) -> list[str]:
    """An HTML id for each name, in order: a name met again (two findings may share an id:
    one control unit missed by several inspections, case ids clipped alike) gets "-2",
    "-3", ..., so every id of the page is its own."""
    taken: set[str] = set()
    out = []
    for name in names:
        base = f"{prefix}{_text.anchor(name)}"
        chosen, n = base, 1
        while chosen in taken:
            n += 1
            chosen = f"{base}-{n}"
        taken.add(chosen)
        out.append(chosen)
    return out


def legend(card: dict[str, Any]) -> dict[str, str]:
    """Each reason code of the scorecard, in order of first appearance, with its meaning
    from the code table (docs/reference.md renders the same table)."""
    from engine.codes import table  # every protocol's codes: read only when a page is made

    meanings = {code: row.meaning for code, row in table().items()}
    return {r["code"]: meanings.get(r["code"], "a code this engine does not describe")
            for r in card["reasons"]}


markdown = scorecard_md.markdown
_md = _text.md


def project(card: dict[str, Any], signed: bool = True, signer: str = "") -> dict[str, bytes]:
    """The three projection files of one scorecard; an unsigned one's reports say so, a
    signed one's name the fingerprint (keyid) of the key that signs them, ``signer``."""
    return {"scorecard.md": markdown(card, signed, signer).encode(),
            "scorecard.html": html(card, signed, signer).encode(), "junit.xml": junit(card)}
