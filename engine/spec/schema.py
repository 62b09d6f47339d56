"""JSON Schema validation that speaks in located, coded problems.

A schema that ships with the engine (``engine/schemas/*.schema.json``, each primitive's
parameter schema, each format's options) is first checked by plain Python generated from it
at build time (``engine/spec/_checks.py``, written by ``python -m engine.spec.checks``);
jsonschema is imported only when that check says no, to say what is wrong and where, or for
a schema with no generated check (one a spec or a record brings, or a shipped one edited
since the checks were generated).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping
from functools import cache, cached_property
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol

from engine.errors import Problem, did_you_mean
from engine.spec._keywords import date_format
from engine.spec.yaml import Document, Path

if TYPE_CHECKING:
    import jsonschema
    import referencing
    from jsonschema.exceptions import ValidationError

_TYPE_WORDS = {
    "object": "a mapping", "array": "a list", "string": "text", "number": "a number",
    "integer": "a whole number", "boolean": "true or false", "null": "null",
}


@cache
def load_schema(name: str) -> dict[str, Any]:
    """One of the engine's own JSON Schemas, by file stem (``policy``, ``scorecard``...)."""
    text = (resources.files("engine") / "schemas" / f"{name}.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


# A registry that retrieves nothing: a schema from a spec or a record is checked against
# itself only. jsonschema otherwise fetches a ``$ref`` to ``file://`` or ``https://`` while
# it validates, at run time: a file no governance bundle signs, or a request the records
# chose (docs/provenance.md).
@cache
def offline() -> referencing.Registry[Any]:
    """The registry that retrieves nothing, made on first use (referencing is imported then)."""
    import referencing
    return referencing.Registry()


def __getattr__(name: str) -> Any:
    """``OFFLINE``, the name older callers import inside their functions: ``offline()``."""
    if name == "OFFLINE":
        return offline()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def outside_refs(schema: Any) -> list[str]:
    """Every ``$ref`` / ``$dynamicRef`` of a schema that points outside it (not ``#...``)."""
    found, stack = [], [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("$ref", "$dynamicRef") and isinstance(value, str) and \
                        not value.startswith("#"):
                    found.append(value)
                elif isinstance(value, dict | list):
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, dict | list))
    return found


def is_date(text: str) -> bool:
    """True for a real calendar date written YYYY-MM-DD."""
    return bool(re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text)) and date_format(text)


# -- validators: the generated check first, jsonschema on first need.

class Validating(Protocol):
    """What ``problems`` asks of a validator (a jsonschema one, or a ``Checker``)."""

    def is_valid(self, instance: Any) -> bool: ...

    def iter_errors(self, instance: Any) -> Iterator[ValidationError]: ...


def schema_digest(schema: Any) -> str:
    """The digest of a schema's meaning that keys its generated check: its JSON with keys in
    the schema's own order (the order of patternProperties is meaning, see translate.py)."""
    text = json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Checker:
    """One schema's validator: a generated check says whether an instance is valid; the
    jsonschema validator, built on first need, says what is wrong."""

    def __init__(self, schema: Any, fast: Callable[[Any], bool] | None,
                 build: Callable[[], jsonschema.protocols.Validator]) -> None:
        self.schema, self.fast, self._build = schema, fast, build

    @cached_property
    def full(self) -> jsonschema.protocols.Validator:
        """The jsonschema validator of the same schema (imports jsonschema)."""
        return self._build()

    def is_valid(self, instance: Any) -> bool:
        """Whether ``instance`` is valid, by the generated check when there is one."""
        if self.fast is not None:
            return self.fast(instance)
        return self.full.is_valid(instance)

    def iter_errors(self, instance: Any) -> Iterator[ValidationError]:
        """Each of jsonschema's errors for ``instance`` (none when the check passes it)."""
        if self.fast is not None and self.fast(instance):
            return iter(())
        return self.full.iter_errors(instance)


def _generated(table: str, key: str) -> Any:
    try:
        from engine.spec import _checks
    except ImportError:  # a tree without the generated module still validates
        return None
    return getattr(_checks, table, {}).get(key)


def _whole_pattern(validator: Any, pattern: str, instance: Any,
                   schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    """``pattern``, with a final ``$`` meaning the end of the text: Python's ``$`` also
    matches before a final newline, so "gate2\n" passed ``^[a-z][a-z0-9_-]*$`` as a name
    and became a folder name no seal can name."""
    from jsonschema.exceptions import ValidationError
    if not validator.is_type(instance, "string"):
        return
    if not re.search(pattern, instance) or (pattern.endswith("$") and instance.endswith("\n")):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def engine_dialect() -> type[jsonschema.Draft202012Validator]:
    """Draft 2020-12 as the engine's own schemas mean it: whole-text patterns, and dates
    checked as dates (``format_checker=engine_formats()``)."""
    import jsonschema
    extended: type[jsonschema.Draft202012Validator] = jsonschema.validators.extend(
        jsonschema.Draft202012Validator, {"pattern": _whole_pattern})
    return extended


@cache
def engine_formats() -> jsonschema.FormatChecker:
    """The formats the engine's own schemas assert: calendar dates."""
    import jsonschema
    return jsonschema.FormatChecker(formats=("date",))


def _build_shipped(name: str) -> jsonschema.protocols.Validator:
    built: jsonschema.protocols.Validator = engine_dialect()(load_schema(name),
                                                             format_checker=engine_formats())
    return built


# The engine's own schemas and the primitives' parameter schemas ship with the code: their
# check against the meta-schema is a test (tests/test_startup.py), not a cost of every run.
@cache
def validator(name: str) -> Checker:
    """A validator for one of the engine's schemas, built once per process."""
    found = _generated("SHIPPED", name)
    fast = found[1] if found and found[0] == schema_digest(load_schema(name)) else None
    return Checker(load_schema(name), fast, lambda: _build_shipped(name))


def _words(types: Any) -> str:
    types = [types] if isinstance(types, str) else list(types)
    return " or ".join(_TYPE_WORDS.get(t, t) for t in types)


def problems(doc: Document, check: Validating, instance: Any,
             base: Path = ()) -> list[Problem]:
    """Every schema violation of ``instance`` (found at ``base`` in ``doc``) as a problem."""
    if check.is_valid(instance):  # the generated check: no jsonschema when all is well
        return []
    from jsonschema.exceptions import relevance
    out: list[Problem] = []
    errors = sorted(check.iter_errors(instance), key=relevance)
    for rank, err in enumerate(errors):
        for found in _describe(doc, err, base + tuple(err.absolute_path), rank):
            if found not in out:
                out.append(found)  # a date breaks its pattern and its format: say it once
    return out


def _describe(doc: Document, err: ValidationError, path: Path, rank: int) -> Iterator[Problem]:
    kw, schema = err.validator, err.schema
    if not isinstance(schema, Mapping):
        schema = {}
    if kw == "additionalProperties" and isinstance(err.instance, Mapping):
        known = set(schema.get("properties", {}))
        for key in sorted(set(err.instance) - known):
            yield doc.problem(path + (key,), "UNKNOWN_KEY", f"'{key}' is not a known key here",
                              did_you_mean(key, known), key=True, rank=rank)
        return
    if kw == "required":
        missing = [k for k in err.validator_value if k not in err.instance]
        for key in missing:
            yield doc.problem(path, "MISSING_KEY", f"'{key}' is required here", rank=rank)
        return
    if kw == "oneOf" and isinstance(err.instance, Mapping):
        chosen = _branch(err)
        if chosen is not None:  # the mapping names one branch's keys: say what is wrong there
            from jsonschema.exceptions import relevance
            for sub in sorted(chosen, key=relevance):
                yield from _describe(doc, sub, path + tuple(sub.path), rank)
            return
        options = [sorted(s.get("required", [])) for s in err.validator_value]
        names = " or ".join("'" + "', '".join(o) + "'" for o in options)
        yield doc.problem(path, "ONE_OF", f"give exactly one of {names}", rank=rank)
        return
    if "propertyNames" in err.relative_schema_path and isinstance(err.instance, str):
        rule = str(schema.get("description", "use lower-case letters, digits and '_'"))
        better = _valid_name(err.instance, schema)
        yield doc.problem(path + (err.instance,), "BAD_NAME",
                          f"'{err.instance}' is not a valid name",
                          rule + (f": try '{better}'" if better else ""), key=True, rank=rank)
        return
    code = str(schema.get("x-code", ""))  # a key whose problems have their own code
    if kw == "type":
        message = f"must be {_words(err.validator_value)}"
    elif kw in ("enum", "const"):
        allowed = err.validator_value if kw == "enum" else [err.validator_value]
        message = f"{json.dumps(err.instance)} is not one of {', '.join(map(json.dumps, allowed))}"
        hint = did_you_mean(str(err.instance), [str(a) for a in allowed])
        yield doc.problem(path, code or "BAD_VALUE", message, hint, rank=rank)
        return
    elif kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        message = f"{err.instance} is out of range ({_range(schema)})"
        code = code or "OUT_OF_RANGE"
        if schema.get("maximum") == 1 and isinstance(err.instance, int | float) \
                and 1 < err.instance <= 100:  # a percentage where a share is wanted
            yield doc.problem(path, code, message, f"a rate is a share of 1: did you mean "
                              f"{err.instance / 100:g}?", rank=rank)
            return
    elif kw in ("minItems", "minProperties", "minLength"):
        message, code = "must not be empty", code or "EMPTY"
    elif kw == "pattern" and schema.get("format") != "date":
        shown = f"'{err.instance}'" if err.instance.isprintable() else repr(err.instance)
        message, code = f"{shown} is not a valid name or value", code or "BAD_VALUE"
    elif kw in ("pattern", "format") and schema.get("format") == "date":
        yield doc.problem(path, "BAD_DATE", f"'{err.instance}' is not a calendar date",
                          "write it as YYYY-MM-DD, e.g. 2027-01-31", rank=rank)
        return
    elif kw == "uniqueItems":
        message, code = "holds the same entry twice", code or "DUPLICATE_ENTRY"
    else:
        message = err.message
    yield doc.problem(path, code or ("BAD_TYPE" if kw == "type" else "SCHEMA"), message,
                      rank=rank)


def _valid_name(name: str, schema: Mapping[str, Any]) -> str:
    """The name made to fit a name pattern ('data-safety' -> 'data_safety'), or ''."""
    pattern = schema.get("pattern")
    for guess in (re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_"),
                  re.sub(r"[^A-Z0-9_]+", "_", name.upper()).strip("_")):
        guess = guess[:int(schema.get("maxLength", len(guess)))]
        if guess and isinstance(pattern, str) and re.fullmatch(pattern, guess):
            return guess
    return ""


def _branch(err: ValidationError) -> list[ValidationError] | None:
    """The errors of the one ``oneOf`` branch whose required keys the mapping all has, when
    exactly one branch fits that way and it failed on something else."""
    fits = [i for i, branch in enumerate(err.validator_value)
            if isinstance(branch, Mapping) and branch.get("required")
            and all(k in err.instance for k in branch["required"])]
    if len(fits) != 1:
        return None
    found = [e for e in err.context or () if e.relative_schema_path and
             e.relative_schema_path[0] == fits[0]]
    return found or None


def _range(schema: Mapping[str, Any]) -> str:
    lo = schema.get("minimum", schema.get("exclusiveMinimum"))
    hi = schema.get("maximum", schema.get("exclusiveMaximum"))
    left = "(" if "exclusiveMinimum" in schema else "["
    right = ")" if "exclusiveMaximum" in schema else "]"
    if hi is None:
        return f"at least {lo}" if left == "[" else f"more than {lo}"
    return f"{left}{lo}, {hi}{right}"


_BUILT: dict[int, Checker] = {}


def validator_for(schema: Mapping[str, Any]) -> Checker:
    """A validator for a primitive's parameter schema (or a format's options), built once
    per schema: plain Draft 2020-12, as jsonschema's own ``Draft202012Validator``."""
    built = _BUILT.get(id(schema))
    if built is None:
        try:
            fast = _generated("PLAIN", schema_digest(schema))
        except (TypeError, ValueError):  # not JSON: no generated check can be its
            fast = None
        built = _BUILT[id(schema)] = Checker(schema, fast, lambda: _plain(schema))
    return built


def _plain(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    import jsonschema
    built: jsonschema.protocols.Validator = jsonschema.Draft202012Validator(schema)
    return built
