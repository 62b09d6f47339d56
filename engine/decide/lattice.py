"""The decision lattice (docs/decisions.md), in one place.

Every condition that holds is a ``Reason`` naming the decision it forces. The decision is the
most decisive of them (SELF_TEST > TRIAGE > INCOMPLETE > FAIL > PASS), and PASS when none
holds. A release *blocker* (a fact the evaluated party chose) only ever stands in for a PASS:
it turns it into INCOMPLETE and never hides a FAIL (it is listed beside other INCOMPLETE
reasons, where it changes nothing). A baseline comparison compares the decision the
evidence reached without blockers (``held_decision``), so a blocker is never mistaken for
a regression. The plain decision and the baseline
comparison both go through ``Decision.of`` / ``Decision.with_reasons``, so the precedence is
computed once and cannot drift.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from engine.decide.reasons import FAIL, INCOMPLETE, PASS, SELF_TEST, TRIAGE

NOT_INCLUDED = ("MISSING", "NOT_INCLUDED")  # the states of a category without any rows


def included(result: Mapping[str, Any]) -> bool:
    """Whether a category result has rows at all (a SKIPPED one does, though its
    ``attempted`` is 0)."""
    return result["state"] not in NOT_INCLUDED


ORDER = (SELF_TEST, TRIAGE, INCOMPLETE, FAIL, PASS)  # most decisive first
EXIT_CODES = {PASS: 0, FAIL: 1, INCOMPLETE: 3, TRIAGE: 4, SELF_TEST: 4}


@dataclass(frozen=True)
class Reason:
    """One condition that holds, with the decision it forces and the spec path behind it."""

    decision: str
    """The decision this condition forces (one of ``ORDER``, never PASS)."""
    code: str
    """The reason code as published (after the policy's ``reason_codes`` renaming)."""
    spec_path: str
    """The spec rule behind the condition, e.g. ``policy:spec.categories.safety.threshold``."""
    message: str
    """What holds, in the governance team's words."""
    category: str | None = None
    """The category the condition is about, when it is about one."""

    def published(self, names: Mapping[str, str]) -> Reason:
        """This reason under the code a policy publishes it as (the decision never changes)."""
        return replace(self, code=names.get(self.code, self.code))

    def as_json(self) -> dict[str, Any]:
        """The scorecard form (``category`` only when there is one)."""
        out = {"code": self.code, "decision": self.decision, "spec_path": self.spec_path,
               "message": self.message}
        if self.category is not None:
            out["category"] = self.category
        return out


def rank(decision: str) -> int:
    """Position in the lattice: lower is more decisive."""
    return ORDER.index(decision)


def settle(held: Iterable[Reason],
           blockers: Iterable[Reason] = ()) -> tuple[str, tuple[Reason, ...]]:
    """The decision the conditions force and the reasons shown for it, most decisive first
    (a stable sort: equally decisive reasons keep the order they were found in)."""
    reasons = list(held)
    decision = min((r.decision for r in reasons), key=rank, default=PASS)
    if decision in (PASS, INCOMPLETE):  # listed beside other INCOMPLETE reasons too (for
        reasons += blockers  # the auditor); never added to a FAIL, which they would hide
        decision = min((r.decision for r in reasons), key=rank, default=PASS)
    return decision, tuple(sorted(reasons, key=lambda r: rank(r.decision)))


@dataclass(frozen=True)
class Decision:
    """The outcome of deciding one evaluation: what the scorecard's decision block says.

    ``decision``, ``reasons``, ``overall_pass`` and ``exit_code`` are derived from ``held``
    and ``blockers`` by the lattice, never stored, so they cannot disagree with each other.
    """

    held: tuple[Reason, ...]
    """Every condition that holds (evidence, coverage, gates, comparison), in the order found."""
    blockers: tuple[Reason, ...] = ()
    """Release blockers: shown, and forcing INCOMPLETE, only when ``held`` alone gives PASS."""
    metrics_decision: str = PASS
    """The decision before any baseline comparison was bound in (a later run compares with it)."""
    categories: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per category: counts, rate, Wilson bounds, threshold, state, met (empty when strict
    validation failed and no metrics were computed)."""
    overall: dict[str, Any] | None = None
    """The overall score, its threshold and whether it is met; None when the policy has none."""
    conditions: list[dict[str, Any]] = field(default_factory=list)
    """Each extra gate condition with its value (true, false or null)."""
    required_categories: list[str] = field(default_factory=list)
    """Categories that must have rows (the included ones when the policy marks none required)."""
    missing_categories: list[str] = field(default_factory=list)
    """Required categories without rows."""
    validation: dict[str, Any] | None = None
    """Record validation by class and dimension; None when the input format has no validator."""
    controls: dict[str, Any] | None = None
    """Known-fault control rows and how many were caught; None when the policy has no controls."""
    reliability: dict[str, Any] = field(default_factory=dict)
    """Per included category: pass^k, consistency and flaky cases (None without repeats)."""
    waivers: dict[str, Any] | None = None
    """Every waiver of the policy, active or expired, with the rows it took out; None if none."""
    findings: list[dict[str, Any]] = field(default_factory=list)
    """Every finding (grouped failing rows, then blockers); the scorecard lists the first 100."""
    judge: dict[str, Any] | None = None
    """The judge block (identity, digests, replay source); None when no judge ran."""
    comparison: dict[str, Any] | None = None
    """The comparison with the baseline; None when no comparison was made."""
    calibration: dict[str, Any] | None = None
    """The judge calibration check; None when none is configured or required."""

    @classmethod
    def of(cls, held: Iterable[Reason], blockers: Iterable[Reason] = (),
           **parts: Any) -> Decision:
        """A decision from the conditions that hold; its metrics decision is its decision."""
        held, blockers = tuple(held), tuple(blockers)
        return cls(held, blockers, settle(held, blockers)[0], **parts)

    @property
    def decision(self) -> str:
        """PASS, FAIL, INCOMPLETE, TRIAGE or SELF_TEST: the most decisive reason wins."""
        return settle(self.held, self.blockers)[0]

    @property
    def held_decision(self) -> str:
        """The decision of the held conditions alone, release blockers aside: what the
        evidence shows, and what a baseline comparison compares."""
        return settle(self.held)[0]

    @property
    def reasons(self) -> tuple[Reason, ...]:
        """Every reason shown for the decision, most decisive first."""
        return settle(self.held, self.blockers)[1]

    @property
    def overall_pass(self) -> bool:
        """True only for PASS."""
        return self.decision == PASS

    @property
    def exit_code(self) -> int:
        """The exit code of ``engine run`` for this decision alone."""
        return EXIT_CODES[self.decision]

    def with_reasons(self, extra: Iterable[Reason], **parts: Any) -> Decision:
        """The same decision with more conditions held (and parts replaced), re-settled by
        the same lattice; the metrics decision stays what it was."""
        return replace(self, held=self.held + tuple(extra), **parts)
