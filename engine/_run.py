"""One evaluation, end to end: stream, inspect, aggregate, decide, seal, commit."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from . import evidence, history, runner, signing
from .decision import decide, with_comparison
from .spec import Evaluation, display


@dataclass(frozen=True)
class Result:
    """What a finished run reports back."""

    evaluation: str
    decision: str
    exit_code: int
    out: Path
    scorecard_sha256: str
    reasons: list[dict[str, Any]]
    overall: float | None
    record_problems: list[str]


def execute(evaluation: Evaluation, dest: Path, key: Ed25519PrivateKey | None,
            baseline: Path | None = None, trusted: list[Ed25519PublicKey] | None = None
            ) -> Result:
    """Run ``evaluation`` and leave its whole evidence in ``dest``, or nothing at all.

    ``baseline`` and ``trusted`` add to the Evaluation's history settings (command line).
    """
    staging = evidence.Staging(dest)
    try:
        unit_digest = hashlib.sha256()
        with (staging.path / "rows.jsonl").open("wb") as handle:
            writer = evidence.RowWriter(handle)
            tally = runner.run(evaluation, runner.records(evaluation, unit_digest), writer)
        inputs: dict[str, dict[str, Any]] = {}
        for name, source in sorted(evaluation.inputs.items()):
            sha = unit_digest.hexdigest() if name == evaluation.unit_input else \
                evidence.sha256_file(source.path)
            inputs[name] = {"format": source.format, "sha256": sha}
        inputs[evaluation.unit_input]["records"] = tally.records
        outcome = decide(evaluation, tally)
        baseline = baseline or evaluation.baseline
        keys = [signing.load_public(k) for k in evaluation.trusted_keys] + (trusted or [])
        if baseline is not None or keys or evaluation.policy.comparison_required:
            current = {"categories": outcome["categories"], "decision": outcome["decision"],
                       "suite_sha256": evidence.suite_digest(evaluation, tally),
                       "policy_sha256": evaluation.policy.sha256, "judge_sha256": None}
            block = history.compare(current, baseline, keys, staging.path / "rows.jsonl",
                                    evaluation.policy.comparison_rules,
                                    evaluation.policy.wilson_z)
            outcome = with_comparison(evaluation, outcome, block)
        rows_sha = writer.hash.hexdigest()
        card = evidence.scorecard(evaluation, tally, outcome, rows_sha, inputs)
        subjects = {"rows.jsonl": rows_sha}
        if outcome["validation"] is not None:
            report = evidence.canonical(
                evidence.validation_report(evaluation, tally, outcome["validation"]))
            staging.write("validation.json", report)
            subjects["validation.json"] = hashlib.sha256(report).hexdigest()
        subjects |= {f"inputs/{name}": meta["sha256"] for name, meta in inputs.items()}
        digest = evidence.seal(staging, card, key, subjects)
        out = staging.commit()
    except BaseException:
        staging.discard()
        raise
    overall = card["overall"]["score"] if card["overall"] else None
    where = display(evaluation.inputs[evaluation.unit_input].path)
    located = [f"{where}:{s['line']}: {s['code']}: {s['message']}"
               for s in card["coverage"]["record_problem_samples"]]
    return Result(evaluation.name, card["decision"], card["exit_code"], out, digest,
                  card["reasons"], overall, located)
