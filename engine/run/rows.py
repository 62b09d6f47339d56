"""Records -> units -> rows. Primitives don't know where they are; the runner stamps it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from engine.decide import findings as _findings
from engine.decide.aggregate import WAIVED, Tally
from engine.decide.spill import IdSet
from engine.inspections import ABSTAIN, ERROR, FAIL, PASS, SKIPPED, STATUSES, Context, Outcome
from engine.inspections._base import SelectorFailed, clip, search, truthy
from engine.records import formats
from engine.records.formats import INVALID, BadRecord, Record
from engine.records.masking import evidence, shown
from engine.run.compiled import Compiled, helpers
from engine.run.compiled import lanes as _lanes  # a name of rows' own: _Runner.lanes
from engine.run.plan import compile_plan
from engine.spec.evaluation import Evaluation, Inspection

Row = dict[str, Any]
NOT_APPLICABLE = "NOT_APPLICABLE"  # a SKIPPED outcome with this code leaves no row
Sink = Callable[[Row], None]
COMPILED = True  # the generated step functions; False: the interpreter (tests/test_compiled.py)
LANES = True  # the fused lanes; False: every record the usual way (tests/test_fused.py)
CASES_SHOWN = 4096  # cases whose shown form a run remembers before it starts over


def records(evaluation: Evaluation, digest: Any = None) -> Iterator[Record | BadRecord]:
    """Stream the records of the evaluation's unit input, hashing its bytes into ``digest``."""
    source = evaluation.inputs[evaluation.unit_input]
    read = formats.named(source.format).read
    assert read is not None  # the unit input's format reads records (checked at load)
    return read(source.path, digest, **source.options)


def validator(evaluation: Evaluation) -> Callable[[Any, Any, Any], Any] | None:
    """The row validator of the unit input's format, when the policy validates rows."""
    return formats.of_units(evaluation).validate if evaluation.policy.validate else None


def inspect(inspection: Inspection, unit: dict[str, Any], ctx: Context,
            inspections: dict[str, Inspection] | None = None) -> Outcome:
    """Run one primitive; anything but a proper Outcome becomes a coded ERROR. A judged
    inspection with a ``fallback`` hands the row to that inspection when no judge is set."""
    fallback = inspection.params.get("fallback") if inspection.primitive.falls_back else None
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


class _Runner:
    """State of one pass over the records."""

    def __init__(self, evaluation: Evaluation, sink: Sink, judge: Any = None,
                 tally: Tally | None = None, seen: Any = None,
                 runs_before: dict[str, int] | None = None,
                 compiled: bool | None = None) -> None:
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
        self.format = formats.named(source.format)
        self.runs_before: dict[str, int] = runs_before or {}  # by case, in earlier shards
        # (case, run number) admitted, for a format numbering its runs (never line-based,
        # so never sharded: one pass sees every run)
        self.trials: set[tuple[str, Any]] = set()
        self.plan = compile_plan(self.policy)
        # the plan's steps as generated functions (engine/run/compiled.py); the interpreter
        # below is their reference (tests/test_compiled.py)
        made = helpers(_applies, inspect, _trace, _Ids)
        self.compiled = Compiled(self.plan, made) \
            if (COMPILED if compiled is None else compiled) else None
        # a sink may take rows known to be plain JSON (see masking.shown) without checking
        self.sink_plain: Sink = getattr(sink, "plain_row", sink)
        self.row_plain = False
        self.full_rows = self.policy.passing_rows == "full"
        self.cases: dict[str, tuple[Any, bool]] = {}  # case -> its shown form (_Ids)
        # fused lanes (engine/run/compiled.py): a record where everything holds, scored in
        # one pass; only with the compiled functions, so the interpreter stays the reference
        self.lanes = _lanes(self, made) if LANES and self.compiled is not None else None
        self.lane_key = self.format.group

    def problem(self, line: int, code: str, message: str, **extra: Any) -> None:
        mask = self.policy.mask
        message = evidence(message, mask)
        row = {"input": self.evaluation.unit_input, "line": line, "status": ERROR,
               "code": code, "message": message, "spec_path": self.source,
               **{k: evidence(v, mask) for k, v in extra.items()}}
        self.tally.count_problem(code, {"line": line, "code": code, "message": message})
        self.sink(row)

    def validate(self, item: Record) -> bool:
        """Classify the record; False when it is INVALID and must not be scored."""
        assert self.validator is not None
        verdict = self.validator(item.data, self.seen, self.policy.budgets)
        # the record chose its group (the format names it): clip and mask it
        group = evidence(verdict.group, self.policy.mask) if verdict.group else ""
        self.tally.validation[group, verdict.klass] += 1
        if truthy(item.data.get("_capture_error")):
            self.tally.capture_errors += 1
            verdict.add("error", "CAPTURE_INCOMPLETE", "_capture_error",
                        "the capture of this run failed")
        if verdict.messages:
            self.tally.validation_rows.append({
                "line": item.line, "id": evidence(item.data.get("id"), self.policy.mask),
                self.format.group: group, "class": verdict.klass,
                "messages": evidence(verdict.messages, self.policy.mask)})
        if verdict.klass == INVALID:
            self.problem(item.line, verdict.code, verdict.messages[0]["message"],
                         unit=item.data.get("id"))
            return False
        return True

    def bad(self, item: BadRecord) -> None:
        """A line that is not a usable record: a record problem (and an INVALID row)."""
        if self.validator is not None:
            self.tally.validation["", "INVALID"] += 1
            self.tally.validation_rows.append({
                "line": item.line, "id": None, self.format.group: "", "class": "INVALID",
                "messages": [{"level": "error", "code": item.code, "field": "",
                              "message": evidence(item.message, self.policy.mask),
                              "hint": ""}]})
        self.problem(item.line, item.code, item.message)

    def record(self, item: Record | BadRecord) -> None:
        if self.lanes is not None and type(item) is Record:
            value = item.data.get(self.lane_key)
            lane = self.lanes.get(value) if type(value) is str else None
            if lane is not None and lane(self, item):
                return
        self.tally.records += 1
        if isinstance(item, BadRecord):
            self.bad(item)
            return
        suite = self.evaluation.suite
        part = None
        if suite.derived:  # what of the record is suite data: hashed, and governs controls
            part = self.format.part(item.data)
            self.tally.suite_rows.add(str(item.data.get("id", "")), part, item.plain)
        if self.validator is not None and not self.validate(item):
            return
        try:  # a selector that cannot apply to this record makes it a record problem
            found = _problem(self.evaluation, item)
            if found is None:
                case_id = search(self.evaluation.unit_case, item.data)
                unit = item.data if suite.derived else {**item.data, "case": suite.cases[case_id]}
                unit_id = search(self.evaluation.unit_id, item.data)
                control = self.policy.controls is not None and truthy(search(
                    self.policy.controls, part if part is not None else {"case": unit["case"]}))
        except SelectorFailed as exc:
            found = exc.code, str(exc)
        if found is not None:
            self.problem(item.line, *found)
            return
        refused = self.admit(unit_id, str(case_id), self.trial(item.data, case_id))
        if refused is not None:
            self.problem(item.line, *refused, unit=unit_id)
            return
        self.steps(item, unit, _Ids(self.evaluation, item, unit_id, str(case_id), self.cases),
                   control)

    def steps(self, item: Record, unit: dict[str, Any], ids: _Ids, control: bool) -> None:
        """Every step of the plan that applies to this unit: a row each."""
        if self.compiled is not None:
            self.compiled.function(unit)(self, item, unit, ids, control)
        else:
            self.interpret(item, unit, ids, control)

    def interpret(self, item: Record, unit: dict[str, Any], ids: _Ids, control: bool) -> None:
        """``steps`` one by one: the reference the compiled functions are tested against."""
        outcomes: dict[str, Outcome] = {}
        case = ids.case
        for step in self.plan.steps(unit):
            inspection = step.inspection
            outcome = outcomes.get(inspection.id)
            if outcome is None:
                applies = _applies(inspection, unit) if step.guarded else True
                if applies is False or (self.collecting and
                                        not inspection.primitive.asks_judge):
                    continue
                outcome = outcomes[inspection.id] = applies if isinstance(applies, Outcome) \
                    else inspect(inspection, unit, self.ctx, self.policy.inspections)
            if outcome.record is not None and case not in self.tally.unit_records:
                self.tally.unit_records[case] = outcome.record
            if outcome.status == SKIPPED and outcome.code == NOT_APPLICABLE:
                continue  # the inspection has nothing to say about this unit: no row
            row, self.row_plain = ids.row(step.category, inspection, outcome, self.policy.mask,
                                          control or self.full_rows)
            if control:
                self.control(row, outcome)
            elif outcome.status == FAIL and self.waivers and \
                    self.waived(row, step.category, case, unit):
                continue
            else:
                self.count(item, row, step.category, case, inspection, outcome)

    def waived(self, row: Row, category: str, case: str, unit: dict[str, Any]) -> bool:
        """Write a FAIL row an active waiver covers as waived; False if none does."""
        waiver = self.waiver(category, case, unit)
        if waiver is None:
            return False
        row["waived_by"] = waiver
        self.tally.waived[waiver] += 1
        self.tally.count_row(category, row["inspection"], WAIVED)
        self.write(row)
        return True

    def count(self, item: Record, row: Row, category: str, case: str,  # noqa: PLR0913
              inspection: Inspection, outcome: Outcome) -> None:
        """Count a scored row (and its finding, if it is one), then write it."""
        tally = self.tally
        tally.count_row(category, inspection.id, outcome.status, outcome.code,
                        inspection.primitive.judge_decides(outcome.expected))
        tally.count_case(category, case, outcome.status)
        measure = inspection.primitive.measure
        if measure and isinstance(outcome.observed, int | float) and \
                not isinstance(outcome.observed, bool):
            tally.measures.setdefault(category, (measure, []))[1].append(outcome.observed)
        if outcome.status in (FAIL, ERROR, ABSTAIN):
            _findings.add(tally.findings, category, case, row, _trace(self.evaluation, item))
        self.write(row)

    def trial(self, data: dict[str, Any], case_id: Any) -> Any:
        """The run's number within its case, where the format numbers runs and the unit's
        case is the record's own case (another grouping of units has no such numbers)."""
        keys = self.format.trial
        return data.get(keys[1]) if keys is not None and case_id is not None and \
            str(case_id) == str(data.get(keys[0])) else None

    def admit(self, unit_id: Any, case: str, trial: Any = None) -> tuple[str, str] | None:
        """Why a unit may not be scored: its id was seen before, or its suite case already
        has every run it declares (extra runs would dilute the rates), or, where the tool
        numbers its runs (``trial``), the number is beyond the case's trials or taken
        (else a third epoch could stand in for a failing second); None if it may."""
        if self.validator is None and unit_id is not None:  # every format's units
            if not _is_id(unit_id):  # a list or an object would dodge the duplicate check
                return "BAD_UNIT_ID", f"unit id {clip(unit_id)!r} is not a string or an integer"
            key = str(unit_id)
            if key in self.seen:
                return "DUPLICATE_ID", f"unit id {clip(unit_id)!r} appears more than once"
            self.seen.add(key)
        if self.evaluation.suite.derived:
            return None  # a derived suite has no list of runs to check (its digest binds them)
        want = self.evaluation.suite.trials[case]
        if isinstance(trial, int) and not isinstance(trial, bool):  # its reader: >= 1
            if trial > want:
                return "EXTRA_RUN", (f"case {clip(case)!r} declares {want} trial(s); run "
                                     f"{clip(trial)} of it is refused, never scored")
            if (case, trial) in self.trials:
                return "DUPLICATE_ID", f"case {clip(case)!r} has run {trial} twice"
            self.trials.add((case, trial))
        if self.runs_before.get(case, 0) + self.tally.case_units[case] >= want:
            return "EXTRA_RUN", (f"case {clip(case)!r} declares {want} trial(s); a run beyond "
                                 "them is refused, never scored")
        self.tally.case_units[case] += 1
        return None

    def governed(self, unit: dict[str, Any]) -> dict[str, Any]:
        """What of a unit is governance data, for controls and waiver scopes: the suite case
        (``{"case": ...}``) for a Suite file; for a suite derived from the records, what of
        the record is suite data by its format (for Assevra rows, inputs and assertions,
        which suite_sha256 binds)."""
        if self.evaluation.suite.derived:
            return self.format.part(unit)
        return {"case": unit.get("case")}

    def waiver(self, category: str, case: str, unit: dict[str, Any]) -> str | None:
        """The id of the first active waiver whose whole scope matches this FAIL row. Scope
        is matched against governance data only: the category, the suite case id and the
        suite case's tags (a suite derived from records is governance data only when the
        Evaluation pins its digest; otherwise only category scopes can match)."""
        governance = self.governed(unit)
        trusted = not self.evaluation.suite.from_evidence or self.evaluation.suite_pin is not None
        tags = (governance.get("tags") if self.evaluation.suite.derived
                else (governance.get("case") or {}).get("tags")) or []
        tags = tags if isinstance(tags, list) else []
        for w in self.waivers:
            scope = w["scope"]
            if not trusted and ("cases" in scope or "tags" in scope):
                continue
            if ("categories" not in scope or category in scope["categories"]) and \
                    ("cases" not in scope or case in scope["cases"]) and \
                    ("tags" not in scope or set(scope["tags"]) & {
                        t for t in tags if isinstance(t, str)}):
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
        self.write(row)

    def write(self, row: Row) -> None:
        """Give a scored row to the sink, saying when its bytes need no canonical check."""
        (self.sink_plain if self.row_plain else self.sink)(row)


def run(evaluation: Evaluation, items: Iterable[Record | BadRecord], sink: Sink,
        judge: Any = None, tally: Tally | None = None, seen: Any = None,
        runs_before: dict[str, int] | None = None, compiled: bool | None = None) -> Tally:
    """Evaluate every record into rows (given to ``sink`` in order) and count them. With a
    judge runtime that is still collecting, only judged inspections run, to gather prompts.

    A shard passes its own ``tally`` (to spool its suite rows) and ``seen``, the ids validated
    so far (``shards.SeenIds`` also answers for ids earlier shards validated); the set is
    filled with this pass's ids as it goes. ``runs_before`` counts, by suite case, the runs
    earlier shards admitted. ``compiled=False`` walks the steps with the interpreter instead
    of the generated functions (for the differential test; None: ``COMPILED``)."""
    runner = _Runner(evaluation, sink, judge, tally, seen, runs_before, compiled)
    try:
        for item in items:
            runner.record(item)
    finally:
        if seen is None:
            runner.seen.close()
    return runner.tally


def _is_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


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


class _Ids:
    """What every row of one record repeats: its unit id and case as evidence (clipped and
    masked once per record, not once per row), input and line."""

    __slots__ = ("case", "fixed", "plain")

    def __init__(self, evaluation: Evaluation, item: Record, unit_id: Any, case: str,
                 cases: dict[str, tuple[Any, bool]] | None = None) -> None:
        """``cases``: the run's memory of cases already shown (the trials of a case are
        usually near each other; it starts over past CASES_SHOWN)."""
        mask = evaluation.policy.mask  # ids and cases are the record's choice: masked too
        self.case = case
        unit, plain_unit = shown(unit_id, mask) if isinstance(unit_id, str | int) and \
            not isinstance(unit_id, bool) else (f"{evaluation.unit_input}:{item.line}", True)
        known = cases.get(case) if cases is not None else None
        if known is None:
            known = shown(case, mask)
            if cases is not None:
                if len(cases) >= CASES_SHOWN:
                    cases.clear()
                cases[case] = known
        shown_case, plain_case = known
        self.plain = plain_unit and plain_case
        self.fixed = {"unit": unit, "case": shown_case, "input": evaluation.unit_input,
                      "line": item.line}

    def row(self, category: str, inspection: Inspection, outcome: Outcome,  # noqa: PLR0913
            mask: Any, full: bool) -> tuple[Row, bool]:
        """The row of one inspection's outcome on this record, and whether the C encoder
        writes its canonical bytes (see ``masking.shown``). A PASS row that is not ``full``
        is compact: its expected and observed values are written only when they are numbers
        (measures, limits), never as copies of the record's evidence (DESIGN.md section 6)."""
        row: Row = {**self.fixed, "category": category, "inspection": inspection.id,
                    "type": inspection.type, "status": outcome.status,
                    "spec_path": inspection.spec_path}
        plain = self.plain
        if outcome.code:
            row["code"] = outcome.code
        if outcome.message:
            row["message"], fine = shown(outcome.message, mask)
            plain = plain and fine
        compact = not full and outcome.status == PASS
        for key, value in (("expected", outcome.expected), ("observed", outcome.observed)):
            if value is None or compact and not _number(value):
                continue
            row[key], fine = shown(value, mask)
            plain = plain and fine
        return row, plain


def _number(value: Any) -> bool:
    """A scalar measure a compact PASS row keeps: an int or a float, never a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)
