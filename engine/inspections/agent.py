"""Primitives over what an agent did: tool_call, action_sequence, state_match, must_include.

Semantics follow agent-release-gate §2.3 (tool calls), §4 (actions and final state) and §2
(task completion). Field names default to Assevra's, so datasets are read unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from engine.inspections import contracts
from engine.inspections._base import (
    ERROR,
    MISSING,
    SELECTOR,
    Context,
    Outcome,
    Primitive,
    clip,
    expectation,
    observation,
    params_schema,
    select,
    verdict,
)
from engine.records.strict_json import loads_record
from engine.spec.schema import outside_refs

if TYPE_CHECKING:
    import jsonschema

COMPACT_TYPES = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers by value (25 == 25.0), booleans only booleans, recursive."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def state_matches(expected: Any, observed: Any, path: str = "$") -> list[str]:
    """Mismatches of observed against expected: objects as recursive subsets, arrays exact
    and ordered, scalar types significant (1 != 1.0, true != 1)."""
    if isinstance(expected, dict):
        if not isinstance(observed, dict):
            return [f"{path}: expected an object"]
        out = []
        for key, value in expected.items():
            if key not in observed:
                out.append(f"{path}.{key}: missing")
            else:
                out += state_matches(value, observed[key], f"{path}.{key}")
        return out
    if isinstance(expected, list):
        if not isinstance(observed, list) or len(observed) != len(expected):
            return [f"{path}: expected a list of {len(expected)}"]
        return [m for i, (e, o) in enumerate(zip(expected, observed, strict=True))
                for m in state_matches(e, o, f"{path}[{i}]")]
    if type(expected) is not type(observed) or expected != observed:
        return [f"{path}: expected {json.dumps(expected)}, got {json.dumps(clip(observed))}"]
    return []


def state_match(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """The observed final state matches the expected one; no observed state is ERROR."""
    expected, observed = select(params["expected"], unit), select(params["observed"], unit)
    if expected is MISSING:
        return Outcome(ERROR, code="NOTHING_TO_VERIFY", message="no expected state")
    if observed is MISSING:
        return Outcome(ERROR, code="NO_OUTCOME_EVIDENCE", message="no observed state")
    problems = state_matches(expected, observed)
    return verdict(not problems, expected, observed, "; ".join(problems))


def _strings(value: Any) -> list[str]:
    if value is None or value is MISSING:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def observed_actions(unit: Mapping[str, Any], params: Mapping[str, Any]) -> list[str] | None:
    """``agent_actions`` as strings, else the names of the tool calls; None when the unit
    records neither (unknown, never "no action")."""
    actions = select(params["actions"], unit)
    if actions is not MISSING:
        return _strings(actions)
    calls = select(params["calls"], unit)
    if calls is MISSING or not isinstance(calls, dict | list):
        return None  # unknown (or no list of calls): never "no action"
    calls = [calls] if isinstance(calls, dict) else calls
    return [n for n in (call_name(c) for c in calls if isinstance(c, dict)) if n]


def _sequence_problems(expected: list[str], observed: list[str], mode: str) -> str:
    want, seen = [a.lower() for a in expected], [a.lower() for a in observed]
    if mode == "exact":
        ok = want == seen
    elif mode == "set":
        ok = set(want) <= set(seen)
    else:
        it = iter(seen)
        ok = all(any(a == b for b in it) for a in want)
    return "" if ok else f"expected actions {expected} ({mode}), observed {observed}"


def action_sequence(unit: Mapping[str, Any], params: Mapping[str, Any],
                    ctx: Context) -> Outcome:
    """Expected actions occur (ordered, exact or set), none forbidden, final state matches."""
    fields = {k: select(params[k], unit) for k in ("expected", "forbidden", "mode")}
    has_state = _has_key(unit, params["expected_state_source"]) or \
        select(params["expected_state"], unit) is not MISSING
    if fields["expected"] is MISSING and fields["forbidden"] is MISSING and not has_state:
        return Outcome(ERROR, code="NOTHING_TO_VERIFY", message="no action expectation")
    mode = str(fields["mode"]).lower() if fields["mode"] is not MISSING else "ordered"
    found = observed_actions(unit, params)
    if found is None and (fields["expected"] is not MISSING or
                          fields["forbidden"] is not MISSING):
        return Outcome(ERROR, code="MISSING_VALUE", message="no actions or tool calls "
                       "recorded: which actions were taken is unknown")
    observed = found or []
    problems: list[str] = []
    if has_state:
        state = select(params["observed_state"], unit)
        if state is MISSING:
            return Outcome(ERROR, code="NO_OUTCOME_EVIDENCE",
                           message="expected_state is set but observed_state is absent")
        problems += [f"state {p}" for p in
                     state_matches(select(params["expected_state"], unit) or {}, state)]
    forbidden = {a.lower() for a in _strings(fields["forbidden"])}
    taken = [a for a in observed if a.lower() in forbidden]
    if taken:
        problems.append(f"forbidden actions taken: {taken}")
    expected = _strings(fields["expected"])
    if expected and (complaint := _sequence_problems(expected, observed, mode)):
        problems.append(complaint)
    message = "; ".join(problems) or ("final state matched" if has_state and not expected
                                      and not forbidden else "")
    return verdict(not problems, {"actions": expected, "mode": mode,
                                  "forbidden": sorted(forbidden)}, {"actions": observed},
                   message)


def _has_key(unit: Mapping[str, Any], dotted: str | None) -> bool:
    """True when a plain dotted key exists, even with a null or empty value."""
    if not dotted:
        return False
    node: Any = unit
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def call_name(call: Mapping[str, Any]) -> str | None:
    """``name``, else ``tool``, else ``function`` (or ``function.name``)."""
    for key in ("name", "tool"):
        if isinstance(call.get(key), str) and call[key]:
            return str(call[key])
    function = call.get("function")
    if isinstance(function, dict):
        function = function.get("name")
    return function if isinstance(function, str) and function else None


def call_arguments(call: Mapping[str, Any]) -> tuple[bool | None, Any]:
    """(ok, arguments): the first of arguments/args/input, from ``function`` if an object.
    ``ok`` is None when the call records no arguments (no such key, ``null``, or blank
    text): a producer that did not record them (content capture off) has not said they
    were empty, so a check that needs them has no evidence."""
    source = call["function"] if isinstance(call.get("function"), dict) else call
    for key in ("arguments", "args", "input"):
        if key in source:
            value = source[key]
            break
    else:
        return None, None
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, None
    if isinstance(value, str):
        try:  # evidence: the strict record reader (no NaN, no name given twice)
            value = loads_record(value)
        except ValueError:
            return False, None
    return isinstance(value, dict), value


@lru_cache(maxsize=1024)
def _validator(text: str) -> jsonschema.Draft202012Validator:
    import jsonschema  # only for contracts outside engine.inspections.contracts' subset

    from engine.spec.schema import OFFLINE

    # nothing outside the contract is fetched (a record's $ref to file:// or https://)
    return jsonschema.Draft202012Validator(
        json.loads(text), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
        registry=OFFLINE)


def contract_validator(schema: Any) -> jsonschema.Draft202012Validator:
    """One validator per distinct schema (keyed by its sorted JSON text), built once."""
    return _validator(contracts.schema_key(schema))


def _contract_problems(name: str, args: dict[str, Any], contract: Any,
                       key: str | None = None) -> list[str]:
    """What is wrong with one call's arguments under its contract; ``key``: the contract's
    ``schema_key``, when the caller made it already."""
    if not isinstance(contract, dict):
        return []
    if "json_schema" in contract:
        check = contracts.compiled(key if key is not None else
                                   contracts.schema_key(contract["json_schema"]))
        if check is not None:  # the same problems jsonschema reports, without it
            return contracts.problems(name, check, args)
        outside = outside_refs(contract["json_schema"])
        if outside:
            return [f"{name}: the contract's $ref {outside[0][:200]!r} points outside it "
                    "and is not followed"]
        errors = sorted(contract_validator(contract["json_schema"]).iter_errors(args),
                        key=lambda e: list(e.absolute_path))
        return [f"{name}: {e.validator} at /{'/'.join(map(str, e.absolute_path))}: {e.message}"
                for e in errors]
    out = [f"{name}: missing required argument '{k}'" for k in contract.get("required", [])
           if k not in args]
    for key, kind in (contract.get("types") or {}).items():
        if key in args and not COMPACT_TYPES.get(kind, lambda v: False)(args[key]):
            out.append(f"{name}: argument '{key}' is not {kind}")
    for key, allowed in (contract.get("enum") or {}).items():
        if key in args and not any(json_equal(args[key], a) for a in allowed):
            out.append(f"{name}: argument '{key}' is not one of {clip(allowed)}")
    return out


class Calls:
    """What ``tool_call`` found in one unit before it words an outcome."""

    __slots__ = ("allowed", "expected", "forbidden", "parsed", "problems", "unrecorded")

    def __init__(self, allowed: list[str], forbidden: set[str], expected: list[Any]) -> None:
        self.allowed, self.forbidden, self.expected = allowed, forbidden, expected
        self.problems: list[str] = []
        self.unrecorded: list[str] = []  # checks that need arguments the evidence lacks
        self.parsed: list[tuple[str, dict[str, Any] | None]] = []


def checked_calls(unit: Mapping[str, Any], params: Mapping[str, Any],
                  keys: Mapping[str, str] | None = None) -> Calls | Outcome:
    """Every call named, parsed, permitted and within its contract, and the expected calls
    made: what was found, or the ERROR outcome when there is nothing to check. ``keys``:
    contracts' ``schema_key`` by tool, made once for the row by a caller that has them."""
    calls = select(params["calls"], unit)
    if calls is MISSING:
        return Outcome(ERROR, code="MISSING_VALUE", message="no tool calls recorded")
    calls = [calls] if isinstance(calls, dict) else calls
    if not isinstance(calls, list):
        return Outcome(ERROR, code="BAD_VALUE", message="tool_calls is not a list or an object")
    allowed = _strings(select(params["allowed"], unit))
    forbidden = set(_strings(select(params["forbidden"], unit)))
    schemas = select(params["contracts"], unit)
    schemas = schemas if isinstance(schemas, dict) else {}
    expected = select(params["expected"], unit)
    found = Calls(allowed, forbidden, expected if isinstance(expected, list) else [])
    if not (allowed or forbidden or schemas or found.expected):
        return Outcome(ERROR, code="NOTHING_TO_VERIFY", message="no tool-call contract")
    for i, call in enumerate(calls):
        _one_call(found, i, call, schemas, keys)
    for want in found.expected:
        _expected_call(found, want)
    return found


def _one_call(found: Calls, i: int, call: Any, schemas: dict[str, Any],
              keys: Mapping[str, str] | None) -> None:
    problems = found.problems
    name = call_name(call) if isinstance(call, dict) else None
    if name is None:
        problems.append(f"call {i}: no tool name")
        return
    ok, args = call_arguments(call)
    if ok is False:
        problems.append(f"{name}: arguments are not a JSON object")
        return
    found.parsed.append((name, args))
    if found.allowed and name not in found.allowed:
        problems.append(f"{name}: not in allowed_tools")
    if name in found.forbidden:
        problems.append(f"{name}: forbidden tool")
    if args is None:
        if isinstance(schemas.get(name), dict):
            found.unrecorded.append(f"{name} (call {i}): its contract cannot be checked")
        return
    problems += _contract_problems(name, args, schemas.get(name),
                                   keys.get(name) if keys is not None else None)


def _expected_call(found: Calls, want: Any) -> None:
    if not isinstance(want, dict):
        return
    wanted = want.get("arguments") or {}
    if isinstance(wanted, str):
        wanted = json.loads(wanted) if wanted.strip() else {}
    if any(name == want.get("name") and (not wanted or args is not None and all(
            k in args and json_equal(args[k], v) for k, v in wanted.items()))
            for name, args in found.parsed):  # a name-only expectation needs no arguments
        return
    if wanted and any(name == want.get("name") and args is None for name, args in found.parsed):
        found.unrecorded.append(f"expected call {want.get('name')} {clip(wanted)}: a call of "
                                "it records no arguments")
    else:
        found.problems.append(f"expected call {want.get('name')} {clip(wanted)} not made")


def tool_call(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """Every call named, parsed, permitted and within its contract; expected calls made."""
    found = checked_calls(unit, params)
    if isinstance(found, Outcome):
        return found
    problems, unrecorded = found.problems, found.unrecorded
    observed = [{"name": n, "arguments": clip(a)} if a is not None else
                {"name": n, "arguments_recorded": False} for n, a in found.parsed]
    expectation = {"allowed": found.allowed, "forbidden": sorted(found.forbidden),
                   "expected": clip(found.expected)}
    if unrecorded and not problems:  # a violation found is a FAIL whatever else is missing
        return Outcome(ERROR, expectation, observed, "tool-call arguments not recorded: "
                       + "; ".join(unrecorded), code="MISSING_VALUE")
    return verdict(not problems, expectation, observed, "; ".join(problems))


def must_include(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """Every listed item is a case-insensitive substring of the output."""
    output, items = select(params["output"], unit), select(params["items"], unit)
    if output is MISSING or not isinstance(output, str):
        return Outcome(ERROR, code="MISSING_VALUE", message="the output is missing or not text")
    items = _strings(items)
    if not items:
        return Outcome(ERROR, code="NOTHING_TO_VERIFY", message="must_include is empty")
    folded = output.lower()
    absent = [i for i in items if i.lower() not in folded]
    return verdict(not absent, {"includes": items}, output,
                   f"missing: {clip(absent)}" if absent else "")


def _observed(**defaults: str) -> dict[str, Any]:
    """Selectors of what the agent did, with their default record fields."""
    return {key: observation({**SELECTOR, "default": value}) for key, value in defaults.items()}


def _expected(**defaults: str) -> dict[str, Any]:
    """Selectors of what the agent should have done. The defaults are Assevra's record
    fields, governance's only where the format's records are the pinned suite; for any
    other format the Evaluation points them at ``case.expected.<field>``
    (engine/spec/expectations.py)."""
    return {key: expectation({**SELECTOR, "default": value})
            for key, value in defaults.items()}


TABLE = {
    "state_match": Primitive(state_match, params_schema(
        {**_expected(expected="expected_state"), **_observed(observed="observed_state")}, []),
        "observed state matches: objects as subsets, arrays exact, types significant"),
    "action_sequence": Primitive(action_sequence, params_schema(
        {**_expected(expected="expected_actions", forbidden="forbidden_actions",
                     mode="action_match"),
         **_observed(actions="agent_actions", calls="tool_calls"),
         **_expected(expected_state="expected_state"),
         **_observed(observed_state="observed_state")}, []),
        "expected actions occur (ordered / exact / set), none forbidden, final state matches"),
    "tool_call": Primitive(tool_call, params_schema(
        {**_observed(calls="tool_calls"),
         **_expected(allowed="allowed_tools", forbidden="forbidden_tools",
                     contracts="tool_schemas", expected="expected_tool_calls")}, []),
        "every call named, permitted and within its JSON Schema or compact contract"),
    "must_include": Primitive(must_include, params_schema(
        {**_observed(output="agent_output"), **_expected(items="must_include")}, []),
        "every item is a case-insensitive substring of the output"),
}
