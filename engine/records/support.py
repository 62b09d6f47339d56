"""The support matrix of the tool-log readers, as data (``support.yaml``) and as the tables
docs/inspect.md, docs/promptfoo.md and docs/otel.md carry between their
``<!-- support-matrix: FORMAT -->`` and ``<!-- /support-matrix -->`` markers.

    python -m engine.records.support            # rewrite the tables in docs/
    python -m engine.records.support --check    # exit 1 when a table is stale

tests/test_field_logs.py checks the tables are current and that every version the matrix
says is tested has a fixture the tool itself wrote (tests/data/field/<tool>/MADE.json).
"""

from __future__ import annotations

import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

DOCS = {"inspect-log": "inspect.md", "promptfoo-results": "promptfoo.md",
        "otel-genai": "otel.md"}
BEGIN, END = "<!-- support-matrix: {} -->", "<!-- /support-matrix -->"


def matrix() -> dict[str, Any]:
    """The support matrix: the rule the readers follow, and each format's versions/fields."""
    text = (resources.files("engine") / "records" / "support.yaml").read_text("utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def _cell(value: Any) -> str:
    return str(value).strip().replace("|", "\\|").replace("\n", " ")


def table(name: str) -> str:
    """The markdown a doc page carries for one format."""
    data = matrix()
    entry = data["formats"][name]
    lines = [f"**The rule.** {_cell(data['rule'])}", "",
             f"**Versions read:** {_cell(entry['reads'])}. **Written by the tool itself and "
             f"tested** (tests/data/field/, each with the command that made it): "
             + ", ".join(f"`{v}`" for v in entry["tested"]) + ".", ""]
    if entry.get("note"):
        lines += [_cell(entry["note"]), ""]
    lines += ["| field | written since | before that | when it is absent |",
              "|---|---|---|---|"]
    for field in entry["fields"]:
        lines.append(f"| {_cell(field['field'])} | {_cell(field['since'])} | "
                     f"{_cell(field['before'])} | {_cell(field['absent'])} |")
    if entry.get("producers"):
        lines += ["", "| framework and instrumentation | scope | the run | tool-call arguments | "
                  "the answer | content off |", "|---|---|---|---|---|---|"]
        for row in entry["producers"]:
            lines.append("| " + " | ".join(_cell(row[k]) for k in (
                "framework", "scope", "run", "arguments", "answer", "content_off")) + " |")
    return "\n".join(lines)


def render(page: str, name: str) -> str:
    """``page`` with the table of ``name`` between its markers (which must be there)."""
    begin = BEGIN.format(name)
    pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(END), re.DOTALL)
    if not pattern.search(page):
        raise ValueError(f"no {begin} ... {END} block")
    return pattern.sub(lambda _: f"{begin}\n{table(name)}\n{END}", page, count=1)


def main(argv: list[str]) -> int:
    docs = Path(argv[argv.index("--docs") + 1]) if "--docs" in argv else Path("docs")
    stale = []
    for name, file in DOCS.items():
        path = docs / file
        page = path.read_text("utf-8")
        fresh = render(page, name)
        if fresh != page:
            stale.append(str(path))
            if "--check" not in argv:
                path.write_text(fresh, "utf-8")
    if stale and "--check" in argv:
        print("stale support matrix in " + ", ".join(stale) +
              ": python -m engine.records.support", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
