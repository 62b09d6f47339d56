"""Comparable history (agent-release-gate §10): a baseline is an earlier signed scorecard.

A comparison is ``comparable`` only when the baseline verifies against a trusted key, was a
PASS or FAIL, and has the same suite, policy and judge digests. Per category, the first
status that applies is new, skipped, now failing, now passing, regressed, improved, stable;
``regressed`` and ``improved`` are policy formulas.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.decide import fixcheck, power
from engine.decide import paired as paired_test
from engine.decide.lattice import included
from engine.errors import EngineError, FormulaError, VerifyError
from engine.evidence.verify import read_file, verify
from engine.formula import evaluate

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

SCORED = ("PASS", "FAIL")


def verified_card(path: Path, key: Ed25519PublicKey) -> dict[str, Any]:
    """A scorecard that verifies with ``key``, read once more and checked to be the bytes
    that verified; ``_verified`` carries its digest, signer, signed time and evaluation.
    VerifyError (or OSError) when it does not."""
    verified = verify(path, key)
    data = read_file(path)
    if hashlib.sha256(data).hexdigest() != verified.scorecard_sha256:
        raise VerifyError("the scorecard changed while it was read", "DIGEST_MISMATCH")
    card = json.loads(data)
    card["_verified"] = {"scorecard_sha256": verified.scorecard_sha256,
                         "signer": verified.signer, "generated_at": verified.generated_at,
                         "evaluation": verified.evaluation}
    return dict(card)


def _baseline(path: Path | None, keys: list[Ed25519PublicKey]) -> tuple[str, list[str],
                                                                         dict[str, Any]]:
    """(status so far, reasons, baseline scorecard) for a baseline file; the scorecard
    carries the digest, signer, signed time and evaluation that verified under
    ``_verified``."""
    if path is None or not path.is_file():
        return "missing", ["no baseline scorecard was found"], {}
    if not keys:
        return "untrusted", ["no trusted key is configured to verify the baseline"], {}
    problems = []
    for key in keys:
        try:
            return "comparable", [], verified_card(path, key)
        except EngineError as exc:
            problems.append(f"{exc.code}: {exc}")
    return "untrusted", problems[:1], {}


def _compatibility(card: dict[str, Any], base: dict[str, Any]) -> list[str]:
    reasons = []
    decision = _metrics_decision(base)
    if decision not in ("PASS", "FAIL"):
        reasons.append(f"the baseline decision is {decision}, not PASS or FAIL")
    for key in ("suite_sha256", "policy_sha256", "judge_sha256"):
        if card.get(key) != base.get(key):
            reasons.append(f"{key} differs")
    return reasons


def _unverifiable(card: dict[str, Any], incompatible: list[str]) -> str:
    """Why no fix can be verified against this baseline ("" when fixes can be)."""
    if incompatible:
        return "the comparison is not comparable: " + "; ".join(incompatible)
    if card.get("judge_overridden"):
        return "the judge was chosen on the command line, not by the Evaluation"
    return ""


def _metrics_decision(card: dict[str, Any]) -> Any:
    """The decision a scorecard reached before its own comparison was applied, so that a
    run gated only by its missing baseline can serve as the next run's baseline."""
    return card.get("metrics_decision", card.get("decision"))


def _scored_rows(path: Path) -> Iterator[tuple[str, str, str]]:
    with path.open("rb") as handle:
        for line in handle:
            row = json.loads(line)
            if "category" in row and not row.get("control") and row["status"] in SCORED:
                yield row["category"], str(row["unit"]), row["status"]


def mcnemar(b: int, c: int) -> float:
    """Two-sided McNemar p-value: exact binomial below 25 discordant pairs, else corrected."""
    m = b + c
    if m == 0:
        return 1.0
    if m < 25:
        return min(1.0, 2 * sum(math.comb(m, i) for i in range(min(b, c) + 1)) / 2 ** m)
    x = (abs(b - c) - 1) ** 2 / m
    return math.erfc(math.sqrt(x / 2))


def _paired(current: Path, baseline: Path) -> dict[str, dict[str, Any]]:
    """McNemar per category, when both runs scored exactly the same row ids."""
    def table(path: Path) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for category, unit, status in _scored_rows(path):
            out.setdefault(category, {})[unit] = status
        return out

    now, before = table(current), table(baseline)
    out = {}
    for category in sorted(set(now) & set(before)):
        if set(now[category]) != set(before[category]):
            continue
        b = sum(1 for u, s in before[category].items() if s == "PASS" and now[category][u] ==
                "FAIL")
        c = sum(1 for u, s in before[category].items() if s == "FAIL" and now[category][u] ==
                "PASS")
        out[category] = {"b": b, "c": c, "p": mcnemar(b, c)}
    return out


def _first(now: dict[str, Any], base: dict[str, Any] | None) -> str | None:
    """Steps 1-4 of agent-release-gate §10 (new, skipped, now failing, now passing), or
    None when the rule or the paired test decides."""
    if base is None or not included(base):
        return "new"
    if "SKIPPED" in (now["state"], base["state"]):
        return "skipped"
    if base["state"] == "MET" and now["state"] != "MET":
        return "now failing"
    if base["state"] != "MET" and now["state"] == "MET":
        return "now passing"
    return None


def _status(name: str, now: dict[str, Any], base: dict[str, Any] | None,
            rules: dict[str, Any], z: float) -> str:
    first = _first(now, base)
    if first is not None:
        return first
    assert base is not None
    env = {"rate": now["rate"], "baseline_rate": base.get("rate"),
           "baseline_lower": base.get("wilson_lower"), "baseline_upper": base.get("wilson_upper"),
           "$wilson_z": z}
    for status in ("regressed", "improved"):
        try:
            if evaluate(rules[status], env) is True:
                return status
        except FormulaError:
            continue
    return "stable"


Pairings = tuple[paired_test.Counts, paired_test.Counts | None]


def _tests(card: dict[str, Any], base: dict[str, Any], baseline: Path | None, rows: Path,
           settings: paired_test.Settings | None
           ) -> tuple[dict[str, dict[str, Any]], Pairings | None]:
    """The paired test's entry of each category present in both runs ({} without one),
    and the counts it paired (this run's, the baseline's)."""
    if settings is None or not settings.paired or baseline is None:
        return {}, None
    names, family = [], set()
    for name, now in card["categories"].items():
        before = base.get("categories", {}).get(name)
        if included(now) and before is not None and included(before):
            names.append(name)
            if _first(now, before) is None:
                family.add(name)
    digest = base.get("rows_sha256")
    before = paired_test.read_counts(baseline.parent / "rows.jsonl",
                                     digest if isinstance(digest, str) else "")
    now = paired_test.read_counts(rows)
    if now is None:
        raise OSError(f"this run's rows could not be read again: {rows}")
    return paired_test.run(settings, now, before, names, family), (now, before)


def _power(settings: paired_test.Settings, name: str, now: dict[str, Any],
           before: dict[str, Any], test: dict[str, Any] | None, counted: Pairings | None,
           tested: int) -> dict[str, Any]:
    """What the comparison of one category could see (engine/decide/power.py): the power
    to detect a drop of ``effect``, the minimum detectable effect at ``min_power`` (0.8
    when only ``effect`` is set), and the units and cases that would reach it. Under a
    paired test with ``multiplicity: holm``, alpha is divided by the ``tested``
    categories (Holm's strictest step), so the power is never overstated."""
    effect = settings.effect
    assert effect is not None
    wanted = settings.min_power if settings.min_power is not None else 0.8
    trials = max(1, -(-now["n"] // now["cases"])) if now.get("cases") else 1  # rounded up
    out: dict[str, Any] = {"effect": effect, "min_power": settings.min_power}
    if settings.test == "wilson_lower":
        if not now.get("n") or before.get("rate") is None or before.get("wilson_lower") is None:
            return {**out, "power": None, "why": "no scored rows on one side"}
        seen = power.assess_wilson_lower(n=now["n"], baseline_rate=before["rate"],
                                         baseline_lower=before["wilson_lower"], effect=effect,
                                         min_power=wanted, trials_per_case=trials)
        out["alpha"] = None  # the protocol's rule has none: the bound is the baseline's
    else:
        if test is None or counted is None or counted[1] is None or not test.get("pairs"):
            return {**out, "power": None, "why": "no pairs"}
        alpha = settings.alpha / max(tested, 1) if settings.multiplicity == "holm" \
            else settings.alpha
        out["alpha"] = alpha
        if settings.test == "mcnemar_midp":
            seen = power.assess_mcnemar(pairs=test["pairs"], discordant=test["b"] + test["c"],
                                        effect=effect, alpha=alpha, min_power=wanted,
                                        trials_per_case=trials, floor=settings.discordance)
        else:  # with cluster_by: case, each case is one unit whose pairs move together
            cases = paired_test.pair(counted[0].get(name, {}),
                                     counted[1].get(name, {}))["cases"]
            whole = settings.cluster_by == "case"
            seen = power.assess_bootstrap(
                units=len(cases) if whole else test["pairs"],
                discordant=sum(1 for _, b, c in cases if b + c) if whole else
                test["b"] + test["c"], effect=effect, alpha=alpha, min_power=wanted,
                trials_per_case=trials, floor=settings.discordance,
                per_unit=trials if whole else 1)
    cases_now = now.get("cases") or 0
    return {**out, "power": seen.power, "mde": seen.mde, "units_needed": seen.pairs_needed,
            "cases_needed": seen.cases_needed,
            "more_cases": None if seen.cases_needed is None else
            max(0, seen.cases_needed - cases_now), "method": seen.method}


def compare(card: dict[str, Any], baseline: Path | None, keys: list[Ed25519PublicKey],
            rows: Path, rules: dict[str, Any], z: float,
            settings: paired_test.Settings | None = None) -> dict[str, Any]:
    """The comparison block of a scorecard against its baseline; under a paired test
    (``settings``) the test decides steps 5 and 6 (engine/decide/paired.py)."""
    status, reasons, base = _baseline(baseline, keys)
    block: dict[str, Any] = {"status": status, "reasons": reasons, "regressed": False,
                             "baseline": None, "categories": {}}
    if settings is not None and settings.paired:
        block["test"] = settings.record()
    if settings is not None and settings.effect is not None:
        block["power"] = settings.power_record()
    if status != "comparable":
        return block
    block["baseline"] = {**base["_verified"], "decision": base["decision"],
                         "label": base.get("label")}
    incompatible = _compatibility(card, base)
    if baseline is not None:  # always so here: the baseline verified
        block["fixes"] = fixcheck.check(rows, baseline.parent, _unverifiable(card, incompatible),
                                        card.get("trials", {}))
    if incompatible:
        block.update(status="incompatible", reasons=incompatible)
        return block
    paired = _paired(rows, baseline.parent / "rows.jsonl") if baseline else {}
    tests, counted = _tests(card, base, baseline, rows, settings)
    for name, now in card["categories"].items():
        if not included(now):
            continue
        before = base.get("categories", {}).get(name)
        entry = {"status": _status(name, now, before, rules, z), "rate": now["rate"],
                 "baseline_rate": before.get("rate") if before else None}
        if entry["rate"] is not None and entry["baseline_rate"] is not None:
            entry["delta"] = entry["rate"] - entry["baseline_rate"]
        if name in paired:
            entry["mcnemar"] = paired[name]
        if name in tests and settings is not None:
            entry["paired"] = tests[name]
            if _first(now, before) is None:
                entry["status"] = paired_test.verdict(tests[name], settings.alpha)
            tests[name]["status"] = entry["status"]
        if settings is not None and settings.effect is not None and before is not None \
                and _first(now, before) is None:
            entry["power"] = _power(settings, name, now, before, tests.get(name), counted,
                                    sum(1 for t in tests.values() if t.get("p_adjusted")
                                        is not None))
        block["categories"][name] = entry
    block["regressed"] = any(e["status"] in ("now failing", "regressed")
                             for e in block["categories"].values()) or (
        _metrics_decision(base) == "PASS" and card["decision"] != "PASS")
    return block
