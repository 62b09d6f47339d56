"""engine init: a new spec folder, scaffolded."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine._version import __version__
from engine.cli.common import (
    USAGE_EXIT,
    described,
)
from engine.errors import UsageError

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    pass

EXITS = ("0 written, "
         + USAGE_EXIT + ": OUTPUT_EXISTS when the folder is not empty")
EXAMPLES = (
    "engine init specs/my-agent",
    "engine init specs/my-agent --name support-bot",
)


def add(sub: Any) -> None:
    init = sub.add_parser("init", help="scaffold a new spec folder", **described(EXITS, *EXAMPLES))
    init.add_argument("folder", type=Path, help="a new or empty folder to write the specs into")
    init.add_argument("--name", help="evaluation name (default: the folder's name)")
    init.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from importlib import resources

    folder: Path = args.folder
    if folder.exists() and any(folder.iterdir()):
        raise UsageError(f"{folder} is not empty; init never overwrites", "OUTPUT_EXISTS")
    name = args.name or folder.resolve().name.lower()
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", name):
        raise UsageError(f"'{name}' is not a spec name (lower-case letters, digits, - and _)",
                         "BAD_NAME")
    source = resources.files("engine") / "scaffold"
    # nothing of this machine goes into the files: no absolute path, no install folder
    shown = folder.as_posix() if not folder.is_absolute() and ".." not in folder.parts \
        else folder.name
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "tests").mkdir()
    for template, target in (("evaluation.yaml", "evaluation.yaml"),
                             ("policy.yaml", "policy.yaml"), ("suite.yaml", "suite.yaml"),
                             ("caveats.yaml", "caveats.yaml"),
                             ("runs.jsonl", "data/runs.jsonl"),
                             ("policy.test.yaml", "tests/policy.test.yaml")):
        text = (source / template).read_text("utf-8")
        text = text.replace("{{name}}", name).replace("{{version}}", __version__).replace(
            "{{dir}}", shown)
        (folder / target).write_text(text)
    print(f"wrote {folder}/evaluation.yaml, policy.yaml, suite.yaml, caveats.yaml, "
          f"data/runs.jsonl and tests/policy.test.yaml; try: engine run {folder}")
    return 0

