"""Evaluation of stored reviews (discovery protocol §8.9-§8.12, §9.5, §10, §12).

A review is trusted only after every binding matches freshly computed digests and its blind
check re-derives the same sample and passes the content checks against the corpus. Then the
§8.10 counters, the blind gate flags (formulas from spec data), the support cap and the
judge's assessment give each finding's effective support and score.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.canonical import digest
from engine.errors import FormulaError, Problem
from engine.formula import NUMBER, Formula, compile_formula, evaluate
from engine.protocols.discovery.audit import AuditError, sample
from engine.protocols.discovery.corpus import Corpus
from engine.protocols.discovery.files import formula_problem
from engine.protocols.discovery.scoring import Scoring, finding_score, task_quality
from engine.spec.yaml import Document

STATES = ("positive", "negative", "unknown")
JUDGE_KEYS = frozenset({"finding_id", "support", "task_fulfilled", "statistical_validity",
                        "evidence_entailment", "analytical_depth", "calibration",
                        "duplicate_of", "reference_match", "rationale"})
SUPPORT = ("supported", "partial", "unsupported", "uncertain")
COUNTERS = ("checked", "checker_unknown", "p", "pc", "n", "d")


class IntegrityError(ValueError):
    """A review that cannot be trusted: ``code`` is STALE_REVIEW or a BLIND_* code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class BlindGate:
    """Compiled blind_check.yaml."""

    record: dict[str, Any]
    sha256: str
    flags: dict[str, Formula]
    evidence: dict[str, Any]
    precedence: list[str]
    cap_for_flag: dict[str, str]
    interpretations: dict[str, str]


def compile_blind(doc: Document, prompt: str, problems: list[Problem]) -> BlindGate:
    """The protocol record (with the prompt's digest) and the compiled gate formulas; a
    formula that does not compile, or a flag with no cap, is a located problem."""
    data = doc.data
    record = {k: v for k, v in data["record"].items() if k != "prompt_file"}
    record["prompt_sha256"] = digest(prompt)
    params = {k: v for k, v in record.items() if isinstance(v, int | float)}
    names = dict.fromkeys([*COUNTERS, *params], NUMBER)
    flags = {}
    for name, src in data["flags"].items():
        try:
            flags[name] = _bound(compile_formula(src, names), params)
        except FormulaError as exc:
            problems.append(formula_problem(doc, ("flags", name), exc))
    raised = [*data["flags"], data["evidence"]["all_contradicted"], data["evidence"]["otherwise"]]
    problems.extend(doc.problem(("cap_for_flag",), "MISSING_KEY", f"'{flag}' is required here "
                                "(a flag that can be raised needs its cap)")
                    for flag in dict.fromkeys(raised) if flag not in data["cap_for_flag"])
    return BlindGate(record, digest(record), flags, dict(data["evidence"]),
                     list(data["precedence"]), dict(data["cap_for_flag"]),
                     dict(data["interpretations"]))


def _bound(formula: Formula, params: dict[str, Any]) -> Formula:
    """A flag formula with the record's numbers bound, so it needs only the counters."""
    return Formula(formula.source, formula.type, formula.names,
                   lambda env: formula.fn({**params, **env}))


def restrictive(precedence: list[str], *supports: str) -> str:
    """The most restrictive support level (first in the precedence list)."""
    return min(supports, key=precedence.index)


def verify_blind(gate: BlindGate, check: Mapping[str, Any], task: Mapping[str, Any],
                 corpus: Corpus, findings: list[Mapping[str, Any]],
                 audit: Mapping[str, Any]) -> list[dict[str, Any]]:
    """§8.9: the stored check, verified; returns its annotations."""
    if check.get("protocol_sha256") != gate.sha256:
        raise IntegrityError("BLIND_PROTOCOL_MISMATCH", "the blind check was made under "
                             "another protocol record")
    seed = check.get("seed")
    if not isinstance(seed, str) or not seed:
        raise IntegrityError("BLIND_SEED_INVALID", "the stored seed is not a non-empty string")
    try:
        want = sample(seed, check["budget"], task["task_id"], corpus.ids,
                      list(findings), audit)["document_ids"]
    except KeyError:
        raise IntegrityError("BLIND_SAMPLE_MISMATCH", "the check records no budget") from None
    except AuditError as exc:
        raise IntegrityError("BLIND_SAMPLE_MISMATCH", str(exc)) from None
    stored = check.get("annotations")
    annotations: list[dict[str, Any]] = stored if isinstance(stored, list) and all(
        isinstance(a, dict) for a in stored) else []
    ids = [a.get("doc_id") for a in annotations]
    if not annotations or len(set(ids)) != len(ids) or ids != want:
        raise IntegrityError("BLIND_SAMPLE_MISMATCH", "the annotated documents differ from the "
                             "re-derived sample")
    width = sum(len(f["definitions"]) for f in findings)
    for a in annotations:
        states, quotes = a.get("states"), a.get("quotes")
        text = corpus.rows[a["doc_id"]]["text"]
        ok = set(a) == {"doc_id", "states", "quotes"} and isinstance(states, list) and \
            isinstance(quotes, list) and len(states) == len(quotes) == width and all(
                s in STATES and isinstance(q, str) and (s != "positive" or q) and
                (not q or q in text) for s, q in zip(states, quotes, strict=True))
        if not ok:
            raise IntegrityError("BLIND_ANNOTATION_INVALID",
                                 f"annotation for {a['doc_id']!r} fails the content checks")
    return annotations


def _claimed(finding: Mapping[str, Any], condition_id: str) -> dict[str, str]:
    assignment = next(a for a in finding["assignments"] if a["condition_id"] == condition_id)
    return {d: state for state in STATES for d in assignment[f"{state}_doc_ids"]}


def evidence_gate(gate: BlindGate, finding: Mapping[str, Any], offset: int, sel: set[str],
                  annotations: list[dict[str, Any]]) -> dict[str, Any]:
    """§8.10-§8.11 for one finding: counters per condition, flags, confirmation, the cap."""
    raised: set[str] = set()
    conditions = []
    for j, definition in enumerate(finding["definitions"]):
        claimed = _claimed(finding, definition["condition_id"])
        c = dict.fromkeys(COUNTERS, 0)
        for a in annotations:
            if a["doc_id"] not in sel:
                continue
            said, actual = claimed[a["doc_id"]], a["states"][offset + j]
            c["checked"] += 1
            c["checker_unknown"] += actual == "unknown"
            c["p"] += said == "positive"
            c["pc"] += said == "positive" and actual == "negative"
            known = said != "unknown" and actual != "unknown"
            c["n"] += known
            c["d"] += known and said != actual
        raised |= {flag for flag, formula in gate.flags.items() if evaluate(formula, c) is True}
        conditions.append({"condition_id": definition["condition_id"], "checked": c["checked"],
                           "known_compared": c["n"], "disagreements": c["d"],
                           "claimed_positive_checked": c["p"],
                           "positive_contradictions": c["pc"],
                           "checker_unknown": c["checker_unknown"]})
    by_id = {a["doc_id"]: a for a in annotations}
    width = len(finding["definitions"])
    support = {e["doc_id"] for e in finding["evidence"] if e["role"] == "supporting"}
    states = [by_id[d]["states"][offset:offset + width] for d in support if d in by_id]
    confirmed = sum(all(s == "positive" for s in row) for row in states)
    contradicted = sum(any(s == "negative" for s in row) for row in states)
    if confirmed < gate.evidence["min_confirmed"]:
        raised.add(gate.evidence["all_contradicted"] if contradicted == len(support) else
                   gate.evidence["otherwise"])
    caps = [gate.cap_for_flag[f] for f in raised] + [gate.precedence[-1]]
    cap = restrictive(gate.precedence, *caps)
    return {"support_cap": cap, "conditions": conditions, "supporting_documents": len(support),
            "blind_supported_documents": confirmed, "blind_contradicted_documents": contradicted,
            "interpretation": gate.interpretations[cap]}


def check_judge_rows(rows: Any, findings: list[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """§9.5 on stored judge rows; IntegrityError JUDGE_OUTPUT_INVALID when they fail."""
    order = [f["finding_id"] for f in findings]
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise IntegrityError("JUDGE_OUTPUT_INVALID", "findings is not a list of assessments")
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        fid = row.get("finding_id")
        earlier = order[:order.index(fid)] if fid in order else []
        dims_ok = all(isinstance(row.get(k), int | float) and not isinstance(row.get(k), bool)
                      and math.isfinite(row[k]) and 0 <= row[k] <= 1
                      for k in ("statistical_validity", "evidence_entailment",
                                "analytical_depth", "calibration"))
        ok = set(row) == JUDGE_KEYS and fid in order and fid not in out and \
            row["support"] in SUPPORT and isinstance(row["task_fulfilled"], bool) and dims_ok \
            and (row["duplicate_of"] is None or row["duplicate_of"] in earlier) and \
            row["reference_match"] is None and isinstance(row["rationale"], str) and \
            bool(row["rationale"].strip())
        if not ok:
            raise IntegrityError("JUDGE_OUTPUT_INVALID", f"the assessment of {fid!r} breaks "
                                 "the output contract")
        out[fid] = row
    if set(out) != set(order):
        raise IntegrityError("JUDGE_OUTPUT_INVALID", "an assessment is missing")
    return out


def score_review(gate: BlindGate, rules: Scoring, review: Mapping[str, Any],
                 findings: list[Mapping[str, Any]], sels: list[set[str]],
                 annotations: list[dict[str, Any]]) -> tuple[float | None, str, list[Any]]:
    """(quality, status, finding records) of a verified review (§8.12, §10)."""
    rows = check_judge_rows(review.get("findings"), findings)
    scored = []
    offset = 0
    for finding, sel in zip(findings, sels, strict=True):
        gate_result = evidence_gate(gate, finding, offset, sel, annotations)
        offset += len(finding["definitions"])
        row = rows[finding["finding_id"]]
        effective = restrictive(gate.precedence, row["support"], gate_result["support_cap"])
        score = finding_score(rules, row, effective)
        scored.append({"finding_id": finding["finding_id"], "score": score,
                       **{k: row[k] for k in sorted(JUDGE_KEYS - {"finding_id"})},
                       "effective_support": effective, "evidence_gate": gate_result})
    quality, status = task_quality([s["score"] for s in scored])
    return quality, status, scored
