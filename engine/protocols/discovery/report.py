"""The finding-quality-discovery report (§11.3, §11.4) from the tasks' score records."""

from __future__ import annotations

import json
from typing import Any

from engine.canonical import digest
from engine.errors import EngineError
from engine.protocols.discovery.scoring import report as summarise
from engine.protocols.discovery.task import Package, reference_sha256


class ReviewIntegrityError(EngineError):
    """Stored reviews that cannot be trusted: the evaluation stops and writes nothing."""

    code = "STALE_REVIEW"


def build(pkg: Package, tasks: list[dict[str, Any]], records: dict[str, dict[str, Any]],
          reviewer: dict[str, Any] | None = None,
          run: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON report, members in the protocol's order; raises on any untrusted review."""
    d = pkg.discovery
    profiles = sorted({str(t.get("difficulty")) for t in tasks})
    if tasks and profiles != [d.difficulty]:  # no usable task: the run says why
        raise ReviewIntegrityError(f"tasks of profile(s) {profiles}; this protocol scores "
                                   f"{d.difficulty!r} only", "PROFILE_MISMATCH")
    broken = [(t["task_id"], records[t["task_id"]]["integrity"]) for t in tasks
              if "integrity" in records.get(t["task_id"], {})]
    if broken:
        listed = "; ".join(f"{task_id}: {i['code']} ({i['message']})" for task_id, i in broken)
        raise ReviewIntegrityError(f"{len(broken)} review(s) cannot be trusted, so nothing was "
                                   f"scored: {listed}", broken[0][1]["code"])
    unscored = [t["task_id"] for t in tasks if t["task_id"] not in records]
    if unscored:  # the inspection failed on it (its row is an ERROR): nothing to report
        raise ReviewIntegrityError(f"{len(unscored)} task(s) could not be scored: "
                                   f"{', '.join(unscored)}", "TASK_NOT_SCORED")
    ordered = [records[t["task_id"]] for t in tasks]
    mixed = sorted({r["reviewer_method"] for r in ordered if r.get("reviewer_method")})
    if len(mixed) > 1:
        raise ReviewIntegrityError(f"reviews from different reviewer methods: {mixed}",
                                   "REVIEWER_METHOD_MIX")
    out = summarise(d.scoring, ordered, tasks)
    return {**out, "task_scores": ordered, "difficulty": d.difficulty,
            "scoring_version": d.version, "benchmark_version": pkg.benchmark_version,
            "tasks_sha256": digest(tasks),
            "reference_sha256": reference_sha256(pkg.benchmark_version, tasks),
            "reviewer_methods": mixed, "run": run, "reviewer": reviewer}


def _num(value: Any) -> str:
    return "null" if value is None else json.dumps(value)


def _reviewer(reviewer: dict[str, Any] | None) -> list[str]:
    if reviewer is None:
        return ["Reviewer: none (no review directory)", ""]
    return [f"Reviewer: `{reviewer['base_url']} / {reviewer['model']}`; input budget "
            f"{reviewer['max_input_chars']} characters; audit size "
            f"{reviewer['audit_documents']} documents; audit seed "
            f"{_SEED_ORIGIN.get(str(reviewer.get('audit_seed_origin')), 'not used')}", ""]


_SEED_ORIGIN = {"derived": "derived by the review job from the submissions",
                "pinned": "pinned by audit.yaml for these submissions"}


def markdown(pkg: Package, report: dict[str, Any]) -> str:
    """The Markdown report of §11.4."""
    metrics = [k for k, _ in pkg.discovery.scoring.summary]
    lines = ["# finding-quality-discovery report", "",
             f"Tasks SHA-256: `{report['tasks_sha256']}`", "",
             f"Difficulty: {report['difficulty']}", "", *_reviewer(report.get("reviewer")),
             "| Metric | Value |", "|---|---|"]
    lines += [f"| {m} | {_num(report[m])} |" for m in metrics]
    lines += ["", pkg.discovery.scoring.disclaimer, ""]
    for group in ("by_kind", "by_source"):
        lines += [f"## {group.replace('_', ' ')}", "",
                  "| name | scored / tasks | quality_mean | reference_coverage_mean |",
                  "|---|---|---|---|"]
        for name, block in report[group].items():
            lines.append(f"| {name} | {block['scored_tasks']} / {block['tasks']} | "
                         f"{_num(block['quality_mean'])} | "
                         f"{_num(block['reference_coverage_mean'])} |")
        lines.append("")
    caveats = pkg.discovery.scoring.caveats
    if caveats:  # after the layout §11.4 fixes, which stays as it is
        lines += ["## caveats", "", *(f"- {c}" for c in caveats), ""]
    return "\n".join(lines)
