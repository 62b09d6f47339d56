"""Scoring branches of finding-quality-discovery §10 and the summary of §11.2.

Every expected value comes from the protocol text or is worked by hand in a comment; the
rules themselves are read from the shipped scoring.yaml, so these tests check the data and
the code that applies it together.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.protocols.discovery.scoring import finding_score, summary, task_quality
from engine.protocols.discovery.task import load_package

from .conftest import ROOT

RULES = load_package(ROOT / "specs" / "finding-quality-discovery").discovery.scoring
# §10.1's example dimensions: 15 + 25*0.8 + 20*0.9 + 30*0.75 + 10*0.8 = 15+20+18+22.5+8 = 83.5
DIMS = {"statistical_validity": 0.8, "evidence_entailment": 0.9, "analytical_depth": 0.75,
        "calibration": 0.8}


def row(**change: Any) -> dict[str, Any]:
    return {"task_fulfilled": True, "duplicate_of": None, **DIMS, **change}


@pytest.mark.parametrize("support, want", [
    ("supported", 83.5),     # factor 1 (§10.1 example)
    ("partial", 41.75),      # factor 0.5 halves it: the protocol's own 41.75
    ("unsupported", 0),      # factor 0
    ("uncertain", None),     # factor null -> null score
])
def test_support_factor_of_each_level(support: str, want: float | None) -> None:
    assert finding_score(RULES, row(), support) == want


@pytest.mark.parametrize("change", [{"task_fulfilled": False}, {"duplicate_of": "f1"}])
def test_unfulfilled_or_duplicate_scores_zero_before_the_null_rule(change: dict[str, Any]
                                                                   ) -> None:
    # §10.1 step 4 comes before step 5: uncertain support would give null, but the zero wins
    assert finding_score(RULES, row(**change), "uncertain") == 0
    assert finding_score(RULES, row(**change), "supported") == 0


def test_task_quality_is_the_mean_of_its_finding_scores() -> None:
    scores = [finding_score(RULES, row(), "supported"),              # 83.5
              finding_score(RULES, row(duplicate_of="f1"), "supported"),  # 0
              finding_score(RULES, row(), "partial")]                 # 41.75
    # (83.5 + 0 + 41.75) / 3 = 125.25 / 3 = 41.75
    assert task_quality(scores) == (41.75, "scored")
    # a zero alone is still scored: quality 0, not null
    assert task_quality([0]) == (0, "scored")


def test_one_null_finding_leaves_the_task_unresolved() -> None:
    scores = [finding_score(RULES, row(), "supported"), finding_score(RULES, row(), "uncertain")]
    assert scores == [83.5, None]
    assert task_quality(scores) == (None, "unresolved")


def test_no_findings_is_an_abstention() -> None:
    assert task_quality([]) == (None, "abstained")


def test_the_seven_task_example_of_section_11_2() -> None:
    records = [{"status": "scored", "quality": 83.5}, {"status": "scored", "quality": 0},
               {"status": "abstained", "quality": None},
               {"status": "unresolved", "quality": None},
               {"status": "invalid", "quality": None}, {"status": "missing", "quality": None},
               {"status": "pending_review", "quality": None}]
    for r in records:
        r["reference_coverage"] = None
    got = summary(RULES, records)
    # the protocol's figures: scored 2, quality_mean null (2 of 7 scored),
    # conditional (83.5 + 0) / 2 = 41.75, valid 5/7 (all but invalid and missing),
    # abstention 1/7, pending 2 (unresolved + pending_review), missing 1, invalid 1
    assert got == {"tasks": 7, "scored_tasks": 2, "quality_mean": None,
                   "conditional_quality_mean": 41.75, "reference_coverage_mean": None,
                   "valid_submission_rate": 5 / 7, "abstention_rate": 1 / 7,
                   "pending_tasks": 2, "missing_tasks": 1, "invalid_tasks": 1}


def test_quality_mean_when_every_task_is_scored_and_no_qualities_at_all() -> None:
    both = [{"status": "scored", "quality": 83.5, "reference_coverage": None},
            {"status": "scored", "quality": 0, "reference_coverage": None}]
    assert summary(RULES, both)["quality_mean"] == 41.75  # (83.5 + 0) / 2, |Q| = T
    none = [{"status": "missing", "quality": None, "reference_coverage": None}]
    got = summary(RULES, none)
    # Q is empty: conditional_quality_mean is null (§11.2), not a division error
    assert got["conditional_quality_mean"] is None and got["scored_tasks"] == 0
    assert got["valid_submission_rate"] == 0 and got["missing_tasks"] == 1
