"""engine diff: the same evidence under two policy versions."""

from __future__ import annotations

import argparse
import dataclasses
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
from engine.errors import SpecErrors, UsageError
from engine.run.execute import execute
from engine.spec import evaluation as spec

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    pass

EXITS = ("0 the differences printed (also when there are some), "
         + USAGE_EXIT)
EXAMPLES = (
    "engine diff --base origin/main specs/example/policy.yaml",
    "engine diff old-policy.yaml specs/example/policy.yaml --json",
)


def add(sub: Any) -> None:
    diff = sub.add_parser("diff", help="the same evidence under two policy versions",
                          **described(EXITS, *EXAMPLES))
    diff.add_argument("policies", type=Path, nargs="+", metavar="POLICY",
                      help="OLD NEW: the old and the new Policy file; with --base, NEW alone "
                           "(the old is the same path at REF) or OLD NEW (OLD read at REF)")
    diff.add_argument("--base", metavar="REF",
                      help="read the old policy and every file of its folder from git at REF "
                           "(a branch, tag or commit of the repository holding it)")
    diff.add_argument("--evaluation", type=Path,
                      help="Evaluation to run (default: the one in the new policy's folder)")
    diff.add_argument("--input", action="append", default=[], metavar="NAME=PATH",
                      help="rebind a named input of the Evaluation (repeatable)")
    diff.add_argument("--json", action="store_true", help="machine-readable differences")
    diff.set_defaults(handler=run)


def _rubrics(policy: Any, file: Path) -> dict[str, Any]:
    """The rubrics a Policy's judged inspections read, bound into judge_sha256: each by
    ``rubrics/NAME.yaml``, read beside ``file`` or shipped with the engine."""
    from engine.judge._rubrics import source
    from engine.spec.diff import Bound

    out = {}
    for entry in policy.document["policy"]["spec"]["inspections"]:
        rubric = policy.inspections[entry["id"]].params.get("rubric")
        if isinstance(entry.get("rubric"), str) and hasattr(rubric, "sha256"):
            path, text = source(entry["rubric"], file.resolve().parent / "rubrics")
            out[f"rubrics/{entry['rubric']}.yaml"] = Bound("rubric", rubric.sha256, path, text)
    return out


def _at_ref(file: Path, top: Path, ref: str) -> Any:
    """The old Policy read from git; its problems located as ``REF:path`` (not in the
    temporary folder it was written to)."""
    try:
        return spec.load_policy(file)
    except SpecErrors as exc:
        raise SpecErrors([dataclasses.replace(
            p, file=f"{ref}:{Path(p.file).resolve().relative_to(top.resolve()).as_posix()}")
            if Path(p.file).resolve().is_relative_to(top.resolve()) else p
            for p in exc.problems]) from None


def run(args: argparse.Namespace) -> int:

    from engine.spec import base as git_base
    from engine.spec.diff import bound, compare, files, lines

    if len(args.policies) not in ((1, 2) if args.base is not None else (2,)):
        raise UsageError("give OLD NEW, or NEW (or OLD NEW) with --base REF", "USAGE")
    new_file = args.policies[-1]
    evaluations = spec.load([args.evaluation or new_file.parent], overrides(args.input))
    if len(evaluations) != 1:
        raise UsageError("name one Evaluation with --evaluation", "NO_EVALUATION")
    evaluation = evaluations[0]
    evaluation.as_of = evaluation.as_of_requested = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    folder = spec.display(new_file.resolve().parent)
    cards = []
    with tempfile.TemporaryDirectory() as tmp:
        base = None
        if args.base is not None:  # the whole old side from git: nothing is borrowed
            old_file, commit = git_base.checkout(args.policies[0], args.base, Path(tmp) / "base")
            old, borrowed = _at_ref(old_file, Path(tmp) / "base", args.base), list[str]()
            base = {"ref": args.base, "commit": commit}
        else:  # an old policy kept elsewhere (git show main:... > /tmp/old.yaml) reads the
            # data files it names from the new policy's folder when they are not beside it:
            # each such file is a change whose old side is not known
            old_file = args.policies[0]
            old, borrowed = spec.load_policy_from(old_file, new_file.resolve().parent)
        new = spec.load_policy(new_file)
        old_rubrics, new_rubrics = _rubrics(old, old_file), _rubrics(new, new_file)
        unknown = list(borrowed)
        if args.base is None:  # a rubric beside the new policy and not beside the old: the
            # old one may have been kept elsewhere, and ran with the shipped rubric
            unknown += [name for name, rubric in old_rubrics.items() if rubric.path is None
                        and name in new_rubrics and new_rubrics[name].path is not None]
        changed_files = files(bound(old, old_rubrics), bound(new, new_rubrics), unknown)
        for label, policy in (("old", old), ("new", new)):
            execute(spec.with_policy(evaluation, policy), Path(tmp) / label)
            cards.append(json.loads((Path(tmp) / label / "scorecard.json").read_bytes()))
    changes = compare(cards[0], cards[1], changed_files)
    changes["base"] = base
    changes["old_files_from_new_folder"] = {"folder": folder, "files": borrowed}
    if args.json:
        print(json.dumps(changes, indent=2))
        return 0
    for line in lines(changes, folder):  # each quotes the scorecards' names and reasons
        print(shown(line))
    return 0
