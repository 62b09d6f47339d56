"""The generated schema checks answer exactly as jsonschema does (engine/spec/translate.py).

The shipped module is what the generator writes from the shipped schemas; on every YAML
document in the repository, on targeted mutations of them and on instances drawn from the
schemas, a generated check and jsonschema agree on validity; a schema a spec brings gets a
check only when jsonschema's meta-schema check would pass it.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import _utils

from engine.spec import _checks, checks
from engine.spec import schema as _schema
from engine.spec import yaml as _yaml
from engine.spec._keywords import date_format, json_equal, unique_items
from engine.spec.translate import (
    ENGINE,
    HEAD,
    PLAIN,
    STRICT,
    Untranslated,
    Writer,
    blocks,
    compile_check,
    spec_function,
)

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = checks.shipped_schemas()
PLAIN_SCHEMAS = checks.plain_schemas()


def test_the_shipped_module_is_what_the_generator_writes() -> None:
    # regenerate with `python -m engine.spec.checks` whenever a shipped schema changes
    shipped = checks.TARGET.read_text("utf-8")
    assert shipped == checks.module_text(SHIPPED, PLAIN_SCHEMAS, checks.spec_schemas())


def test_every_shipped_schema_has_its_check_in_use() -> None:
    assert set(_checks.SHIPPED) == set(SHIPPED)
    for name in SHIPPED:
        assert _schema.validator(name).fast is _checks.SHIPPED[name][1]
    for schema in PLAIN_SCHEMAS.values():
        assert _schema.validator_for(schema).fast is not None


def test_a_schema_edited_since_generation_falls_back_to_jsonschema() -> None:
    edited = {**PLAIN_SCHEMAS["inspection regex_present"], "minProperties": 2}
    check = _schema.validator_for(edited)
    assert check.fast is None and not check.is_valid({"actual": "output"})


def test_an_untranslated_keyword_is_refused() -> None:
    for schema in ({"if": {"type": "string"}}, {"$ref": "#/$defs/a"}, {"prefixItems": []},
                   {"type": "mapping"}, {"minContains": 1, "contains": {}}, {"anyOf": [{}]},
                   {"pattern": "("}, {"minLength": -1}, {"required": ["a", "a"]},
                   {"enum": [math.nan]}, {"uniqueItems": 1}):
        with pytest.raises(Untranslated):
            Writer(PLAIN, shipped=False).function(schema)
        assert compile_check(schema) is None and spec_function(schema) is None


def _reference(schema: Any, dialect: str) -> jsonschema.protocols.Validator:
    if dialect == ENGINE:
        return _schema.engine_dialect()(schema, format_checker=_schema.engine_formats())
    if dialect == STRICT:
        from engine.judge._rubrics import strict_validator
        return strict_validator()(schema)
    return jsonschema.Draft202012Validator(schema)


def _all_checks() -> list[tuple[str, str, Any, Callable[[Any], bool]]]:
    found = [(name, ENGINE, schema, _checks.SHIPPED[name][1]) for name, schema in SHIPPED.items()]
    found += [(name, PLAIN, schema, _checks.PLAIN[_schema.schema_digest(schema)])
              for name, schema in PLAIN_SCHEMAS.items()]
    return found


CHECKS = _all_checks()
REFERENCE = {name: _reference(schema, dialect) for name, dialect, schema, _ in CHECKS}


def _agree(instance: Any, only: str | None = None) -> None:
    for name, _, _, check in CHECKS:
        if only is None or name == only:
            assert check(instance) == REFERENCE[name].is_valid(instance), (name, instance)


def _documents() -> Iterator[tuple[str, Any]]:
    """Every YAML document in the repository's specs, scaffold, test data and conformance
    cases, and every mapping inside one that names a kind."""
    folders = ["specs", "engine/scaffold", "tests/data", "tests/conformance", "rubrics"]
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.y*ml")):
            try:
                doc, _ = _yaml.parse(path.read_text("utf-8"), str(path))
            except (UnicodeDecodeError, ValueError):
                continue
            if doc is not None:
                yield str(path.relative_to(ROOT)), doc.data


def _mappings(value: Any) -> Iterator[Any]:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "kind" in node or "type" in node or "name" in node:
                yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


DOCUMENTS = list(_documents())


def test_the_repository_documents_are_found() -> None:
    assert len(DOCUMENTS) > 100
    kinds = {d.get("kind") for _, d in DOCUMENTS if isinstance(d, dict)}
    assert {"Policy", "Evaluation", "Suite"} <= kinds


def test_checks_agree_with_jsonschema_on_every_repository_document() -> None:
    valid = 0
    for _, data in DOCUMENTS:
        for node in _mappings(data):
            _agree(node)
            kind = node.get("kind") if isinstance(node, dict) else None
            if isinstance(kind, str) and kind.lower() in SHIPPED:
                valid += REFERENCE[kind.lower()].is_valid(node)
                for entry in node.get("spec", {}).get("inspections", []) or []:
                    params = {k: v for k, v in entry.items() if k not in ("id", "type")}
                    _agree(params)
    assert valid > 20  # the shipped specs among them, valid


SWAPS = [None, True, False, 0, 1, 1.0, 1.5, -1, 101, "", "x", "a\n", "2027-02-30",
         "2027-01-31", [], ["x"], ["x", "x"], {}, {"x": 1}]


def _mutations(value: Any, budget: int) -> Iterator[Any]:
    """``value`` changed in one place: a node swapped for another type, a key dropped, an
    unknown key added, text given a final newline or upper case."""
    paths: list[tuple[Any, ...]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        path, node = stack.pop()
        paths.append(path)
        if isinstance(node, dict):
            stack.extend(((*path, k), v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend(((*path, i), v) for i, v in enumerate(node))
    for n, path in enumerate(paths[::max(1, len(paths) // budget)]):  # spread over it
        some = [SWAPS[(n * 5 + i) % len(SWAPS)] for i in range(5)]  # each swap, in turn
        for swap in [*some, "UPPER", "newline", "drop", "extra"]:
            copied = copy.deepcopy(value)
            parent, node = None, copied
            for key in path:
                parent, node = node, node[key]
            new: Any = swap
            if swap == "UPPER":
                new = node.upper() if isinstance(node, str) else node
            elif swap == "newline":
                new = node + "\n" if isinstance(node, str) else node
            elif swap == "extra":
                if isinstance(node, dict):
                    node["unknown_key"] = 1
                yield copied
                continue
            if parent is None:
                yield copied if swap == "drop" else new
                continue
            if swap == "drop":
                del parent[path[-1]]
            else:
                parent[path[-1]] = new
            yield copied


def test_checks_agree_with_jsonschema_on_mutations_of_the_shipped_specs() -> None:
    seen = 0
    for name, data in DOCUMENTS:
        kind = data.get("kind") if isinstance(data, dict) else None
        if not name.startswith(("specs/", "engine/scaffold")) or not isinstance(kind, str) \
                or kind.lower() not in SHIPPED:
            continue
        for mutated in _mutations(data, 40):
            _agree(mutated, kind.lower())
            seen += 1
        for entry in data.get("spec", {}).get("inspections", []) or []:
            params = {k: v for k, v in entry.items() if k not in ("id", "type")}
            for mutated in _mutations(params, 6):
                _agree(mutated)
    assert seen > 500


def _from_schema(schema: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Instances near ``schema``: mostly shaped as it asks, sometimes anything JSON."""
    anything = st.recursive(st.none() | st.booleans() | st.integers(-3, 200) |
                            st.floats(-2, 200, allow_nan=False) | st.sampled_from(SWAPS[9:13]),
                            lambda inner: st.lists(inner, max_size=3) |
                            st.dictionaries(st.sampled_from(["x", "id", "name"]), inner,
                                            max_size=2), max_leaves=4)
    if not isinstance(schema, dict) or depth > 6:
        return anything
    shaped: list[st.SearchStrategy[Any]] = []
    if "enum" in schema:
        shaped.append(st.sampled_from(schema["enum"]))
    if "const" in schema:
        shaped.append(st.just(schema["const"]))
    for sub in schema.get("oneOf", []) + schema.get("allOf", []):
        shaped.append(_from_schema(sub, depth + 1))
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else types
    if "object" in types or "properties" in schema:
        props = schema.get("properties", {})
        required = schema.get("required", [])
        optional = sorted(set(props) - set(required))
        fixed = {k: _from_schema(props.get(k, {}), depth + 1) for k in required}
        shaped.append(st.fixed_dictionaries(
            fixed, optional={k: _from_schema(props[k], depth + 1) for k in optional[:12]}))
    if "array" in types:
        shaped.append(st.lists(_from_schema(schema.get("items", {}), depth + 1), max_size=3))
    if "string" in types:
        shaped.append(st.text("ab_-0129Z\n ", max_size=8) | st.sampled_from(
            ["2027-01-31", "2027-02-30", "gate2\n", "a", "run_id"]))
    if {"number", "integer"} & set(types):
        shaped.append(st.sampled_from([0, 1, 1.0, 0.5, -1, 100, 101, True]) |
                      st.integers(-5, 500))
    if "boolean" in types:
        shaped.append(st.booleans())
    return st.one_of(*shaped, anything) if shaped else anything


@pytest.mark.parametrize("name", sorted(SHIPPED) + sorted(PLAIN_SCHEMAS))
def test_checks_agree_with_jsonschema_on_drawn_instances(name: str) -> None:
    schema = SHIPPED.get(name, PLAIN_SCHEMAS.get(name))

    @settings(max_examples=60, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_from_schema(schema))
    def agree(instance: Any) -> None:
        _agree(instance, name)

    agree()


SPEC_SCHEMAS = [json.loads((ROOT / p).read_text("utf-8")) for p in (
    "specs/example/schemas/reply.schema.json",
    "specs/finding-quality-discovery/schema/submission.schema.json")]


def written(schema: Any, dialect: str = PLAIN) -> Any:
    """The check the generator would write for a spec's schema, compiled here in the test
    (the engine itself compiles nothing at run time), or None when it writes none."""
    writer = spec_function(schema, dialect)
    if writer is None:
        return None
    space: dict[str, Any] = {}
    exec(compile("\n".join([*HEAD[5:], *blocks(writer.functions)]), "<test>", "exec"), space)
    return space[writer.names[json.dumps(schema)]]


def test_the_shipped_specs_and_rubrics_schemas_have_generated_checks() -> None:
    plain, strict = checks.spec_schemas()
    assert len(plain) == 2 and len(strict) == 3
    for schemas, dialect in ((plain, PLAIN), (strict, STRICT)):
        for name, schema in schemas.items():
            assert compile_check(schema, dialect) is not None, name
            edited = {**schema, "minProperties": 7}  # another digest: jsonschema's
            assert compile_check(edited, dialect) is None, name
    # a dialect's table never answers for the other's
    assert compile_check(next(iter(strict.values())), PLAIN) is None


@pytest.mark.parametrize("dialect", [PLAIN, STRICT])
@pytest.mark.parametrize("index", range(len(SPEC_SCHEMAS)))
def test_a_spec_schema_check_agrees_with_jsonschema(index: int, dialect: str) -> None:
    schema = SPEC_SCHEMAS[index]
    check = written(schema, dialect)
    assert check is not None
    reference = _reference(schema, dialect)

    @settings(max_examples=60, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_from_schema(schema))
    def agree(instance: Any) -> None:
        assert check(instance) == reference.is_valid(instance)

    agree()
    for mutated in _mutations(schema, 8):  # schemas mutated: a check only for a valid one
        found = written(mutated, dialect)
        if found is not None:
            jsonschema.Draft202012Validator.check_schema(mutated)


def test_the_rubric_dialect_refuses_a_whole_float() -> None:
    check = written({"type": "integer"}, STRICT)
    plain = written({"type": "integer"})
    assert check is not None and plain is not None
    assert not check(4.0) and plain(4.0) and check(4) and not check(True)


@given(st.text("0123456789-٣", min_size=8, max_size=11) | st.sampled_from(
    ["2027-02-30", "2027-02-28", "2024-02-29", "2023-02-29", "2027-01-31\n", "２０２７-01-01"]))
@settings(max_examples=200, deadline=None, database=None)
def test_date_format_is_jsonschemas(text: str) -> None:
    assert date_format(text) == _schema.engine_formats().conforms(text, "date")


VALUES = st.recursive(st.none() | st.booleans() | st.sampled_from([0, 1, 1.0, 2, 0.0]) |
                      st.sampled_from(["a", "b", "1"]),
                      lambda inner: st.lists(inner, max_size=3) |
                      st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
                      max_leaves=6)


@given(VALUES, VALUES)
@settings(max_examples=300, deadline=None, database=None)
def test_equality_is_jsonschemas(one: Any, two: Any) -> None:
    assert json_equal(one, two) == _utils.equal(one, two)


@given(st.lists(VALUES, max_size=5))
@settings(max_examples=300, deadline=None, database=None)
def test_unique_items_is_jsonschemas(items: list[Any]) -> None:
    assert unique_items(items) == _utils.uniq(items)
