"""Reading the spec package's YAML files: parsed with their places, checked against their
JSON Schemas (``schemas/<name>.schema.json`` beside this module), problems located.

A file is named in problems as the spec names it: relative to the working folder when it
is below it, else in full (``specs/finding-quality-discovery/gates.yaml:12:5: ...``).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from engine.errors import FormulaError, Problem
from engine.spec import opened
from engine.spec import schema as _schema
from engine.spec import yaml as _yaml
from engine.spec.yaml import Document


def shown(path: Path) -> str:
    """How a package file is named in a problem."""
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


@cache
def validator(name: str) -> _schema.Checker:
    """The validator of one of the package's YAML files, by its stem (the schemas ship with
    the code: tests/test_startup.py checks them against the meta-schema)."""
    folder = resources.files("engine.protocols.discovery") / "schemas"
    schema = json.loads((folder / f"{name}.schema.json").read_text("utf-8"))
    return _schema.validator_for(schema)  # the generated check, while the schema is as shipped


def read(path: Path, problems: list[Problem]) -> Document | None:
    """The file parsed and schema-valid, or None with its problems recorded."""
    label = shown(path)
    try:
        text = opened.read_bytes(path).decode("utf-8").removeprefix("\ufeff")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(Problem(label, 1, 1, "BAD_DATA_FILE", "", f"not readable: {exc}"))
        return None
    doc, found = _yaml.parse(text, label)
    problems.extend(found)
    if doc is None:
        return None
    invalid = _schema.problems(doc, validator(path.stem), doc.data)
    problems.extend(invalid)
    return None if invalid else doc


def engine_table(name: str, problems: list[Problem]) -> Any:
    """One of the engine's own tables beside this module (``kinds.yaml``)."""
    doc = read(Path(str(resources.files("engine.protocols.discovery") / name)), problems)
    return None if doc is None else doc.data


def formula_problem(doc: Document, where: _yaml.Path, exc: FormulaError) -> Problem:
    """A formula that does not compile, located at its column."""
    return doc.problem(where, exc.code, str(exc), col_offset=max(exc.col - 1, 0))
