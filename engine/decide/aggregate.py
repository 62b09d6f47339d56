"""Rows -> mergeable counters. Splitting the rows and merging the tallies changes nothing."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from engine.decide import findings as _findings
from engine.decide.sorted_digest import SortedDigest
from engine.decide.spill import CaseTrials
from engine.inspections import ABSTAIN, ERROR, FAIL, PASS, SKIPPED

MAX_SAMPLES = 20  # record problems listed by place in the scorecard; all are counted

WAIVED = "WAIVED"  # a FAIL row an active waiver took out of the rate
_FIELD = {PASS: "passed", FAIL: "failed", ERROR: "errors", ABSTAIN: "abstained",
          SKIPPED: "skipped", WAIVED: "waived"}


@dataclass
class Counts:
    """Rows of one group by status."""

    passed: int = 0
    """PASS rows."""
    failed: int = 0
    """FAIL rows not taken out by a waiver."""
    errors: int = 0
    """ERROR rows: missing evidence, never a FAIL."""
    abstained: int = 0
    """ABSTAIN rows (a judge declined): missing evidence."""
    skipped: int = 0
    """SKIPPED rows (the inspection did not apply)."""
    waived: int = 0
    """FAIL rows an active waiver took out of the rate."""

    @property
    def n(self) -> int:
        """Scored rows: PASS + FAIL. ERROR, ABSTAIN and SKIPPED rows never count."""
        return self.passed + self.failed

    @property
    def attempted(self) -> int:
        """Every row of the group, whatever its status."""
        return self.n + self.errors + self.abstained + self.skipped + self.waived

    def add(self, status: str) -> None:
        """Count one row."""
        if status == PASS:  # nearly every row
            self.passed += 1
            return
        field_name = _FIELD[status]
        setattr(self, field_name, getattr(self, field_name) + 1)

    def merge(self, other: Counts) -> None:
        """Add another group's counts to this one."""
        for name in _FIELD.values():
            setattr(self, name, getattr(self, name) + getattr(other, name))


def _counts(groups: dict[str, Counts], name: str) -> Counts:
    """The counts of ``name``, made (in first-appearance order) when it has none."""
    found = groups.get(name)
    if found is None:
        found = groups[name] = Counts()
    return found


@dataclass
class Tally:
    """Everything the decision needs, as counters that merge by addition."""

    categories: dict[str, Counts] = field(default_factory=dict)
    """Category -> its rows by status."""
    inspections: dict[str, Counts] = field(default_factory=dict)
    """Inspection id -> its rows by status."""
    case_units: Counter[str] = field(default_factory=Counter)
    """Suite case -> units (runs) seen for it."""
    records: int = 0
    """Records read from the unit input."""
    rows: int = 0
    """Rows written: inspection rows and unusable records."""
    record_problems: Counter[str] = field(default_factory=Counter)
    """Problem code -> records that could not be used."""
    samples: list[dict[str, Any]] = field(default_factory=list)
    """The first MAX_SAMPLES unusable records by place: {line, code, message}."""
    cases: CaseTrials = field(default_factory=CaseTrials)
    """(category, case) -> [scored trials, passed trials]; on disk past a limit."""
    validation: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(dimension, class) -> records; class is LABELED, UNLABELED or INVALID."""
    validation_rows: list[dict[str, Any]] = field(default_factory=list)
    """The validated records with something to say (validation.json)."""
    capture_errors: int = 0
    """Records whose capture failed."""
    controls: Counts = field(default_factory=Counts)
    """Control rows by status."""
    control_rows: list[dict[str, Any]] = field(default_factory=list)
    """The control rows themselves."""
    suite_rows: SortedDigest = field(default_factory=SortedDigest)
    """(id, inputs and assertions) of every row, for a suite digest derived from the records."""
    findings: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """(category, case) -> its non-passing rows, grouped into findings."""
    error_codes: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(category, error code) -> ERROR rows."""
    waived: Counter[str] = field(default_factory=Counter)
    """Waiver id -> FAIL rows it took out of the rates."""
    unit_records: dict[str, Any] = field(default_factory=dict)
    """Unit -> the structured record a protocol report collects (e.g. a task's score)."""
    measures: dict[str, tuple[str, list[float]]] = field(default_factory=dict)
    """Category -> (kind, measured values) for cost and latency notes (never gated)."""
    judged: dict[str, Counts] = field(default_factory=dict)
    """Category -> its rows the judge decided (a judge's correction applies to those)."""

    def count_row(self, category: str, inspection: str, status: str, code: str = "",
                  judged: bool = False) -> None:
        """Count one inspection row (and, for ERROR rows, its code); ``judged``: the judge
        decided it."""
        _counts(self.categories, category).add(status)
        if judged:
            _counts(self.judged, category).add(status)
        if status == ERROR:
            self.error_codes[category, code] += 1
        _counts(self.inspections, inspection).add(status)
        self.rows += 1

    def count_case(self, category: str, case: str, status: str) -> None:
        """Count a scored trial of a case (PASS and FAIL only) for pass^k and consistency."""
        if status in (PASS, FAIL):
            self.cases.add(category, case, 1, int(status == PASS))

    def count_problem(self, code: str, sample: dict[str, Any]) -> None:
        """Count a record that could not be used, keeping the first few by place."""
        self.record_problems[code] += 1
        self.rows += 1
        if len(self.samples) < MAX_SAMPLES:
            self.samples.append(sample)

    def merge(self, other: Tally) -> Tally:
        """Add ``other`` (a later shard of the same run) into this tally; returns self."""
        for mine, theirs in ((self.categories, other.categories),
                             (self.inspections, other.inspections),
                             (self.judged, other.judged)):
            for key, counts in theirs.items():
                mine.setdefault(key, Counts()).merge(counts)
        self.case_units.update(other.case_units)
        self.records += other.records
        self.rows += other.rows
        self.record_problems.update(other.record_problems)
        self.samples = (self.samples + other.samples)[:MAX_SAMPLES]
        self.cases.merge(other.cases)
        self.validation.update(other.validation)
        self.validation_rows += other.validation_rows
        self.capture_errors += other.capture_errors
        self.controls.merge(other.controls)
        self.control_rows += other.control_rows
        self.suite_rows.merge(other.suite_rows)
        self.error_codes.update(other.error_codes)
        for unit, value in other.unit_records.items():  # the first record of a unit stays
            self.unit_records.setdefault(unit, value)
        self.waived.update(other.waived)
        for category, (kind, values) in other.measures.items():
            self.measures.setdefault(category, (kind, []))[1].extend(values)
        _findings.merge(self.findings, other.findings)
        return self

    def close(self) -> None:
        """Release what lives in temporary files (spilled suite rows, case counts)."""
        self.suite_rows.close()
        self.cases.close()


def suite_digest(evaluation: Any, tally: Tally) -> str:
    """The Suite's digest, or for a suite derived from records the digest of their inputs and
    assertions, sorted by id (agent-release-gate §10)."""
    if not evaluation.suite.derived:
        return evaluation.suite.sha256
    return str(tally.suite_rows.hexdigest())
