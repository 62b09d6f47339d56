"""Records -> units -> rows. Primitives don't know where they are; the runner stamps it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from . import _findings
from ._spill import IdSet
from .aggregate import WAIVED, Tally
from .assevra import INVALID
from .inspections import ABSTAIN, ERROR, FAIL, PASS, SKIPPED, STATUSES, Context, Outcome
from .inspections._base import SelectorFailed, clip, search, truthy
from .records import FORMATS, VALIDATORS, BadRecord, Record
from .spec import Evaluation, Inspection

Row = dict[str, Any]
JUDGED = frozenset({"judge", "injection"})  # types that may ask the judge
NOT_APPLICABLE = "NOT_APPLICABLE"  # a SKIPPED outcome with this code leaves no row
Sink = Callable[[Row], None]


def records(evaluation: Evaluation, digest: Any = None) -> Iterator[Record | BadRecord]:
    """Stream the records of the evaluation's unit input, hashing its bytes into ``digest``."""
    source = evaluation.inputs[evaluation.unit_input]
    return FORMATS[source.format](source.path, digest)


def validator(evaluation: Evaluation) -> Callable[[Any, Any, Any], Any] | None:
    """The row validator of the unit input's format, when the policy validates rows."""
    source = evaluation.inputs[evaluation.unit_input]
    return VALIDATORS.get(source.format) if evaluation.policy.validate else None


def inspect(inspection: Inspection, unit: dict[str, Any], ctx: Context,
            inspections: dict[str, Inspection] | None = None) -> Outcome:
    """Run one primitive; anything but a proper Outcome becomes a coded ERROR. A judged
    inspection with a ``fallback`` hands the row to that inspection when no judge is set."""
    fallback = inspection.params.get("fallback") if inspection.type == "judge" else None
    if fallback and ctx.judge is None and inspections:
        inspection = inspections[fallback]
    try:
        outcome = inspection.primitive.run(unit, inspection.params, ctx)
    except SelectorFailed as exc:
        return Outcome(ERROR, code=exc.code, message=str(exc))
    except Exception as exc:  # noqa: BLE001 - a crashing primitive must not crash the run
        return Outcome(ERROR, code="INSPECTION_FAILED",
                       message=f"the inspection failed: {type(exc).__name__}: {clip(str(exc))}")
    if outcome is None:
        return Outcome(ERROR, code="NO_OUTCOME", message="the inspection gave no outcome")
    if not isinstance(outcome, Outcome) or outcome.status not in STATUSES:
        return Outcome(ERROR, code="BAD_OUTCOME", message="the inspection gave no valid status")
    return outcome


def _applies(inspection: Inspection, unit: dict[str, Any]) -> bool | Outcome:
    """Whether ``when:`` selects this unit; an ERROR outcome when it cannot say."""
    if inspection.when is None:
        return True
    try:
        return truthy(search(inspection.when, unit))
    except SelectorFailed as exc:
        return Outcome(ERROR, code=exc.code, message=str(exc))


MEASURED = frozenset({"agent_output", "agent_actions", "tool_calls", "observed_state", "usage",
                      "cost_usd", "latency_ms", "duration_ms", "elapsed_ms", "latency_s",
                      "trace_id", "span_id", "trial_id"})


def suite_part(row: dict[str, Any]) -> dict[str, Any]:
    """A record's inputs and assertions: measured keys and keys starting with '_' removed."""
    return {k: v for k, v in row.items() if k not in MEASURED and not k.startswith("_")}


class _Runner:
    """State of one pass over the records."""

    def __init__(self, evaluation: Evaluation, sink: Sink, judge: Any = None,
                 tally: Tally | None = None, seen: Any = None) -> None:
        self.evaluation, self.policy, self.sink = evaluation, evaluation.policy, sink
        self.tally = tally if tally is not None else Tally()
        self.ctx = Context(self.policy.wilson_z, self.policy.budgets, judge,
                           {n: i.path for n, i in evaluation.inputs.items()})
        self.collecting = judge is not None and judge.collecting
        source = evaluation.inputs[evaluation.unit_input]
        self.source = source.spec_path
        self.validator = validator(evaluation)
        self.seen: Any = seen if seen is not None else IdSet()  # validated row ids
        self.waivers = [w for w in self.policy.waivers if evaluation.as_of <= w["expires"]]

    def problem(self, line: int, code: str, message: str, **extra: Any) -> None:
        row = {"input": self.evaluation.unit_input, "line": line, "status": ERROR,
               "code": code, "message": message, "spec_path": self.source, **extra}
        self.tally.count_problem(code, {"line": line, "code": code, "message": message})
        self.sink(row)

    def validate(self, item: Record) -> bool:
        """Classify the record; False when it is INVALID and must not be scored."""
        assert self.validator is not None
        verdict = self.validator(item.data, self.seen, self.policy.budgets)
        dimension = item.data.get("dimension")
        dimension = dimension if isinstance(dimension, str) else ""
        self.tally.validation[dimension, verdict.klass] += 1
        if truthy(item.data.get("_capture_error")):
            self.tally.capture_errors += 1
            verdict.add("error", "CAPTURE_INCOMPLETE", "_capture_error",
                        "the capture of this run failed")
        if verdict.messages:
            self.tally.validation_rows.append({
                "line": item.line, "id": clip(item.data.get("id")), "dimension": dimension,
                "class": verdict.klass, "messages": verdict.messages})
        if verdict.klass == INVALID:
            self.problem(item.line, verdict.code, verdict.messages[0]["message"],
                         unit=clip(item.data.get("id")))
            return False
        return True

    def record(self, item: Record | BadRecord) -> None:
        self.tally.records += 1
        if isinstance(item, BadRecord):
            if self.validator is not None:
                self.tally.validation["", "INVALID"] += 1
                self.tally.validation_rows.append({"line": item.line, "id": None,
                                                   "dimension": "", "class": "INVALID",
                                                   "messages": [{"level": "error",
                                                                 "code": item.code,
                                                                 "field": "",
                                                                 "message": item.message,
                                                                 "hint": ""}]})
            self.problem(item.line, item.code, item.message)
            return
        suite = self.evaluation.suite
        if suite.derived:
            self.tally.suite_rows.add(str(item.data.get("id", "")), suite_part(item.data))
        if self.validator is not None and not self.validate(item):
            return
        try:  # a selector that cannot apply to this record makes it a record problem
            found = _problem(self.evaluation, item)
            if found is None:
                case_id = search(self.evaluation.unit_case, item.data)
                unit = item.data if suite.derived else {**item.data, "case": suite.cases[case_id]}
                unit_id = search(self.evaluation.unit_id, item.data)
                control = self.policy.controls is not None and \
                    truthy(search(self.policy.controls, unit))
        except SelectorFailed as exc:
            found = exc.code, str(exc)
        if found is not None:
            self.problem(item.line, *found)
            return
        if not suite.derived:  # runs per suite case (a derived suite has no list to check)
            self.tally.case_units[str(case_id)] += 1
        outcomes: dict[str, Outcome] = {}
        for category in self.policy.categories.values():
            for inspection_id in category.inspections:
                inspection = self.policy.inspections[inspection_id]
                if inspection_id not in outcomes:
                    applies = _applies(inspection, unit)
                    if applies is False or (self.collecting and inspection.type not in JUDGED):
                        continue
                    outcomes[inspection_id] = applies if isinstance(applies, Outcome) else \
                        inspect(inspection, unit, self.ctx, self.policy.inspections)
                outcome = outcomes[inspection_id]
                if outcome.record is not None and str(case_id) not in self.tally.unit_records:
                    self.tally.unit_records[str(case_id)] = outcome.record
                if outcome.status == SKIPPED and outcome.code == NOT_APPLICABLE:
                    continue  # the inspection has nothing to say about this unit: no row
                row = _row(self.evaluation, item, unit_id, str(case_id), category.name,
                           inspection, outcome)
                if control:
                    self.control(row, outcome)
                    continue
                waiver = self.waiver(category.name, str(case_id), unit) \
                    if outcome.status == FAIL and self.waivers else None
                if waiver is not None:
                    row["waived_by"] = waiver
                    self.tally.waived[waiver] += 1
                    self.tally.count_row(category.name, inspection_id, WAIVED)
                    self.sink(row)
                    continue
                self.tally.count_row(category.name, inspection_id, outcome.status, outcome.code)
                self.tally.count_case(category.name, str(case_id), outcome.status)
                measure = inspection.primitive.measure
                if measure and isinstance(outcome.observed, int | float) and \
                        not isinstance(outcome.observed, bool):
                    self.tally.measures.setdefault(category.name, (measure, []))[1].append(
                        outcome.observed)
                if outcome.status in (FAIL, ERROR, ABSTAIN):
                    _findings.add(self.tally.findings, category.name, str(case_id), row,
                                  _trace(self.evaluation, item))
                self.sink(row)

    def waiver(self, category: str, case: str, unit: dict[str, Any]) -> str | None:
        """The id of the first active waiver whose whole scope matches this FAIL row."""
        tags = unit.get("tags") or (unit.get("case") or {}).get("tags") or []
        for w in self.waivers:
            scope = w["scope"]
            if ("categories" not in scope or category in scope["categories"]) and \
                    ("cases" not in scope or case in scope["cases"]) and \
                    ("tags" not in scope or set(scope["tags"]) & set(tags)):
                return str(w["id"])
        return None

    def control(self, row: Row, outcome: Outcome) -> None:
        """A known-bad record: it PASSes when the inspection gives the expected verdict."""
        expect = self.policy.control_expect
        status = PASS if outcome.status == expect else (
            FAIL if outcome.status in (PASS, FAIL) else outcome.status)
        row = {**row, "control": True, "inspection_status": row["status"], "status": status}
        self.tally.controls.add(status)
        self.tally.control_rows.append({k: row[k] for k in (
            "unit", "case", "category", "inspection", "status", "inspection_status")})
        self.sink(row)


def run(evaluation: Evaluation, items: Iterable[Record | BadRecord], sink: Sink,
        judge: Any = None, tally: Tally | None = None, seen: Any = None) -> Tally:
    """Evaluate every record into rows (given to ``sink`` in order) and count them. With a
    judge runtime that is still collecting, only judged inspections run, to gather prompts.

    A shard passes its own ``tally`` (to spool its suite rows) and ``seen``, the ids validated
    so far (``shards.SeenIds`` also answers for ids earlier shards validated); the set is
    filled with this pass's ids as it goes."""
    runner = _Runner(evaluation, sink, judge, tally, seen)
    try:
        for item in items:
            runner.record(item)
    finally:
        if seen is None:
            runner.seen.close()
    return runner.tally


def _problem(evaluation: Evaluation, item: Record) -> tuple[str, str] | None:
    if evaluation.suite.derived:
        return None
    if "case" in item.data:
        return "RESERVED_FIELD", "'case' is reserved: the engine binds the suite case there"
    case_id = search(evaluation.unit_case, item.data)
    if case_id is None:
        return "MISSING_CASE_ID", "the record names no case"
    if not isinstance(case_id, str) or case_id not in evaluation.suite.cases:
        return "UNKNOWN_CASE", f"case {clip(case_id)!r} is not in the suite"
    return None


def _trace(evaluation: Evaluation, item: Record) -> Any:
    """The record's trace id for findings (display only: none when the selector fails)."""
    try:
        return search(evaluation.unit_trace, item.data)
    except SelectorFailed:
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
    mask = evaluation.policy.mask
    if outcome.code:
        row["code"] = outcome.code
    if outcome.message:
        row["message"] = _masked(outcome.message, mask)
    if outcome.expected is not None:
        row["expected"] = _masked(outcome.expected, mask)
    if outcome.observed is not None:
        row["observed"] = _masked(outcome.observed, mask)
    return row


def _masked(value: Any, mask: Any) -> Any:
    """Evidence with every value the policy's detector finds written as [REDACTED]."""
    if mask is None:
        return value
    if isinstance(value, str):
        return mask.mask(value)
    if isinstance(value, list):
        return [_masked(v, mask) for v in value]
    if isinstance(value, dict):
        return {k: _masked(v, mask) for k, v in value.items()}
    return value
