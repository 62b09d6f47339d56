"""Primitives over text and values: equals, contains, not_contains, regex_present, regex_absent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.inspections._base import (
    ERROR,
    FLAG,
    MISSING,
    SELECTOR,
    Context,
    Outcome,
    Primitive,
    clip,
    expectation,
    literal_or_selected,
    missing,
    observation,
    operand,
    params_schema,
    same,
    select,
    verdict,
)


def _fold(value: Any, fold: bool) -> Any:
    return value.casefold() if fold and isinstance(value, str) else value


def equals(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """The selected value equals the expected one (types matter)."""
    actual, expected = select(params["actual"], unit), operand(params, unit, "expected")
    if actual is MISSING:
        return missing(params)
    if expected is MISSING:
        return missing(params, "expected_from")
    fold = params.get("case_insensitive", False)
    if params.get("strip", False):
        actual = actual.strip() if isinstance(actual, str) else actual
        expected = expected.strip() if isinstance(expected, str) else expected
    return verdict(same(_fold(actual, fold), _fold(expected, fold)), expected, actual)


def _containment(unit: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
    actual, values = select(params["actual"], unit), operand(params, unit, "values")
    if actual is MISSING:
        return missing(params)
    if values is MISSING:
        return missing(params, "values_from")
    if isinstance(values, str):
        values = [values]
    fold = params.get("case_insensitive", False)
    if isinstance(actual, str):
        hay = _fold(actual, fold)
        found = [v for v in values if isinstance(v, str) and _fold(v, fold) in hay]
    elif isinstance(actual, list):
        items = [_fold(a, fold) for a in actual]
        found = [v for v in values if any(same(_fold(v, fold), a) for a in items)]
    else:
        return Outcome(ERROR, observed=clip(actual), code="BAD_VALUE",
                       message="contains needs text or a list to look in")
    return actual, values, found


def contains(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """The selected text or list contains all (or any) of the values."""
    got = _containment(unit, params)
    if isinstance(got, Outcome):
        return got
    actual, values, found = got
    ok = bool(found) if params.get("mode", "all") == "any" else len(found) == len(values)
    absent = [v for v in values if v not in found]
    return verdict(ok, values, actual, "" if ok else f"not found: {clip(absent)}")


def not_contains(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """The selected text or list contains none (or not all) of the values."""
    got = _containment(unit, params)
    if isinstance(got, Outcome):
        return got
    actual, values, found = got
    bad = len(found) == len(values) if params.get("mode", "any") == "all" else bool(found)
    return verdict(not bad, {"none_of": values}, actual, f"found: {clip(found)}" if bad else "")


_FLAGS = {"enum": ["ignorecase", "multiline", "dotall"]}


def _search(unit: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
    actual = select(params["actual"], unit)
    if actual is MISSING:
        return missing(params)
    if not isinstance(actual, str):
        return Outcome(ERROR, observed=clip(actual), code="BAD_VALUE",
                       message="a regex needs text to search")
    return actual, params["pattern"].search(actual)


def regex_present(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """The pattern matches somewhere in the selected text."""
    got = _search(unit, params)
    if isinstance(got, Outcome):
        return got
    actual, match = got
    return verdict(match is not None, {"pattern": params["pattern"].pattern}, actual)


def regex_absent(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """The pattern matches nowhere in the selected text."""
    got = _search(unit, params)
    if isinstance(got, Outcome):
        return got
    actual, match = got
    message = f"matched {clip(match.group(0))!r} at {match.start()}" if match else ""
    return verdict(match is None, {"absent": params["pattern"].pattern}, actual, message)


_STRINGS = {"type": ["string", "array"], "items": {"type": "string"}}
_REGEX = params_schema({
    "actual": observation(SELECTOR),
    "pattern": expectation({"type": "string", "minLength": 1, "maxLength": 2000,
                            "x-regex": True, "description": "Python regular expression"}),
    "flags": expectation({"type": "array", "items": _FLAGS, "uniqueItems": True}),
}, ["actual", "pattern"])

TABLE = {
    "equals": Primitive(equals, params_schema({
        "actual": observation(SELECTOR),
        **literal_or_selected("expected", {}, "the expected value"),
        "case_insensitive": expectation(FLAG), "strip": expectation(FLAG),
    }, ["actual"], one_of=["expected", "expected_from"]),
        "selected value equals the expected value; 1 != 1.0 and true != 1"),
    "contains": Primitive(contains, params_schema({
        "actual": observation(SELECTOR),
        **literal_or_selected("values", _STRINGS, "the values to look for"),
        "mode": expectation({"enum": ["all", "any"], "default": "all"}),
        "case_insensitive": expectation(FLAG),
    }, ["actual"], one_of=["values", "values_from"]),
        "selected text (substring) or list (element) holds all, or any, of the values"),
    "not_contains": Primitive(not_contains, params_schema({
        "actual": observation(SELECTOR),
        **literal_or_selected("values", _STRINGS, "the values that must not appear"),
        "mode": expectation({"enum": ["all", "any"], "default": "any"}),
        "case_insensitive": expectation(FLAG),
    }, ["actual"], one_of=["values", "values_from"]),
        "fails when any value appears (mode any) or when all of them appear (mode all)"),
    "regex_present": Primitive(regex_present, _REGEX, "pattern matches the selected text"),
    "regex_absent": Primitive(regex_absent, _REGEX, "pattern matches nowhere in the text"),
}
