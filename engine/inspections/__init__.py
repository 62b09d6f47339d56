"""The inspection table: ``type:`` string -> primitive. Adding a primitive is adding a row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.inspections import agent, budget, judged, lexicon, pii, structure, text
from engine.inspections._base import (
                               ABSTAIN,
                               ERROR,
                               FAIL,
                               PASS,
                               SKIPPED,
                               STATUSES,
                               Context,
                               Outcome,
                               Primitive,
)
from engine.protocols.discovery import inspection as discovery

TABLE: dict[str, Primitive] = {**text.TABLE, **structure.TABLE, **budget.TABLE,
                               **pii.TABLE, **lexicon.TABLE, **agent.TABLE, **judged.TABLE,
                               **discovery.TABLE}
# Builders of the data tables some primitives read (``x-load`` in their parameter schema).
LOADERS: dict[str, Callable[[Any], Any]] = {**pii.LOADERS, **lexicon.LOADERS}

__all__ = ["ABSTAIN", "ERROR", "FAIL", "LOADERS", "PASS", "SKIPPED", "STATUSES", "TABLE",
           "Context",
           "Outcome", "Primitive"]
