"""Primitives over numbers: at_most, at_least (budgets), formula."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.canonical import MAX_INT
from engine.errors import FormulaError
from engine.formula import Z_KEY, evaluate, why_null
from engine.inspections._base import (
    ERROR,
    MISSING,
    SELECTOR,
    Context,
    Outcome,
    Primitive,
    clip,
    expectation,
    is_number,
    literal_or_selected,
    missing,
    observation,
    operand,
    params_schema,
    select,
    verdict,
)


def _bound(unit: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
    actual, limit = select(params["actual"], unit), operand(params, unit, "limit")
    if actual is MISSING:
        return missing(params)
    if limit is MISSING:
        return missing(params, "limit_from")
    for name, value in (("actual", actual), ("limit", limit)):
        if not is_number(value):
            return Outcome(ERROR, observed=clip(value), code="BAD_VALUE",
                           message=f"{name} is not a number")
    return actual, limit


def at_most(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """The selected number is at most the limit (a budget: latency, cost, tokens)."""
    got = _bound(unit, params)
    if isinstance(got, Outcome):
        return got
    actual, limit = got
    return verdict(actual <= limit, {"at_most": limit}, actual)


def at_least(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """The selected number is at least the limit."""
    got = _bound(unit, params)
    if isinstance(got, Outcome):
        return got
    actual, limit = got
    return verdict(actual >= limit, {"at_least": limit}, actual)


def _plain(value: Any) -> Any:
    """Selected values as formula values: JSON numbers, text, booleans, null."""
    if value is MISSING:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        return float(value)
    return value


def formula(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """A boolean formula over values selected from the unit."""
    env: dict[str, Any] = {name: _plain(select(expr, unit))
                           for name, expr in params["bind"].items()}
    env[Z_KEY] = ctx.wilson_z
    try:
        value = evaluate(params["formula"], env)
    except FormulaError as exc:
        return Outcome(ERROR, observed=clip(env), code=exc.code, message=str(exc))
    shown = {k: clip(v) for k, v in env.items() if k != Z_KEY}
    if value is None:
        why = why_null(params["formula"], env) or "some value it needs is missing"
        return Outcome(ERROR, observed=shown, code="FORMULA_NULL",
                       message=f"the formula is null: {why}")
    if not isinstance(value, bool):
        return Outcome(ERROR, observed=shown, code="FORMULA_TYPE",
                       message="the formula must give true or false")
    return verdict(value, {"formula": params["formula"].source}, shown)


_NUMBER = {"type": "number"}
_BUDGET = params_schema({
    "actual": observation(SELECTOR),
    **literal_or_selected("limit", _NUMBER, "the limit"),
}, ["actual"], one_of=["limit", "limit_from"])

TABLE = {
    "at_most": Primitive(at_most, _BUDGET, "selected number <= limit (latency, cost budgets)"),
    "at_least": Primitive(at_least, _BUDGET, "selected number >= limit"),
    "formula": Primitive(formula, params_schema({
        "bind": observation({"type": "object",
                             "propertyNames": {"pattern": "^[A-Za-z][A-Za-z0-9_]*$"},
                             "additionalProperties": SELECTOR,
                             "description": "names bound to JMESPath selections"}),
        "formula": expectation({"type": "string", "minLength": 1, "x-formula": True,
                                "description": "boolean formula over the bound names"}),
    }, ["bind", "formula"]), "a boolean formula over selected values is true"),
}


def _first_number(unit: Mapping[str, Any], selectors: list[Any]) -> Any:
    for expr in selectors:
        value = select(expr, unit)
        if is_number(value):
            return value
    return MISSING


def _budgeted(measured: Any, budget: Any, unit_name: str, what: str) -> Outcome:
    """PASS when a measurement is within its budget; which is missing, else."""
    if budget is MISSING:
        return Outcome(ERROR, code="NO_BUDGET", message=f"no {what} budget")
    if measured is MISSING:
        return Outcome(ERROR, code="UNMEASURABLE", message=f"no {what} measurement")
    return verdict(measured <= budget, {f"at_most_{unit_name}": budget}, measured)


def cost(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """Measured cost (cost_usd, else tokens x prices) is within the budget."""
    return _budgeted(*cost_measured(unit, params, ctx), "usd", "cost")


def cost_measured(unit: Mapping[str, Any], params: Mapping[str, Any],
                  ctx: Context) -> tuple[Any, Any]:
    """(measured cost, budget), either MISSING when the unit and policy give none."""
    budget = _first_number(unit, [params["budget_from"]])
    if budget is MISSING and is_number(ctx.budgets.get("cost_usd")):
        budget = ctx.budgets["cost_usd"]
    measured = _first_number(unit, [params["cost"]])
    usage = select(params["usage"], unit)
    price = ctx.budgets.get("price") or {}
    prices = (price.get("input_per_mtok"), price.get("output_per_mtok"))
    if measured is MISSING and isinstance(usage, dict) and all(is_number(p) for p in prices):
        tokens_in = usage.get("input_tokens", 0)
        tokens_out = usage.get("output_tokens", 0)
        if is_number(tokens_in) and is_number(tokens_out):
            measured = tokens_in / 1e6 * prices[0] + tokens_out / 1e6 * prices[1]
    return measured, budget


def latency(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """Measured latency (latency_ms, duration_ms, elapsed_ms, else latency_s) is in budget."""
    return _budgeted(*latency_measured(unit, params, ctx), "ms", "latency")


def latency_measured(unit: Mapping[str, Any], params: Mapping[str, Any],
                     ctx: Context) -> tuple[Any, Any]:
    """(measured latency in ms, budget), either MISSING when the unit and policy give none."""
    budget = _first_number(unit, [params["budget_from"]])
    if budget is MISSING and is_number(ctx.budgets.get("latency_ms")):
        budget = ctx.budgets["latency_ms"]
    measured = _first_number(unit, params["milliseconds"])
    if measured is MISSING:
        seconds = _first_number(unit, [params["seconds"]])
        measured = MISSING if seconds is MISSING else seconds * 1000
    return measured, budget


def _measured(selector: str) -> dict[str, Any]:
    return observation({**SELECTOR, "default": selector})


def _budget(selector: str) -> dict[str, Any]:
    return expectation({**SELECTOR, "default": selector})


TABLE |= {
    "cost": Primitive(cost, params_schema({
        "cost": _measured("cost_usd"), "usage": _measured("usage"),
        "budget_from": _budget("cost_budget_usd"),
    }, []), "measured cost (cost_usd, else tokens x the policy's prices) <= budget (the "
        "record's, else the policy's budgets.cost_usd)", measure="cost"),
    "latency": Primitive(latency, params_schema({
        "milliseconds": observation({"type": "array", "items": SELECTOR,
                                     "x-jmespath-list": True,
                                     "default": ["latency_ms", "duration_ms", "elapsed_ms"],
                                     "description": "JMESPaths tried in order for a latency "
                                                    "in ms"}),
        "seconds": _measured("latency_s"), "budget_from": _budget("latency_budget_ms"),
    }, []), "measured latency (ms fields, else seconds x 1000) <= budget (the record's, else "
        "the policy's budgets.latency_ms)", measure="latency"),
}
