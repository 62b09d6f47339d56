"""The ``judge`` primitive: a row an LLM judge decides with a rubric.

The rubric's template is rendered with the inspection's ``inputs`` (JMESPath selections
from the unit); the verdict (one judge, or a panel's median and majority) is checked with
the ``pass_when`` formula over the verdict's fields and the inputs. Only the fields the
rubric declares reach the formula, and they never shadow an input (a rubric declaring a
field an input is named after is a spec error, ``VERDICT_SHADOWS_INPUT``). Without a
configured judge the row is SKIPPED (NO_JUDGE), or the ``fallback`` inspection decides it.
Under the policy's ``judge.repeats`` each prompt is answered k times and the row is the
answers' agreed outcome, or ABSTAIN when they agree less than ``judge.min_agreement``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from engine.errors import FormulaError
from engine.formula import evaluate
from engine.inspections._base import (
    ABSTAIN,
    ERROR,
    FAIL,
    MISSING,
    PASS,
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

Single = Callable[[dict[str, Any], str], Outcome]  # (one answer's verdict, its note) -> row


def ask(rubric: Any, values: dict[str, Any], ctx: Context, single: Single) -> Outcome:
    """One judged row's Outcome: ``single`` decides it from one answer's verdict (a panel's
    combined verdict). Under judge.repeats each of the k answers is decided so, and the
    row is their agreed outcome or ABSTAIN (``agreed``); an answer without a verdict, or
    one ``single`` cannot decide, makes the row ERROR, as a panel member's does."""
    from engine.judge import combine
    from engine.judge._rubrics import dumps

    runtime = ctx.judge
    answers = runtime.ask(rubric, {k: dumps(v) for k, v in values.items()})
    if runtime.collecting:
        return Outcome(SKIPPED, code="COLLECTING")
    k = len(answers)
    outcomes, verdicts = [], []
    for number, keys in enumerate(answers, 1):
        found, code, note = combine([runtime.answers[key] for key in keys],
                                    runtime.config.disagreement)
        outcome = Outcome(ERROR, code=code, message=note) if found is None else \
            single(found, note)
        if outcome.status not in (PASS, FAIL):
            if k > 1:
                outcome = Outcome(outcome.status, outcome.expected, outcome.observed,
                                  f"answer {number} of {k}: {outcome.message}", outcome.code)
            return outcome
        outcomes.append(outcome)
        verdicts.append(found)
    return outcomes[0] if k == 1 else agreed(outcomes, verdicts, runtime.config.min_agreement)


def agreed(outcomes: list[Outcome], verdicts: list[Any], min_agreement: float) -> Outcome:
    """The row from k decided answers: the most common outcome when at least
    ``min_agreement`` of them give it, else ABSTAIN (ANSWERS_DISAGREE). Its observed verdict
    combines the k verdicts as a panel's are: the median of each number (unrounded), the
    majority of each yes/no field (null on a tie), other fields from the first answer that
    gives the row's outcome."""
    k, passed = len(outcomes), sum(o.status == PASS for o in outcomes)
    top = PASS if passed * 2 > k else FAIL
    split = f"{passed} of {k} answers pass"
    bar = Fraction(str(min_agreement))  # as written: 0.6 is 3/5, not the double below it
    order = sorted(range(k), key=lambda i: outcomes[i].status != top)  # the row's first
    observed = clip(_median([verdicts[i] for i in order]))
    if Fraction(max(passed, k - passed), k) < bar:
        return Outcome(ABSTAIN, observed=observed, code="ANSWERS_DISAGREE",
                       message=f"{split}; judge.min_agreement {min_agreement} needs "
                               f"{math.ceil(bar * k)} of {k} to agree")
    chosen = next(o for o in outcomes if o.status == top)
    return Outcome(top, chosen.expected, observed, split)


def _median(verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in dict.fromkeys(n for v in verdicts for n in v):
        values = [v[name] for v in verdicts if name in v]
        if all(isinstance(x, bool) for x in values):
            yes = sum(values)
            out[name] = None if yes * 2 == len(values) else yes * 2 > len(values)
        elif all(isinstance(x, int | float) and not isinstance(x, bool) for x in values):
            out[name] = statistics.median(values)
        else:
            out[name] = values[0]
    return out


def judge(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """The judge's verdict satisfies ``pass_when``."""
    if ctx.judge is None:
        return Outcome(SKIPPED, code="NO_JUDGE",
                       message=f"no judge is configured to apply rubric '{params['rubric'].name}'")
    values = {name: select(expr, unit) for name, expr in params["inputs"].items()}
    absent = [name for name, value in values.items() if value is MISSING]
    if absent:
        return Outcome(ERROR, code="MISSING_VALUE", message=f"no value for {absent}")
    return ask(params["rubric"], values, ctx,
               lambda answer, note: _decided(answer, note, values, params, ctx))


def _decided(answer: dict[str, Any], note: str, values: dict[str, Any],
             params: Mapping[str, Any], ctx: Context) -> Outcome:
    """PASS or FAIL by ``pass_when`` over one verdict (ERROR when it cannot say)."""
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
