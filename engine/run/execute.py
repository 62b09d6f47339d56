"""One evaluation, end to end: stream, inspect, aggregate, decide, seal, commit."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from engine import reports
from engine.canonical import digest
from engine.decide import baseline as history
from engine.decide.decision import decide, with_comparison
from engine.evidence import scorecard as evidence
from engine.evidence import signing
from engine.judge import Runtime
from engine.judge._replay import bind as bind_replay
from engine.reports import agentcard
from engine.run import rows as runner
from engine.run import shards
from engine.spec.evaluation import Evaluation, display


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
    judge_stats: dict[str, int] = field(default_factory=dict)


def execute(evaluation: Evaluation, dest: Path, key: Ed25519PrivateKey | None,
            baseline: Path | None = None, trusted: list[Ed25519PublicKey] | None = None,
            cache: Path | None = None,
            progress: Callable[[int, int], None] | None = None,
            executor: shards.Executor | None = None) -> Result:
    """Run ``evaluation`` and leave its whole evidence in ``dest``, or nothing at all.

    ``baseline`` and ``trusted`` add to the Evaluation's history settings (command line);
    ``executor`` scores the records (default: in this process).
    """
    staging = evidence.Staging(dest)
    tally = None
    try:
        keys = [signing.load_public(k) for k in evaluation.trusted_keys] + (trusted or [])
        runtime = _judge_runtime(evaluation, cache, progress, keys)
        if runtime is not None:  # first pass: gather the prompts, then answer them all
            runner.run(evaluation, runner.records(evaluation), lambda row: None, runtime)
            runtime.answer_all()
        tally, unit_sha, rows_sha = (executor or shards.local)(
            evaluation, runtime, staging.path / "rows.jsonl")
        inputs: dict[str, dict[str, Any]] = {}
        for name, source in sorted(evaluation.inputs.items()):
            sha = unit_sha if name == evaluation.unit_input else \
                evidence.sha256_path(source.path)
            inputs[name] = {"format": source.format, "sha256": sha}
        inputs[evaluation.unit_input]["records"] = tally.records
        judge = None
        if runtime is not None:
            lines = runtime.lines()
            staging.write("judgements.jsonl", b"".join(lines))
            judge = judge_block(evaluation, runtime, hashlib.sha256(b"".join(lines)).hexdigest())
        report = _protocol_report(evaluation, tally)
        outcome = decide(evaluation, tally, judge)
        baseline = baseline or evaluation.baseline
        if baseline is not None or keys or evaluation.policy.comparison_required:
            current = {"categories": outcome.categories, "decision": outcome.decision,
                       "suite_sha256": evidence.suite_digest(evaluation, tally),
                       "policy_sha256": evaluation.policy.sha256,
                       "judge_sha256": judge["judge_sha256"] if judge else None}
            block = history.compare(current, baseline, keys, staging.path / "rows.jsonl",
                                    evaluation.policy.comparison_rules,
                                    evaluation.policy.wilson_z)
            outcome = with_comparison(evaluation, outcome, block)
        agent = agentcard.card(evaluation.policy.catalogues, evaluation.policy.card_mappings,
                               outcome, key is not None) if evaluation.policy.catalogues else None
        card = evidence.scorecard(evaluation, tally, outcome, rows_sha, inputs, agent,
                                  report[0] if report else None)
        staging.write("findings.jsonl", evidence.findings_jsonl(outcome.findings))
        subjects = {"rows.jsonl": rows_sha, "findings.jsonl": card["findings_sha256"]}
        if report is not None:
            for name, data in (("report.json", report[1]), ("report.md", report[2])):
                staging.write(name, data)
                subjects[name] = hashlib.sha256(data).hexdigest()
        if judge is not None:
            subjects["judgements.jsonl"] = judge["judgements_sha256"]
        if outcome.validation is not None:
            checked = evidence.canonical(
                evidence.validation_report(evaluation, tally, outcome.validation))
            staging.write("validation.json", checked)
            subjects["validation.json"] = hashlib.sha256(checked).hexdigest()
        for name, data in reports.project(card).items():  # projections of the scorecard
            staging.write(name, data)
            subjects[name] = hashlib.sha256(data).hexdigest()
        subjects |= {f"inputs/{name}": meta["sha256"] for name, meta in inputs.items()}
        digest = evidence.seal(staging, card, key, subjects)
        out = staging.commit()
    except BaseException:
        staging.discard()
        raise
    finally:
        if tally is not None:
            tally.close()  # suite rows and case counts spilled to temporary files
    overall = card["overall"]["score"] if card["overall"] else None
    where = display(evaluation.inputs[evaluation.unit_input].path)
    located = [f"{where}:{s['line']}: {s['code']}: {s['message']}"
               for s in card["coverage"]["record_problem_samples"]]
    stats = dict(runtime.stats) if runtime is not None else {}
    return Result(evaluation.name, card["decision"], card["exit_code"], out, digest,
                  card["reasons"], overall, located, stats)


def _protocol_report(evaluation: Evaluation,
                     tally: Any) -> tuple[dict[str, Any], bytes, bytes] | None:
    """The protocol report a policy asks for: (value, JSON bytes, Markdown bytes)."""
    if evaluation.policy.report != "finding-quality-discovery":
        return None
    from engine.protocols.discovery import usable_tasks
    from engine.protocols.discovery.report import build, markdown

    package = next(i.params["package"] for i in evaluation.policy.inspections.values()
                   if i.type.startswith("discovery_"))
    tasks = usable_tasks(evaluation.inputs[evaluation.unit_input].path)
    value = build(package, tasks, tally.unit_records)
    return (value, (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode(),
            markdown(package, value).encode())


def _judge_runtime(evaluation: Evaluation, cache: Path | None,
                   progress: Callable[[int, int], None] | None,
                   keys: list[Ed25519PublicKey]) -> Runtime | None:
    """A judge runtime when the Evaluation configures a judge and the policy asks one; a
    replay only from a scorecard that verifies against a trusted key."""
    rubrics = shards.rubrics(evaluation)
    if evaluation.judge.provider == "none" or not rubrics:
        return None
    config = replace(evaluation.judge, cache=cache)
    if config.replay is not None:
        config = bind_replay(config, keys)
    return Runtime(config, rubrics, progress=progress)


def judge_block(evaluation: Evaluation, runtime: Runtime, judgements_sha: str) -> dict[str, Any]:
    """The scorecard's record of the judge: identity (hashed), endpoint and replay source
    (recorded only, so a replay stays comparable with the run it replays)."""
    config = runtime.config
    identity = config.identity(runtime.rubrics)
    return {"identity": identity, "judge_sha256": digest(identity),
            "provider": "replay" if config.replayed_from else config.provider,
            "replayed_from": config.replayed_from,
            "base_url": runtime.config.base_url or None,
            "judgements": len(runtime.requests), "errors": runtime.stats["errors"],
            "judgements_sha256": judgements_sha}
