"""Tool contracts in a compact JSON Schema subset, checked without a general validator.

Most tool contracts use a few Draft 2020-12 keywords (``type``, ``properties``,
``required``, ``additionalProperties``, ``enum``, bounds). A schema built only from the
keywords in ``KEYWORDS`` and the annotations in ``ANNOTATIONS``, each with a value the
meta-schema accepts, compiles to a checker that reports what
``jsonschema.Draft202012Validator(...).iter_errors`` reports: the same keyword, path and
message, in the same order. Any other schema (``$ref``, ``format``, ``anyOf``, an unknown
keyword, a value the meta-schema refuses) compiles to None and the caller hands it to
jsonschema as before, so the two can never differ. A schema that compiles is valid
against the meta-schema (agent-release-gate §5 ``UNUSABLE_SCHEMA``), and has no
reference to follow.

Each keyword is a row: ``(value, schema, compile) -> check`` (None when the value is not
one the meta-schema accepts), and a check is ``instance -> [(path, keyword, message)]``.
As in jsonschema, a check does not know where it is: the schema holding the keyword
stamps the keyword's name and the parent stamps the path as the error comes up.
"""

from __future__ import annotations

import json
import operator
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from functools import lru_cache
from numbers import Number
from typing import Any

import orjson

Error = tuple[tuple[Any, ...], str | None, str]  # (path, keyword, message)
Check = Callable[[Any], list[Error]]
Build = Callable[[Any, dict[str, Any], Callable[[Any], "Check | None"]], "Check | None"]
HERE = ""  # the keyword that made the error, stamped by the schema holding it

DIALECTS = ("https://json-schema.org/draft/2020-12/schema",
            "https://json-schema.org/draft/2020-12/schema#")
# an $id that is a URI reference under any checker of that format, and joins without fail
_ID = re.compile(r"(?:https?://[A-Za-z0-9.-]+(?::[0-9]+)?)?[A-Za-z0-9._~/-]*#?")


def _number(v: Any) -> bool:
    kind = type(v)  # the common cases first: Number is an abstract class, slower to ask
    return kind is int or kind is float or kind is not bool and isinstance(v, Number)


def _integer(v: Any) -> bool:  # Draft 6 on: 1.0 is an integer, True is not
    return not isinstance(v, bool) and (isinstance(v, int) or
                                        isinstance(v, float) and v.is_integer())


TYPES: dict[str, Callable[[Any], bool]] = {
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "integer": _integer,
    "null": lambda v: v is None,
    "number": _number,
    "object": lambda v: isinstance(v, dict),
    "string": lambda v: isinstance(v, str),
}


def equal(one: Any, two: Any) -> bool:
    """JSON equality as jsonschema's ``enum`` and ``const`` see it (True is not 1)."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(equal(i, j) for i, j in zip(one, two, strict=True))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(k in two and equal(v, two[k])
                                            for k, v in one.items())
    return bool(_unbool(one) == _unbool(two))


_YES, _NO = object(), object()  # True and False, kept apart from 1 and 0


def _unbool(value: Any) -> Any:
    return _YES if value is True else _NO if value is False else value


def _true(instance: Any) -> list[Error]:
    return []


def _false(instance: Any) -> list[Error]:
    return [((), None, f"False schema does not allow {instance!r}")]


def _descend(check: Check, instance: Any, step: Any, out: list[Error]) -> None:
    # jsonschema yields a false schema's error before it stamps the step onto the path
    if check is _false:
        out += _false(instance)
    elif check is not _true:
        out += [((step, *path), keyword, message) for path, keyword, message in check(instance)]


def _one(test: Callable[[Any], bool], message: Callable[[Any], str]) -> Check:
    return lambda instance: [((), HERE, message(instance))] if test(instance) else []


def _type(value: Any, schema: dict[str, Any], sub: Any) -> Check | None:
    names = [value] if isinstance(value, str) else value
    if not (isinstance(names, list) and names and len(set(map(str, names))) == len(names)
            and all(isinstance(n, str) and n in TYPES for n in names)):
        return None
    tests, reprs = [TYPES[n] for n in names], ", ".join(repr(n) for n in names)
    only = tests[0]
    return _one((lambda i: not only(i)) if len(tests) == 1 else
                (lambda i: not any(t(i) for t in tests)),
                lambda i: f"{i!r} is not of type {reprs}")


def _enum(value: Any, schema: dict[str, Any], sub: Any) -> Check | None:
    if not isinstance(value, list) or _mentions_ref(value):
        return None
    return _one(lambda i: all(not equal(each, i) for each in value),
                lambda i: f"{i!r} is not one of {value!r}")


def _const(value: Any, schema: dict[str, Any], sub: Any) -> Check | None:
    if _mentions_ref(value):
        return None
    return _one(lambda i: not equal(i, value), lambda i: f"{value!r} was expected")


def _bound(test: Callable[[Any, Any], bool], text: str) -> Build:
    def build(value: Any, schema: dict[str, Any], sub: Any) -> Check | None:
        if not _number(value):
            return None
        return _one(lambda i: _number(i) and test(i, value),
                    lambda i: f"{i!r} is {text} {value!r}")
    return build


def _multiple_of(value: Any, schema: dict[str, Any], sub: Any) -> Check | None:
    if not (_number(value) and value > 0):
        return None

    def failed(instance: Any) -> bool:  # jsonschema's own arithmetic, overflow included
        if not _number(instance):
            return False
        if isinstance(value, float):
            quotient = instance / value  # an int too large for a float raises, as there
            try:
                return bool(int(quotient) != quotient)
            except OverflowError:
                return (Fraction(instance) / Fraction(value)).denominator != 1
        return bool(instance % value)
    return _one(failed, lambda i: f"{i!r} is not a multiple of {value}")


def _size(kind: str, longer: bool, edge: str, other: str) -> Build:
    """minLength / maxLength / minItems / maxItems / minProperties / maxProperties."""
    def build(value: Any, schema: dict[str, Any], sub: Any) -> Check | None:
        if not (_integer(value) and value >= 0):
            return None
        word = edge if value == (0 if longer else 1) else other
        is_kind = TYPES[kind]
        if longer:
            return _one(lambda i: is_kind(i) and len(i) > value, lambda i: f"{i!r} {word}")
        return _one(lambda i: is_kind(i) and len(i) < value, lambda i: f"{i!r} {word}")
    return build


def _pattern(value: Any, schema: dict[str, Any], sub: Any) -> Check | None:
    if not isinstance(value, str):
        return None
    try:  # a pattern Python warns about goes to jsonschema, which warns as before
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            search = re.compile(value).search
    except Exception:  # noqa: BLE001 - any pattern re refuses is jsonschema's to report
        return None
    return _one(lambda i: isinstance(i, str) and not search(i),
                lambda i: f"{i!r} does not match {value!r}")


def _required(value: Any, schema: dict[str, Any], sub: Any) -> Check | None:
    if not (isinstance(value, list) and all(isinstance(n, str) for n in value)
            and len(set(value)) == len(value)):
        return None

    def check(instance: Any) -> list[Error]:
        if not isinstance(instance, dict):
            return []
        return [((), HERE, f"{n!r} is a required property") for n in value
                if n not in instance]
    return check


def _properties(value: Any, schema: dict[str, Any], sub: Any) -> Check | None:
    if not isinstance(value, dict):
        return None
    checks = [(name, sub(s)) for name, s in value.items()]
    if any(c is None for _, c in checks):
        return None

    def check(instance: Any) -> list[Error]:
        out: list[Error] = []
        if isinstance(instance, dict):
            for name, c in checks:
                if name in instance:
                    _descend(c, instance[name], name, out)
        return out
    return check


def _additional(value: Any, schema: dict[str, Any], sub: Any) -> Check | None:
    known, each = schema.get("properties", {}), sub(value)
    if not isinstance(known, dict) or each is None:
        return None

    def check(instance: Any) -> list[Error]:
        out: list[Error] = []
        if not isinstance(instance, dict):
            return out
        extras = [name for name in instance if name not in known]
        if value is False and extras:
            extras.sort(key=str)
            listed = ", ".join(repr(e) for e in extras)
            verb = "was" if len(extras) == 1 else "were"
            out.append(((), HERE, f"Additional properties are not allowed ({listed} {verb} "
                                  "unexpected)"))
        elif isinstance(value, dict):
            for name in extras:
                _descend(each, instance[name], name, out)
        return out
    return check


def _items(value: Any, schema: dict[str, Any], sub: Any) -> Check | None:
    each = sub(value)
    if each is None:
        return None

    def check(instance: Any) -> list[Error]:
        out: list[Error] = []
        if not isinstance(instance, list) or not instance:
            return out
        if value is False:
            rest = instance if len(instance) != 1 else instance[0]
            out.append(((), HERE, f"Expected at most 0 items but found {len(instance)} "
                                  f"extra: {rest!r}"))
        else:
            for index, item in enumerate(instance):
                _descend(each, item, index, out)
        return out
    return check


KEYWORDS: dict[str, Build] = {
    "additionalProperties": _additional,
    "const": _const,
    "enum": _enum,
    "exclusiveMaximum": _bound(operator.ge, "greater than or equal to the maximum of"),
    "exclusiveMinimum": _bound(operator.le, "less than or equal to the minimum of"),
    "items": _items,
    "maxItems": _size("array", True, "is expected to be empty", "is too long"),
    "maxLength": _size("string", True, "is expected to be empty", "is too long"),
    "maxProperties": _size("object", True, "is expected to be empty", "has too many properties"),
    "maximum": _bound(operator.gt, "greater than the maximum of"),
    "minItems": _size("array", False, "should be non-empty", "is too short"),
    "minLength": _size("string", False, "should be non-empty", "is too short"),
    "minProperties": _size("object", False, "should be non-empty",
                           "does not have enough properties"),
    "minimum": _bound(operator.lt, "less than the minimum of"),
    "multipleOf": _multiple_of,
    "pattern": _pattern,
    "properties": _properties,
    "required": _required,
    "type": _type,
}

# keywords no check reads, with the values the meta-schema accepts for them
ANNOTATIONS: dict[str, Callable[[Any], bool]] = {
    "$comment": lambda v: isinstance(v, str),
    "$id": lambda v: isinstance(v, str) and _ID.fullmatch(v) is not None,
    "$schema": lambda v: v in DIALECTS,
    "default": lambda v: not _mentions_ref(v),
    "deprecated": lambda v: isinstance(v, bool),
    "description": lambda v: isinstance(v, str),
    "examples": lambda v: isinstance(v, list) and not _mentions_ref(v),
    "readOnly": lambda v: isinstance(v, bool),
    "title": lambda v: isinstance(v, str),
    "writeOnly": lambda v: isinstance(v, bool),
}


def _mentions_ref(value: Any) -> bool:
    """A ``$ref`` / ``$dynamicRef`` member anywhere in a value, which the outside-reference
    checks of the caller would see; such a schema is left to them and to jsonschema."""
    if isinstance(value, dict):
        return "$ref" in value or "$dynamicRef" in value or any(
            _mentions_ref(v) for v in value.values())
    return isinstance(value, list) and any(_mentions_ref(v) for v in value)


def _compile(schema: Any) -> Check | None:
    if schema is True:
        return _true
    if schema is False:
        return _false
    if not isinstance(schema, dict):
        return None
    checks: list[tuple[str, Check]] = []
    for keyword, value in schema.items():  # in jsonschema's order: the text's, sorted
        if keyword in ANNOTATIONS:
            if not ANNOTATIONS[keyword](value):
                return None
            continue
        build = KEYWORDS.get(keyword)
        check = build(value, schema, _compile) if build else None
        if check is None:
            return None
        checks.append((keyword, check))

    def run(instance: Any) -> list[Error]:
        out: list[Error] = []
        for keyword, check in checks:
            found = check(instance)
            if found:
                out += [(p, keyword if k == HERE else k, m) for p, k, m in found]
        return out
    return run


def schema_key(schema: Any) -> str:
    """A schema's sorted JSON text: the key ``compiled`` (and a validator cache) takes. Two
    different schemas never share one (it parses back to the schema), written by orjson
    with sorted keys, or by ``json.dumps`` for what orjson refuses (an integer beyond 64
    bits, a lone surrogate); the two forms of one schema only miss each other's cache."""
    try:
        return orjson.dumps(schema, option=orjson.OPT_SORT_KEYS).decode()
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(schema, sort_keys=True)


@lru_cache(maxsize=1024)
def compiled(text: str) -> Check | None:
    """The checker for a schema given as its sorted JSON text, or None outside the subset."""
    try:
        return _compile(json.loads(text))
    except RecursionError:
        return None


def problems(name: str, check: Check, args: Any) -> list[str]:
    """The evidence lines for one call, sorted by path as jsonschema's errors are."""
    errors = sorted(check(args), key=lambda e: list(e[0]))
    return [f"{name}: {keyword} at /{'/'.join(map(str, path))}: {message}"
            for path, keyword, message in errors]
