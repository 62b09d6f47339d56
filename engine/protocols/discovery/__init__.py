"""finding-quality-discovery: the code primitives behind the protocol's spec data.

``load_protocol`` reads the spec package (protocol, gates, statistics, audit and scoring
YAML, submission schema), each file checked against its JSON Schema and the gates against
the check table, every problem located (``SpecErrors``); ``check_submission`` runs G0-G9 on
one submission.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.canonical import digest
from engine.errors import Problem, SpecErrors
from engine.protocols.discovery import files, layout
from engine.protocols.discovery.audit import AuditError, rank, sample
from engine.protocols.discovery.corpus import Corpus, LoadError, load_corpus, meta, strict_date
from engine.protocols.discovery.gates import Gates, Protocol
from engine.protocols.discovery.names import task_file, task_problem, usable_tasks
from engine.protocols.discovery.scoring import (
    Scoring,
    compile_scoring,
    finding_score,
    report,
    summary,
    task_quality,
)
from engine.protocols.discovery.stats import compile_statistics
from engine.records.strict_json import DEEP, JsonError, TooDeep, loads, shallow
from engine.spec import opened
from engine.spec.schema import Checker, offline, outside_refs
from engine.spec.translate import compile_check

PACKAGE_FILES = ("protocol", "gates", "statistics", "audit", "scoring")

__all__ = ["AuditError", "Corpus", "Discovery", "JsonError", "LoadError", "check_submission",
           "finding_score", "load_corpus", "load_protocol", "loads", "meta", "rank",
           "report", "sample", "strict_date", "summary", "task_file", "task_problem",
           "task_quality", "usable_tasks"]


@dataclass(frozen=True)
class Discovery:
    """The compiled spec package."""

    protocol: Protocol
    scoring: Scoring
    audit: dict[str, Any]
    version: str
    difficulty: str
    benchmark_version: str = ""


def _documents(folder: Path, problems: list[Problem]) -> dict[str, Any]:
    docs = {name: files.read(folder / f"{name}.yaml", problems) for name in PACKAGE_FILES}
    kinds = files.engine_table("kinds.yaml", problems)
    return {**docs, "kinds": kinds} if None not in docs.values() and kinds else {}


def _submission_schema(folder: Path, problems: list[Problem]) -> Any:
    path = folder / "schema" / "submission.schema.json"
    try:
        schema = shallow(opened.read_text(path))
    except TooDeep:  # as a spec's YAML nested as deep is (engine/spec/yaml.py)
        problems.append(Problem(files.shown(path), 1, 1, "SPEC_TOO_DEEP", "", f"{DEEP}, "
                                "deeper than any schema needs"))
        return None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        problems.append(Problem(files.shown(path), 1, 1, "BAD_SCHEMA", "",
                                f"not a usable JSON Schema: {exc}"))
        return None
    fast = compile_check(schema)  # one the meta-schema passes, with no $ref in it
    if fast is not None:
        return Checker(schema, fast, lambda: _validator(schema))
    import jsonschema
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except (OSError, UnicodeDecodeError, ValueError, jsonschema.SchemaError) as exc:
        reason = exc.message if isinstance(exc, jsonschema.SchemaError) else str(exc)
        problems.append(Problem(files.shown(path), 1, 1, "BAD_SCHEMA", "",
                                f"not a usable JSON Schema: {reason}"))
        return None
    outside = outside_refs(schema)
    if outside:
        problems.append(Problem(files.shown(path), 1, 1, "BAD_SCHEMA", "",
                                f"$ref {outside[0][:80]!r} points outside the schema, and "
                                "nothing outside is fetched"))
        return None
    return Checker(schema, None, lambda: _validator(schema))


def _validator(schema: Any) -> Any:
    import jsonschema
    return jsonschema.Draft202012Validator(schema, registry=offline())


def load_protocol(folder: Path) -> Discovery:
    """Compile the package in ``folder``; SpecErrors with every located problem if it is bad."""
    problems: list[Problem] = []
    docs = _documents(folder, problems)
    schema = _submission_schema(folder, problems)
    if not docs:
        raise SpecErrors(problems)
    kinds, stats = docs["kinds"], docs["statistics"]
    compiled = compile_statistics(stats, kinds, problems)
    used = list(compiled)
    problems += layout.check_gates(docs["gates"], docs["protocol"], kinds)
    problems += layout.check_conditions(docs["protocol"], kinds, used)
    if not problems:  # the order is checked over known checks only
        problems += layout.check_order(docs["gates"], kinds, used)
    scoring = compile_scoring(docs["scoring"], problems)
    if problems or schema is None:
        raise SpecErrors(problems)
    robust = stats.data["robustness"]
    robust_keys = ["robustness_known_arm0_n", "robustness_known_arm1_n"] + [
        f"robustness_{axis}_{name}" for axis in robust["axes"] for name in robust["fields"]]
    order = {kind: [key for key, _ in block.keys] + robust_keys
             for kind, block in compiled.items()}
    gates, protocol = docs["gates"].data, docs["protocol"].data
    gate_protocol = Protocol(gates["gates"], protocol["gates"], compiled, order, robust,
                             float(stats.data["tolerance"]), schema, int(gates["message_limit"]),
                             {kind: kinds[kind] for kind in used})
    return Discovery(gate_protocol, scoring, docs["audit"].data, str(protocol["scoring_version"]),
                     str(protocol["difficulty"]), str(protocol["benchmark_version"]))


def check_submission(package: Discovery, task: dict[str, Any], corpus: Corpus,
                     raw: bytes) -> dict[str, Any]:
    """G0-G9 on one submission file's bytes: the valid result (§5.12) or the error."""
    try:
        submission = loads(raw)
    except JsonError as exc:
        return {"task_id": task["task_id"], "valid": False,
                "error": {"code": exc.code, "message": str(exc)}}
    if task.get("kind") not in package.protocol.kinds:
        return {"task_id": task["task_id"], "valid": False,
                "error": {"code": "TASK_KIND", "message": f"task kind {task.get('kind')!r} is "
                          f"not one of {sorted(package.protocol.kinds)}"}}
    error = Gates(package.protocol, task, corpus).run(submission)
    if error is not None:
        return {"task_id": task["task_id"], "valid": False, "error": error}
    return {"task_id": task["task_id"], "valid": True, "findings": len(submission["findings"]),
            "submission_sha256": digest(submission), "corpus_sha256": corpus.sha256,
            "submission": submission}
