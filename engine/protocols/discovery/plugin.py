"""finding-quality-discovery as a plug-in: its input format, inspection types, the
``x-discovery`` parameter mark, its report and the ``engine review`` command."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.errors import SpecErrors, UsageError
from engine.protocols import Command, Protocol, Report
from engine.protocols.discovery import inspection
from engine.protocols.discovery.codes import CODES
from engine.protocols.discovery.names import task_problem
from engine.protocols.discovery.seal import KEY_DOMAIN
from engine.records.formats import BadRecord, Format, Record
from engine.records.strict_json import DEEP, JsonError, loads, too_deep
from engine.spec.compile import Site

NAME = "finding-quality-discovery"


def read_tasks(path: Path, digest: Any = None) -> Iterator[Record | BadRecord]:
    """A task inventory: one JSON array of task objects, one record per element, in order."""
    raw = path.read_bytes()
    if digest is not None:
        digest.update(raw)
    try:
        parsed = loads(raw)
    except JsonError as exc:
        yield BadRecord(1, exc.record_code, str(exc))
        return
    if not isinstance(parsed, list):
        yield BadRecord(1, "INVALID_JSON", "the file must hold one JSON array of objects")
        return
    for index, item in enumerate(parsed, start=1):
        if not isinstance(item, dict):
            yield BadRecord(index, "NOT_AN_OBJECT", f"element {index} is not an object")
        elif too_deep(item):
            yield BadRecord(index, "NESTED_TOO_DEEP", DEEP)
        elif (problem := task_problem(item)) is not None:
            yield BadRecord(index, "BAD_TASK_ID", problem)
        else:
            yield Record(index, item)


def compile_package(site: Site, key: str, value: Any,
                    prop: Mapping[str, Any]) -> dict[str, Any]:
    """``x-discovery``: the protocol's spec package in a folder, every file it reads bound
    into the policy digest."""
    from engine.protocols.discovery.judge_settings import judge_settings
    from engine.protocols.discovery.task import load_package

    folder = site.resolve(value, site.where)  # inside the spec root, or a problem
    if folder is None:
        return {key: None}
    try:
        package = load_package(folder)
        if (folder / "judge.yaml").exists():  # the review stage's: checked by validate too,
            # and kept: nothing in the spec folder is read again once it is loaded
            package = replace(package, judge=judge_settings(folder))
    except SpecErrors as exc:  # located in the package's own files
        site.problems.extend(exc.problems)
        return {key: None}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        site.problem("BAD_DATA_FILE", f"'{value}': {exc}")
        return {key: None}
    for name in package.files:
        site.resolve((Path(value) / name).as_posix(), site.where)
    return {key: package}


def _inspection(evaluation: Any) -> Any:
    return next(i for i in evaluation.policy.inspections.values()
                if i.type in inspection.TABLE)


def build_report(evaluation: Any, tally: Any,
                 derived: bytes | None) -> tuple[Any, list[tuple[str, bytes]]]:
    """The protocol report: its value for the scorecard, report.json and report.md.
    ``derived`` is this run's signing key derived under seal.KEY_DOMAIN (None unsigned):
    a release takes a derived audit seed only when it verifies the seal."""
    from engine.protocols.discovery import usable_tasks
    from engine.protocols.discovery.manifest import inventory, reviewer_identity, run_manifest
    from engine.protocols.discovery.report import build, markdown

    params = _inspection(evaluation).params
    package = params["package"]
    tasks = usable_tasks(evaluation.inputs[evaluation.unit_input].path)
    records = [tally.unit_records[t["task_id"]] for t in tasks
               if t["task_id"] in tally.unit_records]
    value = build(package, tasks, tally.unit_records)  # refuses untrusted reviews first
    everything = inventory(evaluation.inputs[params["tasks"]].path, tasks)
    reviews = evaluation.inputs.get(params.get("reviews") or "")
    value["reviewer"] = reviewer_identity(package, everything,
                                          reviews.path if reviews else None, records,
                                          evaluation.inputs[params["submissions"]].path,
                                          evaluation.policy.purpose, derived)
    value["run"] = run_manifest(package, everything,
                                evaluation.inputs[params["submissions"]].path)
    return value, [("report.json", (json.dumps(value, indent=2, ensure_ascii=False)
                                    + "\n").encode()),
                   ("report.md", markdown(package, value).encode())]


def _review_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reviews-dir", type=Path, required=True,
                        help="review directory (judge configuration, blind caches, reviews)")
    parser.add_argument("--judge-base-url", required=True, help="OpenAI-compatible endpoint")
    parser.add_argument("--judge-model", required=True, help="the model the reviews are asked of")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY",
                        help="NAME of the variable holding the API key")
    parser.add_argument("--audit-documents", type=int,
                        help="audit budget B (default: audit.yaml)")


def review(args: argparse.Namespace, evaluations: list[Any]) -> tuple[int, list[str]]:
    """``engine review``: make the reviews of one discovery Evaluation with a judge."""
    from engine.protocols.discovery.manifest import run_manifest
    from engine.protocols.discovery.report import ReviewIntegrityError
    from engine.protocols.discovery.reviewer import ReviewError, load_reviewer, review_all

    mine = [e for e in evaluations
            if any(i.type in inspection.TABLE for i in e.policy.inspections.values())]
    if len(mine) != 1:
        raise UsageError(f"name one {NAME} Evaluation", "NO_EVALUATION")
    evaluation = mine[0]
    params = _inspection(evaluation).params
    package = params["package"]
    reviewer = load_reviewer(package.folder, args.judge_base_url, args.judge_model,
                             args.api_key_env)
    inputs = {n: i.path for n, i in evaluation.inputs.items()}
    tasks = list(loads(inputs[params["tasks"]].read_bytes()))
    budget = package.discovery.audit["budget"] if args.audit_documents is None \
        else args.audit_documents  # 0 is not "the default"
    if budget < 1:
        raise UsageError(f"--audit-documents wants a positive number of documents, got "
                         f"{budget}", "USAGE")
    try:
        run_manifest(package, tasks, inputs[params["submissions"]])
    except ReviewIntegrityError as exc:
        raise UsageError(str(exc), exc.code) from None
    try:
        outcomes = review_all(package, reviewer, tasks, inputs[params["corpora"]],
                              inputs[params["submissions"]], args.reviews_dir, budget,
                              args.derived_key)
    except ReviewError as exc:
        raise UsageError(str(exc), exc.code) from None
    lines = []
    for outcome in outcomes:
        error = outcome.get("error")
        suffix = f" {error['code']}: {error['message']}" if error else ""
        lines.append(f"{outcome['task_id']}: {outcome['outcome']}{suffix}")
    return (1 if any(o["outcome"] == "error" for o in outcomes) else 0), lines


PROTOCOL = Protocol(
    name=NAME,
    formats=(Format("discovery-tasks", read_tasks, suite="governance"),),
    primitives=inspection.TABLE,
    compilers={"x-discovery": compile_package},
    reports=(Report(NAME, build_report, frozenset(inspection.TABLE), key_domain=KEY_DOMAIN),),
    codes=CODES,
    commands=(Command("review", f"make {NAME} reviews with a judge", _review_arguments,
                      review, exits="0 every review made, 1 a task's review could not be made "
                      "(its error printed; the others are kept)",
                      examples=("engine review specs/finding-quality-discovery --reviews-dir "
                                "reviews/ --judge-base-url http://127.0.0.1:8000/v1 "
                                "--judge-model m --key keys/runner/private.pem",),
                      key_domain=KEY_DOMAIN),),
)
