"""What row evidence may repeat: every value clipped to a bound, and whatever the policy's
sensitive detectors flag written as [REDACTED], by default.

A detector's matches are masked in every row (messages, expected and observed values), so
the findings, scorecard and projections built from the rows never repeat them. A policy
turns this off only by saying so (``evidence: {mask_matches: false}``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from engine.inspections.pii import REDACTED, Detector
from engine.records.clip import MAX_DEPTH, MAX_EVIDENCE, MAX_ITEMS, MAX_TOTAL, clip

# Inspection types whose matches are sensitive -> the parameter that finds them. Other
# types look for content the policy itself names (not_contains, refusal words, tool
# names), which masking would only hide from the reader.
SENSITIVE = {"regex_absent": "pattern", "pii": "detector"}
# Characters before a clip's cut that are withheld: a match the cut split is never shown
# in part.
NEAR_CUT = 32
_CUT = re.compile(rf"(?s).{{0,{NEAR_CUT}}}(\.\.\. \[\d+ more characters\])")


def _redact(match: re.Match[str]) -> str:
    return REDACTED if match.group(0) else ""


@dataclass(frozen=True)
class Masker:
    """The detectors (pii tables and compiled patterns) whose matches evidence hides."""

    finders: tuple[Detector | re.Pattern[str], ...]

    def text(self, text: str) -> str:
        """``text`` with every match of every finder, and the end of every cut, hidden."""
        for finder in self.finders:
            text = finder.mask(text) if isinstance(finder, Detector) else \
                finder.sub(_redact, text)
        if " more characters]" not in text:
            return text
        return _CUT.sub(lambda m: REDACTED + m.group(1), text)


def masker(inspections: Iterable[Any], mask_with: Detector | None,
           mask_matches: bool) -> Masker | None:
    """The policy's Masker: its ``mask_with`` table, plus (unless ``mask_matches`` is
    false) what each sensitive inspection finds; None when nothing is masked."""
    finders: list[Detector | re.Pattern[str]] = [mask_with] if mask_with else []
    if mask_matches:
        for inspection in inspections:
            finder = inspection.params.get(SENSITIVE.get(inspection.type, ""))
            if finder is not None and finder not in finders:
                finders.append(finder)
    return Masker(tuple(finders)) if finders else None


def evidence(value: Any, mask: Masker | None) -> Any:
    """A value as a row may hold it: clipped, then masked."""
    return shown(value, mask)[0]


def shown(value: Any, mask: Masker | None) -> tuple[Any, bool]:
    """``evidence(value, mask)``, and whether its canonical bytes are what the C JSON encoder
    writes (``canonical._plain``; False when unknown). One walk where the value needs no
    clipping (nearly always); else clip, then mask."""
    if type(value) is str and len(value) <= MAX_EVIDENCE:  # most ids and messages
        return (value if mask is None else mask.text(value)), True
    try:
        walk = _Shown(None if mask is None else mask.text)
        return walk.walk(value, 0), walk.plain
    except _Careful:
        value = clip(value)
        return (value if mask is None else _masked(value, mask)), False


class _Careful(Exception):
    """The value needs clipping (or is unusual): take the careful path."""


class _Shown:
    """One walk over a value that needs no clipping: clip's own accounting checked at every
    step (anything clip would cut raises _Careful, so the walk never differs from clip),
    every string and key masked, and whether the C encoder's bytes are canonical."""

    __slots__ = ("left", "plain", "text")

    def __init__(self, text: Callable[[str], str] | None) -> None:
        self.left, self.plain, self.text = MAX_TOTAL, True, text

    def string(self, s: str) -> str:
        if len(s) > MAX_EVIDENCE or len(s) > self.left:
            raise _Careful
        self.left -= len(s) + 2
        return s if self.text is None else self.text(s)

    def walk(self, v: Any, depth: int) -> Any:  # noqa: PLR0911 - one answer per kind
        kind = type(v)
        if kind is str:
            return self.string(v)
        if kind is dict:
            return self.members(v, depth)
        if kind is list:
            self.left -= 2
            if depth >= MAX_DEPTH or len(v) > MAX_ITEMS or (
                    v and type(v[-1]) is str and v[-1].endswith(_MARKED)):
                raise _Careful
            items = [self.item(item, depth) for item in v]
            return v if all(a is b for a, b in zip(items, v, strict=True)) else items
        if kind is float:
            self.plain = self.plain and 1e-4 <= abs(v) < 1e16 and not v.is_integer()
        elif not (kind is int or kind is bool or v is None):
            raise _Careful  # not JSON as the records give it
        self.left -= 8
        return v

    def item(self, v: Any, depth: int) -> Any:
        if self.left <= 0:
            raise _Careful
        return self.walk(v, depth + 1)

    def members(self, v: dict[Any, Any], depth: int) -> Any:
        self.left -= 2
        if depth >= MAX_DEPTH or len(v) > MAX_ITEMS or "..." in v:
            raise _Careful
        pairs = []
        for key, item in v.items():
            if self.left <= 0 or type(key) is not str:
                raise _Careful
            shown_key = self.string(key)
            self.plain = self.plain and shown_key.isascii()
            pairs.append((shown_key, self.walk(item, depth + 1)))
        if all(k is a and w is b for (k, w), (a, b) in zip(pairs, v.items(), strict=True)):
            return v
        return dict(pairs)


_MARKED = ("more items]", "more keys]")  # what an earlier clip's marker ends with


def _masked(value: Any, mask: Masker) -> Any:
    if isinstance(value, str):
        return mask.text(value)
    if isinstance(value, list):
        return [_masked(v, mask) for v in value]
    if isinstance(value, dict):
        return {_masked(k, mask): _masked(v, mask) for k, v in value.items()}
    return value
