"""Judged rates corrected for the judge's measured error (policy ``judge.correct:
rogan_gladen``): the Rogan-Gladen estimate worked by hand, its Bonferroni box of Wilson
limits checked against scipy's Wilson intervals and a dense search of the box, and end to
end through ``engine calibrate`` and ``engine run`` with a real loopback judge: a category
that passes on its raw rate fails on its corrected one, both shown in scorecard.json, .md
and .html.
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from scipy.stats import binomtest, norm

from engine.cli import main
from engine.decide import correction
from engine.evidence import calibration, signing
from engine.spec import evaluation as spec
from engine.stats import wilson

from . import test_calibration as _calibration
from .conftest import Gate, suite_sha256
from .judge_server import Judge
from .test_calibration import answers, calibrate, configure, holdout
from .test_judge import cache_key, grounding  # noqa: F401 - cache_key: autouse fixture

judge = _calibration.judge  # the loopback judge and governance's keys (fixtures)
keys = _calibration.keys

# ---------------------------------------------------------------- arithmetic, by hand


def test_corrected_rate_by_hand() -> None:
    # sens 1, spec 0.7, p 0.9: (0.9 + 0.7 - 1) / (1 + 0.7 - 1) = 0.6 / 0.7 = 6/7
    assert correction.rate(0.9, 1.0, 0.7) == pytest.approx(6 / 7)
    # sens 0.8, spec 0.9, p 0.5: (0.5 + 0.9 - 1) / (0.8 + 0.9 - 1) = 0.4 / 0.7 = 4/7
    assert correction.rate(0.5, 0.8, 0.9) == pytest.approx(4 / 7)
    # a perfect judge corrects nothing
    assert correction.rate(0.37, 1.0, 1.0) == pytest.approx(0.37)


def test_corrected_rate_is_clipped_to_0_and_1() -> None:
    # p 1, sens 0.8, spec 0.9: 0.9 / 0.7 = 1.2857... -> 1
    assert correction.rate(1.0, 0.8, 0.9) == 1.0
    # p 0.05, spec 0.9: (0.05 - 0.1) / 0.7 < 0 -> 0
    assert correction.rate(0.05, 0.8, 0.9) == 0.0


def test_youden_at_or_below_zero_cannot_correct() -> None:
    with pytest.raises(ValueError, match="Youden"):
        correction.rate(0.5, 0.5, 0.5)      # 0.5 + 0.5 - 1 = 0
    with pytest.raises(ValueError, match="Youden"):
        correction.rate(0.5, 0.3, 0.6)      # -0.1
    why = correction.why_not({"sensitivity": 0.4, "specificity": 0.6})
    assert why is not None and "no better than chance" in why and "= 0 " in why
    assert "no specificity" in (correction.why_not({"sensitivity": 1.0,
                                                    "specificity": None}) or "")
    assert "no sensitivity" in (correction.why_not({"sensitivity": None,
                                                    "specificity": 0.9}) or "")
    assert correction.why_not({"sensitivity": 0.8, "specificity": 0.9}) is None


def test_box_z_splits_alpha_three_ways() -> None:
    # z 1.96: alpha = 2(1 - Phi(1.96)) = 0.04999579...; each of the three intervals at
    # 1 - alpha/3, i.e. z = Phi^-1(1 - alpha/6) = 2.39357...
    alpha = 2 * norm.sf(1.96)
    assert correction.box_z(1.96) == pytest.approx(norm.isf(alpha / 6), abs=1e-9)
    assert 2.39 < correction.box_z(1.96) < 2.40


def _scipy_wilson(k: int, n: int, z: float) -> tuple[float, float]:
    level = 1 - 2 * norm.sf(z)
    ci = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def _expected(passed: int, n: int, cells: dict[str, int], z: float = 1.96,
              parts: int = 3) -> tuple[float, float]:
    """The box's limits at z (alpha split ``parts`` ways) from scipy's Wilson intervals:
    (0, 1) when the box reaches a Youden index of 0 (the estimator is unbounded there),
    else a grid search."""
    zb = norm.isf(2 * norm.sf(z) / (2 * parts))
    p = _scipy_wilson(passed, n, zb)
    se = _scipy_wilson(cells["tp"], cells["tp"] + cells["fn"], zb)
    sp = _scipy_wilson(cells["tn"], cells["tn"] + cells["fp"], zb)
    if se[0] + sp[0] - 1 <= 0:
        return 0.0, 1.0
    return _searched(p, se, sp)


def _searched(p: tuple[float, float], se: tuple[float, float],
              sp: tuple[float, float], steps: int = 40) -> tuple[float, float]:
    """Minimum and maximum of the clipped estimator over a dense grid of the box (ends
    included): an independent search, no monotonicity assumed."""
    def grid(lo_hi: tuple[float, float]) -> list[float]:
        lo, hi = lo_hi
        return [lo + (hi - lo) * i / steps for i in range(steps + 1)]
    values = [min(1.0, max(0.0, (a + c - 1) / (b + c - 1)))
              for a, b, c in itertools.product(grid(p), grid(se), grid(sp))]
    return min(values), max(values)


@pytest.mark.parametrize("passed, n, cells", [
    (18, 20, {"tp": 100, "fp": 30, "tn": 70, "fn": 0}),
    (45, 60, {"tp": 40, "fp": 4, "tn": 36, "fn": 5}),
    (3, 50, {"tp": 90, "fp": 2, "tn": 98, "fn": 10}),
    (120, 200, {"tp": 70, "fp": 20, "tn": 80, "fn": 30}),
])
def test_interval_is_the_box_of_scipy_wilson_limits(passed: int, n: int,
                                                    cells: dict[str, int]) -> None:
    z = 1.96
    zb = norm.isf(2 * norm.sf(z) / 6)
    p = _scipy_wilson(passed, n, zb)
    se = _scipy_wilson(cells["tp"], cells["tp"] + cells["fn"], zb)
    sp = _scipy_wilson(cells["tn"], cells["tn"] + cells["fp"], zb)
    assert se[0] + sp[0] - 1 > 0  # these boxes stay above a Youden index of 0
    lower, upper = correction.interval(passed, n, cells, z)
    want = _searched(p, se, sp)
    assert lower == pytest.approx(want[0], abs=1e-9)
    assert upper == pytest.approx(want[1], abs=1e-9)
    sens = cells["tp"] / (cells["tp"] + cells["fn"])
    spec = cells["tn"] / (cells["tn"] + cells["fp"])
    point = correction.rate(passed / n, sens, spec)
    assert lower <= point <= upper
    # the box is wider than the raw Wilson interval's own width at the policy's z
    raw = wilson(passed, n, z)
    assert raw is not None and upper - lower > raw[1] - raw[0]


def test_a_box_that_reaches_chance_is_0_to_1() -> None:
    # sens 6/10, spec 6/10: the lower Wilson limits of both are far below 0.5, so the box
    # holds sens + spec - 1 <= 0 and the corrected rate is unbounded there
    assert correction.interval(10, 20, {"tp": 6, "fn": 4, "tn": 6, "fp": 4}, 1.96) == \
        (0.0, 1.0)


# ---------------------------------------------------------------- end to end

# calibration: the human passes g1..g10; the judge passes g1..g13: tp=10, fn=0, fp=3, tn=7,
# sens 1, spec 0.7, kappa 0.7 (po 0.85, pj 0.65, ph 0.5, pe 0.5)
JUDGE_PASS = set(range(1, 14))


def correct(gate: Gate, min_kappa: float = 0.7, artifact: bool = True) -> None:
    gate.policy(lambda spec: spec.setdefault("judge", {}).update(
        correct="rogan_gladen", calibration={"min_kappa": min_kappa}))
    if artifact:
        path = gate.dir / "evaluation.yaml"
        data = yaml.safe_load(path.read_text())
        data["spec"]["judge"]["calibration"] = "calibration/calibration.json"
        path.write_text(yaml.safe_dump(data, sort_keys=False))


def run_grounding(gate: Gate) -> tuple[int, dict[str, Any], Path]:
    """A gated run of grounding rows g1..g20 (the judge's answers are set beforehand)."""
    return gate.run([grounding(i) for i in range(1, 21)], "--no-judge-cache")


def test_passes_raw_and_fails_corrected(gate: Gate, judge: Judge,
                                        keys: tuple[Path, Path]) -> None:
    configure(gate, judge)
    answers(judge, JUDGE_PASS)
    code, _ = calibrate(gate, holdout(gate), keys[0])
    assert code == 1  # kappa 0.7 is below the default 0.85 the calibration was made with
    gate_run_keys(gate, keys[0])
    # the judge passes g1..g18 in the gated run: raw rate 18/20 = 0.9 meets threshold 0.90
    answers(judge, set(range(1, 19)))
    code, card, out = run_grounding(gate)
    raw = card["categories"]["grounding"]
    assert raw["rate"] == 0.9 and raw["state"] == "MET", card["reasons"]
    assert "corrected" not in raw  # judge.correct is none: nothing changes

    correct(gate)
    code, card, out = run_grounding(gate)
    cat = card["categories"]["grounding"]
    # raw statistics unchanged
    assert (cat["passed"], cat["n"], cat["rate"]) == (18, 20, 0.9)
    z = card["statistics"]["wilson_z"]
    assert (cat["wilson_lower"], cat["wilson_upper"]) == pytest.approx(wilson(18, 20, z))
    fixed = cat["corrected"]
    # (0.9 + 0.7 - 1) / (1 + 0.7 - 1) = 6/7 = 0.857 < 0.90
    assert fixed["method"] == "rogan_gladen" and fixed["interval"] == "bonferroni_wilson_box"
    assert fixed["rate"] == pytest.approx(6 / 7)
    assert fixed["sensitivity"] == 1.0 and fixed["specificity"] == pytest.approx(0.7)
    assert fixed["calibration"] == {"tp": 10, "fp": 3, "tn": 7, "fn": 0}
    # 20 hold-out rows measure the judge loosely: the box's lower sensitivity (0.636) and
    # specificity (0.341) limits sum below 1, so the interval is all of [0, 1]
    assert _expected(18, 20, fixed["calibration"]) == (0.0, 1.0)
    assert (fixed["lower"], fixed["upper"]) == (0.0, 1.0)
    assert cat["state"] == "NOT_MET" and card["decision"] == "FAIL" and code == 1
    below = [r for r in card["reasons"] if r["code"] == "BELOW_THRESHOLD"]
    assert below and "corrected point" in below[0]["message"] and "0.857143" in below[0][
        "message"]
    assert card["calibration"]["categories"]["grounding"]["cells"] == fixed["calibration"]
    md = (out / "scorecard.md").read_text()
    assert "corrected [interval]" in md and "| 0.900 |" in md and "0.857 [" in md
    html = (out / "scorecard.html").read_text()
    assert "corrected [interval]</th>" in html and ">0.857 [" in html and ">0.900<" in html


def gate_run_keys(gate: Gate, pair: Path) -> None:
    """Declare ``pair`` (governance's) in the Evaluation's judge.calibration_keys."""
    path = gate.dir / "evaluation.yaml"
    data = yaml.safe_load(path.read_text())
    (gate.dir / "keys").mkdir(exist_ok=True)
    shutil.copy(pair / "public.pem", gate.dir / "keys" / "gov.pub.pem")
    data["spec"]["judge"]["calibration_keys"] = ["keys/gov.pub.pem"]
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_wilson_lower_gates_on_the_corrected_lower_limit(
        gate: Gate, judge: Judge, keys: tuple[Path, Path]) -> None:
    configure(gate, judge)
    answers(judge, JUDGE_PASS)
    calibrate(gate, holdout(gate), keys[0])
    gate_run_keys(gate, keys[0])
    correct(gate)
    gate.policy(lambda spec: spec["categories"]["grounding"].update(
        gate_on="wilson_lower", threshold=0.5))
    answers(judge, set(range(1, 20)))  # 19/20
    code, card, _ = run_grounding(gate)
    cat = card["categories"]["grounding"]
    # raw: 19/20, Wilson lower 0.764 meets 0.5; corrected: the box of a 20-row calibration
    # reaches chance, so its lower limit is 0 (see _expected), and the category fails
    z = card["statistics"]["wilson_z"]
    assert cat["wilson_lower"] == pytest.approx(wilson(19, 20, z)[0])  # type: ignore[index]
    assert cat["wilson_lower"] > 0.5
    assert (cat["corrected"]["lower"], cat["corrected"]["upper"]) == \
        _expected(19, 20, {"tp": 10, "fp": 3, "tn": 7, "fn": 0}) == (0.0, 1.0)
    assert cat["state"] == "NOT_MET" and code == 1
    below = [r for r in card["reasons"] if r["code"] == "BELOW_THRESHOLD"]
    assert "corrected wilson_lower 0 is below the threshold 0.5" in below[0]["message"]


def test_uncalibrated_category_is_unresolved(gate: Gate, judge: Judge,
                                             keys: tuple[Path, Path]) -> None:
    configure(gate, judge)
    answers(judge, JUDGE_PASS)
    calibrate(gate, holdout(gate), keys[0])
    gate_run_keys(gate, keys[0])
    correct(gate, min_kappa=0.85)  # kappa 0.7 misses it; calibration.required is not set
    answers(judge, set(range(1, 21)))
    code, card, _ = run_grounding(gate)
    cat = card["categories"]["grounding"]
    assert code == 3 and cat["state"] == "UNRESOLVED" and "corrected" not in cat
    missing = [r for r in card["reasons"] if r["code"] == "CALIBRATION_MISSING"]
    assert missing and "kappa 0.7 is below min_kappa 0.85" in missing[0]["message"]


def test_chance_level_judge_cannot_correct(gate: Gate, judge: Judge,
                                           keys: tuple[Path, Path]) -> None:
    configure(gate, judge)
    answers(judge, set(range(1, 21)))  # passes all: tp 10, fp 10, sens 1, spec 0, kappa 0
    calibrate(gate, holdout(gate), keys[0])
    gate_run_keys(gate, keys[0])
    correct(gate, min_kappa=0.0)  # governance accepts it as calibrated; it cannot correct
    code, card, _ = run_grounding(gate)
    cat = card["categories"]["grounding"]
    assert code == 3 and cat["state"] == "UNRESOLVED" and "corrected" not in cat
    assert card["calibration"]["categories"]["grounding"]["calibrated"] is True
    undefined = [r for r in card["reasons"] if r["code"] == "CORRECTION_UNDEFINED"]
    assert undefined and undefined[0]["spec_path"] == "policy:spec.judge.correct"
    assert "Youden" in undefined[0]["message"]


def test_correct_without_a_named_calibration_is_a_spec_error(
        gate: Gate, judge: Judge, capsys: Any) -> None:
    configure(gate, judge)
    correct(gate, artifact=False)
    code, card, _ = run_grounding(gate)
    said = capsys.readouterr()
    assert code == 2 and card == {}
    assert "CORRECTION_UNCALIBRATED" in said.out + said.err
    assert "judge.calibration" in said.out + said.err


def test_only_governance_s_calibration_of_this_judge_corrects(
        gate: Gate, judge: Judge, keys: tuple[Path, Path]) -> None:
    # sensitivity and specificity come only from an artifact that verifies against the
    # Evaluation's calibration key and measured this judge: one signed by another key, or
    # made for another judge identity, corrects nothing and the category is UNRESOLVED
    configure(gate, judge)
    answers(judge, JUDGE_PASS)
    calibrate(gate, holdout(gate), keys[1])  # signed by a key the Evaluation does not trust
    gate_run_keys(gate, keys[0])
    correct(gate)
    answers(judge, set(range(1, 19)))
    code, card, _ = run_grounding(gate)
    assert card["calibration"]["status"] == "untrusted"
    assert code == 3 and card["categories"]["grounding"]["state"] == "UNRESOLVED"
    assert "corrected" not in card["categories"]["grounding"]
    assert "CALIBRATION_MISSING" in [r["code"] for r in card["reasons"]]
    # governance's key, but the Evaluation now asks the judge with another seed: another
    # judge identity than the one calibrated
    shutil.rmtree(gate.dir / "calibration")
    answers(judge, JUDGE_PASS)
    calibrate(gate, holdout(gate), keys[0])
    answers(judge, set(range(1, 19)))
    path = gate.dir / "evaluation.yaml"
    data = yaml.safe_load(path.read_text())
    data["spec"]["judge"]["seed"] = 7
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    code, card, _ = run_grounding(gate)
    assert card["calibration"]["status"] == "mismatch"
    assert "judge identity differs" in card["calibration"]["reason"]
    assert code == 3 and "corrected" not in card["categories"]["grounding"]
    # and with the seed it was calibrated with, the same artifact corrects (the control)
    data["spec"]["judge"].pop("seed")
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    code, card, _ = run_grounding(gate)
    assert card["calibration"]["status"] == "verified"
    assert card["categories"]["grounding"]["corrected"]["rate"] == pytest.approx(6 / 7)


def task(i: int) -> dict[str, Any]:
    """A deterministic row (must_include): no judge decides it."""
    return {"id": f"t{i}", "case_id": f"t{i}", "dimension": "task_completion",
            "agent_output": "refund issued", "must_include": ["refund"]}


def test_only_the_rows_the_judge_decided_are_corrected(gate: Gate, judge: Judge,
                                                       keys: tuple[Path, Path]) -> None:
    """A category mixing judged and deterministic rows (a hostile review's wrong PASS: the
    whole rate was corrected with the error the judge makes on its own rows)."""
    configure(gate, judge)
    answers(judge, set(range(1, 9)))  # hold-out: human passes g1..g10, judge g1..g8
    calibrate(gate, holdout(gate), keys[0])  # tp 8, fn 2, fp 0, tn 10: sens 0.8, spec 1
    gate_run_keys(gate, keys[0])

    def mixed(spec: dict[str, Any]) -> None:
        spec["inspections"].append({"id": "tc2", "type": "must_include",
                                    "when": "dimension == 'task_completion'"})
        spec["categories"]["grounding"]["inspections"] = ["grounding", "tc2"]
    gate.policy(mixed)
    correct(gate)
    answers(judge, set(range(1, 7)))  # the judge passes 6 of 10; the 10 others pass
    code, card, _ = gate.run([grounding(i) for i in range(1, 11)] +
                             [task(i) for i in range(1, 11)], "--no-judge-cache")
    cat = card["categories"]["grounding"]
    assert (cat["passed"], cat["n"]) == (16, 20)
    # judged part corrected: (0.6 + 1 - 1) / (0.8 + 1 - 1) = 0.75; the rest as observed:
    # (10 * 0.75 + 10) / 20 = 0.875 < 0.9 (the whole rate corrected would be 1.0)
    assert cat["corrected"]["judged"] == {"passed": 6, "n": 10}
    assert cat["corrected"]["rate"] == pytest.approx(0.875, rel=1e-12)
    # limits: the judged part's box and the others' Wilson limits, by rows, with alpha
    # split four ways (rate, sensitivity, specificity and the other rows)
    z = card["statistics"]["wilson_z"]
    judged_lower, judged_upper = _expected(6, 10, {"tp": 8, "fp": 0, "tn": 10, "fn": 2}, z,
                                           parts=4)
    other_lower, other_upper = _scipy_wilson(10, 10, norm.isf(2 * norm.sf(z) / 8))
    assert cat["corrected"]["lower"] == pytest.approx((judged_lower * 10 + other_lower * 10)
                                                      / 20, rel=1e-9)
    assert cat["corrected"]["upper"] == pytest.approx(
        min(1.0, (judged_upper * 10 + other_upper * 10) / 20), rel=1e-9)
    assert cat["state"] == "NOT_MET" and card["decision"] == "FAIL" and code == 1


def test_an_older_calibration_put_back_is_not_governance_s_current_one(
        gate: Gate, judge: Judge, keys: tuple[Path, Path]) -> None:
    """A hostile review's wrong PASS: governance recalibrates and signs the specs; the
    runner puts the older artifact (still governance-signed, same judge, a kinder
    sensitivity) back. Read while the specs load, the artifact is a subject of the bundle."""
    configure(gate, judge)
    answers(judge, set(range(1, 9)))  # first calibration: sens 0.8, spec 1 (18/20 -> 1.0)
    calibrate(gate, holdout(gate), keys[0])
    old = gate.root / "old-calibration"
    shutil.copytree(gate.dir / "calibration", old)
    shutil.rmtree(gate.dir / "calibration")
    answers(judge, JUDGE_PASS)  # the current one: sens 1, spec 0.7 (18/20 -> 6/7)
    calibrate(gate, holdout(gate), keys[0])
    gate_run_keys(gate, keys[0])
    correct(gate)
    rows = [grounding(i) for i in range(1, 21)]
    gate.pin(suite_sha256(rows))
    assert main(["sign-specs", str(gate.dir), "--key", str(keys[0] / "private.pem")]) == 0
    answers(judge, set(range(1, 19)))
    signed = ("--no-judge-cache", "--governance-key", str(keys[0] / "public.pem"))
    code, card, _ = gate.run(rows, *signed)
    assert card["decision"] == "FAIL"  # 6/7 < 0.9 on governance's current calibration
    shutil.rmtree(gate.dir / "calibration")
    shutil.copytree(old, gate.dir / "calibration")
    code, card, _ = gate.run(rows, *signed)
    assert card["decision"] == "INCOMPLETE" and code == 3
    assert "SPECS_CHANGED" in [r["code"] for r in card["reasons"]]


def test_the_calibration_is_the_bytes_the_specs_were_loaded_with(
        gate: Gate, judge: Judge, keys: tuple[Path, Path], tmp_path: Path) -> None:
    configure(gate, judge)
    answers(judge, JUDGE_PASS)
    calibrate(gate, holdout(gate), keys[0])
    kept = tmp_path / "kept"
    shutil.copytree(gate.dir / "calibration", kept)
    shutil.rmtree(gate.dir / "calibration")
    answers(judge, set(range(1, 9)))
    calibrate(gate, holdout(gate), keys[0])
    gate_run_keys(gate, keys[0])
    correct(gate)
    records = tmp_path / "runs.jsonl"
    records.write_text("".join(json.dumps(grounding(i)) + "\n" for i in range(1, 21)))
    evaluation = spec.load([gate.dir], {"runs": records})[0]
    judge_block = {"judge_sha256": json.loads((gate.dir / "calibration" / "calibration.json")
                                              .read_text())["judge"]["judge_sha256"]}
    key = [signing.load_public(keys[0] / "public.pem")]
    assert calibration.check(evaluation, judge_block, key)["status"] == "verified"
    # another governance-signed artifact put in its place after the specs were loaded
    shutil.rmtree(gate.dir / "calibration")
    shutil.copytree(kept, gate.dir / "calibration")
    block = calibration.check(evaluation, judge_block, key)
    assert block["status"] == "mismatch" and "not the one the specs were loaded" in \
        block["reason"]
    assert not block["categories"]["grounding"]["calibrated"]


def test_a_calibration_of_one_answer_does_not_correct_a_judge_asked_three_times(
        gate: Gate, judge: Judge, keys: tuple[Path, Path]) -> None:
    configure(gate, judge)
    answers(judge, JUDGE_PASS)
    calibrate(gate, holdout(gate), keys[0])  # measured with one answer per prompt
    gate_run_keys(gate, keys[0])
    correct(gate)
    gate.policy(lambda spec: spec["judge"].update(repeats=3))
    answers(judge, set(range(1, 19)))
    code, card, _ = run_grounding(gate)
    assert card["calibration"]["status"] == "mismatch"
    assert "1 time(s) per prompt; this policy asks 3" in card["calibration"]["reason"]
    assert code == 3 and "corrected" not in card["categories"]["grounding"]
    assert "CALIBRATION_MISSING" in [r["code"] for r in card["reasons"]]
