"""Fuzzing in CI for a small fixed budget (``python -m bench.fuzz`` runs the long one):
no crash other than coded errors on mutated specs, formulas, discovery submissions and
records, and never a PASS on mutated evidence that must FAIL."""

from __future__ import annotations

from typing import Any

import pytest

from bench import fuzz


def test_fuzzing_finds_no_crash_and_reaches_every_outcome() -> None:
    report = fuzz.run(cases=150, seed=20261129, targets=["spec", "formula", "gates"])
    for name, result in report.items():
        assert result["crashes"] == [], (name, result["crashes"][:3])
        assert sum(result["outcomes"].values()) == 150
    # the mutations reach both sides: refused inputs and inputs that still work
    assert {"spec error", "loaded and ran"} <= set(report["spec"]["outcomes"])
    assert {"refused at load", "evaluated"} <= set(report["formula"]["outcomes"])
    assert "refused" in report["gates"]["outcomes"]


@pytest.fixture(scope="module")
def records() -> dict[str, Any]:
    """100 mutated datasets that must FAIL, each through a whole engine run."""
    result: dict[str, Any] = fuzz.run(cases=100, seed=20261212, targets=["records"])["records"]
    return result


def test_mutated_records_never_crash_the_run(records: dict[str, Any]) -> None:
    assert records["crashes"] == [], records["crashes"][:3]
    assert sum(records["outcomes"].values()) == 100
    assert {"FAIL", "INCOMPLETE"} <= set(records["outcomes"])  # both sides are reached


def test_mutated_records_that_must_fail_never_pass(records: dict[str, Any]) -> None:
    assert records["wrong_passes"] == {}
