"""Text helpers the projections share: numbers, values and escaping for Markdown."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

SHOWN = 400  # characters of one expected/observed value a report shows (rows.jsonl has more)
GATED_ON = {"point": "point estimate", "wilson_lower": "Wilson lower bound"}


def fmt(value: Any) -> str:
    """Numbers with 3 decimals (the JSON keeps full precision); null as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def gated_on(category: dict[str, Any]) -> str:
    """What a category's threshold and minimum are compared with, in words."""
    mode = category.get("gate_on")
    return GATED_ON.get(mode, str(mode)) if mode is not None else "–"


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
