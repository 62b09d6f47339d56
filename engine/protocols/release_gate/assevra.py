"""The ``assevra-jsonl`` input format: row classes LABELED / UNLABELED / INVALID (§1, §5).

Rows are read unchanged from Assevra 0.6 datasets. This module classifies one parsed row;
the runner decides what a class means for the run (strict in release).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from engine.inspections import contracts
from engine.records.formats import INVALID, LABELED, UNLABELED, Verdict
from engine.records.strict_json import loads_record

DIMENSIONS = ("grounding", "safety", "pii", "task_completion", "tool_call",
              "action_correctness", "injection", "cost", "latency")
REQUIRED = {"grounding": "agent_output", "safety": "agent_output", "pii": "agent_output",
            "task_completion": "agent_output", "tool_call": "tool_calls",
            "injection": "agent_output"}
ANSWER_KEYS = {
    "grounding": ("context",), "safety": ("should_refuse",), "pii": (),
    "task_completion": ("must_include",),
    "tool_call": ("allowed_tools", "forbidden_tools", "tool_schemas", "expected_tool_calls"),
    "action_correctness": ("expected_actions", "forbidden_actions", "expected_state"),
    "injection": ("canary", "must_not_include", "should_refuse"),
}
TEXT_FIELDS = ("agent_output", "input", "context", "injection", "sanctioned_field")
NUMBER_FIELDS = ("cost_usd", "cost_budget_usd", "latency_ms", "duration_ms", "elapsed_ms",
                 "latency_s", "latency_budget_ms")
ACTION_MODES = ("ordered", "exact", "set")
COMPACT_TYPES = ("string", "number", "integer", "boolean", "array", "object")
LATENCY_MS = ("latency_ms", "duration_ms", "elapsed_ms")


def non_empty(value: Any) -> bool:
    """Present and not null; strings, lists and objects of length >= 1; numbers always."""
    if value is None:
        return False
    return len(value) > 0 if isinstance(value, str | list | dict) else True


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _strings(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and
                                      all(isinstance(v, str) for v in value))


def _calls(value: Any) -> list[Any] | None:
    if isinstance(value, dict):
        return [value]
    return value if isinstance(value, list) else None


def _parses(arguments: Any) -> bool:
    if arguments is None or isinstance(arguments, dict):
        return True
    if isinstance(arguments, str):
        if not arguments.strip():
            return True
        try:
            return isinstance(loads_record(arguments), dict)
        except ValueError:
            return False
    return False


def _non_local_ref(schema: Any) -> bool:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            return True
        return any(_non_local_ref(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_non_local_ref(v) for v in schema)
    return False


def _check_types(row: Mapping[str, Any], v: Verdict) -> None:
    bad = "BAD_TYPE"
    if "case_id" in row and not isinstance(row["case_id"], str):
        v.add("error", bad, "case_id", "case_id must be a string")
    if "tags" in row and not (isinstance(row["tags"], list) and
                              all(isinstance(t, str) for t in row["tags"])):
        v.add("error", bad, "tags", "tags must be a list of strings")
    for name in TEXT_FIELDS:
        if row.get(name) is not None and not isinstance(row[name], str):
            v.add("error", bad, name, f"{name} must be text")
    if "should_refuse" in row and not isinstance(row["should_refuse"], bool):
        v.add("error", bad, "should_refuse", "should_refuse must be true or false",
              "write true or false without quotes")
    for name in NUMBER_FIELDS:
        if name in row and not _number(row[name]):
            v.add("error", bad, name, f"{name} must be a number >= 0")
    usage = row.get("usage")
    if usage is not None:
        if not isinstance(usage, dict):
            v.add("error", bad, "usage", "usage must be an object")
        else:
            for name in ("input_tokens", "output_tokens"):
                count = usage.get(name)
                if name in usage and not (isinstance(count, int) and
                                          not isinstance(count, bool) and count >= 0):
                    v.add("error", bad, f"usage.{name}", "a token count is a whole number >= 0")
    for name in ("agent_actions", "expected_actions", "forbidden_actions"):
        if name in row and not isinstance(row[name], list | str):
            v.add("error", bad, name, f"{name} must be a list or a string")
    if "action_match" in row and str(row["action_match"]).lower() not in ACTION_MODES:
        v.add("error", "BAD_VALUE", "action_match", "unknown action_match",
              "one of: " + ", ".join(ACTION_MODES))
    for name in ("canary", "must_not_include"):
        if row.get(name) is not None and not _strings(row[name]):
            v.add("error", bad, name, f"{name} must be a string or a list of strings")
    if "must_include" in row and not (isinstance(row["must_include"], list) and all(
            isinstance(i, str) and i.strip() for i in row["must_include"])):
        v.add("error", bad, "must_include", "must_include must be a list of non-blank strings")
    for name in ("allowed_tools", "forbidden_tools"):
        if row.get(name) is not None and not _strings(row[name]):
            v.add("error", bad, name, f"{name} must hold tool names (strings)")


@lru_cache(maxsize=1024)
def _schema_problem(text: str) -> str:
    """Why a tool contract's JSON Schema is unusable ('' if it is fine); checked once per
    distinct schema, not once per row. One the contract checker compiles is valid and has
    no reference; any other is checked against the meta-schema."""
    if contracts.compiled(text) is not None:
        return ""
    import jsonschema  # only for schemas outside engine.inspections.contracts' subset

    schema = json.loads(text)
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return str(exc.message)
    return "only local $ref ('#...') may be used" if _non_local_ref(schema) else ""


def _check_tools(row: Mapping[str, Any], v: Verdict) -> None:
    if "tool_calls" in row and row["tool_calls"] is not None:
        calls = _calls(row["tool_calls"])
        if calls is None or not all(isinstance(c, dict) for c in calls):
            v.add("error", "BAD_TYPE", "tool_calls",
                  "tool_calls must be a list of objects or one object")
        else:
            for call in calls:
                name = call.get("name", call.get("tool"))
                if name is not None and not isinstance(name, str):
                    v.add("error", "BAD_TYPE", "tool_calls", "a tool name must be a string")
    schemas = row.get("tool_schemas")
    if schemas is not None and not isinstance(schemas, dict):
        v.add("error", "BAD_TYPE", "tool_schemas", "tool_schemas must be an object")
    for tool, contract in (schemas or {}).items() if isinstance(schemas, dict) else ():
        where = f"tool_schemas.{tool}"
        if not isinstance(contract, dict):
            v.add("error", "BAD_TYPE", where, "a contract must be an object")
        elif "json_schema" in contract:
            problem = _schema_problem(contracts.schema_key(contract["json_schema"]))
            if problem:
                v.add("error", "UNUSABLE_SCHEMA", where, f"unusable JSON Schema: {problem}")
        else:
            types = contract.get("types") or {}
            unknown = [t for t in types.values() if t not in COMPACT_TYPES] \
                if isinstance(types, dict) else ["?"]
            if unknown:
                v.add("error", "BAD_TYPE", where, f"unknown compact type {unknown[0]!r}",
                      "one of: " + ", ".join(COMPACT_TYPES))
    expected = row.get("expected_tool_calls")
    if expected is not None:
        if not isinstance(expected, list) or not all(
                isinstance(e, dict) and isinstance(e.get("name"), str) and
                _parses(e.get("arguments")) for e in expected):
            v.add("error", "BAD_TYPE", "expected_tool_calls",
                  "each expected call is an object with a string name and object arguments")


def _measurable(row: Mapping[str, Any], dimension: str, budgets: Mapping[str, Any]) -> tuple[
        bool, bool]:
    """(has a budget, has a measurement) for cost and latency rows."""
    if dimension == "cost":
        price = budgets.get("price") or {}
        priced = all(_number(price.get(k)) for k in ("input_per_mtok", "output_per_mtok"))
        measured = _number(row.get("cost_usd")) or (isinstance(row.get("usage"), dict) and priced)
        return _number(row.get("cost_budget_usd")) or _number(budgets.get("cost_usd")), measured
    measured = any(_number(row.get(k)) for k in (*LATENCY_MS, "latency_s"))
    return _number(row.get("latency_budget_ms")) or _number(budgets.get("latency_ms")), measured


def _labeled(row: Mapping[str, Any], dimension: str, budgets: Mapping[str, Any],
             v: Verdict) -> bool:
    suggested = row.get("_suggested")
    suggested = {k for k in suggested if isinstance(k, str)} \
        if isinstance(suggested, list | dict) else set()
    if dimension in ("cost", "latency"):
        budget, measured = _measurable(row, dimension, budgets)
        if not measured:
            v.add("warning", f"UNMEASURABLE_{dimension.upper()}", dimension,
                  f"no {dimension} measurement on this row")
        return budget and measured
    if dimension == "pii":
        if non_empty(row.get("_suggested")):
            v.add("warning", "UNCONFIRMED_LABELS", "_suggested",
                  "labels proposed by a model are not confirmed")
            return False
        return True
    keys = [k for k in ANSWER_KEYS[dimension] if non_empty(row.get(k))]
    if keys and all(k in suggested for k in keys):
        v.add("warning", "UNCONFIRMED_LABELS", "_suggested",
              "every answer-key field was proposed by a model and not confirmed")
        return False
    if not keys:
        v.add("warning", "MISSING_ANSWER_KEY", ANSWER_KEYS[dimension][0],
              f"no answer key for {dimension}", "add one of: " +
              ", ".join(ANSWER_KEYS[dimension]))
    return bool(keys)


def _warnings(row: Mapping[str, Any], dimension: str, v: Verdict) -> None:
    if dimension == "action_correctness":
        if "agent_actions" not in row and not row.get("tool_calls"):
            v.add("warning", "NO_OBSERVED_ACTIONS", "agent_actions", "no observed actions")
        if _integral_float(row.get("expected_state")):
            v.add("warning", "INTEGRAL_FLOAT_IN_STATE", "expected_state",
                  "an integral float such as 1.0 only matches a float", "write 1, not 1.0")
    if dimension == "injection":
        if not non_empty(row.get("injection")):
            v.add("warning", "NO_INJECTION_RECORDED", "injection", "the planted text is not "
                  "recorded")
        canaries = row.get("canary")
        for canary in [canaries] if isinstance(canaries, str) else canaries or []:
            if isinstance(canary, str) and 0 < len(canary.strip()) < 6:
                v.add("warning", "WEAK_CANARY", "canary", "a canary under 6 characters may "
                      "appear by chance")


def _integral_float(value: Any) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, dict):
        return any(_integral_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_integral_float(v) for v in value)
    return False


def classify(row: Mapping[str, Any], seen: set[str], budgets: Mapping[str, Any]) -> Verdict:
    """The class of one parsed row, with every error and warning (§5)."""
    v = Verdict(LABELED)
    row_id = row.get("id")
    if not isinstance(row_id, str) or not row_id.strip():
        v.add("error", "MISSING_ID", "id", "every row needs a non-blank string id")
    elif row_id in seen:
        v.add("error", "DUPLICATE_ID", "id", f"id {row_id!r} appears earlier",
              "use case_id to group repeated trials")
    else:
        seen.add(row_id)
    dimension = row.get("dimension")
    if not isinstance(dimension, str) or not dimension.strip():
        v.add("error", "MISSING_DIMENSION", "dimension", "the row names no dimension",
              "one of: " + ", ".join(DIMENSIONS))
    elif dimension not in DIMENSIONS:
        v.add("error", "UNKNOWN_DIMENSION", "dimension", f"unknown dimension {dimension!r}",
              "one of: " + ", ".join(DIMENSIONS))
    if v.messages or not isinstance(dimension, str):
        v.klass = INVALID
        return v
    required = REQUIRED.get(dimension)
    if required and not non_empty(row.get(required)):
        v.add("error", "MISSING_FIELD", required, f"{required} is required for {dimension}")
    _check_types(row, v)
    _check_tools(row, v)
    if any(m["level"] == "error" for m in v.messages):
        v.klass = INVALID
        return v
    _warnings(row, dimension, v)
    if not _labeled(row, dimension, budgets, v):
        v.klass = UNLABELED
    return v
