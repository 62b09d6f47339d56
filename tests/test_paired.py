"""Paired comparisons with a baseline (gate.comparison.test): mid-p McNemar, the paired
bootstrap, Holm's adjustment, the canonical pairing of repeated trials, and their spec errors.

Expected numbers are worked out by hand here, or by an independent implementation
(scipy.stats.binom for the binomial tails; a separate bootstrap loop below).
"""

from __future__ import annotations

import hashlib
import json
import random
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binom

from engine.cli import main
from engine.decide import paired

from . import refund
from .conftest import Gate


@pytest.fixture
def signer(tmp_path: Path) -> Path:
    keys = tmp_path / "keys"
    assert main(["keygen", "--out-dir", str(keys)]) == 0
    return keys


def codes(card: dict[str, Any]) -> list[str]:
    return [r["code"] for r in card["reasons"]]


def comparison(**keys: Any) -> Any:
    def change(spec: dict[str, Any]) -> None:
        spec["gate"]["comparison"] = dict(keys)
    return change


def lenient(**keys: Any) -> Any:
    """Thresholds the Before run meets (9/12, 6/12), so steps 1-4 do not decide."""
    def change(spec: dict[str, Any]) -> None:
        spec["categories"]["tool_call"]["threshold"] = 0.7
        spec["categories"]["action_correctness"]["threshold"] = 0.5
        spec["gate"]["comparison"] = dict(keys)
    return change


def against_after(gate: Gate, signer: Path, change: Any,
                  current: list[dict[str, Any]] | None = None
                  ) -> tuple[int, dict[str, Any], Path]:
    """The After run signed and approved as governance's baseline under ``change``, then
    ``current`` (default: Before) compared with it."""
    gate.trust(signer / "public.pem")
    gate.policy(change)
    _, _, after = gate.run(refund.rows(fixed=True), "--key", str(signer / "private.pem"))
    gate.approve(after)
    code, card, out = gate.run(current if current is not None else refund.rows(fixed=False))
    assert card["comparison"]["status"] == "comparable"
    return code, card, out


# --- mid-p McNemar ----------------------------------------------------------------------

def test_midp_by_hand() -> None:
    # b=3, c=0: exact p = 2 * C(3,0) / 8 = 0.25; minus P(X=3) = 1/8 -> 0.125
    assert paired.midp(3, 0) == 0.125
    # b=6, c=0: exact p = 2/64 = 0.03125; minus 1/64 -> 1/64
    assert paired.midp(6, 0) == 1 / 64
    # b=2, c=5: m=7, 2 * (1 + 7 + 21) / 128 - C(7,2)/128 = (58 - 21) / 128
    assert paired.midp(2, 5) == 37 / 128
    assert paired.midp(0, 0) == 1.0
    # a balanced split has no direction: mid-p 1 (2 * P(X <= b) - P(X = b) = 1)
    assert paired.midp(2, 2) == 1.0


def test_midp_matches_scipy() -> None:
    for b in range(0, 31):
        for c in range(0, 31):
            m = b + c
            if m == 0:
                continue
            expected = min(1.0, 2 * binom.cdf(min(b, c), m, 0.5) - binom.pmf(b, m, 0.5))
            assert paired.midp(b, c) == pytest.approx(expected, rel=1e-9, abs=1e-15), (b, c)
            if b != c:  # the brief's form: exact p minus the probability of the split
                exact = min(1.0, 2 * binom.cdf(min(b, c), m, 0.5))
                assert paired.midp(b, c) == pytest.approx(exact - binom.pmf(b, m, 0.5),
                                                          rel=1e-9, abs=1e-15)
    # beyond paired.EXACT_MIDP discordant pairs the tails are summed in doubles (the exact
    # integer sum took 47 s at 19,800 pairs): the same values, to 1e-8 relative
    for b, c in ((520, 490), (10100, 9700), (9900, 9900), (30000, 29000), (20, 1500)):
        m = b + c
        expected = min(1.0, 2 * binom.cdf(min(b, c), m, 0.5) - binom.pmf(b, m, 0.5))
        assert paired.midp(b, c) == pytest.approx(expected, rel=1e-8, abs=1e-300), (b, c)


# --- Holm ---------------------------------------------------------------------------------

def test_holm_by_hand() -> None:
    # sorted 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04, but never below 0.06)
    assert paired.holm({"a": 0.01, "b": 0.04, "c": 0.03}) == pytest.approx(
        {"a": 0.03, "c": 0.06, "b": 0.06})
    assert paired.holm({"a": 0.6, "b": 0.5}) == {"b": 1.0, "a": 1.0}


# --- pairing ------------------------------------------------------------------------------

def test_pairing_depends_on_counts_only_and_counts_what_it_leaves() -> None:
    # case x: before P,P,F; now F,P,F in any order -> pairs (P,P) (P,F) (F,F): b=1, c=0
    # case y: before 2 scored + 1 ERROR; now 3 passes -> 2 pairs, 1 unpaired now
    # case z: only now -> 2 unpaired now; case w: only before -> 1 unpaired before
    now = {"x": [1, 2, 0], "y": [3, 0, 0], "z": [1, 1, 0]}
    before = {"x": [2, 1, 0], "y": [1, 1, 1], "w": [0, 1, 0]}
    result = paired.pair(now, before)
    assert result["cases"] == [(3, 1, 0), (2, 0, 1)]  # x, y in sorted order
    assert result["unpaired"] == [3, 1] and result["unscored"] == [0, 1]


# --- bootstrap ----------------------------------------------------------------------------

def independent_bootstrap(clusters: list[tuple[int, int]], iterations: int,
                          seed: int) -> float:
    """The documented bootstrap, written separately: Mersenne Twister draws
    floor(random() * n), d* as an exact fraction, the two-sided +1 percentile p-value."""
    rng = random.Random(seed)
    n = len(clusters)
    at_most = at_least = 0
    for _ in range(iterations):
        picks = [clusters[int(rng.random() * n)] for _ in range(n)]
        d = Fraction(sum(p[1] for p in picks), sum(p[0] for p in picks))
        at_most += d <= 0
        at_least += d >= 0
    return min(1.0, 2 * min(at_most + 1, at_least + 1) / (iterations + 1))


def test_bootstrap_matches_an_independent_loop() -> None:
    units = [(1, -1)] * 3 + [(1, 0)] * 9  # the refund tool_call pairs: b=3, c=0
    for seed in (1, 7, 20260101):
        assert paired.bootstrap(units, 2000, seed) == independent_bootstrap(units, 2000, seed)
    cases = [(3, -3), (3, 0), (3, 0), (3, 0)]  # the same pairs, one case resampled whole
    assert paired.bootstrap(cases, 2000, 5) == independent_bootstrap(cases, 2000, 5)
    # resampling whole cases spreads d* more than resampling trials: a larger p-value
    assert paired.bootstrap(cases, 2000, 5) > paired.bootstrap(units, 2000, 5)
    assert paired.bootstrap([], 10, 1) == 1.0


# --- end to end: the protocol's refund vector (§16.2) as a paired comparison ------------

def test_refund_vector_mcnemar_midp_under_a_required_comparison(gate: Gate,
                                                                signer: Path) -> None:
    code, card, _ = against_after(gate, signer, comparison(required=True, test="mcnemar_midp"))
    block = card["comparison"]
    assert block["test"] == {"test": "mcnemar_midp", "alpha": 0.05, "multiplicity": "none",
                             "cluster_by": "unit"}
    tool, action = block["categories"]["tool_call"], block["categories"]["action_correctness"]
    # steps 1-4 stay first: both are now failing whatever the test says
    assert tool["status"] == action["status"] == "now failing"
    assert tool["paired"] == {
        "test": "mcnemar_midp", "pairs": 12, "b": 3, "c": 0, "statistic": 3,
        "unpaired": {"current": 0, "baseline": 0}, "unscored": {"current": 0, "baseline": 0},
        "p_value": 0.125, "p_adjusted": None, "status": "now failing"}
    assert (action["paired"]["b"], action["paired"]["c"]) == (6, 0)
    assert action["paired"]["p_value"] == 1 / 64
    # the informational McNemar of §7.3 is unchanged
    assert tool["mcnemar"] == {"b": 3, "c": 0, "p": 0.25}
    assert code == 1 and "REGRESSED" in codes(card)


def test_the_paired_test_decides_steps_5_and_6_with_holm(gate: Gate, signer: Path) -> None:
    # Both runs meet the lowered thresholds, so the test decides. Raw mid-p: pii 1 (no
    # discordant pair), tool_call 0.125, action_correctness 1/64. Holm over the three:
    # 3/64 = 0.046875 <= 0.05 -> action_correctness regressed; 2 * 0.125 = 0.25 -> stable.
    # (The default rule calls tool_call regressed: 0.75 < the baseline's lower 0.7575.)
    code, card, out = against_after(gate, signer, lenient(required=True, test="mcnemar_midp",
                                                     multiplicity="holm"))
    cats = card["comparison"]["categories"]
    assert {n: c["status"] for n, c in cats.items()} == {
        "pii": "stable", "tool_call": "stable", "action_correctness": "regressed"}
    assert cats["action_correctness"]["paired"]["p_adjusted"] == 3 / 64
    assert cats["tool_call"]["paired"]["p_adjusted"] == 0.25
    assert cats["pii"]["paired"]["p_adjusted"] == 1.0
    assert code == 1 and "REGRESSED" in codes(card)
    md = (out / "scorecard.md").read_text()
    # 3 decimals, a signed delta, the test's columns, words for booleans
    assert "regressed: yes." in md and "mcnemar_midp at alpha 0.05, multiplicity holm" in md
    assert "| tool_call | stable | 0.750 | 1.000 | -0.250 | 12 | 3 | 0 | 0 / 0 | 0 / 0 | " \
        "0.125 | 0.250 | 0.250 |" in md
    html = (out / "scorecard.html").read_text()
    assert "regressed: yes." in html and "True" not in html
    assert ('<td>action_correctness</td><td>regressed</td><td class="num">0.500</td>'
            '<td class="num">1.000</td><td class="num">-0.500</td><td class="num">12</td>'
            '<td class="num">6</td><td class="num">0</td>') in html
    assert '<td class="num">0.016</td><td class="num">0.047</td>' in html
    reason = next(r for r in card["reasons"] if r["code"] == "REGRESSED")
    assert reason["message"].endswith(": action_correctness")


def test_alpha_is_governance_s(gate: Gate, signer: Path) -> None:
    # alpha 0.01 < 1/64 = 0.015625: nothing significant, nothing regressed
    _, card, _ = against_after(gate, signer, lenient(test="mcnemar_midp", alpha=0.01))
    assert card["comparison"]["categories"]["action_correctness"]["status"] == "stable"
    assert card["comparison"]["regressed"] is False


def test_refund_vector_paired_bootstrap_is_deterministic_and_recorded(
        gate: Gate, signer: Path) -> None:
    settings = {"test": "paired_bootstrap", "bootstrap": {"iterations": 2000, "seed": 11}}
    _, card, _ = against_after(gate, signer, lenient(**settings))
    block = card["comparison"]
    assert block["test"]["bootstrap"] == {"iterations": 2000, "seed": 11}
    tool = block["categories"]["tool_call"]["paired"]
    assert tool["statistic"] == -3 / 12  # 9/12 - 12/12, paired
    # clusters in the documented order: cases sorted (boundary, eligible, over-limit,
    # unauthorized), in a case its b pairs, its c pairs, then its concordant ones
    units = [(1, 0)] * 6 + [(1, -1)] * 3 + [(1, 0)] * 3
    assert tool["p_value"] == independent_bootstrap(units, 2000, 11)
    _, again, _ = gate.run(refund.rows(fixed=False))
    assert json.dumps(again["comparison"]) == json.dumps(block)  # the same bytes
    # another seed: recorded, and its p-value is that seed's
    _, card, _ = against_after(gate, signer, lenient(test="paired_bootstrap", cluster_by="case",
                                                  bootstrap={"iterations": 2000, "seed": 12}))
    block = card["comparison"]
    assert block["test"]["bootstrap"]["seed"] == 12 and block["test"]["cluster_by"] == "case"
    cases = [(3, 0), (3, 0), (3, -3), (3, 0)]  # over-limit's three trials go together
    assert block["categories"]["tool_call"]["paired"]["p_value"] == \
        independent_bootstrap(cases, 2000, 12)


# --- the reordering attack ------------------------------------------------------------------

def with_amounts(rows: list[dict[str, Any]], case: str,
                 amounts: list[int]) -> list[dict[str, Any]]:
    """Rows whose tool_call row of trial t of ``case`` refunds amounts[t] (above 100 FAILs
    the refund contract). tool_calls are measured, so the suite digest stays the same."""
    out = []
    for row in rows:
        if row["case_id"] == case and row["dimension"] == "tool_call":
            amount = amounts[int(row["trial_id"])]
            row = {**row, "tool_calls": [{"name": "lookup_order",
                                          "arguments": {"order_id": case}},
                                         {"name": "refund", "arguments": {"amount": amount}}]}
        out.append(row)
    return out


def test_the_order_trials_are_written_in_does_not_change_the_pairs(gate: Gate,
                                                                   signer: Path) -> None:
    # The baseline's eligible case: PASS, PASS, FAIL (tool_call). The current run fails two
    # of three. Paired by trial id, F,F,P against P,P,F gives b=2, c=1 (mid-p 0.625) and F,P,F
    # gives b=1, c=0: the evaluated party would choose. Canonically (passes first): b=1, c=0,
    # mid-p 2 * 1/2 - 1/2 = 0.5, whichever trial id or line each outcome is written under.
    base = with_amounts(refund.rows(fixed=True), "eligible", [25, 25, 250])

    def change(spec: dict[str, Any]) -> None:
        spec["categories"]["tool_call"]["threshold"] = 0.5
        spec["gate"]["comparison"] = {"test": "mcnemar_midp"}

    gate.trust(signer / "public.pem")
    gate.policy(change)
    _, _, out = gate.run(base, "--key", str(signer / "private.pem"))
    gate.approve(out)
    seen = []
    for amounts, reverse in (([250, 25, 250], False), ([250, 250, 25], False),
                             ([250, 250, 25], True)):
        rows = with_amounts(refund.rows(fixed=True), "eligible", amounts)
        _, card, _ = gate.run(rows[::-1] if reverse else rows)
        entry = card["comparison"]["categories"]["tool_call"]["paired"]
        seen.append({k: entry[k] for k in ("pairs", "b", "c", "p_value")})
    assert seen == [{"pairs": 12, "b": 1, "c": 0, "p_value": 0.5}] * 3


def test_unscored_and_unpaired_rows_are_counted(gate: Gate, signer: Path) -> None:
    # One action_correctness row of the current run has no observed_state: ERROR, not
    # scored. Its case keeps 2 scored trials against the baseline's 3: 1 baseline outcome
    # is unpaired, 1 current row unscored; 11 pairs.
    rows = refund.rows(fixed=True)
    for row in rows:
        if row["id"] == "eligible-0-action_correctness":
            del row["observed_state"]
    _, card, _ = against_after(gate, signer, comparison(test="mcnemar_midp"), rows)
    entry = card["comparison"]["categories"]["action_correctness"]["paired"]
    assert entry["pairs"] == 11 and (entry["b"], entry["c"]) == (0, 0)
    assert entry["unpaired"] == {"current": 0, "baseline": 1}
    assert entry["unscored"] == {"current": 1, "baseline": 0}


def test_the_default_rule_records_no_paired_test(gate: Gate, signer: Path) -> None:
    _, card, _ = against_after(gate, signer, comparison(required=False))
    assert "test" not in card["comparison"]
    assert all("paired" not in c for c in card["comparison"]["categories"].values())


# --- spec errors --------------------------------------------------------------------------

@pytest.mark.parametrize(("keys", "code", "path"), [
    ({"test": "mcnemar_midp", "regressed_when": "rate < 0.5"}, "PAIRED_RULES_IGNORED",
     "spec.gate.comparison.regressed_when"),
    ({"test": "paired_bootstrap", "improved_when": "rate > 0.9"}, "PAIRED_RULES_IGNORED",
     "spec.gate.comparison.improved_when"),
    ({"test": "mcnemar_midp", "cluster_by": "case"}, "PAIRED_CLUSTER_UNSUPPORTED",
     "spec.gate.comparison.cluster_by"),
    ({"cluster_by": "case"}, "PAIRED_CLUSTER_UNSUPPORTED", "spec.gate.comparison.cluster_by"),
    ({"test": "mcnemar_midp", "alpha": 0}, "OUT_OF_RANGE", "spec.gate.comparison.alpha"),
    ({"test": "mcnemar_midp", "alpha": 1}, "OUT_OF_RANGE", "spec.gate.comparison.alpha"),
    ({"test": "paired_bootstrap", "bootstrap": {"iterations": 10 ** 6}}, "OUT_OF_RANGE",
     "spec.gate.comparison.bootstrap.iterations"),
    ({"test": "t_test"}, "BAD_VALUE", "spec.gate.comparison.test"),
])
def test_bad_comparison_settings_are_located_spec_errors(
        gate: Gate, capsys: pytest.CaptureFixture[str], keys: dict[str, Any], code: str,
        path: str) -> None:
    gate.policy(comparison(**keys))
    assert main(["validate", str(gate.dir)]) == 2
    err = capsys.readouterr().err
    assert f"{code}: {path}" in err


def test_what_could_not_be_tested_is_untested_and_a_required_comparison_incomplete(
        tmp_path: Path) -> None:
    from engine.decide.decision import _comparison_reasons
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(b'{"unit": "u1", "case": "k", "category": "a", "status": "PASS"}\n'
                     b'{"unit": "u2", "case": "k", "category": "a", "status": "ERROR"}\n')
    good = hashlib.sha256(rows.read_bytes()).hexdigest()
    assert paired.read_counts(rows, good) == {"a": {"k": [1, 0, 1]}}
    # the baseline's rows are not the bytes its signed scorecard names: nothing is paired
    assert paired.read_counts(rows, "0" * 64) is None
    assert paired.read_counts(tmp_path / "absent.jsonl", good) is None
    settings = paired.Settings(test="mcnemar_midp", multiplicity="holm")
    entries = paired.run(settings, {"a": {"k": [1, 0, 0]}}, None, ["a"], {"a"})
    assert entries["a"]["p_value"] is None and "rows.jsonl" in entries["a"]["reason"]
    assert paired.verdict(entries["a"], 0.05) == "untested"
    entries = paired.run(settings, {}, {}, ["a"], {"a"})  # no pairs
    assert entries["a"]["reason"] == "no pairs" and entries["a"]["p_adjusted"] is None
    block = {"status": "comparable", "reasons": [], "regressed": False,
             "categories": {"a": {"status": "untested"}, "b": {"status": "stable"}}}
    [reason] = _comparison_reasons(block)
    assert (reason.decision, reason.code) == ("INCOMPLETE", "COMPARISON_UNTESTED")
    assert reason.message.endswith("for a")
