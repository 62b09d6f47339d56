"""Rows -> mergeable counters. Splitting the rows and merging the tallies changes nothing."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .inspections import ABSTAIN, ERROR, FAIL, PASS, SKIPPED

MAX_SAMPLES = 20  # record problems listed by place in the scorecard; all are counted

_FIELD = {PASS: "passed", FAIL: "failed", ERROR: "errors", ABSTAIN: "abstained",
          SKIPPED: "skipped"}


@dataclass
class Counts:
    """Rows of one group by status."""

    passed: int = 0
    failed: int = 0
    errors: int = 0
    abstained: int = 0
    skipped: int = 0

    @property
    def n(self) -> int:
        """Scored rows: PASS + FAIL. ERROR, ABSTAIN and SKIPPED rows never count."""
        return self.passed + self.failed

    @property
    def attempted(self) -> int:
        """Every row of the group, whatever its status."""
        return self.n + self.errors + self.abstained + self.skipped

    def add(self, status: str) -> None:
        """Count one row."""
        field_name = _FIELD[status]
        setattr(self, field_name, getattr(self, field_name) + 1)

    def merge(self, other: Counts) -> None:
        """Add another group's counts to this one."""
        for name in _FIELD.values():
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class Tally:
    """Everything the decision needs, as counters that merge by addition."""

    categories: dict[str, Counts] = field(default_factory=dict)
    inspections: dict[str, Counts] = field(default_factory=dict)
    case_units: Counter[str] = field(default_factory=Counter)
    records: int = 0
    rows: int = 0
    record_problems: Counter[str] = field(default_factory=Counter)
    samples: list[dict[str, Any]] = field(default_factory=list)

    def count_row(self, category: str, inspection: str, status: str) -> None:
        """Count one inspection row."""
        self.categories.setdefault(category, Counts()).add(status)
        self.inspections.setdefault(inspection, Counts()).add(status)
        self.rows += 1

    def count_problem(self, code: str, sample: dict[str, Any]) -> None:
        """Count a record that could not be used, keeping the first few by place."""
        self.record_problems[code] += 1
        self.rows += 1
        if len(self.samples) < MAX_SAMPLES:
            self.samples.append(sample)

    def merge(self, other: Tally) -> Tally:
        """Add ``other`` (a later shard of the same run) into this tally; returns self."""
        for mine, theirs in ((self.categories, other.categories),
                             (self.inspections, other.inspections)):
            for key, counts in theirs.items():
                mine.setdefault(key, Counts()).merge(counts)
        self.case_units.update(other.case_units)
        self.records += other.records
        self.rows += other.rows
        self.record_problems.update(other.record_problems)
        self.samples = (self.samples + other.samples)[:MAX_SAMPLES]
        return self
