"""Records -> units -> rows. Primitives don't know where they are; the runner stamps it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .aggregate import Tally
from .inspections import ERROR, STATUSES, Context, Outcome
from .inspections._base import clip, truthy
from .records import FORMATS, BadRecord, Record
from .spec import Evaluation, Inspection

Row = dict[str, Any]
Sink = Callable[[Row], None]


def records(evaluation: Evaluation, digest: Any = None) -> Iterator[Record | BadRecord]:
    """Stream the records of the evaluation's unit input, hashing its bytes into ``digest``."""
    source = evaluation.inputs[evaluation.unit_input]
    return FORMATS[source.format](source.path, digest)


def inspect(inspection: Inspection, unit: dict[str, Any], ctx: Context) -> Outcome:
    """Run one primitive; anything but a proper Outcome becomes a coded ERROR."""
    try:
        outcome = inspection.primitive.run(unit, inspection.params, ctx)
    except Exception as exc:  # noqa: BLE001 - a crashing primitive must not crash the run
        return Outcome(ERROR, code="INSPECTION_FAILED",
                       message=f"the inspection failed: {type(exc).__name__}: {clip(str(exc))}")
    if outcome is None:
        return Outcome(ERROR, code="NO_OUTCOME", message="the inspection gave no outcome")
    if not isinstance(outcome, Outcome) or outcome.status not in STATUSES:
        return Outcome(ERROR, code="BAD_OUTCOME", message="the inspection gave no valid status")
    return outcome


def _applies(inspection: Inspection, unit: dict[str, Any]) -> bool:
    if inspection.when is None:
        return True
    return truthy(inspection.when.search(unit))


def run(evaluation: Evaluation, items: Iterable[Record | BadRecord], sink: Sink) -> Tally:
    """Evaluate every record into rows (given to ``sink`` in order) and count them."""
    policy, tally = evaluation.policy, Tally()
    ctx = Context(policy.wilson_z)
    source = evaluation.inputs[evaluation.unit_input].spec_path
    for item in items:
        tally.records += 1
        problem = _problem(evaluation, item)
        if problem is not None:
            row = {"input": evaluation.unit_input, "line": item.line, "status": ERROR,
                   "code": problem[0], "message": problem[1], "spec_path": source}
            tally.count_problem(problem[0], {"line": item.line, "code": problem[0],
                                             "message": problem[1]})
            sink(row)
            continue
        assert isinstance(item, Record)
        case_id = evaluation.unit_case.search(item.data)
        unit = {**item.data, "case": evaluation.suite.cases[case_id]}
        unit_id = evaluation.unit_id.search(item.data)
        tally.case_units[case_id] += 1
        outcomes: dict[str, Outcome] = {}
        for category in policy.categories.values():
            for inspection_id in category.inspections:
                inspection = policy.inspections[inspection_id]
                if inspection_id not in outcomes:
                    if not _applies(inspection, unit):
                        continue
                    outcomes[inspection_id] = inspect(inspection, unit, ctx)
                outcome = outcomes[inspection_id]
                tally.count_row(category.name, inspection_id, outcome.status)
                sink(_row(evaluation, item, unit_id, case_id, category.name, inspection,
                          outcome))
    return tally


def _problem(evaluation: Evaluation, item: Record | BadRecord) -> tuple[str, str] | None:
    if isinstance(item, BadRecord):
        return item.code, item.message
    if "case" in item.data:
        return "RESERVED_FIELD", "'case' is reserved: the engine binds the suite case there"
    case_id = evaluation.unit_case.search(item.data)
    if case_id is None:
        return "MISSING_CASE_ID", "the record names no case"
    if not isinstance(case_id, str) or case_id not in evaluation.suite.cases:
        return "UNKNOWN_CASE", f"case {clip(case_id)!r} is not in the suite"
    return None


def _row(evaluation: Evaluation, item: Record, unit_id: Any, case_id: str, category: str,
         inspection: Inspection, outcome: Outcome) -> Row:
    row: Row = {
        "unit": unit_id if isinstance(unit_id, str | int) and not isinstance(unit_id, bool)
        else f"{evaluation.unit_input}:{item.line}",
        "case": case_id, "input": evaluation.unit_input, "line": item.line,
        "category": category, "inspection": inspection.id, "type": inspection.type,
        "status": outcome.status, "spec_path": inspection.spec_path,
    }
    if outcome.code:
        row["code"] = outcome.code
    if outcome.message:
        row["message"] = outcome.message
    if outcome.expected is not None:
        row["expected"] = outcome.expected
    if outcome.observed is not None:
        row["observed"] = outcome.observed
    return row
