"""engine diff: the same evidence under two policy versions."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cli.common import (
    USAGE_EXIT,
    described,
    overrides,
    shown,
)
from engine.errors import UsageError
from engine.run.execute import execute
from engine.spec import evaluation as spec

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    pass

EXITS = ("0 the differences printed (also when there are some), "
         + USAGE_EXIT)
EXAMPLES = (
    "engine diff old-policy.yaml specs/example/policy.yaml",
    "engine diff old-policy.yaml specs/example/policy.yaml --json",
)


def add(sub: Any) -> None:
    diff = sub.add_parser("diff", help="the same evidence under two policy versions",
                          **described(EXITS, *EXAMPLES))
    diff.add_argument("old", type=Path, help="the old Policy file")
    diff.add_argument("new", type=Path, help="the new Policy file")
    diff.add_argument("--evaluation", type=Path,
                      help="Evaluation to run (default: the one in the new policy's folder)")
    diff.add_argument("--input", action="append", default=[], metavar="NAME=PATH",
                      help="rebind a named input of the Evaluation (repeatable)")
    diff.add_argument("--json", action="store_true", help="machine-readable differences")
    diff.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:

    from engine.spec.diff import compare, lines

    evaluations = spec.load([args.evaluation or args.new.parent], overrides(args.input))
    if len(evaluations) != 1:
        raise UsageError("name one Evaluation with --evaluation", "NO_EVALUATION")
    base = evaluations[0]
    base.as_of = base.as_of_requested = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    # an old policy kept elsewhere (git show main:... > /tmp/old.yaml) reads the data files
    # it names from the new policy's folder when they are not beside it, and says so
    old, borrowed = spec.load_policy_from(args.old, args.new.resolve().parent)
    cards = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, policy in (("old", old), ("new", spec.load_policy(args.new))):
            execute(spec.with_policy(base, policy), Path(tmp) / label)
            cards.append(json.loads((Path(tmp) / label / "scorecard.json").read_bytes()))
    changes = compare(cards[0], cards[1])
    folder = spec.display(args.new.resolve().parent)
    changes["old_files_from_new_folder"] = {"folder": folder, "files": borrowed}
    if args.json:
        print(json.dumps(changes, indent=2))
        return 0
    if borrowed:
        print(shown(f"note: {', '.join(borrowed)} not beside "
                    f"{spec.display(args.old.resolve())}: read from {folder} for the old "
                    "policy"))
    for line in lines(changes):  # each quotes the scorecards' names and reasons
        print(shown(line))
    return 0

