"""The inspection table: ``type:`` string -> primitive. Adding a primitive is adding a row."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from engine import protocols
from engine.inspections import agent, budget, judged, lexicon, pii, structure, text
from engine.inspections._base import (
    ABSTAIN,
    CLASSES,
    ERROR,
    EXPECTATION,
    FAIL,
    OBSERVATION,
    PASS,
    SKIPPED,
    STATUSES,
    Context,
    Outcome,
    Primitive,
)

OWN: dict[str, Primitive] = {**text.TABLE, **structure.TABLE, **budget.TABLE, **pii.TABLE,
                             **lexicon.TABLE, **agent.TABLE, **judged.TABLE}


class _Table(Mapping[str, Primitive]):
    """Every inspection type: the engine's own, then those the protocols add (looked up
    when first read, so importing this package never imports a protocol)."""

    def _all(self) -> dict[str, Primitive]:
        return {**OWN, **protocols.primitives()}

    def __getitem__(self, name: str) -> Primitive:
        return OWN[name] if name in OWN else protocols.primitives()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


TABLE: Mapping[str, Primitive] = _Table()


# Builders of the data tables some primitives read (``x-load`` in their parameter schema).
LOADERS: dict[str, Callable[[Any], Any]] = {**pii.LOADERS, **lexicon.LOADERS}

__all__ = ["ABSTAIN", "CLASSES", "ERROR", "EXPECTATION", "FAIL", "LOADERS", "OBSERVATION",
           "PASS", "SKIPPED", "STATUSES", "TABLE", "Context", "Outcome", "Primitive"]
