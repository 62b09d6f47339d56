"""Power in the comparison (gate.comparison.effect, min_power, discordance): each category
the rule or the paired test decides records what it could have seen, and a required
comparison whose stable category could not see the drop that matters is INCOMPLETE
(UNDERPOWERED).

The refund vector of agent-release-gate §16.2: four cases, three trials, 12 rows per
category. Expected powers are worked out here from their definitions with scipy's
binomial (an independent implementation), never from the engine's output.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binom

from engine.cli import main

from . import refund
from .conftest import Gate
from .test_paired import against_after, codes, comparison, lenient, signer

__all__ = ["signer"]  # a fixture, used by name

LOWER_12_OF_12 = 0.757505993345  # the Wilson lower bound of 12/12 (protocol §7.1)


def midp(b: int, m: int) -> float:
    """Two-sided mid-p of a split of m discordant pairs with b drops (b > m - b)."""
    return min(1.0, 2 * binom.cdf(m - b, m, 0.5) - binom.pmf(b, m, 0.5))


def mcnemar_power(pairs: int, psi: float, effect: float, alpha: float) -> float:
    """The definition, enumerated: m discordant pairs of N, each a drop with probability
    q = (psi + effect) / (2 psi); flagged when the split is a significant drop."""
    q = (psi + effect) / (2 * psi)
    return sum(binom.pmf(m, pairs, psi) * binom.pmf(b, m, q)
               for m in range(pairs + 1) for b in range(m + 1)
               if b > m - b and midp(b, m) <= alpha)


def test_the_default_rule_records_power_and_a_weak_comparison_is_underpowered(
        gate: Gate, signer: Path) -> None:
    # After against After: every category stable, 12/12 on both sides. The rule flags a
    # run whose rate is below 0.7575..., so at most 9 passes of 12 (9/12 = 0.75; 10/12 is
    # above). A true drop of 0.2 (pass rate 0.8): power = P(Bin(12, 0.8) <= 9).
    want = binom.cdf(9, 12, 0.8)
    assert 0.44 < want < 0.46  # 0.4417...: a comparison of 12 rows sees a 0.2 drop half the time
    code, card, out = against_after(gate, signer, comparison(
        required=True, effect=0.2, min_power=0.8), current=refund.rows(fixed=True))
    cats = card["comparison"]["categories"]
    assert card["comparison"]["power"] == {"effect": 0.2, "min_power": 0.8, "discordance": 0}
    for name in ("pii", "tool_call", "action_correctness"):
        seen = cats[name]["power"]
        assert cats[name]["status"] == "stable"
        assert seen["power"] == pytest.approx(want, rel=1e-9)
        assert seen["method"] == "exact binomial" and seen["alpha"] is None
    # More current rows never move the baseline's bound: P(Bin(n, 0.8) / n < 0.7575)
    # falls as n grows, so no number of cases reaches 0.8 under this rule
    assert all(binom.cdf(math.ceil(n * LOWER_12_OF_12) - 1, n, 0.8) < 0.8
               for n in range(12, 400))
    assert cats["pii"]["power"]["units_needed"] is None
    assert cats["pii"]["power"]["cases_needed"] is None
    # the smallest drop seen with power 0.8: p0 - e with P(Bin(12, 1 - e) <= 9) = 0.8
    mde = cats["pii"]["power"]["mde"]
    assert binom.cdf(9, 12, 1 - mde) >= 0.8 > binom.cdf(9, 12, 1 - mde + 2e-6)
    assert code == 3 and card["decision"] == "INCOMPLETE"
    assert card["metrics_decision"] == "PASS" and codes(card) == ["UNDERPOWERED"]
    reason = card["reasons"][0]
    assert reason["spec_path"] == "policy:spec.gate.comparison.min_power"
    assert "'pii' sees a drop of 0.2 with power 0.442, below min_power 0.8 (no number of " \
        "cases would reach it under this test)" in reason["message"]
    md = (out / "scorecard.md").read_text()
    assert "Power: the chance that the comparison sees a drop of 0.2" in md
    assert "| pii | stable | 1.000 | 1.000 | +0.000 | 0.442 | " in md and "none would" in md
    html = (out / "scorecard.html").read_text()
    assert '<td class="num">0.442</td>' in html and "none would" in html


def test_without_min_power_the_power_is_recorded_and_never_gates(gate: Gate,
                                                                 signer: Path) -> None:
    code, card, _ = against_after(gate, signer, comparison(required=True, effect=0.2),
                                  current=refund.rows(fixed=True))
    assert code == 0 and card["decision"] == "PASS"
    assert card["comparison"]["categories"]["pii"]["power"]["min_power"] is None


def test_mcnemar_power_and_the_cases_that_would_reach_it(gate: Gate, signer: Path) -> None:
    # Before against After with thresholds both meet: the test decides every category.
    # pii: 12 pairs, none discordant: psi is raised to the effect 0.2, so every discordant
    # pair is a drop, and m drops of m are flagged when 1/2^m <= 0.05, m >= 5:
    # power = P(Bin(12, 0.2) >= 5).
    pii = binom.sf(4, 12, 0.2)
    assert pii == pytest.approx(mcnemar_power(12, 0.2, 0.2, 0.05), rel=1e-12)
    # tool_call: b = 3, c = 0 of 12 (p 0.125, stable); psi = 3/12 = 0.25
    tool_call = mcnemar_power(12, 0.25, 0.2, 0.05)
    code, card, out = against_after(gate, signer, lenient(
        required=True, test="mcnemar_midp", effect=0.2, min_power=0.8))
    cats = card["comparison"]["categories"]
    assert cats["pii"]["status"] == cats["tool_call"]["status"] == "stable"
    assert cats["pii"]["power"]["power"] == pytest.approx(pii, rel=1e-9)
    assert cats["tool_call"]["power"]["power"] == pytest.approx(tool_call, rel=1e-9)
    assert cats["pii"]["power"]["method"] == "exact enumeration"
    # pairs that reach 0.8 for pii: the smallest N with P(Bin(N, 0.2) >= 5) >= 0.8, in
    # cases of 3 trials, beyond the 4 cases run
    needed = next(n for n in range(1, 200) if binom.sf(4, n, 0.2) >= 0.8)
    assert cats["pii"]["power"]["units_needed"] == needed
    assert cats["pii"]["power"]["cases_needed"] == -(-needed // 3)
    assert cats["pii"]["power"]["more_cases"] == -(-needed // 3) - 4
    # action_correctness regressed (mid-p 1/64): a regression seen needs no power
    assert cats["action_correctness"]["status"] == "regressed"
    # a regression was seen: the FAIL stands, UNDERPOWERED never hides it
    assert code == 1 and card["decision"] == "FAIL" and codes(card) == ["REGRESSED"]
    md = (out / "scorecard.md").read_text()
    assert f"{-(-needed // 3)} ({-(-needed // 3) - 4} more)" in md
    # with action_correctness not compared as a regression (alpha below its 1/64), the
    # weak categories are named, with the cases that would reach min_power
    code, card, _ = against_after(gate, signer, lenient(
        required=True, test="mcnemar_midp", effect=0.2, min_power=0.8, alpha=0.01))
    assert code == 3 and codes(card) == ["UNDERPOWERED"]
    message = card["reasons"][0]["message"]
    assert "'pii' sees a drop of 0.2 with power" in message
    assert "'action_correctness'" in message  # stable at alpha 0.01, and weak too
    # at 0.01, m drops of m are flagged when 1/2^m <= 0.01: m >= 7
    needed = next(n for n in range(1, 400) if binom.sf(6, n, 0.2) >= 0.8)
    assert f"(about {-(-needed // 3) - 4} more cases would reach it)" in message


def test_holm_divides_alpha_for_the_power(gate: Gate, signer: Path) -> None:
    # three categories decided by the test: the power is taken at 0.05 / 3
    _, card, _ = against_after(gate, signer, lenient(
        test="mcnemar_midp", multiplicity="holm", effect=0.2))
    seen = card["comparison"]["categories"]["pii"]["power"]
    assert seen["alpha"] == 0.05 / 3
    # m drops of m flagged when 1/2^m <= 0.05/3: m >= 6
    assert seen["power"] == pytest.approx(binom.sf(5, 12, 0.2), rel=1e-9)


def test_governance_s_discordance_floors_what_the_runs_show(gate: Gate, signer: Path) -> None:
    # pii shows no discordant pair; governance assumes at least 0.5 discordant
    _, card, _ = against_after(gate, signer, lenient(
        test="mcnemar_midp", effect=0.2, discordance=0.5))
    seen = card["comparison"]["categories"]["pii"]["power"]
    assert seen["power"] == pytest.approx(mcnemar_power(12, 0.5, 0.2, 0.05), rel=1e-9)
    assert card["comparison"]["power"]["discordance"] == 0.5


def test_bootstrap_power_is_the_ideal_bootstraps_and_whole_cases_count_once(
        gate: Gate, signer: Path) -> None:
    """A hostile review passed min_power 0.3 with a normal approximation claiming 0.41 for
    12 pairs, and, with cluster_by: case, took the design effect from runs that agree with
    their baseline (1), claiming 0.84 where whole-case drops leave 0.12."""
    # After against After, unit pairs: 12 pairs, none discordant, so psi = 0.2 = effect
    # and every discordant pair is a drop. The ideal bootstrap flags b drops of 12 with no
    # rise when 2 (1 - b/12)^12 <= 0.05: b >= 4. Power = P(Bin(12, 0.2) >= 4) = 0.205.
    crit = next(b for b in range(1, 13) if 2 * (1 - b / 12) ** 12 <= 0.05)
    assert crit == 4
    code, card, _ = against_after(gate, signer, comparison(
        required=True, test="paired_bootstrap", effect=0.2, min_power=0.3),
        current=refund.rows(fixed=True))
    seen = card["comparison"]["categories"]["pii"]["power"]
    assert seen["power"] == pytest.approx(float(binom.sf(crit - 1, 12, 0.2)), rel=1e-9)
    assert seen["method"] == "exact enumeration of the ideal bootstrap"
    assert code == 3 and codes(card) == ["UNDERPOWERED"]
    # cluster_by: case: the 4 cases are the units (their trials move together); b drops of
    # 4 cases are flagged when 2 (1 - b/4)^4 <= 0.05: b >= 3. Power = P(Bin(4, 0.2) >= 3).
    _, card, _ = against_after(gate, signer, comparison(
        required=True, test="paired_bootstrap", cluster_by="case", effect=0.2,
        min_power=0.3), current=refund.rows(fixed=True))
    seen = card["comparison"]["categories"]["pii"]["power"]
    assert seen["power"] == pytest.approx(float(binom.sf(2, 4, 0.2)), rel=1e-9)
    # cases to reach 0.3: the fewest n with P(Bin(n, 0.2) >= crit(n)) >= 0.3, by the same rule
    def power_at(n: int) -> float:
        flagged = next((b for b in range(1, n + 1) if 2 * (1 - b / n) ** n <= 0.05), n + 1)
        return float(binom.sf(flagged - 1, n, 0.2))
    needed = next(n for n in range(1, 100) if power_at(n) >= 0.3)
    assert seen["cases_needed"] == needed and seen["units_needed"] == 3 * needed
    assert card["decision"] == "INCOMPLETE"


@pytest.mark.parametrize("keys", [{"min_power": 0.8}, {"discordance": 0.3}])
def test_power_settings_without_an_effect_are_a_located_spec_error(
        gate: Gate, keys: dict[str, Any], capsys: Any) -> None:
    gate.policy(comparison(**keys))
    assert main(["validate", str(gate.dir)]) == 2
    err = capsys.readouterr()
    assert "POWER_NEEDS_EFFECT" in err.out + err.err
    assert f"spec.gate.comparison.{next(iter(keys))}" in err.out + err.err
