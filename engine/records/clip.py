"""Clipping: any value a record holds, cut down to evidence small enough for a row.

Records are written by the evaluated party; whatever they hold, what is copied into rows,
findings and reports is bounded here, and every cut says how much it left out.
"""

from __future__ import annotations

import re
from typing import Any

MAX_EVIDENCE = 500  # characters of any one string kept as evidence
MAX_ITEMS, MAX_DEPTH = 50, 8  # items of one list or object, and levels, kept as evidence
MAX_TOTAL = 4000  # characters of one whole value (its strings and keys) kept as evidence
_MORE = re.compile(r"(?:\.\.\. )?\[(\d+) more (?:items|keys)\]")
_CUT = re.compile(r"\.\.\. \[(\d+) more characters\]\Z")


def clip(value: Any) -> Any:
    """Evidence small enough for a row, whatever the record held: at most MAX_EVIDENCE
    characters of one string, MAX_ITEMS items of one list or object, MAX_DEPTH levels, and
    MAX_TOTAL characters in all (each item costs at least two); every cut says how much,
    and clipping clipped evidence again keeps those counts."""
    return value if fits(value) else _Clip().walk(value, 0)


def fits(value: Any) -> bool:
    """True only for a value ``clip`` keeps exactly as it is (then nothing is copied)."""
    return _Fits().walk(value, 0)


class _Clip:
    """One clip: the characters left to keep."""

    def __init__(self) -> None:
        self.left = MAX_TOTAL

    def text(self, s: str) -> str:
        cap = max(0, min(MAX_EVIDENCE, self.left))
        if len(s) <= cap:
            self.left -= len(s) + 2
            return s
        self.left -= cap + 2
        cut = _CUT.search(s, max(0, len(s) - 40)) if s.endswith(" more characters]") else None
        head, more = (s[:cut.start()], int(cut.group(1))) if cut else (s, 0)
        return s if len(head) <= cap else \
            head[:cap] + f"... [{len(head) - cap + more} more characters]"

    def walk(self, v: Any, depth: int) -> Any:
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, list):
            return self.items(v, depth)
        if isinstance(v, dict):
            return self.keys(v, depth)
        self.left -= 8
        return v

    def items(self, v: list[Any], depth: int) -> Any:
        self.left -= 2
        if depth >= MAX_DEPTH:
            return f"[{len(v)} item(s) nested deeper than {MAX_DEPTH} levels]"
        more = _more(v[-1]) if v and isinstance(v[-1], str) else None
        if more is not None:  # clipped before: count what it left out
            v = v[:-1]
        kept = []
        for item in v[:MAX_ITEMS]:
            if self.left <= 0:
                break
            kept.append(self.walk(item, depth + 1))
        more = (more or 0) + len(v) - len(kept)
        return kept + [f"... [{more} more items]"] if more else kept

    def keys(self, v: dict[str, Any], depth: int) -> Any:
        self.left -= 2
        if depth >= MAX_DEPTH:
            return f"[{len(v)} item(s) nested deeper than {MAX_DEPTH} levels]"
        more = _more(v["..."]) if isinstance(v.get("..."), str) else None
        kept: dict[str, Any] = {}
        for key, item in v.items():
            if self.left <= 0 or len(kept) == MAX_ITEMS:
                break
            if key != "..." or more is None:
                kept[self.text(key)] = self.walk(item, depth + 1)
        more = (more or 0) + len(v) - (more is not None) - len(kept)
        return {**kept, "...": f"[{more} more keys]"} if more else kept


def _more(marker: str) -> int | None:
    """How many items an earlier clip's marker says it left out, or None."""
    found = _MORE.fullmatch(marker) if marker.endswith(("more items]", "more keys]")) else None
    return int(found.group(1)) if found else None


class _Fits:
    """Whether ``clip`` keeps a value exactly as it is: the same accounting, checking where
    clip would cut. It answers False whenever in doubt (then the value is clipped), so True
    is only ever said of a value clip returns unchanged (tests/test_clip_fast.py)."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_TOTAL

    def text(self, s: str) -> bool:
        if len(s) > MAX_EVIDENCE or len(s) > self.left:
            return False
        self.left -= len(s) + 2
        return True

    def walk(self, v: Any, depth: int) -> bool:  # noqa: PLR0911 - one test per kind
        kind = type(v)
        if kind is str:
            return self.text(v)
        if kind is list:
            self.left -= 2
            if depth >= MAX_DEPTH or len(v) > MAX_ITEMS or (
                    v and isinstance(v[-1], str) and v[-1].endswith(_MARKED)):
                return False
            return all(self.left > 0 and self.walk(item, depth + 1) for item in v)
        if kind is dict:
            self.left -= 2
            if depth >= MAX_DEPTH or len(v) > MAX_ITEMS or "..." in v:
                return False
            return all(self.left > 0 and type(key) is str and self.text(key) and
                       self.walk(item, depth + 1) for key, item in v.items())
        if isinstance(v, str | list | dict):
            return False  # a subclass: the careful path
        self.left -= 8
        return True


_MARKED = ("more items]", "more keys]")  # what an earlier clip's marker ends with
