"""What row evidence may repeat: every value clipped to a bound, and whatever the policy's
sensitive detectors flag written as [REDACTED], by default.

A detector's matches are masked in every row (messages, expected and observed values), so
the findings, scorecard and projections built from the rows never repeat them. A policy
turns this off only by saying so (``evidence: {mask_matches: false}``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine.inspections.pii import REDACTED, Detector
from engine.records.clip import MAX_EVIDENCE, clip, fits

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
    if isinstance(value, str) and len(value) <= MAX_EVIDENCE:  # most ids and messages
        return value if mask is None else mask.text(value)
    if not fits(value):
        value = clip(value)
    elif mask is not None:  # clip would keep it as it is: mask it, copying only what changes
        return _masked_copy(value, mask.text)
    return value if mask is None else _masked(value, mask)




def _masked_copy(value: Any, text: Any) -> Any:
    """``_masked`` of a value, sharing every part no mask changed (the value itself when
    nothing did)."""
    kind = type(value)
    if kind is str:
        return text(value)
    if kind is list:
        items = [_masked_copy(v, text) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if kind is dict:
        pairs = [(text(k), _masked_copy(v, text)) for k, v in value.items()]
        if all(k is a and v is b for (k, v), (a, b) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    return value


def _masked(value: Any, mask: Masker) -> Any:
    if isinstance(value, str):
        return mask.text(value)
    if isinstance(value, list):
        return [_masked(v, mask) for v in value]
    if isinstance(value, dict):
        return {_masked(k, mask): _masked(v, mask) for k, v in value.items()}
    return value
