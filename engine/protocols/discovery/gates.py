"""The local gates of finding-quality-discovery (§5): deterministic, exhaustive, first error.

Gate order, codes and messages come from ``gates.yaml``; parameters from ``protocol.yaml``;
statistics from ``statistics.yaml``; what each task kind is made of from ``kinds.yaml``.
The checks are the rows of ``CHECKS`` (``checks`` and ``checks_content``); the package
loader has already checked every gate against its row, so a lookup here cannot miss.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any

from engine.protocols.discovery import checks, checks_content
from engine.protocols.discovery.checks import Check, Failure, Finding, matches
from engine.protocols.discovery.corpus import Corpus, meta
from engine.protocols.discovery.stats import KindStatistics

CHECKS: dict[str, Check] = {**checks.TABLE, **checks_content.TABLE}
PHASES = ("submission", "A", "B")  # phase A runs on every finding before phase B

__all__ = ["CHECKS", "PHASES", "Failure", "Finding", "Gates", "Protocol"]


@dataclass
class Protocol:
    """The compiled spec data the gates run on."""

    gates: list[dict[str, Any]]
    params: dict[str, Any]
    statistics: dict[str, KindStatistics]
    key_order: dict[str, list[str]]
    robustness: dict[str, Any]
    tolerance: float
    schema: Any
    message_limit: int
    kinds: dict[str, dict[str, Any]]  # kinds.yaml: how each task kind is built


class _Safe(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return f"{{{key}}}"


class Gates:
    """Runs the local gates of one submission for one task."""

    def __init__(self, protocol: Protocol, task: dict[str, Any], corpus: Corpus) -> None:
        self.p, self.task, self.corpus = protocol, task, corpus
        self.params = protocol.params
        self.kind = task["kind"]
        self.rules = protocol.kinds[self.kind]  # a task of another kind is refused earlier
        self.ids = set(corpus.ids)
        self.seen_ids: set[str] = set()

    def run(self, submission: Any) -> dict[str, Any] | None:
        """The first error object, or None when the submission is valid."""
        for gate in self._gates("submission"):
            failure = self.check(gate, submission)
            if failure:
                return self._error(gate, failure, None)
        findings = [Finding(i, f) for i, f in enumerate(submission["findings"])]
        for phase in PHASES[1:]:
            for finding in findings:
                for gate in self._gates(phase):
                    failure = self.check(gate, finding)
                    if failure:
                        return self._error(gate, failure, finding)
        return None

    def selection(self, finding: dict[str, Any]) -> set[str]:
        """The selected population of a finding that passed the gates."""
        rules = finding["population"]["filters"]
        return {d for d in self.corpus.ids
                if all(matches(meta(self.corpus.rows[d], r["field"]), r) for r in rules)}

    def check(self, gate: dict[str, Any], subject: Any) -> Failure:
        """One gate's check on a submission or a finding."""
        return CHECKS[gate["check"]].fn(self, subject)

    def _gates(self, phase: str) -> list[dict[str, Any]]:
        return [g for g in self.p.gates if g["phase"] == phase and
                (not g.get("kinds") or self.kind in g["kinds"])]

    def _error(self, gate: dict[str, Any], failure: tuple[str, dict[str, Any]],
               finding: Finding | None) -> dict[str, Any]:
        part, details = failure
        code = gate["codes"][part] if "codes" in gate else gate["code"]
        message = string.Formatter().vformat(gate["message"], (), _Safe(details))
        error: dict[str, Any] = {"code": code, "message": message[:self.p.message_limit]}
        if finding is not None:
            error["finding_index"] = finding.index
            if isinstance(finding.data.get("finding_id"), str):
                error["finding_id"] = finding.data["finding_id"]
        for key in ("key", "condition_id", "evidence_index", "rule_index"):
            if key in details:
                error[key] = details[key]
        return error
