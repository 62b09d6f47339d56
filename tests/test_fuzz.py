"""Fuzzing in CI for a small fixed budget (``python -m bench.fuzz`` runs the long one):
no crash other than coded errors on mutated specs, formulas and discovery submissions."""

from __future__ import annotations

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
