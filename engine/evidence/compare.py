"""``engine compare A B``: what changed from one verified run of an evaluation to another.

Both sides are verified first (``verify.verify``: the signature, every signed file beside
the scorecard); nothing unsigned is read. A side's rows and findings are read only as the
bytes its signed scorecard names (``rows_sha256``, ``findings_sha256``). The comparison
says whether the two are comparable at all (the same evaluation, policy, suite and judge:
the protocol forbids comparing across them), then the decision, each category's rate with
the paired McNemar mid-p test over the two runs' rows (pairs within a case, passes first:
``engine.decide.paired``), the cases and trials that flipped, and the findings new and gone.

Something got worse when the decision is worse, a category's state is worse, or a
category's paired test says it regressed (mid-p <= 0.05 with more PASS-to-FAIL pairs than
FAIL-to-PASS). Flips and new findings are listed, not counted as worse on their own: one
flaky trial flips without anything having changed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.decide import paired
from engine.errors import UsageError, VerifyError
from engine.evidence.verify import Verified, read_file, scorecards, verified_card, verify

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

ALPHA = 0.05
LISTED = 100  # flips and findings listed by name; the totals count them all
# how bad a decision is, for "worse": a change to a higher rank is worse
RANK = {"PASS": 0, "TRIAGE": 1, "SELF_TEST": 1, "INCOMPLETE": 2, "FAIL": 3}
STATE_RANK = {"MET": 0, "WAIVED": 0, "NOT_INCLUDED": 1, "SKIPPED": 1, "UNRESOLVED": 2,
              "NOT_MET": 3}
COMPARABLE = (("evaluation", "the evaluation"), ("policy_sha256", "the policy digest"),
              ("suite_sha256", "the suite digest"), ("judge_sha256", "the judge's identity"))


@dataclass
class Side:
    """One verified run: its verification, its scorecard, rows and findings."""

    path: Path
    verified: Verified
    card: dict[str, Any]
    units: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    counts: paired.Counts = field(default_factory=dict)
    findings: dict[tuple[str, str], str] = field(default_factory=dict)


def scorecard_of(path: Path) -> Path:
    """The scorecard a side names: a scorecard.json, or a folder holding exactly one (and
    nothing under it refused: a symlink or an unreadable folder is the side's failure)."""
    if path.is_symlink():
        raise VerifyError(f"{path} is a symlink: evidence elsewhere is not checked here",
                          "SYMLINK")
    if path.is_file():
        return path
    if not path.is_dir():
        raise UsageError(f"{path} does not exist: nothing to compare", "INPUT_NOT_FOUND")
    found, refused = scorecards(path)
    if refused and refused[0].error is not None:
        raise refused[0].error
    if len(found) != 1:
        names = ", ".join(str(p.parent.relative_to(path)) for p in found[:5]) or "none"
        raise UsageError(f"{path} holds {len(found)} scorecards ({names}): name one "
                         "evaluation's folder or scorecard.json", "COMPARE_AMBIGUOUS")
    return found[0]


def load(path: Path, trusted: Ed25519PublicKey | None) -> Side:
    """A side verified, with its signed rows and findings read (VerifyError if not)."""
    card_path = scorecard_of(path)
    verified = verify(card_path, trusted)
    card = verified_card(card_path, verified)  # the verified bytes, never a later swap
    side = Side(card_path, verified, card)
    folder = card_path.parent
    _read_rows(side, _signed(folder / "rows.jsonl", card.get("rows_sha256")))
    if card.get("findings_sha256") is not None:
        for line in _signed(folder / "findings.jsonl", card["findings_sha256"]).splitlines():
            if line.strip():
                one = json.loads(line)
                side.findings[str(one.get("category")), str(one.get("case"))] = \
                    str((one.get("fix") or {}).get("title", ""))
    return side


def _signed(path: Path, digest: Any) -> bytes:
    """A file's bytes when they are the ones the signed scorecard names (a regular file,
    never waited on: read_file); VerifyError otherwise."""
    data = read_file(path)
    if hashlib.sha256(data).hexdigest() != digest:
        raise VerifyError(f"{path.name} is not the bytes the signed scorecard names",
                          "DIGEST_MISMATCH")
    return data


def _read_rows(side: Side, data: bytes) -> None:
    """Each scored unit's status and the paired counts, from the signed rows.jsonl."""
    lines = data.splitlines(keepends=True)
    side.counts = paired.counts(lines)
    for line in lines:
        row = json.loads(line)
        if "category" in row and not row.get("control") and row.get("status") in paired.SCORED:
            side.units[row["category"], str(row.get("unit"))] = (str(row.get("case")),
                                                                 row["status"])


def compare(a: Side, b: Side) -> dict[str, Any]:
    """The comparison of run ``a`` (before) with run ``b`` (after), as JSON."""
    reasons = [f"{what} differs" for key, what in COMPARABLE
               if _identity(a.card, key) != _identity(b.card, key)]
    va, vb = a.verified, b.verified
    if (va.scorecard_sha256, va.run_id, va.generated_at) == \
            (vb.scorecard_sha256, vb.run_id, vb.generated_at):
        reasons.append("A and B are the same run")
    elif vb.generated_at < va.generated_at:
        reasons.append(f"B was signed ({vb.generated_at}) before A ({va.generated_at}): give "
                       "the earlier run first")
    decision = {"a": a.card.get("decision"), "b": b.card.get("decision")}
    decision["worse"] = RANK.get(str(decision["b"]), 3) > RANK.get(str(decision["a"]), 3)
    categories = [_category(name, a, b) for name in
                  sorted(set(a.card.get("categories") or {}) | set(b.card.get("categories") or {}))]
    out: dict[str, Any] = {"a": _about(a), "b": _about(b), "comparable": not reasons,
           "not_comparable": reasons, "decision": decision, "categories": categories,
           "flips": _flips(a, b), "findings": _findings(a, b)}
    worse = bool(decision["worse"] or any(c["worse"] for c in categories))
    trusted = a.verified.trusted and b.verified.trusted
    out.update(worse=worse, trusted=trusted, exit=3 if reasons or not trusted else int(worse))
    return out


def _identity(card: dict[str, Any], key: str) -> Any:
    value = card.get(key)
    return value.get("name") if key == "evaluation" and isinstance(value, dict) else value


def _about(side: Side) -> dict[str, Any]:
    v, card = side.verified, side.card
    return {"path": str(side.path), "evaluation": v.evaluation, "run_id": v.run_id,
            "generated_at": v.generated_at, "decision": v.decision,
            "scorecard_sha256": v.scorecard_sha256, "signer": v.signer, "trusted": v.trusted,
            "policy": v.policy, "policy_sha256": v.policy_sha256,
            "suite_sha256": card.get("suite_sha256"), "judge_sha256": card.get("judge_sha256")}


def _category(name: str, a: Side, b: Side) -> dict[str, Any]:
    before = (a.card.get("categories") or {}).get(name) or {}
    after = (b.card.get("categories") or {}).get(name) or {}
    entry: dict[str, Any] = {"name": name}
    for key, cat in (("a", before), ("b", after)):
        entry[key] = {k: cat.get(k) for k in ("rate", "wilson_lower", "n", "state", "threshold")}
    ra, rb = entry["a"]["rate"], entry["b"]["rate"]
    entry["delta"] = rb - ra if isinstance(ra, int | float) and isinstance(rb, int | float) \
        else None
    pairs = paired.pair(b.counts.get(name, {}), a.counts.get(name, {}))
    k = sum(x[0] for x in pairs["cases"])
    fell = sum(x[1] for x in pairs["cases"])  # PASS before, FAIL after
    rose = sum(x[2] for x in pairs["cases"])
    p = paired.midp(fell, rose) if k else None
    entry["paired"] = {"test": "mcnemar_midp", "pairs": k, "pass_to_fail": fell,
                       "fail_to_pass": rose, "p_value": p}
    why = []
    if STATE_RANK.get(str(after.get("state")), 2) > STATE_RANK.get(str(before.get("state")), 2):
        why.append(f"state {before.get('state')} -> {after.get('state')}")
    if p is not None and p <= ALPHA and fell > rose:
        why.append(f"the paired test says it regressed (mid-p {p:.4f})")
    entry["worse"], entry["why"] = bool(why), why
    return entry


def _flips(a: Side, b: Side) -> dict[str, Any]:
    """Trials (units present in both runs) and cases whose outcome changed."""
    trials: dict[str, list[dict[str, str]]] = {"to_fail": [], "to_pass": []}
    for key in sorted(set(a.units) & set(b.units)):
        (case, was), (_, now) = a.units[key], b.units[key]
        if was != now:
            trials["to_fail" if now == "FAIL" else "to_pass"].append(
                {"category": key[0], "case": case, "unit": key[1]})
    cases: dict[str, list[dict[str, str]]] = {"to_fail": [], "to_pass": []}
    for name in sorted(set(a.counts) & set(b.counts)):
        for case in sorted(set(a.counts[name]) & set(b.counts[name])):
            (p0, f0, _), (p1, f1, _) = a.counts[name][case], b.counts[name][case]
            if not (p0 + f0 and p1 + f1):  # a case with no scored trial passed nothing
                continue
            was_ok, now_ok = f0 == 0, f1 == 0
            if was_ok != now_ok:
                cases["to_pass" if now_ok else "to_fail"].append({"category": name,
                                                                  "case": case})
    return {f"{kind}_{way}": items[way][:LISTED] for kind, items in
            (("trials", trials), ("cases", cases)) for way in ("to_fail", "to_pass")} | {
        f"{kind}_{way}_total": len(items[way]) for kind, items in
        (("trials", trials), ("cases", cases)) for way in ("to_fail", "to_pass")}


def _findings(a: Side, b: Side) -> dict[str, Any]:
    new = [{"category": c, "case": k, "title": b.findings[c, k]}
           for c, k in sorted(set(b.findings) - set(a.findings))]
    gone = [{"category": c, "case": k, "title": a.findings[c, k]}
            for c, k in sorted(set(a.findings) - set(b.findings))]
    return {"new": new[:LISTED], "gone": gone[:LISTED], "new_total": len(new),
            "gone_total": len(gone)}
