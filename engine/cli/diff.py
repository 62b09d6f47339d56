"""engine diff: the same evidence under two policy versions."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import json
import os
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
    "engine diff --base origin/main specs/example",
    "engine diff --base origin/main specs/example/policy.yaml",
    "engine diff old-policy.yaml specs/example/policy.yaml --json",
)


def add(sub: Any) -> None:
    diff = sub.add_parser("diff", help="the same evidence under two policy versions",
                          **described(EXITS, *EXAMPLES))
    diff.add_argument("policies", type=Path, nargs="+", metavar="POLICY",
                      help="OLD NEW: the old and the new Policy file; with --base, NEW alone "
                           "(the old is the same path at REF), OLD NEW (OLD read at REF), or "
                           "an Evaluation (file or folder): the policy it names. NEW must be "
                           "the policy the Evaluation names (POLICY_NOT_EVALUATED)")
    diff.add_argument("--base", metavar="REF",
                      help="read the old side from git at REF (a commit, or a branch or tag "
                           "name found in one place only: BASE_AMBIGUOUS): the Evaluation at "
                           "the same path, with its Suite, policy and inputs, and every file "
                           "of its folder")
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


def _at_ref(load: Any, top: Path, ref: str) -> Any:
    """``load()``, a spec read from git; its problems located as ``REF:path`` (not in the
    temporary folder it was written to)."""
    try:
        return load()
    except SpecErrors as exc:
        raise SpecErrors([dataclasses.replace(
            p, file=f"{ref}:{Path(p.file).resolve().relative_to(top.resolve()).as_posix()}")
            if Path(p.file).resolve().is_relative_to(top.resolve()) else p
            for p in exc.problems]) from None


def _document(file: Path) -> Any:
    """An Evaluation file's parsed document (it has been loaded: it parses)."""
    from engine.spec import yaml as _yaml

    doc, _ = _yaml.parse(file.read_bytes().decode("utf-8", "replace"), str(file))
    return doc


def _is_evaluation(path: Path) -> bool:
    """Whether a positional path is an Evaluation (a folder, or a file of that kind)."""
    if path.is_dir():
        return True
    try:
        doc = _document(path) if path.suffix in (".yaml", ".yml") else None
    except OSError:
        return False
    return doc is not None and isinstance(doc.data, dict) and doc.data.get("kind") == "Evaluation"


def _named(evaluation: Any, key: str) -> Path | None:
    """The file an Evaluation names at ``spec.KEY`` (policy, suite), or None."""
    rel = _document(evaluation.file).data["spec"].get(key)
    return evaluation.file.parent / rel if isinstance(rel, str) else None


def _same(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _evaluation_files(evaluation: Any) -> dict[str, Any]:
    """The Evaluation's own files, by their path relative to its folder: the Evaluation,
    its Suite (by their parsed digests, as governance signs them) and each input file (by
    its bytes, named ``spec.inputs.NAME``)."""
    from engine.spec.diff import Bound

    home = evaluation.file.parent

    def rel(path: Path) -> str:
        return Path(os.path.relpath(path, home)).as_posix()

    out = {rel(evaluation.file): Bound("evaluation", evaluation.sha256, evaluation.file)}
    suite = _named(evaluation, "suite")
    if suite is not None and not evaluation.suite.derived:
        out[rel(suite)] = Bound("suite", evaluation.suite.sha256, suite)
    for name, source in evaluation.inputs.items():  # by name: a repointed input is
        # compared with the file it replaces
        if source.path.is_file():
            out[f"spec.inputs.{name}"] = Bound(
                "input", hashlib.sha256(source.path.read_bytes()).hexdigest(), source.path)
    return out


def _new_side(args: argparse.Namespace) -> tuple[Any, Path]:
    """The Evaluation that runs and the new Policy: the one given, which must be the one
    the Evaluation names (POLICY_NOT_EVALUATED), or the one an Evaluation given in its
    place names."""
    given = args.policies[-1]
    whole = len(args.policies) == 1 and args.base is not None and _is_evaluation(given)
    if whole and args.evaluation is not None:
        raise UsageError("give the Evaluation once: as the path, or with --evaluation", "USAGE")
    evaluations = spec.load([given if whole else args.evaluation or given.parent],
                            overrides(args.input))
    if len(evaluations) != 1:
        raise UsageError("name one Evaluation with --evaluation", "NO_EVALUATION")
    evaluation = evaluations[0]
    named = _named(evaluation, "policy")
    assert named is not None  # spec.policy is required
    if whole:
        return evaluation, named
    if not _same(named, given) and args.base is None and len(args.policies) == 2:
        # OLD NEW given outright: what NEW would decide on the Evaluation's evidence (a
        # candidate not named yet); the output says the Evaluation runs another policy
        args.what_if = display_path(named)
        return spec.with_policy(evaluation, spec.load_policy(given)), given
    if not _same(named, given):
        doc = _document(evaluation.file)
        raise SpecErrors([doc.problem(
            ("spec", "policy"), "POLICY_NOT_EVALUATED",
            f"the Evaluation runs {display_path(named)}, not {display_path(given)}, so a diff "
            "of that file says nothing of the decision",
            "diff the policy it names, or give the Evaluation: engine diff --base REF "
            f"{display_path(evaluation.file)}")])
    return evaluation, given


def display_path(path: Path) -> str:
    return spec.display(path.absolute())


def _old_evaluation(args: argparse.Namespace, evaluation: Any, new_file: Path,
                    into: Path) -> tuple[tuple[Any, Path, dict[str, Path]] | None, str]:
    """With --base: the Evaluation at REF that sits where the new one does (beside the old
    policy path as the new one sits beside the new), read with its own Suite, policy and
    inputs from a folder written from git; None when REF has no such file. An input file
    REF does not hold (evidence kept out of git) is read from the new side: those are
    returned by name. Also the commit REF names."""
    old_path = args.policies[0] if len(args.policies) == 2 else new_file
    spot = Path(os.path.normpath(old_path.absolute().parent / os.path.relpath(
        evaluation.file.absolute(), new_file.absolute().parent)))
    root = evaluation.root if evaluation.root.is_dir() else evaluation.root.parent
    root = Path(os.path.normpath(old_path.absolute().parent / os.path.relpath(
        root.absolute(), new_file.absolute().parent)))
    from engine.spec import base as git_base

    file, commit = git_base.checkout(spot, args.base, into, folder=root, required=False)
    if file is None:
        return None, commit
    given = overrides(args.input)
    doc = _document(file)
    lent = {}
    for name, block in (doc.data["spec"].get("inputs") or {}).items():
        if name not in given and name in evaluation.inputs and isinstance(block, dict) and \
                isinstance(block.get("path"), str) and \
                not (file.parent / block["path"]).exists():
            lent[name] = evaluation.inputs[name].path
    top = into
    loaded = _at_ref(lambda: spec.load([file], {**given, **lent}), top, args.base)
    if len(loaded) != 1:
        raise UsageError(f"--base: {args.base} holds no Evaluation at {spot}", "NO_EVALUATION")
    named = _named(loaded[0], "policy")
    assert named is not None
    return (loaded[0], named, lent), commit


def run(args: argparse.Namespace) -> int:

    from engine.spec import base as git_base
    from engine.spec.diff import bound, compare, files, lines

    if len(args.policies) not in ((1, 2) if args.base is not None else (2,)):
        raise UsageError("give OLD NEW, or with --base REF: NEW, OLD NEW or an Evaluation",
                         "USAGE")
    evaluation, new_file = _new_side(args)
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    folder = spec.display(new_file.resolve().parent)
    cards = []
    with tempfile.TemporaryDirectory() as tmp:
        base, old_evaluation, lent = None, None, dict[str, Path]()
        if args.base is not None:  # the whole old side from git: nothing is borrowed
            found, commit = _old_evaluation(args, evaluation, new_file, Path(tmp) / "base")
            if found is not None:
                old_evaluation, old_file, lent = found
                old = old_evaluation.policy
            else:  # an Evaluation the change adds: its policy alone
                old_file_at, commit = git_base.checkout(
                    args.policies[0] if len(args.policies) == 2 else new_file, args.base,
                    Path(tmp) / "policy")
                assert old_file_at is not None
                old_file = old_file_at
                old = _at_ref(lambda: spec.load_policy(old_file), Path(tmp) / "policy",
                              args.base)
            borrowed = list[str]()
            base = {"ref": args.base, "commit": commit}
        else:  # an old policy kept elsewhere (git show main:... > /tmp/old.yaml) reads the
            # data files it names from the new policy's folder when they are not beside it:
            # each such file is a change whose old side is not known
            old_file = args.policies[0]
            old, borrowed = spec.load_policy_from(old_file, new_file.resolve().parent)
        new = evaluation.policy
        old_rubrics, new_rubrics = _rubrics(old, old_file), _rubrics(new, new_file)
        unknown = list(borrowed)
        if args.base is None:  # a rubric beside the new policy and not beside the old: the
            # old one may have been kept elsewhere, and ran with the shipped rubric
            unknown += [name for name, rubric in old_rubrics.items() if rubric.path is None
                        and name in new_rubrics and new_rubrics[name].path is not None]
        changed_files = files(bound(old, old_rubrics), bound(new, new_rubrics), unknown)
        if old_evaluation is not None:
            changed_files |= _shortened(files(_evaluation_files(old_evaluation),
                                              _evaluation_files(evaluation)))
        old_run = old_evaluation or spec.with_policy(evaluation, old)
        for label, side in (("old", old_run), ("new", evaluation)):
            side.as_of = side.as_of_requested = today
            execute(side, Path(tmp) / label)
            cards.append(json.loads((Path(tmp) / label / "scorecard.json").read_bytes()))
        where = {"new": spec.display(evaluation.file.absolute()),
                 "old": None if old_evaluation is None else
                 f"{args.base}:{_ref_path(old_evaluation.file, Path(tmp) / 'base')}",
                 "policy_new": spec.display(new_file.absolute()),
                 "policy_old": f"{args.base}:{_ref_path(old_file, Path(tmp) / 'base')}"
                 if old_evaluation is not None else None,
                 "policy_renamed": old_evaluation is not None and os.path.relpath(
                     old_file, old_evaluation.file.parent) != os.path.relpath(
                     new_file, evaluation.file.parent),
                 "inputs_not_at_base": {name: spec.display(path.absolute())
                                        for name, path in lent.items()},
                 "evaluation_runs": getattr(args, "what_if", None)}
    changes = compare(cards[0], cards[1], changed_files)
    changes["base"] = base
    changes["evaluation"] = where
    changes["old_files_from_new_folder"] = {"folder": folder, "files": borrowed}
    if args.json:
        print(json.dumps(changes, indent=2))
        return 0
    for line in lines(changes, folder):  # each quotes the scorecards' names and reasons
        print(shown(line))
    return 0


def _ref_path(path: Path, top: Path) -> str:
    return Path(os.path.realpath(path)).relative_to(os.path.realpath(top)).as_posix()


DIFF_LINES = 40  # an input's diff (evidence may be long): its first lines


def _shortened(changed: dict[str, Any]) -> dict[str, Any]:
    for change in changed.values():
        if change["role"] == "input" and len(change["diff"]) > DIFF_LINES:
            more = len(change["diff"]) - DIFF_LINES
            change["diff"] = [*change["diff"][:DIFF_LINES], f"... {more} more lines"]
    return changed
