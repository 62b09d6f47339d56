"""Rubrics: sandboxed jinja2 prompt templates with a version and a verdict JSON Schema.

A rubric is a YAML file (``name``, ``version``, ``template``, ``verdict_schema``, optional
``repair``) found by name in the policy's ``rubrics/`` folder, else among the rubrics
shipped in ``rubrics/``. Templates render with strict undefined variables in a sandbox;
verdicts are validated strictly (an integer is an integer: 4.0 is not one), and only the
fields the verdict schema declares under ``properties`` may appear: a judge that adds a
field (``should_refuse: false``) gives no verdict at all, whatever the schema allows.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from jinja2 import meta

from engine.canonical import digest
from engine.records.formats import BadRecord, parse_line
from engine.spec import opened
from engine.spec import yaml as _yaml
from engine.spec.schema import Checker, offline, outside_refs
from engine.spec.templates import Sandbox, TemplateRefused, printed_names
from engine.spec.translate import STRICT, compile_check

if TYPE_CHECKING:
    import jsonschema

ENV = Sandbox(keep_trailing_newline=True)  # bounded: no **, no huge repetition or widths


@cache
def strict_validator() -> type[jsonschema.Draft202012Validator]:
    """Draft 2020-12 where an integer is an integer (4.0 is not one); jsonschema is imported
    when the first rubric loads, not at start-up."""
    import jsonschema
    strict = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda checker, value: isinstance(value, int) and not isinstance(value, bool))
    built: type[jsonschema.Draft202012Validator] = jsonschema.validators.extend(
        jsonschema.Draft202012Validator, type_checker=strict)
    return built


FIELD_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Rubric:
    """A loaded rubric."""

    name: str
    version: str
    template: jinja2.Template
    variables: frozenset[str]
    validator: Any
    fields: tuple[str, ...]
    repair: bool
    sha256: str

    def render(self, values: dict[str, Any]) -> str:
        """The prompt for one unit."""
        return str(self.template.render(**values))

    def verdict(self, text: str) -> tuple[dict[str, Any] | None, str]:
        """(verdict, '') for text holding a valid verdict, else (None, why not)."""
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end < start:
            return None, "the reply holds no JSON object"
        parsed = parse_line(text[start:end + 1].encode("utf-8"), 2)
        if isinstance(parsed, BadRecord):
            return None, f"the reply is not a JSON object: {parsed.message}"
        errors = list(self.validator.iter_errors(parsed.data))  # none, without jsonschema
        if errors:
            from jsonschema.exceptions import relevance
            errors.sort(key=relevance)
            where = "/".join(map(str, errors[0].absolute_path)) or "$"
            return None, f"the verdict breaks the rubric's schema at {where}: {errors[0].message}"
        extra = sorted(set(parsed.data) - set(self.fields))
        if extra:  # only declared fields count; an extra one could shadow an input
            names = ", ".join(repr(name[:40]) for name in extra[:5])
            return None, f"the verdict has fields the rubric does not declare: {names}"
        return dict(parsed.data), ""


class RubricError(ValueError):
    """A rubric that cannot be used, with the reason."""


def source(name: str, local: Path | None) -> tuple[Path | None, str]:
    """Where the rubric ``name`` is read from (None: shipped with the engine) and its text,
    as ``load_rubric`` finds it; RubricError when there is none."""
    return _locate(name, local)


def _locate(name: str, local: Path | None) -> tuple[Path | None, str]:
    if local is not None and (local / f"{name}.yaml").is_file():
        return local / f"{name}.yaml", opened.read_text(local / f"{name}.yaml")
    shipped = resources.files("engine") / "rubrics" / f"{name}.yaml"
    if shipped.is_file():
        return None, shipped.read_text("utf-8")
    raise RubricError(f"no rubric named '{name}' (looked in the policy's rubrics/ folder "
                      "and the shipped rubrics)")


def load_rubric(name: str, local: Path | None = None) -> Rubric:
    """Load and check a rubric by name; RubricError says what is wrong."""
    path, text = _locate(name, local)
    doc, problems = _yaml.parse(text, str(path or f"rubrics/{name}.yaml"))
    if doc is None:
        raise RubricError("; ".join(str(p) for p in problems))
    data = doc.data
    if not isinstance(data, dict) or not {"name", "version", "template",
                                          "verdict_schema"} <= set(data):
        raise RubricError(f"rubric '{name}' needs name, version, template and verdict_schema")
    try:
        source = str(data["template"])
        tree = ENV.parse(source)
        variables = printed_names(tree)
        if variables is None:
            variables = frozenset(meta.find_undeclared_variables(tree))
        template = ENV.checked(source, tree)
    except jinja2.TemplateSyntaxError as exc:
        raise RubricError(f"rubric '{name}': template line {exc.lineno}: {exc.message}"
                          ) from None
    except TemplateRefused as exc:
        raise RubricError(f"rubric '{name}': template {exc}") from None
    try:  # values are always text when rendered: a sample shows sandbox breaches now
        template.render(**{variable: "sample" for variable in variables})
    except (jinja2.TemplateError, TypeError, ValueError, LookupError) as exc:
        raise RubricError(f"rubric '{name}': the template cannot render: "
                          f"{type(exc).__name__}: {exc}") from None
    schema = data["verdict_schema"]
    fast = compile_check(schema, STRICT)  # one the meta-schema passes, with no $ref in it
    if fast is None:
        _usable_schema(name, schema)
    fields = _fields(name, schema)
    validator = Checker(schema, fast, lambda: strict_validator()(schema, registry=offline()))
    return Rubric(str(data["name"]), str(data["version"]), template, variables,
                  validator, fields,
                  bool(data.get("repair", False)),
                  digest(data))


def _usable_schema(name: str, schema: Any) -> None:
    """Refuse a verdict schema that is not a JSON Schema or reaches outside itself."""
    import jsonschema
    try:
        strict_validator().check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise RubricError(f"rubric '{name}': verdict_schema is not a JSON Schema: "
                          f"{exc.message}") from None
    outside = outside_refs(schema)
    if outside:
        raise RubricError(f"rubric '{name}': verdict_schema's $ref {outside[0][:80]!r} "
                          "points outside it, and nothing outside is fetched")


def _fields(name: str, schema: Any) -> tuple[str, ...]:
    """The verdict fields a rubric declares: names a formula can use, nothing else."""
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    bad = sorted(str(field) for field in props if not FIELD_NAME.fullmatch(str(field)))
    if bad:
        raise RubricError(f"rubric '{name}': verdict field {bad[0][:40]!r} is not a name "
                          "(letters, digits and _, starting with a letter)")
    return tuple(sorted(props))


def repair_prompt(prompt: str, reply: str, why: str) -> str:
    """The single repair request a rubric may allow for a malformed verdict."""
    return (f"{prompt}\n\nYour previous reply could not be used ({why}):\n{reply[:2000]}\n\n"
            "Reply again with only the JSON object the instructions ask for.")


def dumps(value: Any) -> str:
    """Compact JSON for prompts' bound values that are not text."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
