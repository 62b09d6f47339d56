"""JSON Schema translated to plain Python that answers "is this instance valid?".

Each keyword is one small function in ``KEYWORDS`` returning the conditions that make an
instance invalid, exactly as jsonschema's Draft 2020-12 decides them (in the ``ENGINE``
dialect, as ``engine.spec.schema.engine_dialect``: whole-text ``pattern``, asserted
``format: date``; in ``STRICT``, 4.0 is no integer, as a rubric's verdict schema). A keyword
or value it has no translation for raises ``Untranslated``, so a check is never looser than
jsonschema; annotations (``description``, ``default``, ``x-...``) are skipped, as jsonschema
skips them. ``engine.spec.checks`` writes the shipped schemas' checks into ``_checks.py`` at
build time, also for the schemas this repository's specs and rubrics bring;
``compile_check`` finds one of those by digest. Nothing is compiled at run time.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

# the engine's own schemas; jsonschema's Draft 2020-12; that with 4.0 no integer (rubrics)
ENGINE, PLAIN, STRICT = "engine", "plain", "strict"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
# annotations jsonschema skips, each with what the meta-schema asks of its value
ANNOTATIONS: dict[str, Callable[[Any], bool]] = {
    "$schema": lambda v: v == DRAFT, "$comment": lambda v: isinstance(v, str),
    "title": lambda v: isinstance(v, str), "description": lambda v: isinstance(v, str),
    "default": lambda v: True, "examples": lambda v: isinstance(v, list),
    "deprecated": lambda v: isinstance(v, bool), "readOnly": lambda v: isinstance(v, bool),
    "writeOnly": lambda v: isinstance(v, bool),
}


class Untranslated(ValueError):
    """A schema uses a keyword (or a value of one) this generator does not translate."""


# Each type as jsonschema's Draft 2020-12 type checker decides it (bool is not a number;
# 1.0 is an integer).
TYPES = {
    "object": "isinstance(x, dict)",
    "array": "isinstance(x, list)",
    "string": "isinstance(x, str)",
    "boolean": "isinstance(x, bool)",
    "null": "x is None",
    "number": "(isinstance(x, Number) and not isinstance(x, bool))",
    "integer": "(isinstance(x, int) and not isinstance(x, bool) or "
               "isinstance(x, float) and x.is_integer())",
}
STRICT_INTEGER = "(isinstance(x, int) and not isinstance(x, bool))"
_WITHIN = {"integer": {"number"}}  # a type known to hold implies these too


class Writer:
    """Writes one function per distinct (sub)schema and remembers them by meaning."""

    def __init__(self, dialect: str, shipped: bool = True) -> None:
        self.dialect, self.shipped = dialect, shipped  # a shipped schema may have an $id
        self.names: dict[str, str] = {}
        self.functions: list[str] = []
        self.prefix = {ENGINE: "_e", PLAIN: "_p", STRICT: "_s"}[dialect]

    def function(self, schema: Any) -> str:
        """The name of the function checking ``schema``, written on first need."""
        # key order is part of a schema's meaning: additionalProperties joins the
        # patternProperties keys in the schema's order (a back-reference numbers groups
        # across the joined pattern), so two orders are two checks (found by review)
        key = json.dumps(schema)
        if key not in self.names:
            name = self.names[key] = f"{self.prefix}{len(self.names)}"
            body = self.body(schema)
            self.functions.append(f"def {name}(x):\n" + "".join(f"    {b}\n" for b in body))
        return self.names[key]

    def body(self, schema: Any) -> list[str]:
        """The statements of one check: each bad condition returns False."""
        if schema is True or schema is False:
            return [f"return {schema}"]
        if not isinstance(schema, Mapping):
            raise Untranslated(f"a schema must be an object or a boolean, not {schema!r}")
        for key, value in schema.items():
            if key.startswith("x-") or key in KEYWORDS or (key == "$id" and self.shipped):
                continue
            if key not in ANNOTATIONS or not ANNOTATIONS[key](value):
                raise Untranslated(f"keyword {key!r} is not translated")
        known = _known(schema.get("type"))
        lines = []
        for key, keyword in KEYWORDS.items():
            if key in schema:
                lines += [f"if {bad}: return False"
                          for bad in keyword(self, schema[key], schema, known)]
        return [*lines, "return True"]


def _literal(value: Any) -> str:
    """``value`` as Python source; only JSON values (a NaN or a date has no literal here)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if not all(isinstance(k, str) for k in item):
                raise Untranslated(f"{item!r} has a key that is not text")
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise Untranslated(f"{item!r} is not a JSON number")
        elif not (item is None or isinstance(item, bool | int | float | str)):
            raise Untranslated(f"{item!r} is not a JSON value")
    return repr(value)


def _regex(pattern: Any) -> str:
    """A pattern jsonschema's meta-schema accepts (``format: regex``: Python compiles it)."""
    if not isinstance(pattern, str):
        raise Untranslated(f"pattern {pattern!r} is not text")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise Untranslated(f"pattern {pattern!r} is not a regular expression: {exc}") from None
    return repr(pattern)


def _known(types: Any) -> set[str]:
    """The types every instance past the ``type`` check has."""
    if isinstance(types, str) or (isinstance(types, list) and len(types) == 1):
        kind = types if isinstance(types, str) else types[0]
        return {kind, *_WITHIN.get(kind, ())}
    return set()


def _when(kind: str, known: set[str], bad: str) -> str:
    """``bad``, tested only for instances of ``kind`` (as each keyword applies to one type)."""
    return bad if kind in known else f"{TYPES[kind]} and ({bad})"


def _type(w: Writer, types: Any, schema: Mapping[str, Any], known: set[str]) -> list[str]:
    tests = TYPES if w.dialect != STRICT else {**TYPES, "integer": STRICT_INTEGER}
    names = [types] if isinstance(types, str) else types
    if not isinstance(names, list) or not names or not all(
            isinstance(n, str) and n in TYPES for n in names) or len(set(names)) < len(names):
        raise Untranslated(f"type {types!r} is not translated")
    if len(names) == 1:
        return [f"not {tests[names[0]]}"]
    return [f"not ({' or '.join(tests[n] for n in names)})"]


def _enum(w: Writer, values: Any, schema: Mapping[str, Any], known: set[str]) -> list[str]:
    if not isinstance(values, list):
        raise Untranslated(f"enum {values!r} is not a list")
    if all(isinstance(v, str) for v in values):  # text equals text only, whatever x is
        return [f"x not in {tuple(values)!r}"]
    return [f"not any(json_equal(x, v) for v in {_literal(values)})"]


def _const(w: Writer, value: Any, schema: Mapping[str, Any], known: set[str]) -> list[str]:
    return [f"x != {value!r}" if isinstance(value, str) else
            f"not json_equal(x, {_literal(value)})"]


def _required(w: Writer, names: Any, schema: Mapping[str, Any], known: set[str]) -> list[str]:
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or \
            len(set(names)) < len(names):
        raise Untranslated(f"required {names!r} is not a list of names")
    return [_when("object", known, " or ".join(f"{n!r} not in x" for n in names))] \
        if names else []


def _properties(w: Writer, props: Any, schema: Mapping[str, Any], known: set[str]) -> list[str]:
    if not isinstance(props, Mapping):
        raise Untranslated(f"properties {props!r} is not an object")
    out = []
    for name, sub in props.items():
        if sub is not True and sub != {}:
            out.append(_when("object", known, f"{name!r} in x and not {w.function(sub)}"
                                              f"(x[{name!r}])"))
    return out


def _additional(w: Writer, extra: Any, schema: Mapping[str, Any], known: set[str]) -> list[str]:
    if extra is True:
        return []
    names = sorted(schema.get("properties", {}))
    patterns = "|".join(schema.get("patternProperties", {}))  # jsonschema joins them so
    # a set display after `in` is compiled to one frozenset constant
    outside = f"k not in {{{', '.join(map(repr, names))}}}" if names else "True"
    if patterns:
        outside += f" and not re.search({_regex(patterns)}, k)"
    if extra is False:
        return [_when("object", known, f"any({outside} for k in x)")]
    return [_when("object", known, f"any({outside} and not {w.function(extra)}(x[k]) "
                                   "for k in x)")]


def _pattern_properties(w: Writer, patterns: Any, schema: Mapping[str, Any],
                        known: set[str]) -> list[str]:
    if not isinstance(patterns, Mapping):
        raise Untranslated(f"patternProperties {patterns!r} is not an object")
    return [_when("object", known, f"any(re.search({_regex(p)}, k) and not {w.function(sub)}(v) "
                                   "for k, v in x.items())") for p, sub in patterns.items()]


def _property_names(w: Writer, sub: Any, schema: Mapping[str, Any],
                    known: set[str]) -> list[str]:
    return [_when("object", known, f"not all(map({w.function(sub)}, x))")]


def _items(w: Writer, sub: Any, schema: Mapping[str, Any], known: set[str]) -> list[str]:
    if sub is True:
        return []
    if sub is False:
        return [_when("array", known, "len(x) > 0")]
    return [_when("array", known, f"not all(map({w.function(sub)}, x))")]


def _length(kind: str, op: str) -> Callable[[Writer, Any, Mapping[str, Any], set[str]],
                                              list[str]]:
    def keyword(w: Writer, n: Any, schema: Mapping[str, Any], known: set[str]) -> list[str]:
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise Untranslated(f"a length bound must be a whole number, not {n!r}")
        return [_when(kind, known, f"len(x) {op} {n!r}")]
    return keyword


def _bound(op: str) -> Callable[[Writer, Any, Mapping[str, Any], set[str]], list[str]]:
    def keyword(w: Writer, n: Any, schema: Mapping[str, Any], known: set[str]) -> list[str]:
        if not isinstance(n, int | float) or isinstance(n, bool):
            raise Untranslated(f"a bound must be a number, not {n!r}")
        return [_when("number", known, f"x {op} {_literal(n)}")]
    return keyword


def _unique(w: Writer, on: Any, schema: Mapping[str, Any], known: set[str]) -> list[str]:
    if not isinstance(on, bool):
        raise Untranslated(f"uniqueItems {on!r} is not true or false")
    return [_when("array", known, "not unique_items(x)")] if on else []


def _pattern(w: Writer, pattern: Any, schema: Mapping[str, Any], known: set[str]) -> list[str]:
    bad = f"not re.search({_regex(pattern)}, x)"
    if w.dialect == ENGINE and pattern.endswith("$"):  # a final $ is the end of the text
        bad += " or x.endswith('\\n')"
    return [_when("string", known, bad)]


def _format(w: Writer, name: Any, schema: Mapping[str, Any], known: set[str]) -> list[str]:
    # jsonschema asserts the formats its checker holds: the engine's holds "date" alone, a
    # plain validator none; any other format is an annotation to it
    if not isinstance(name, str):
        raise Untranslated(f"format {name!r} is not text")
    if w.dialect == ENGINE and name == "date":
        return [_when("string", known, "not date_format(x)")]
    return []


def _contains(w: Writer, sub: Any, schema: Mapping[str, Any], known: set[str]) -> list[str]:
    # without minContains / maxContains (untranslated): at least one item matches
    return [_when("array", known, f"not any(map({w.function(sub)}, x))")]


def _schemas(keyword: str, subs: Any, w: Writer) -> list[str]:
    if not isinstance(subs, list) or not subs:
        raise Untranslated(f"{keyword} {subs!r} is not a non-empty list")
    return [f"{w.function(s)}(x)" for s in subs]


def _all_of(w: Writer, subs: Any, schema: Mapping[str, Any], known: set[str]) -> list[str]:
    return [f"not {call}" for call in _schemas("allOf", subs, w)]


def _one_of(w: Writer, subs: Any, schema: Mapping[str, Any], known: set[str]) -> list[str]:
    return [f"({' + '.join(_schemas('oneOf', subs, w))}) != 1"]


# keyword -> its translation (bad conditions), in the order the checks are written: the
# type first, then what is cheap
KEYWORDS: dict[str, Callable[[Writer, Any, Mapping[str, Any], set[str]], list[str]]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "required": _required,
    "minProperties": _length("object", "<"),
    "maxProperties": _length("object", ">"),
    "properties": _properties,
    "additionalProperties": _additional,
    "patternProperties": _pattern_properties,
    "propertyNames": _property_names,
    "minItems": _length("array", "<"),
    "maxItems": _length("array", ">"),
    "uniqueItems": _unique,
    "items": _items,
    "contains": _contains,
    "minLength": _length("string", "<"),
    "maxLength": _length("string", ">"),
    "pattern": _pattern,
    "format": _format,
    "minimum": _bound("<"),
    "maximum": _bound(">"),
    "exclusiveMinimum": _bound("<="),
    "exclusiveMaximum": _bound(">="),
    "allOf": _all_of,
    "oneOf": _one_of,
}


HEAD = [
    "# Generated by `python -m engine.spec.checks` from engine/schemas/*.schema.json and",
    "# the other schemas that ship as code: do not edit (engine/spec/checks.py says how).",
    '"""Is this instance valid? Each shipped schema, as jsonschema would answer."""',
    "# ruff: noqa",
    "# mypy: ignore-errors",
    "import re",
    "from numbers import Number",
    "",
    "from engine.spec._keywords import date_format, json_equal, unique_items",
    "", ""]


def spec_function(schema: Any, dialect: str = PLAIN) -> Writer | None:
    """The writer holding a check for a schema a spec brings (its last function checks the
    schema itself), when every keyword it uses is translated and valid as the meta-schema
    asks, so jsonschema's ``check_schema`` would pass it too; else None. Used at build time
    by ``engine.spec.checks`` (and by tests): nothing is compiled at run time."""
    from engine.spec.schema import outside_refs

    if outside_refs(schema):  # refused as before, by the caller's own check (found by review)
        return None
    writer = Writer(dialect, shipped=False)
    try:
        _literal(schema)
        writer.function(schema)
    except (Untranslated, RecursionError):
        return None
    return writer


TABLES = {PLAIN: "PLAIN", STRICT: "STRICT"}


def compile_check(schema: Any, dialect: str = PLAIN) -> Callable[[Any], bool] | None:
    """The build-time check of a schema a spec brings, when this schema (by digest) is one
    ``python -m engine.spec.checks`` wrote a check for (the schemas the repository's specs
    and rubrics ship); else None, and jsonschema checks and validates as before. Nothing is
    generated or compiled at run time: the engine runs no ``exec``."""
    from engine.spec.schema import _generated, outside_refs, schema_digest

    if outside_refs(schema):  # refused as before, by the caller's own check
        return None
    check: Callable[[Any], bool] | None = _generated(TABLES[dialect], schema_digest(schema))
    return check


def blocks(functions: Iterable[str]) -> list[str]:
    return [f"{f}\n" for f in functions]


