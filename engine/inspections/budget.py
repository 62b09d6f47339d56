"""Primitives over numbers: at_most, at_least (budgets), formula."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._yaml import MAX_INT
from ..errors import FormulaError
from ..formula import Z_KEY, evaluate
from ._base import (
    ERROR,
    MISSING,
    SELECTOR,
    Context,
    Outcome,
    Primitive,
    clip,
    is_number,
    literal_or_selected,
    missing,
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
        return Outcome(ERROR, observed=shown, code="FORMULA_NULL",
                       message="the formula is null: some value it needs is missing")
    if not isinstance(value, bool):
        return Outcome(ERROR, observed=shown, code="FORMULA_TYPE",
                       message="the formula must give true or false")
    return verdict(value, {"formula": params["formula"].source}, shown)


_NUMBER = {"type": "number"}
_BUDGET = params_schema({
    "actual": SELECTOR,
    **literal_or_selected("limit", _NUMBER, "the limit"),
}, ["actual"], one_of=["limit", "limit_from"])

TABLE = {
    "at_most": Primitive(at_most, _BUDGET, "selected number <= limit (latency, cost budgets)"),
    "at_least": Primitive(at_least, _BUDGET, "selected number >= limit"),
    "formula": Primitive(formula, params_schema({
        "bind": {"type": "object", "propertyNames": {"pattern": "^[A-Za-z][A-Za-z0-9_]*$"},
                 "additionalProperties": SELECTOR,
                 "description": "names bound to JMESPath selections"},
        "formula": {"type": "string", "minLength": 1, "x-formula": True,
                    "description": "boolean formula over the bound names"},
    }, ["bind", "formula"]), "a boolean formula over selected values is true"),
}
