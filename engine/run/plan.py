"""A policy compiled once into what the per-record loop does for each record.

The loop visits categories in policy order and, in each, its inspections; an inspection
with a ``when:`` guard applies only to the records it selects. Most policies guard their
inspections by one field compared with a literal (``kind == 'safety'``, one inspection
per kind). The plan reads that field once per record and looks the applicable steps up
in a table, instead of evaluating one guard per inspection; any other
guard is evaluated per record as before. Either way a record gets the same steps, in the
same order, with the same outcome for each guard (tests/test_hot_path.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.spec.model import Inspection, Policy


@dataclass(frozen=True)
class Step:
    """One (category, inspection) pair of the loop, in policy order."""

    category: str
    inspection: Inspection
    guarded: bool  # its guard must still be evaluated for each record


@dataclass(frozen=True)
class Plan:
    """The steps of every record: ``steps(unit)``."""

    every: tuple[Step, ...]  # every step, each guard evaluated per record
    key: tuple[str, ...] | None = None  # the one field every guard compares, if any
    table: dict[str, tuple[Step, ...]] | None = None  # value of that field -> its steps
    rest: tuple[Step, ...] = ()  # the steps of a record whose value is in no guard

    def steps(self, unit: Any) -> tuple[Step, ...]:
        """The steps that may apply to ``unit``; a step marked ``guarded`` still asks its
        guard."""
        if self.table is None:
            return self.every
        value: Any = unit
        for part in self.key or ():
            if not isinstance(value, dict):
                return self.rest
            value = value.get(part)
        return self.table.get(value, self.rest) if isinstance(value, str) else self.rest


def compile_plan(policy: Policy) -> Plan:
    """The policy's plan: a table by field value when every guard is ``field ==
    'literal'`` on one field, else every step with its guard."""
    pairs = [(c.name, policy.inspections[i]) for c in policy.categories.values()
             for i in c.inspections]
    guards = {id(i): _equality(i.when) for _, i in pairs if i.when is not None}
    keys = {g[0] for g in guards.values() if g is not None}
    if not guards or None in guards.values() or len(keys) != 1:
        return Plan(tuple(Step(c, i, i.when is not None) for c, i in pairs))
    key = keys.pop()
    table = {
        literal: tuple(Step(c, i, False) for c, i in pairs
                       if i.when is None or guards[id(i)] == (key, literal))
        for literal in sorted({g[1] for g in guards.values() if g is not None})}
    rest = tuple(Step(c, i, False) for c, i in pairs if i.when is None)
    return Plan(tuple(Step(c, i, i.when is not None) for c, i in pairs), key, table, rest)


def _equality(when: Any) -> tuple[tuple[str, ...], str] | None:
    """(field path, literal) when the compiled guard is ``path == 'literal'``."""
    found = getattr(when, "equality", None)
    return found() if callable(found) else None
