"""The shipped JSON Schemas written out as plain Python checks, at build time.

Every run checks its spec documents against ``engine/schemas/*.schema.json`` and each
inspection's parameters against its primitive's schema; jsonschema (with referencing,
attrs and rpds) took ~0.1 s of start-up to import before it checked anything. This module
turns each shipped schema into a Python function answering only "is this instance valid?",
exactly as jsonschema's Draft 2020-12 would (for ``engine/schemas``, with the engine's
whole-text ``pattern`` and asserted ``format: date``, see ``schema.engine_dialect``).
A keyword it has no translation for is refused (``Untranslated``), so a generated check is
never looser than jsonschema; annotations (``description``, ``default``, ``x-...``) are
skipped, as jsonschema skips them. At run time ``engine.spec.schema`` uses a check only
when the digest it records matches the schema in hand, and imports jsonschema only when a
check says no (to word the problems, unchanged) or there is no check.

Schemas a spec brings get checks too, for the specs and rubrics this repository ships
(``spec_schemas``); any other is checked by jsonschema. The engine compiles nothing at run
time.

Regenerate after editing a shipped schema, a primitive's parameters, a shipped spec's schema
or a rubric's verdict schema (one command;
tests/test_schema_checks.py fails until then, and the engine falls back to jsonschema)::

    python -m engine.spec.checks
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from engine.spec.schema import schema_digest
from engine.spec.translate import ENGINE, HEAD, PLAIN, STRICT, Writer, blocks, spec_function

TARGET = Path(__file__).with_name("_checks.py")


def shipped_schemas() -> dict[str, Any]:
    """The engine's own schemas, by file stem."""
    folder = resources.files("engine") / "schemas"
    return {p.name.removesuffix(".schema.json"): json.loads(p.read_text("utf-8"))
            for p in sorted(folder.iterdir(), key=lambda p: p.name)
            if p.name.endswith(".schema.json")}


def plain_schemas() -> dict[str, Any]:
    """The schemas that ship with the code and are read as plain Draft 2020-12, by a name for
    the reader: each primitive's parameters, each input format's options, and the schemas
    of the protocols' own files (``engine/protocols/*/schemas``)."""
    from engine.inspections import TABLE
    from engine.records import formats
    found = {f"inspection {name}": TABLE[name].schema for name in sorted(TABLE)}
    for name in sorted(formats.names()):
        options = formats.named(name).options
        if options is not None:
            found[f"format {name}"] = options
    root = Path(__file__).resolve().parent.parent
    for path in sorted((root / "protocols").glob("*/schemas/*.schema.json")):
        found[path.relative_to(root).as_posix()] = json.loads(path.read_text("utf-8"))
    return found


def spec_schemas() -> tuple[dict[str, Any], dict[str, Any]]:
    """The schemas the repository's specs bring (plain Draft 2020-12: a ``json_schema``
    inspection's file, a discovery submission schema) and the shipped rubrics' verdict
    schemas (the strict dialect, where 4.0 is not an integer), by a name for the reader.
    A spec or rubric edited since has another digest and is checked by jsonschema."""
    import yaml

    root = Path(__file__).resolve().parent.parent
    plain = {path.relative_to(root.parent).as_posix(): json.loads(path.read_text("utf-8"))
             for path in sorted((root.parent / "specs").glob("*/schema*/*.json"))}
    strict = {f"rubric {path.stem}": yaml.safe_load(path.read_text("utf-8"))["verdict_schema"]
              for path in sorted((root / "rubrics").glob("*.yaml"))}
    return plain, strict


def _table(writer: Writer, schemas: Mapping[str, Any], spec: bool) -> list[str]:
    """Rows ``digest: check`` of one dialect; a spec's schema gets a check only when it would
    pass ``check_schema`` and reaches nothing outside (``translate.spec_function``)."""
    by_digest: dict[str, list[str]] = {}
    for name, schema in schemas.items():
        if not spec or spec_function(schema, writer.dialect) is not None:
            by_digest.setdefault(schema_digest(schema), []).append(name)
    return [f"    {digest!r}: {writer.function(schemas[names[0]])},  # {', '.join(names)}"
            for digest, names in sorted(by_digest.items(), key=lambda kv: kv[1])]


def module_text(shipped: Mapping[str, Any], plain: Mapping[str, Any],
                spec: tuple[Mapping[str, Any], Mapping[str, Any]]) -> str:
    """The generated module: a check per schema, keyed by name (with the digest it was made
    from) for the engine's schemas, and by digest for the plain and strict ones."""
    engine, writer, strict = Writer(ENGINE), Writer(PLAIN), Writer(STRICT)
    rows = [f"    {name!r}: ({schema_digest(schema)!r}, {engine.function(schema)}),"
            for name, schema in shipped.items()]
    plains = _table(writer, plain, False) + _table(writer, spec[0], True)
    stricts = _table(strict, spec[1], True)
    return "\n".join([
        *HEAD, *blocks(engine.functions), *blocks(writer.functions), *blocks(strict.functions),
        "# the engine's own schemas (engine dialect): name -> (schema digest, check)",
        "SHIPPED = {", *rows, "}",
        "# the other shipped schemas and the specs' (plain Draft 2020-12): digest -> check",
        "PLAIN = {", *plains, "}",
        "# the shipped rubrics' verdict schemas (strict integers): digest -> check",
        "STRICT = {", *stricts, "}", ""])


def main() -> int:
    """Rewrite engine/spec/_checks.py from the shipped schemas."""
    TARGET.write_text(module_text(shipped_schemas(), plain_schemas(), spec_schemas()),
                      "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
