"""The inspection table: ``type:`` string -> primitive. Adding a primitive is adding a row."""

from __future__ import annotations

from . import budget, structure, text
from ._base import (
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

TABLE: dict[str, Primitive] = {**text.TABLE, **structure.TABLE, **budget.TABLE}

__all__ = ["ABSTAIN", "ERROR", "FAIL", "PASS", "SKIPPED", "STATUSES", "TABLE", "Context",
           "Outcome", "Primitive"]
