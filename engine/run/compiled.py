"""The plan's steps compiled into one Python function per set of steps, in memory.

``rows._Runner.interpret`` walks a record's steps one by one: for each, it looks up an
outcome already computed for the inspection, asks the guard, runs the primitive through
``rows.inspect``, builds the row, then counts it through three method calls. Every one of
those decisions is known when the policy loads except the outcome itself, so for each
distinct tuple of steps the plan can hand a record (one per guard value, plus the rest)
this module writes the function that does exactly those steps, unrolled: the guard only
where the step has one, the collecting check only for an inspection that never asks the
judge, the measure only for a primitive that has one, the outcome of an inspection named
twice computed once.

What is generated, and what is not. The source is built from engine-chosen names only
(``p3``, ``c1``, ``o2``); every value that comes from the spec (a category name, an
inspection, its parameters, its primitive) reaches the function as a constant of its
namespace, never as text of its source, so nothing a spec or a record says is ever
compiled. The functions live in memory for the run (no code cache on disk, which whoever
controls the runner could write). ``tests/test_compiled.py`` runs every primitive and guard
shape through both this and the interpreter on the same records and compares every row
and every count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.decide import findings as _findings
from engine.inspections import ERROR, FAIL, STATUSES, Outcome
from engine.inspections._base import SelectorFailed, clip

if TYPE_CHECKING:
    from engine.run.plan import Plan, Step

StepsFunction = Callable[[Any, Any, dict[str, Any], Any, bool], None]


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


class _Source:
    """The lines of one generated function and the constants they name."""

    def __init__(self, names: dict[str, Any]) -> None:
        self.lines: list[str] = []
        self.names = names

    def constant(self, prefix: str, value: Any) -> str:
        """A name for ``value`` in the function's namespace (one per distinct object)."""
        for name, held in self.names.items():
            if held is value and name.startswith(prefix):
                return name
        name = f"{prefix}{len(self.names)}"
        self.names[name] = value
        return name

    def add(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)


def _outcome(src: _Source, step: Step, slot: str, depth: int) -> None:
    """Lines that compute the step's outcome into ``o`` (and its slot), or leave it None
    when the step does not apply (``rows._Runner.interpret``, first half of a step)."""
    inspection = step.inspection
    ins = src.constant("i", inspection)
    src.add(depth, f"o = {slot}")
    src.add(depth, "if o is None:")
    if step.guarded:
        src.add(depth + 1, f"a = applies({ins}, unit)")
        test = "a is not False"
    else:
        src.add(depth + 1, "a = True")
        test = ""
    if not inspection.primitive.asks_judge:
        test = f"{test} and not collecting" if test else "not collecting"
    inner = depth + 1
    if test:
        src.add(depth + 1, f"if {test}:")
        inner += 1
    if step.guarded:
        src.add(inner, "if isinstance(a, Outcome):")
        src.add(inner + 1, f"o = {slot} = a")
        src.add(inner, "else:")
        inner += 1
    if inspection.primitive.falls_back:
        src.add(inner, f"o = {slot} = inspect({ins}, unit, ctx, inspections)")
        return
    run = src.constant("r", inspection.primitive.run)
    params = src.constant("q", inspection.params)
    src.add(inner, "try:")
    src.add(inner + 1, f"o = checked({run}(unit, {params}, ctx))")
    src.add(inner, "except SelectorFailed as exc:")
    src.add(inner + 1, "o = Outcome(ERROR, code=exc.code, message=str(exc))")
    src.add(inner, "except Exception as exc:  # a crashing primitive must not crash the run")
    src.add(inner + 1, "o = failed(exc)")
    src.add(inner, f"{slot} = o")


def _row(src: _Source, step: Step, depth: int) -> None:
    """Lines that write the step's row and count it (second half of a step)."""
    inspection = step.inspection
    ins, cat = src.constant("i", inspection), src.constant("c", step.category)
    iid = src.constant("n", inspection.id)
    src.add(depth, "if o.record is not None and case not in tally.unit_records:")
    src.add(depth + 1, "tally.unit_records[case] = o.record")
    src.add(depth, "status = o.status")
    src.add(depth, "if status != 'SKIPPED' or o.code != 'NOT_APPLICABLE':")
    d = depth + 1
    src.add(d, f"row, runner.row_plain = ids.row({cat}, {ins}, o, mask, full)")
    src.add(d, "if control:")
    src.add(d + 1, "runner.control(row, o)")
    src.add(d, f"elif status == 'FAIL' and runner.waivers and runner.waived(row, {cat}, case, "
               "unit):")
    src.add(d + 1, "pass")
    src.add(d, "else:")
    src.add(d + 1, f"tally.count_row({cat}, {iid}, status, o.code)")
    src.add(d + 1, "if status == 'PASS' or status == 'FAIL':")
    src.add(d + 2, f"tally.cases.add({cat}, case, 1, int(status == 'PASS'))")
    measure = inspection.primitive.measure
    if measure:
        src.add(d + 1, "v = o.observed")
        src.add(d + 1, "if isinstance(v, int | float) and not isinstance(v, bool):")
        src.add(d + 2, f"tally.measures.setdefault({cat}, ({src.constant('m', measure)}, []))"
                       "[1].append(v)")
    src.add(d + 1, "if status == 'FAIL' or status == 'ERROR' or status == 'ABSTAIN':")
    src.add(d + 2, f"add_finding(tally.findings, {cat}, case, row, trace(evaluation, item))")
    src.add(d + 1, "(runner.sink_plain if runner.row_plain else runner.sink)(row)")


def _function(steps: tuple[Step, ...], helpers: dict[str, Any]) -> StepsFunction:
    """The function doing ``steps`` for one record, generated and compiled in memory."""
    src = _Source(dict(helpers))
    src.add(0, "def steps(runner, item, unit, ids, control):")
    for line in ("tally = runner.tally", "ctx = runner.ctx", "case = ids.case",
                 "mask = runner.policy.mask", "full = control or runner.full_rows",
                 "collecting = runner.collecting", "evaluation = runner.evaluation",
                 "inspections = runner.policy.inspections"):
        src.add(1, line)
    slots: dict[str, str] = {}
    for step in steps:
        slots.setdefault(step.inspection.id, f"o{len(slots)}")
    if slots:
        src.add(1, " = ".join(slots.values()) + " = None")
    for step in steps:
        _outcome(src, step, slots[step.inspection.id], 1)
        src.add(1, "if o is not None:")
        _row(src, step, 2)
    src.add(1, "return None")
    namespace: dict[str, Any] = src.names
    # the source holds engine-chosen names only; every spec value is a namespace constant
    exec(compile("\n".join(src.lines) + "\n", "<specgate steps>", "exec"),  # noqa: S102
         namespace)
    function: StepsFunction = namespace["steps"]
    return function


class Compiled:
    """One generated function per distinct tuple of steps the plan gives a record."""

    def __init__(self, plan: Plan, helpers: dict[str, Any]) -> None:
        self.plan = plan
        self.functions: dict[int, StepsFunction] = {}
        groups = [plan.every, plan.rest, *(plan.table or {}).values()]
        for steps in groups:
            if id(steps) not in self.functions:
                self.functions[id(steps)] = _function(steps, helpers)

    def __call__(self, runner: Any, item: Any, unit: dict[str, Any], ids: Any,
                 control: bool) -> None:
        self.functions[id(self.plan.steps(unit))](runner, item, unit, ids, control)


def helpers(applies: Any, inspect: Any, trace: Any) -> dict[str, Any]:
    """What every generated function may call besides its constants."""
    return {"applies": applies, "inspect": inspect, "trace": trace, "Outcome": Outcome,
            "SelectorFailed": SelectorFailed, "ERROR": ERROR, "FAIL": FAIL,
            "checked": _checked, "failed": _failed, "add_finding": _findings.add,
            "isinstance": isinstance, "int": int, "float": float, "bool": bool}
