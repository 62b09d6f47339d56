"""finding-quality-discovery as inspections: one unit per task (the tasks input).

``discovery_submission`` is PASS for a valid submission (answered, abstained or awaiting
review) and FAIL for an invalid or missing one; ``discovery_review`` is PASS for a scored
task, ERROR while a review is pending or unresolved, and SKIPPED where no review applies.
Both share one evaluation of the task (``engine.discovery``), whose score record is kept
for the protocol report.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.inspections._base import (
    ERROR,
    FAIL,
    PASS,
    SKIPPED,
    Context,
    Outcome,
    Primitive,
    expectation,
    observation,
    params_schema,
)

VALID = frozenset({"abstained", "pending_review", "unresolved", "scored"})


def _record(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Any:
    from engine.protocols.discovery.task import evaluate_task

    key = ("discovery", unit["task_id"])
    if key not in ctx.memo:
        tasks = ctx.memo.setdefault("discovery-tasks", _tasks(ctx, params))
        reviews = ctx.inputs.get(params["reviews"]) if params.get("reviews") else None
        ctx.memo[key] = evaluate_task(params["package"], dict(unit), tasks,
                                      Path(ctx.inputs[params["corpora"]]),
                                      Path(ctx.inputs[params["submissions"]]),
                                      Path(reviews) if reviews else None)
    return ctx.memo[key]


def _tasks(ctx: Context, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    from engine.protocols.discovery import usable_tasks

    return usable_tasks(Path(ctx.inputs[params["tasks"]]))


def submission(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """The task's submission is valid (answered, abstained, or awaiting its review)."""
    record = _record(unit, params, ctx)
    status = record["status"]
    error = record.get("error")
    return Outcome(PASS if status in VALID else FAIL, {"status": sorted(VALID)},
                   {"status": status, "error": error},
                   f"{error['code']}: {error['message']}" if error else status,
                   error["code"] if error else "", record)


def review(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """The task is scored from a verified review."""
    record = _record(unit, params, ctx)
    status = record["status"]
    observed = {"status": status, "quality": record["quality"]}
    if status == "scored":
        return Outcome(PASS, {"status": "scored"}, observed, record=record)
    if status in ("pending_review", "unresolved"):
        code = record.get("integrity", {}).get("code") or status.upper()
        return Outcome(ERROR, {"status": "scored"}, observed,
                       record.get("integrity", {}).get("message", status), code, record)
    # abstained, invalid and missing tasks are never reviewed: no row (see runner)
    return Outcome(SKIPPED, observed=observed, code="NOT_APPLICABLE", message=status,
                   record=record)


_PARAMS = params_schema({
    # input names (policy literals): governance's task inventory and corpora, the
    # evaluated party's submissions and the reviews of them
    "package": expectation({"type": "string", "minLength": 1, "x-discovery": True,
                            "description": "the protocol's spec package folder, relative to "
                                           "the policy"}),
    "tasks": expectation({"type": "string", "default": "tasks",
                          "description": "input name of tasks.json"}),
    "corpora": expectation({"type": "string", "default": "corpora",
                            "description": "input name"}),
    "submissions": observation({"type": "string", "default": "submissions",
                                "description": "input name"}),
    "reviews": observation({"type": "string", "default": "reviews",
                            "description": "input name (optional)"}),
}, ["package"])

TABLE = {
    "discovery_submission": Primitive(submission, _PARAMS,
                                      "the task's submission passes the local gates"),
    "discovery_review": Primitive(review, _PARAMS, "the task is scored from a verified review"),
}
