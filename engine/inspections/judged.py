"""The ``judge`` primitive: a row an LLM judge decides with a rubric.

The rubric's template is rendered with the inspection's ``inputs`` (JMESPath selections
from the unit); the verdict (one judge, or a panel's median and majority) is checked with
the ``pass_when`` formula over the verdict's fields and the inputs. Only the fields the
rubric declares reach the formula, and they never shadow an input (a rubric declaring a
field an input is named after is a spec error, ``VERDICT_SHADOWS_INPUT``). Without a
configured judge the row is SKIPPED (NO_JUDGE), or the ``fallback`` inspection decides it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.errors import FormulaError
from engine.formula import evaluate
from engine.inspections._base import (
    ERROR,
    MISSING,
    SELECTOR,
    SKIPPED,
    Context,
    Outcome,
    Primitive,
    clip,
    expectation,
    params_schema,
    per_entry,
    select,
    verdict,
)


def ask(rubric: Any, values: dict[str, Any], ctx: Context) -> Outcome | dict[str, Any]:
    """The combined verdict for one judged row, or the Outcome that stands in for it."""
    from engine.judge import combine
    from engine.judge._rubrics import dumps

    runtime = ctx.judge
    keys = runtime.ask(rubric, {k: dumps(v) for k, v in values.items()})
    if runtime.collecting:
        return Outcome(SKIPPED, code="COLLECTING")
    found, code, note = combine([runtime.answers[k] for k in keys],
                                runtime.config.disagreement)
    if found is None:
        return Outcome(ERROR, code=code, message=note)
    return {**found, "$note": note}


def judge(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """The judge's verdict satisfies ``pass_when``."""
    if ctx.judge is None:
        return Outcome(SKIPPED, code="NO_JUDGE",
                       message=f"no judge is configured to apply rubric '{params['rubric'].name}'")
    values = {name: select(expr, unit) for name, expr in params["inputs"].items()}
    absent = [name for name, value in values.items() if value is MISSING]
    if absent:
        return Outcome(ERROR, code="MISSING_VALUE", message=f"no value for {absent}")
    answer = ask(params["rubric"], values, ctx)
    if isinstance(answer, Outcome):
        return answer
    note = answer.pop("$note")
    try:
        declared = {k: v for k, v in answer.items() if k in params["rubric"].fields}
        ok = evaluate(params["pass_when"], {**declared, **values, "$wilson_z": ctx.wilson_z})
    except FormulaError as exc:
        return Outcome(ERROR, observed=answer, code=exc.code, message=str(exc))
    if not isinstance(ok, bool):
        return Outcome(ERROR, observed=answer, code="FORMULA_NULL",
                       message="pass_when is not true or false for this verdict")
    return verdict(ok, {"pass_when": params["pass_when"].source}, clip(answer), note)


TABLE = {
    "judge": Primitive(judge, params_schema({
        "rubric": expectation({"type": "string", "minLength": 1, "x-rubric": True,
                               "description": "rubric name (the policy's rubrics/ folder, "
                                              "else shipped)"}),
        # an input pass_when compares the verdict with says what the agent should have
        # done (should_refuse): an expectation; the rest is shown to the judge
        "inputs": per_entry({"type": "object", "minProperties": 1,
                             "propertyNames": {"pattern": "^[A-Za-z][A-Za-z0-9_]*$"},
                             "additionalProperties": SELECTOR,
                             "description": "template variables bound to JMESPath "
                                            "selections"}, named_by="pass_when"),
        "pass_when": expectation({"type": "string", "minLength": 1, "x-formula": True,
                                  "description": "formula over the verdict's fields and the "
                                                 "inputs"}),
        "fallback": expectation({"type": "string", "minLength": 1,
                                 "description": "inspection id that decides the row when no "
                                                "judge is set"}),
    }, ["rubric", "inputs", "pass_when"]),
        "an LLM judge decides with a rubric (SKIPPED while no judge is configured)",
        mode="llm-judge", asks_judge=True, falls_back=True),
}
