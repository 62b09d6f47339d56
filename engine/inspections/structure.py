"""Primitives over structure: jmespath, json_schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.inspections._base import (
    MISSING,
    SELECTOR,
    Context,
    Outcome,
    Primitive,
    clip,
    expectation,
    missing,
    observation,
    params_schema,
    same,
    select,
    truthy,
    verdict,
)

MAX_SCHEMA_ERRORS = 5


def jmespath_check(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """A JMESPath expression is truthy, or equals a given value."""
    value = params["expression"].search(unit)
    if "equals" in params:
        return verdict(same(value, params["equals"]), params["equals"], value)
    return verdict(truthy(value), {"truthy": params["expression_source"]}, value)


def json_schema(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """The selected value is valid against a JSON Schema (Draft 2020-12)."""
    actual = select(params["actual"], unit)
    if actual is MISSING:
        return missing(params)
    validator = params["schema"]
    errors = list(validator.iter_errors(actual))  # none, without jsonschema, when valid
    if errors:
        from jsonschema.exceptions import relevance
        errors.sort(key=relevance)
    messages = [f"{'/'.join(map(str, e.absolute_path)) or '$'}: {e.message}"
                for e in errors[:MAX_SCHEMA_ERRORS]]
    return verdict(not errors, {"schema": params.get("schema_file", "inline")}, clip(actual),
                   "; ".join(messages))


TABLE = {
    "jmespath": Primitive(jmespath_check, params_schema({
        # what the expression reads is the record: an observation (a spec that compares
        # two record fields in it reads the expectation from the evidence, as ``formula``)
        "expression": observation({**SELECTOR, "description": "JMESPath expression over the "
                                                              "unit"}),
        "equals": expectation({"description": "value the expression must equal (types "
                                              "matter)"}),
    }, ["expression"]), "expression is truthy, or equals the given value"),
    "json_schema": Primitive(json_schema, params_schema({
        "actual": observation(SELECTOR),
        "schema": expectation({"type": ["object", "boolean"], "x-schema": True,
                               "description": "inline JSON Schema (Draft 2020-12)"}),
        "schema_file": expectation({"type": "string", "minLength": 1, "x-schema-file": True,
                                    "description": "JSON Schema file, relative to the spec "
                                                   "file"}),
    }, ["actual"], one_of=["schema", "schema_file"]),
        "selected value is valid against a JSON Schema (Draft 2020-12)"),
}
