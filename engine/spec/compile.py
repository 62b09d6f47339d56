"""Compile parameters once at load time: JMESPath, regexes, formulas, JSON Schemas.

A primitive's parameter schema marks what to compile with ``x-jmespath``, ``x-regex``,
``x-formula``, ``x-schema`` and ``x-schema-file``; ``run`` then receives compiled values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jmespath

from engine import protocols
from engine.errors import FormulaError, Problem
from engine.formula import ANY, BOOLEAN, NUMBER, compile_formula
from engine.inspections import LOADERS
from engine.records.clip import clip
from engine.records.strict_json import DEEP, TooDeep, shallow
from engine.spec import opened
from engine.spec import yaml as _yaml
from engine.spec.schema import Checker, offline, outside_refs
from engine.spec.translate import compile_check
from engine.spec.yaml import Document
from engine.spec.yaml import Path as JPath

_REGEX_FLAGS = {"ignorecase": re.IGNORECASE, "multiline": re.MULTILINE, "dotall": re.DOTALL}


class _Direct:
    """A JMESPath expression simple enough to evaluate without the tree walker: a dotted
    field path, or such a path compared for equality with a string literal. Same results
    as jmespath.search; the per-record loop evaluates these millions of times."""

    def __init__(self, compiled: Any, keys: tuple[str, ...], literal: Any) -> None:
        self.compiled, self.keys, self.literal = compiled, keys, literal
        self.expression = compiled.expression

    def _get(self, data: Any) -> Any:
        for key in self.keys:
            if not isinstance(data, dict):
                return None
            data = data.get(key)
        return data

    def equality(self) -> tuple[tuple[str, ...], str] | None:
        """(field path, literal) for a comparison with a string literal, else None: the
        per-record plan (engine/run/plan.py) turns such guards into one table lookup."""
        return None if self.literal is _NO_LITERAL else (self.keys, self.literal)

    def search(self, data: Any) -> Any:
        """The value the expression selects (or the comparison's boolean)."""
        value = self._get(data)
        if self.literal is _NO_LITERAL:
            return value
        return isinstance(value, str) and value == self.literal


_NO_LITERAL = object()


def _field_path(node: dict[str, Any]) -> tuple[str, ...] | None:
    if node.get("type") == "field":
        return (node["value"],)
    if node.get("type") == "subexpression":
        parts = [_field_path(child) for child in node["children"]]
        if all(p is not None for p in parts):
            return tuple(k for p in parts if p is not None for k in p)
    return None


class _Guarded:
    """``A && B`` where A is a direct comparison: when A is false the result is A's value
    (false), without walking B; otherwise the whole expression is searched as usual."""

    def __init__(self, compiled: Any, guard: _Direct) -> None:
        self.compiled, self.guard = compiled, guard
        self.expression = compiled.expression

    def search(self, data: Any) -> Any:
        """The value of the whole expression."""
        return self.compiled.search(data) if self.guard.search(data) else False


def _direct_tree(compiled: Any, tree: dict[str, Any]) -> _Direct | None:
    keys = _field_path(tree)
    if keys is not None:
        return _Direct(compiled, keys, _NO_LITERAL)
    if tree.get("type") == "comparator" and tree.get("value") == "eq":
        left, right = tree["children"]
        keys = _field_path(left)
        if keys is not None and right.get("type") == "literal" and \
                isinstance(right.get("value"), str):
            return _Direct(compiled, keys, right["value"])
    return None


class _Either:
    """``a || b`` of two field paths: a if JMESPath counts it true, else b (``case_id ||
    id``, the release gate's case selector), without the tree walker."""

    def __init__(self, compiled: Any, first: _Direct, second: _Direct) -> None:
        self.compiled, self.first, self.second = compiled, first, second
        self.expression = compiled.expression

    def search(self, data: Any) -> Any:
        """The first value unless JMESPath counts it false, then the second."""
        value = self.first.search(data)
        if value == "" or value == [] or value == {} or value is None or value is False:
            return self.second.search(data)
        return value


def _direct(compiled: Any) -> Any:
    tree = compiled.parsed
    found = _direct_tree(compiled, tree)
    if found is not None:
        return found
    if tree.get("type") == "or_expression":
        first, second = (_direct_tree(compiled, child) for child in tree["children"])
        if first is not None and second is not None and first.equality() is None and \
                second.equality() is None:
            return _Either(compiled, first, second)
    if tree.get("type") == "and_expression":
        guard = _direct_tree(compiled, tree["children"][0])
        if guard is not None and guard.literal is not _NO_LITERAL:
            return _Guarded(compiled, guard)
    return compiled


def selector(source: str) -> Any:
    """A compiled JMESPath expression the engine writes itself (it is valid)."""
    return _direct(jmespath.compile(source))


def compile_selector(doc: Document, where: JPath, source: str,
                     problems: list[Problem]) -> Any:
    """A compiled JMESPath expression, or None with a located problem."""
    try:
        return _direct(jmespath.compile(source))
    except jmespath.exceptions.JMESPathError as exc:
        col = getattr(exc, "lex_position", 0) or 0
        reason = getattr(exc, "msg", None) or str(exc).splitlines()[0]
        problems.append(doc.problem(where, "BAD_JMESPATH",
                                    f"'{source}' is not valid JMESPath: {reason}",
                                    col_offset=col))
        return None


@dataclass(frozen=True)
class Site:
    """Where one parameter is compiled: its document and path, its sibling parameters (as
    written, defaults filled in), where problems go, and how a file it names is resolved
    (inside the spec root, and bound into the policy digest)."""

    doc: Document
    where: JPath
    params: Mapping[str, Any]
    problems: list[Problem]
    resolve: Callable[[str, JPath], Path | None]

    def problem(self, code: str, message: str, hint: str = "") -> None:
        """Record a problem located at this parameter."""
        self.problems.append(self.doc.problem(self.where, code, message, hint))


# (site, parameter name, value, its schema) -> {output name: compiled value}
Compiler = Callable[[Site, str, Any, Mapping[str, Any]], dict[str, Any]]


def compile_params(doc: Document, where: JPath, schema: Mapping[str, Any],
                   params: dict[str, Any], problems: list[Problem],
                   resolve: Callable[[str, JPath], Path | None]) -> dict[str, Any]:
    """Return ``params`` with defaults filled in and every marked value compiled; record
    problems at their place. A parameter's mark (``x-NAME`` in its schema) picks its
    compiler from :data:`COMPILERS` or a protocol's table; formulas compile last, since
    they may name a rubric's verdict fields."""
    props = schema.get("properties", {})
    params = {k: v["default"] for k, v in props.items() if "default" in v} | params
    out = dict(params)
    table = {**COMPILERS, **protocols.compilers()}
    for key, value in params.items():
        prop = props.get(key, {})
        mark = next((m for m in table if prop.get(m)), None)
        if mark is None and isinstance(prop.get("additionalProperties"), Mapping) and \
                prop["additionalProperties"].get("x-jmespath"):
            mark = "x-jmespath-map"
        if mark is not None:
            site = Site(doc, where + (key,), params, problems, resolve)
            out |= table[mark](site, key, value, prop)
    for key, value in params.items():
        if props.get(key, {}).get("x-formula"):
            rubric = out.get("rubric")
            names = dict.fromkeys([*params.get("bind", {}), *params.get("inputs", {}),
                                   *(getattr(rubric, "fields", ()))], ANY)
            out[key] = compile_checked_formula(doc, where + (key,), value, names, BOOLEAN,
                                               problems)
    return out


def _selector(site: Site, key: str, value: Any, prop: Mapping[str, Any]) -> dict[str, Any]:
    return {key: compile_selector(site.doc, site.where, value, site.problems),
            f"{key}_source": value}


def _selector_map(site: Site, key: str, value: Any,
                  prop: Mapping[str, Any]) -> dict[str, Any]:
    return {key: {name: compile_selector(site.doc, site.where + (name,), src, site.problems)
                  for name, src in value.items()}}


def _selector_list(site: Site, key: str, value: Any,
                   prop: Mapping[str, Any]) -> dict[str, Any]:
    return {key: [compile_selector(site.doc, site.where + (i,), src, site.problems)
                  for i, src in enumerate(value)]}


def _regex_param(site: Site, key: str, value: Any, prop: Mapping[str, Any]) -> dict[str, Any]:
    return {key: _regex(site.doc, site.where, value, site.params.get("flags", []),
                        site.problems)}


def _schema_param(site: Site, key: str, value: Any, prop: Mapping[str, Any]) -> dict[str, Any]:
    return {key: _json_schema(site.doc, site.where, value, site.problems)}


def _schema_file_param(site: Site, key: str, value: Any,
                       prop: Mapping[str, Any]) -> dict[str, Any]:
    # the file's schema takes the place of an inline ``schema``
    return {"schema": _schema_file(site.doc, site.where, value, site.problems, site.resolve)}


def _load_param(site: Site, key: str, value: Any, prop: Mapping[str, Any]) -> dict[str, Any]:
    return {key: load_data_file(site.doc, site.where, value, LOADERS[prop["x-load"]],
                                site.problems, site.resolve)}


def _rubric_param(site: Site, key: str, value: Any, prop: Mapping[str, Any]) -> dict[str, Any]:
    return {key: _rubric(site.doc, site.where, value, site.params.get("inputs", {}),
                         site.problems)}


# The engine's own parameter marks, in the order a parameter's first mark is looked for.
COMPILERS: dict[str, Compiler] = {
    "x-jmespath": _selector,
    "x-jmespath-map": _selector_map,  # a mapping whose values are selectors
    "x-regex": _regex_param,
    "x-schema": _schema_param,
    "x-schema-file": _schema_file_param,
    "x-jmespath-list": _selector_list,
    "x-load": _load_param,
    "x-rubric": _rubric_param,
}


def _regex(doc: Document, where: JPath, source: str, flags: list[str],
           problems: list[Problem]) -> Any:
    bits = 0
    for flag in flags:
        bits |= _REGEX_FLAGS[flag]
    try:
        return re.compile(source, bits)
    except re.error as exc:
        problems.append(doc.problem(where, "BAD_REGEX", f"not a valid regular expression: {exc}"))
        return None


def _json_schema(doc: Document, where: JPath, schema: Any, problems: list[Problem]) -> Any:
    fast = compile_check(schema)  # one the meta-schema passes, with no $ref in it
    if fast is not None:
        return Checker(schema, fast, lambda: _validator(schema))
    import jsonschema
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        problems.append(doc.problem(where, "BAD_SCHEMA",
                                    f"not a valid JSON Schema: {exc.message}"))
        return None
    outside = outside_refs(schema)
    if outside:
        problems.append(doc.problem(where, "BAD_SCHEMA", f"'$ref' {clip(outside[0])} points "
                                    "outside the schema, and nothing outside is fetched",
                                    "put the definition under $defs and refer to it as "
                                    "#/$defs/NAME"))
        return None
    return Checker(schema, None, lambda: _validator(schema))


def _validator(schema: Any) -> Any:
    """jsonschema's validator of a spec's schema: words what is wrong, fetches nothing."""
    import jsonschema
    return jsonschema.Draft202012Validator(schema, registry=offline())


def _schema_file(doc: Document, where: JPath, rel: str, problems: list[Problem],
                 resolve: Callable[[str, JPath], Path | None]) -> Any:
    target = resolve(rel, where)
    if target is None:
        return None
    try:
        schema = shallow(opened.read_text(target))
    except TooDeep:  # as a spec's YAML nested as deep is (engine/spec/yaml.py)
        problems.append(doc.problem(where, "SPEC_TOO_DEEP",
                                    f"'{rel}': {DEEP}, deeper than any schema needs"))
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(doc.problem(where, "BAD_SCHEMA", f"'{rel}' is not readable JSON: {exc}"))
        return None
    return _json_schema(doc, where, schema, problems)


def _rubric(doc: Document, where: JPath, name: str, inputs: Any,
            problems: list[Problem]) -> Any:
    """A rubric by name, checked against the variables the inspection provides."""
    from engine.judge import RubricError, load_rubric

    try:
        rubric = load_rubric(name, Path(doc.file).resolve().parent / "rubrics")
    except RubricError as exc:
        problems.append(doc.problem(where, "BAD_RUBRIC", str(exc)))
        return None
    shadowed = sorted(set(rubric.fields) & set(inputs))
    if shadowed:  # the judge owns its verdict fields, never the inspection's inputs
        problems.append(doc.problem(where, "VERDICT_SHADOWS_INPUT",
                                    f"rubric '{name}' declares verdict field "
                                    f"'{shadowed[0]}', which is also an input's name",
                                    "rename the input or the verdict field"))
    missing = sorted(rubric.variables - set(inputs))
    if missing:
        problems.append(doc.problem(where, "UNKNOWN_VARIABLE",
                                    f"rubric '{name}' uses {missing}, which the inspection's "
                                    "inputs do not provide"))
    return rubric


def load_data_file(doc: Document, where: JPath, rel: str, build: Callable[[Any], Any],
                   problems: list[Problem], resolve: Callable[[str, JPath], Path | None]) -> Any:
    """Load a YAML data table (lexicon, detector, fixes) and build it; problems are located
    at the spec key that names the file."""
    target = resolve(rel, where)
    if target is None:
        return None
    try:
        text = opened.read_bytes(target).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(doc.problem(where, "BAD_DATA_FILE", f"'{rel}' is not readable: {exc}"))
        return None
    table, found = _yaml.parse(text.removeprefix("\ufeff"), rel)
    problems.extend(found)
    if table is None:
        return None
    try:
        return build(table.data)
    except ValueError as exc:
        problems.append(doc.problem(where, "BAD_DATA_FILE", f"'{rel}': {exc}"))
        return None


def condition_names(categories: Mapping[str, Any]) -> dict[str, str]:
    """Names a policy condition may use: rates by category name, counts, and 'overall'
    (only the categories' names are read: a Policy's schema-broken spec gives them too)."""
    names = {"overall": NUMBER, "weighted": NUMBER}
    for name in categories:
        names[name] = NUMBER
        for count in ("n", "passed", "failed", "errors"):
            names[f"{count}_{name}"] = NUMBER
    return names


def compile_checked_formula(doc: Document, where: JPath, source: str,
                            names: Mapping[str, str], want: str,
                            problems: list[Problem]) -> Any:
    """A compiled formula giving ``want`` (or any), or None with a located problem."""
    try:
        formula = compile_formula(source, names)
    except FormulaError as exc:
        problems.append(doc.problem(where, exc.code, str(exc), col_offset=exc.col - 1))
        return None
    if formula.type not in (want, ANY):
        problems.append(doc.problem(where, "FORMULA_TYPE",
                                    f"the formula gives a {formula.type}, not a {want}"))
        return None
    return formula
