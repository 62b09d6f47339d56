"""The plan's steps compiled into one function per set of steps, built from closures.

``rows._Runner.interpret`` walks a record's steps one by one: for each, it looks up an
outcome already computed for the inspection, asks the guard, runs the primitive through
``rows.inspect``, builds the row, then counts it through three method calls. Every one of
those decisions is known when the policy loads except the outcome itself, so for each
distinct tuple of steps the plan can hand a record (one per guard value, plus the rest)
this module builds, once, the function that does exactly those steps: a closure per step
made for its shape (the guard only where the step has one, the collecting check only for
an inspection that never asks the judge, the primitive called directly unless it falls
back, the measure only for a primitive that has one), and the outcome of an inspection
named twice computed once.

No source is generated and nothing is ``exec``'d (the engine runs no ``exec`` or
``eval``; formulas go through their own allow-listed language): categories, inspections,
parameters and primitives are values the closures hold. They live in memory for the run,
with no cache on disk. ``tests/test_compiled.py`` runs every primitive and guard shape
through both this and the interpreter on the same records and compares every row and
every count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.decide import findings as _findings
from engine.inspections import ERROR, FAIL, PASS, STATUSES, Outcome
from engine.inspections._base import SelectorFailed, clip, truthy
from engine.records.formats import LABELED
from engine.records.masking import evidence, shown

if TYPE_CHECKING:
    from engine.run.plan import Plan, Step

StepsFunction = Callable[[Any, Any, dict[str, Any], Any, bool], None]
StepFunction = Callable[..., None]  # a StepsFunction taking the outcomes list last, optionally
SCORED = (PASS, FAIL)
FINDINGS = (FAIL, ERROR, "ABSTAIN")


def _failed(exc: Exception) -> Outcome:
    return Outcome(ERROR, code="INSPECTION_FAILED",
                   message=f"the inspection failed: {type(exc).__name__}: {clip(str(exc))}")


def _checked(outcome: Any) -> Outcome:
    """``rows.inspect``'s checks of what a primitive returned."""
    if outcome is None:
        return Outcome(ERROR, code="NO_OUTCOME", message="the inspection gave no outcome")
    if not isinstance(outcome, Outcome) or outcome.status not in STATUSES:
        return Outcome(ERROR, code="BAD_OUTCOME", message="the inspection gave no valid status")
    return outcome


def _step(step: Step, slot: int | None, helpers: dict[str, Any]) -> StepFunction:
    """One step: its outcome (kept in ``outcomes[slot]`` when its inspection is named again
    in the same set; ``slot`` None when it is not), then its row written and counted, as
    ``rows._Runner.interpret`` does it."""
    inspection, category, guarded = step.inspection, step.category, step.guarded
    applies, trace, inspect = helpers["applies"], helpers["trace"], helpers["inspect"]
    primitive = inspection.primitive
    iid, measure, judged, falls_back = inspection.id, primitive.measure, \
        primitive.asks_judge, primitive.falls_back
    run, params = primitive.run, inspection.params

    def one(runner: Any, item: Any, unit: dict[str, Any], ids: Any, control: bool,
            outcomes: list[Any] | None = None) -> None:
        o = outcomes[slot] if outcomes is not None and slot is not None else None
        if o is None:
            guard = applies(inspection, unit) if guarded else True
            if guard is False or (not judged and runner.collecting):
                return
            if isinstance(guard, Outcome):
                o = guard
            elif falls_back:  # which inspection runs depends on the judge
                o = inspect(inspection, unit, runner.ctx, runner.policy.inspections)
            else:
                try:
                    o = _checked(run(unit, params, runner.ctx))
                except SelectorFailed as exc:
                    o = Outcome(ERROR, code=exc.code, message=str(exc))
                except Exception as exc:  # noqa: BLE001 - a crashing primitive must not crash
                    o = _failed(exc)
            if outcomes is not None and slot is not None:
                outcomes[slot] = o
        tally, case = runner.tally, ids.case
        if o.record is not None and case not in tally.unit_records:
            tally.unit_records[case] = o.record
        status = o.status
        if status == "SKIPPED" and o.code == "NOT_APPLICABLE":
            return
        row, runner.row_plain = ids.row(category, inspection, o, runner.policy.mask,
                                        control or runner.full_rows)
        if control:
            runner.control(row, o)
            return
        if status == FAIL and runner.waivers and runner.waived(row, category, case, unit):
            return
        tally.count_row(category, iid, status, o.code,
                        judged and primitive.judge_decides(o.expected))
        if status in SCORED:
            tally.cases.add(category, case, 1, int(status == PASS))
        if measure:
            v = o.observed
            if isinstance(v, int | float) and not isinstance(v, bool):
                tally.measures.setdefault(category, (measure, []))[1].append(v)
        if status in FINDINGS:
            _findings.add(tally.findings, category, case, row, trace(runner.evaluation, item))
        (runner.sink_plain if runner.row_plain else runner.sink)(row)
    return one


def _function(steps: tuple[Step, ...], helpers: dict[str, Any]) -> StepsFunction:
    """The function doing ``steps`` for one record: the step's own function when there is
    one step; else each in turn, sharing the outcome of an inspection named twice."""
    ids = [step.inspection.id for step in steps]
    repeated = {i for i in ids if ids.count(i) > 1}
    slots = {i: n for n, i in enumerate(sorted(repeated))}
    parts = tuple(_step(step, slots.get(step.inspection.id), helpers) for step in steps)
    if len(parts) == 1:
        return parts[0]
    width = len(slots)

    def run_steps(runner: Any, item: Any, unit: dict[str, Any], ids: Any,
                  control: bool) -> None:
        outcomes: list[Any] | None = [None] * width if width else None
        for part in parts:
            part(runner, item, unit, ids, control, outcomes)
    return run_steps


class Compiled:
    """One function per distinct tuple of steps the plan gives a record."""

    def __init__(self, plan: Plan, helpers: dict[str, Any]) -> None:
        self.plan = plan
        self.functions: dict[int, StepsFunction] = {}
        for steps in (plan.every, plan.rest, *(plan.table or {}).values()):
            if id(steps) not in self.functions:
                self.functions[id(steps)] = _function(steps, helpers)

    def function(self, unit: dict[str, Any]) -> StepsFunction:
        """The function of the steps the plan gives ``unit``."""
        return self.functions[id(self.plan.steps(unit))]


def helpers(applies: Any, inspect: Any, trace: Any, ids: Any = None) -> dict[str, Any]:
    """What the step functions call besides their own values: ``rows``' guard test, its
    ``inspect`` (for a primitive that falls back) and its trace selector; for the lanes,
    ``rows._Ids``."""
    return {"applies": applies, "inspect": inspect, "trace": trace, "ids": ids}


Lane = Callable[[Any, Any], bool]


def lanes(runner: Any, helpers: dict[str, Any]) -> dict[str, Lane] | None:
    """The fused lanes of a run: for each value of the plan's key (the unit format's group,
    e.g. the release gate's dimension) whose steps are one inspection the format has a
    fused check for (``Format.fused``), the function that scores a record of that value in
    one go, or says False and leaves it untouched for the usual path. None when the run has
    none: rows not validated, a suite not derived from the records, judge prompts being
    gathered, ``passing_rows: full`` (a PASS row then holds evidence only the primitive
    words), or no such value."""
    fmt, evaluation, plan = runner.format, runner.evaluation, runner.plan
    if fmt.fused is None or runner.validator is None or not evaluation.suite.derived or \
            runner.collecting or runner.full_rows or plan.table is None or \
            plan.key != (fmt.group,):
        return None
    found: dict[str, Lane] = {}
    for value, steps in plan.table.items():
        if len(steps) != 1 or steps[0].guarded:
            continue
        inspection, judged = _effective(runner, steps[0].inspection)
        check = None if inspection is None else \
            fmt.fused(value, inspection, runner.policy.budgets)
        if check is not None:
            found[value] = _lane(runner, value, steps[0], check, helpers["ids"], judged)
    return found or None


def _effective(runner: Any, inspection: Any) -> tuple[Any, bool]:
    """The inspection that decides a row of this step, and whether the tally counts such a
    row as the judge's (``Tally.judged``): a judged inspection with a ``fallback`` hands
    every row to the fallback when no judge is set (``rows.inspect``), and the row still
    counts as judged when its primitive says every row is; None where that is not so."""
    primitive = inspection.primitive
    if not primitive.falls_back:
        return inspection, False
    fallback = inspection.params.get("fallback")
    if runner.ctx.judge is not None or not fallback or primitive.judged_row is not None:
        return None, False
    return runner.policy.inspections[fallback], primitive.asks_judge


def _lane(runner: Any, value: str, step: Step, check: Any, ids_of: Any,  # noqa: PLR0913
          judged: bool) -> Lane:
    """One value's lane: the fused check, then exactly the bookkeeping ``rows._Runner.record``
    and the step's function do for a LABELED row without messages whose one inspection
    PASSes (a compact row), in their order; False, having changed nothing, when the check is
    unsure, the id was seen, a selector fails or the record is a control."""
    evaluation, policy, fmt = runner.evaluation, runner.policy, runner.format
    category, inspection = step.category, step.inspection
    iid, measure, mask, ctx = inspection.id, inspection.primitive.measure, policy.mask, runner.ctx
    fixed = {"category": category, "inspection": iid, "type": inspection.type,
             "status": PASS, "spec_path": inspection.spec_path}
    group = (evidence(value, mask), LABELED)
    unit_case, unit_id_of, controls = evaluation.unit_case, evaluation.unit_id, policy.controls

    def lane(runner: Any, item: Any) -> bool:
        data, seen = item.data, runner.seen
        row_id = data.get("id")
        if type(row_id) is not str or row_id in seen:  # a repeated id: the usual path
            return False
        kept = check(data, ctx)
        if kept is None:
            return False
        part = fmt.part(data)
        try:  # any selector that fails leaves the record to the usual path, which words it
            if controls is not None and truthy(controls.search(part)):
                return False  # a control's row is written in full
            case_id, unit_id = unit_case.search(data), unit_id_of.search(data)
        except Exception:  # noqa: BLE001
            return False
        tally = runner.tally
        tally.records += 1
        tally.suite_rows.add(row_id, part, item.plain)
        seen.add(row_id)
        tally.validation[group] += 1
        ids = ids_of(evaluation, item, unit_id, case := str(case_id), runner.cases)
        row, plain = {**ids.fixed, **fixed}, ids.plain
        expected, observed = kept
        if expected is not None:
            row["expected"], fine = shown(expected, mask)
            plain = plain and fine
        if observed is not None:
            row["observed"], fine = shown(observed, mask)
            plain = plain and fine
            if measure:
                measured = tally.measures.get(category)
                if measured is None:
                    measured = tally.measures[category] = (measure, [])
                measured[1].append(observed)
        tally.count_row(category, iid, PASS, "", judged)
        tally.cases.add(category, case, 1, 1)
        (runner.sink_plain if plain else runner.sink)(row)
        return True
    return lane

