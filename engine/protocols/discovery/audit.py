"""Semantic audit sampling (discovery protocol §7): deterministic given the seed."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any


class AuditError(ValueError):
    """A sample that cannot be drawn: ``code`` is AUDIT_BUDGET_RANGE or AUDIT_EVIDENCE_BUDGET."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def rank(seed: str, key: str, doc_id: str) -> bytes:
    """SHA-256 of seed NUL key NUL doc_id (§7.3); compared as unsigned byte strings."""
    return hashlib.sha256(f"{seed}\u0000{key}\u0000{doc_id}".encode()).digest()


def cells(findings: list[Mapping[str, Any]], states: list[str]) -> list[tuple[str, list[str]]]:
    """Non-empty (finding/condition/state) cells, in finding, assignment and state order."""
    out = []
    for finding in findings:
        for assignment in finding["assignments"]:
            key = f"{finding['finding_id']}/{assignment['condition_id']}"
            for state in states:
                ids = assignment[f"{state}_doc_ids"]
                if ids:
                    out.append((f"{key}/{state}", list(ids)))
    return out


def sample(seed: str, budget: int, task_id: str, corpus_ids: list[str],
           findings: list[Mapping[str, Any]], params: Mapping[str, Any]) -> dict[str, Any]:
    """The audit sample in corpus order, with the numbers behind it."""
    lo, hi = params["budget_range"]
    if not isinstance(budget, int) or isinstance(budget, bool) or not lo <= budget <= hi:
        raise AuditError("AUDIT_BUDGET_RANGE", f"audit budget {budget!r} is not an integer in "
                         f"[{lo}, {hi}]")
    evidence = {e["doc_id"] for f in findings for e in f["evidence"]}
    cap = budget * params["evidence_cap_numerator"] // params["evidence_cap_denominator"]
    if len(evidence) > cap:
        raise AuditError("AUDIT_EVIDENCE_BUDGET", f"{len(evidence)} evidence documents exceed "
                         f"the cap {cap}")
    found = cells(findings, params["cell_states"])
    quota = max(params["quota_floor"],
                (budget - len(evidence)) // (params["quota_divisor"] * max(1, len(found))))
    chosen = set(evidence)
    for name, ids in found:
        ranked = sorted((rank(seed, name, d), d) for d in ids)
        chosen.update(d for _, d in ranked[:quota])
    rest = sorted((d for d in corpus_ids if d not in chosen), key=lambda d: rank(seed, task_id, d))
    chosen.update(rest[:max(0, budget - len(chosen))])
    order = [d for d in corpus_ids if d in chosen]
    return {"document_ids": order, "quota": quota, "cells": len(found),
            "evidence_documents": len(evidence)}
