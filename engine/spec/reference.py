"""Generate docs/reference.md from the spec schemas and the inspection table.

Run ``python -m engine.spec.reference > docs/reference.md``; a test fails when the file is stale.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from engine import codes
from engine.formula import FUNCTIONS
from engine.inspections import TABLE
from engine.inspections.agent import COMPACT_TYPES
from engine.spec.schema import load_schema

_INTRO = """# Spec reference

Generated from `schemas/*.schema.json`, the engine's inspection table and its code table by
`python -m engine.spec.reference > docs/reference.md`. Do not edit by hand; a test fails when
this file and the code disagree.

Every spec file has the envelope `apiVersion: specgate/v1`, `kind`, `metadata` (`name`,
`version`, optional `owner`, `description`) and `spec`.
"""


COMPACT_EXAMPLE = ('{"issue_refund": {"required": ["order_id", "amount"], '
                   '"types": {"order_id": "string", "amount": "number"}, '
                   '"enum": {"currency": ["USD", "EUR"]}}}')


def _type(schema: Mapping[str, Any]) -> str:
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    kind = schema.get("type", "any")
    kind = " or ".join(kind) if isinstance(kind, list) else kind
    if kind == "array" and "items" in schema:
        kind = f"list of {_type(schema['items'])}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping) and \
            "properties" not in schema:
        kind = f"map of name to {_type(schema['additionalProperties'])}"
    bounds = [f"{word} {schema[key]}" for key, word in (
        ("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="),
        ("exclusiveMaximum", "<"))
        if key in schema]
    return kind + (f" ({', '.join(bounds)})" if bounds else "")


def _rows(schema: Mapping[str, Any], prefix: str) -> Iterator[str]:
    required = set(schema.get("required", []))
    for key, sub in schema.get("properties", {}).items():
        path = f"{prefix}{key}"
        default = f"`{json.dumps(sub['default'])}`" if "default" in sub else ""
        need = "yes" if key in required else ""
        yield (f"| `{path}` | {_type(sub)} | {need} | {default} | "
               f"{sub.get('description', '')} |")
        yield from _rows(sub, path + ".")
        extra = sub.get("additionalProperties")
        if isinstance(extra, Mapping) and "properties" in extra:
            yield from _rows(extra, path + ".<name>.")
        items = sub.get("items")
        if isinstance(items, Mapping) and "properties" in items:
            yield from _rows(items, path + "[].")


def _table(schema: Mapping[str, Any], prefix: str) -> list[str]:
    return ["| key | type | required | default | meaning |", "|---|---|---|---|---|",
            *_rows(schema, prefix)]


def _class(prop: Mapping[str, Any]) -> str:
    """A parameter's class; for a map of rubric variables, each entry's."""
    entries = [f"`{k}`" for k, c in prop.get("x-entries", {}).items() if c == "expectation"]
    if "x-entries-named-by" in prop:
        entries.append(f"those `{prop['x-entries-named-by']}` names:")
    if not entries:
        return str(prop.get("x-class", ""))
    return f"per entry: {', '.join(entries)} expectation; the rest {prop['x-class']}".replace(
        ": expectation", " expectation")


def _parameters(schema: Mapping[str, Any]) -> list[str]:
    """An inspection's parameters, each with its class (``x-class``): observation or
    expectation (docs/security.md, the trust boundary)."""
    required = set(schema.get("required", []))
    rows = []
    for key, sub in schema.get("properties", {}).items():
        default = f"`{json.dumps(sub['default'])}`" if "default" in sub else ""
        rows.append(f"| `{key}` | {_type(sub)} | {_class(sub)} | "
                    f"{'yes' if key in required else ''} | {default} | "
                    f"{sub.get('description', '')} |")
    return ["| key | type | class | required | default | meaning |",
            "|---|---|---|---|---|---|", *rows]


def render() -> str:
    """The whole reference as Markdown."""
    out = [_INTRO]
    for kind in ("Policy", "Suite", "Evaluation", "PolicyTest"):
        schema = load_schema(kind.lower())
        out += [f"## {kind}", "", *_table(schema["properties"]["spec"], "spec."), ""]
    out += ["## Inspection types", "",
            "Each entry of `spec.inspections` has `id`, `type`, optional `description` and "
            "`when`, plus the parameters of its type. Selectors are JMESPath over the unit "
            "(the record's fields, with the suite case bound as `case`).", "",
            "Each parameter is an *observation* (what the agent did: read from the records) "
            "or an *expectation* (what it should have done: governance's). Under `purpose: "
            "release` an expectation is a literal, or a selector that reads only "
            "`case.expected` (the suite) and literals; a selector that can reach the "
            "records is EXPECTATION_FROM_EVIDENCE, unless the unit records are the suite "
            "(a format that derives the suite from its records, pinned by "
            "`suite_sha256`). An expectation selector's default names a record field; for "
            "any other format it reads `case.expected.<that field>`.", "",
            "A map of rubric variables (`inputs`) is classed per entry: an entry that "
            "describes the case to the judge (the planted text, the request) or that "
            "`pass_when` holds the verdict to is an expectation, and may read the whole "
            "suite case (`case.*`); the agent's reply is an observation. A `when` guard "
            "(and `controls.when`) chooses which units a rule applies to: under `purpose: "
            "release` it reads only the suite case (`case.*`) and literals, else "
            "SCOPE_FROM_EVIDENCE. For a format that derives the suite, both may read only "
            "the record keys the pin covers (not the measured ones, nor those starting "
            "with `_`).", ""]
    for name in sorted(TABLE):
        primitive = TABLE[name]
        out += [f"### `{name}`", "", primitive.summary + ".", ""]
        one_of = primitive.schema.get("oneOf")
        if one_of:
            keys = " or ".join(f"`{o['required'][0]}`" for o in one_of)
            out += [f"Give exactly one of {keys}.", ""]
        out += [*_parameters(primitive.schema), ""]
        out += _MORE.get(name, [])
    out += ["## Formula functions", "", "| function | arguments | meaning |", "|---|---|---|"]
    for name in sorted(FUNCTIONS):
        fn = FUNCTIONS[name]
        most = "any number" if fn.max_args is None else str(fn.max_args)
        count = str(fn.min_args) if fn.min_args == fn.max_args else f"{fn.min_args} to {most}"
        out.append(f"| `{name}` | {count} | {fn.doc} |")
    return "\n".join(out + _codes()) + "\n"


# What an inspection's table cannot say: the shape of the values its keys select.
_MORE = {"tool_call": [
    "**Contracts.** `contracts` selects an object mapping a tool's name to its contract; a "
    "call of a tool without one is not checked against any. A contract is either "
    "`{\"json_schema\": <JSON Schema 2020-12>}` (formats checked; a `$ref` outside it is "
    "never followed) or the **compact contract**, an object of up to "
    "three keys:", "",
    "- `required`: the argument names every call must give;",
    "- `types`: argument name to one of "
    + ", ".join(f"`{kind}`" for kind in COMPACT_TYPES)
    + " (`integer` refuses `1.0`, and a boolean is never a number; any other name refuses "
    "every value);",
    "- `enum`: argument name to the list of values allowed, compared as JSON (`25` equals "
    "`25.0`, a boolean equals only a boolean).", "",
    "An argument the contract does not name is not checked, nor is a contract that is not "
    "an object. For example, under",
    "", "```json", COMPACT_EXAMPLE, "```", "",
    "a call `issue_refund` with arguments `{\"amount\": \"12\", \"currency\": \"GBP\"}` "
    "fails with three problems: `missing required argument 'order_id'`, `argument 'amount' "
    "is not number` and `argument 'currency' is not one of ['USD', 'EUR']`.", ""]}


def _codes() -> list[str]:
    """The code table of ``engine/codes.py``, sorted by code."""
    return ["", "## Codes", "",
            "Every code the engine can emit. *Exit* is the exit code the code forces (`-`: a "
            "row-, record- or finding-level code that does not set the exit by itself; a run "
            "of several Evaluations exits with the worst). *Effect* is what it does to the "
            "decision or the row.", "",
            "| code | stage | exit | effect | meaning |", "|---|---|---|---|---|",
            *(f"| `{code}` | {row.stage} | {row.exit} | {row.effect} | {row.meaning} |"
              for code, row in sorted(codes.table().items()))]


if __name__ == "__main__":  # pragma: no cover
    print(render(), end="")
