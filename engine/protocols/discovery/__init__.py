"""finding-quality-discovery: the code primitives behind the protocol's spec data.

``load_protocol`` reads the spec package (protocol, gates, statistics, audit and scoring
YAML, submission schema); ``check_submission`` runs G0-G9 on one submission.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from engine.canonical import digest
from engine.protocols.discovery.audit import AuditError, new_seed, rank, sample
from engine.protocols.discovery.corpus import Corpus, LoadError, load_corpus, meta, strict_date
from engine.protocols.discovery.gates import Gates, Protocol, check_messages
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
from engine.records.strict_json import JsonError, loads
from engine.spec import yaml as _yaml

__all__ = ["AuditError", "Corpus", "Discovery", "JsonError", "LoadError", "check_submission",
           "finding_score", "load_corpus", "load_protocol", "loads", "meta", "new_seed", "rank",
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


def _read(folder: Path, name: str) -> Any:
    doc, problems = _yaml.parse((folder / name).read_text("utf-8"), str(folder / name))
    if doc is None:
        raise ValueError("; ".join(str(p) for p in problems))
    return doc.data


def load_protocol(folder: Path) -> Discovery:
    """Compile the package in ``folder``; ValueError (or a subclass) names what is wrong."""
    protocol, gates, stats = (_read(folder, n) for n in ("protocol.yaml", "gates.yaml",
                                                         "statistics.yaml"))
    check_messages(gates["gates"])
    schema = json.loads((folder / "schema" / "submission.schema.json").read_text("utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    robust = stats["robustness"]
    robust_keys = ["robustness_known_arm0_n", "robustness_known_arm1_n"] + [
        f"robustness_{axis}_{name}" for axis in robust["axes"] for name in robust["fields"]]
    compiled = compile_statistics(stats)
    order = {kind: [key for key, _ in block.keys] + robust_keys
             for kind, block in compiled.items()}
    gate_protocol = Protocol(gates["gates"], protocol["gates"], compiled, order, robust,
                             float(stats["tolerance"]), jsonschema.Draft202012Validator(schema),
                             int(gates["message_limit"]))
    return Discovery(gate_protocol, compile_scoring(_read(folder, "scoring.yaml")),
                     _read(folder, "audit.yaml"), str(protocol["scoring_version"]),
                     str(protocol["difficulty"]))


def check_submission(package: Discovery, task: dict[str, Any], corpus: Corpus,
                     raw: bytes) -> dict[str, Any]:
    """G0-G9 on one submission file's bytes: the valid result (§5.12) or the error."""
    try:
        submission = loads(raw)
    except JsonError as exc:
        return {"task_id": task["task_id"], "valid": False,
                "error": {"code": exc.code, "message": str(exc)}}
    error = Gates(package.protocol, task, corpus).run(submission)
    if error is not None:
        return {"task_id": task["task_id"], "valid": False, "error": error}
    return {"task_id": task["task_id"], "valid": True, "findings": len(submission["findings"]),
            "submission_sha256": digest(submission), "corpus_sha256": corpus.sha256,
            "submission": submission}
