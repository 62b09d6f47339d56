"""One task of finding-quality-discovery, evaluated end to end (§1): load, gate, verify the
review, score. The result is the task's score record (§10.3)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.canonical import digest
from engine.errors import Problem, SpecErrors
from engine.protocols.discovery import Discovery, check_submission, files
from engine.protocols.discovery.corpus import LoadError, load_corpus
from engine.protocols.discovery.gates import Gates
from engine.protocols.discovery.names import task_file
from engine.protocols.discovery.review import BlindGate, IntegrityError, score_review, verify_blind
from engine.records.strict_json import JsonError, loads
from engine.spec import opened


@dataclass(frozen=True)
class Package:
    """The spec package plus the blind gate and the release metadata."""

    discovery: Discovery
    blind: BlindGate
    benchmark_version: str
    files: tuple[str, ...] = ()  # the package files read, relative to its folder
    folder: Path = Path(".")  # where the package is
    judge: tuple[str, str, dict[str, Any]] | None = None  # judge.yaml's texts, as loaded


def load_package(folder: Path) -> Package:
    """The spec package in ``folder``; SpecErrors with every located problem if it is bad."""
    from engine.protocols.discovery import load_protocol
    from engine.protocols.discovery.review import compile_blind

    problems: list[Problem] = []
    discovery = None
    try:
        discovery = load_protocol(folder)
    except SpecErrors as exc:
        problems += exc.problems
    doc = files.read(folder / "blind_check.yaml", problems)
    if doc is None:
        raise SpecErrors(problems)
    rel = doc.data["record"]["prompt_file"]
    try:
        prompt = opened.read_text(folder / rel)
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(doc.problem(("record", "prompt_file"), "BAD_DATA_FILE",
                                    f"'{rel}' is not readable: {exc}"))
        prompt = ""
    blind = compile_blind(doc, prompt, problems)
    if problems or discovery is None:
        raise SpecErrors(problems)
    names = ("protocol.yaml", "gates.yaml", "statistics.yaml", "audit.yaml", "scoring.yaml",
             "blind_check.yaml", "schema/submission.schema.json", rel)
    return Package(discovery, blind, discovery.benchmark_version, names, folder)


def _corpus_file(folder: Path, task: dict[str, Any]) -> Path:
    name = Path(str(task.get("corpus_path", f"{task['task_id']}.jsonl.gz"))).name
    plain = folder / name.removesuffix(".gz")
    return folder / name if (folder / name).exists() or not plain.exists() else plain


def reference_sha256(version: str, tasks: list[dict[str, Any]]) -> str:
    """§3.2 without a references file."""
    return digest({"benchmark_version": version, "tasks_sha256": digest(tasks),
                   "reference_policy": "none",
                   "tasks": [{"task_id": t["task_id"], "reference_id": None} for t in tasks]})


def evaluate_task(pkg: Package, task: dict[str, Any], tasks: list[dict[str, Any]],
                  corpora: Path, submissions: Path, reviews: Path | None) -> dict[str, Any]:
    """The score record of one task; ``integrity`` holds a code when a review can't be used."""
    d = pkg.discovery
    base = {"task_id": task["task_id"], "submission_sha256": None, "corpus_sha256":
            task.get("corpus_sha256"), "reference_sha256": reference_sha256(
                pkg.benchmark_version, tasks), "scoring_version": d.version,
            "task_sha256": digest(task), "status": "missing", "quality": None,
            "reference_coverage": None, "reviewer_method": None, "findings": []}
    try:
        path = task_file(submissions, task, ".json")  # before anything is read
    except LoadError as exc:
        return {**base, "status": "invalid", "error": {"code": exc.code, "message": str(exc)}}
    if not path.is_file():
        return base
    try:
        corpus = load_corpus(_corpus_file(corpora, task), task["corpus_sha256"],
                             task["n_documents"])
    except LoadError as exc:
        return {**base, "status": "invalid", "error": {"code": exc.code, "message": str(exc)}}
    result = check_submission(d, task, corpus, path.read_bytes())
    if not result["valid"]:
        return {**base, "status": "invalid", "error": result["error"]}
    submission = result["submission"]
    base["submission_sha256"] = result["submission_sha256"]
    if not submission["findings"]:
        return {**base, "status": "abstained"}
    review_path = task_file(reviews, task, ".json") if reviews else None
    if review_path is None or not review_path.is_file():
        return {**base, "status": "pending_review"}
    try:
        review = loads(review_path.read_bytes())
        quality, status, scored = _review(pkg, task, corpus, submission, review, base)
    except (IntegrityError, JsonError) as exc:
        code = exc.code if isinstance(exc, IntegrityError) else "STALE_REVIEW"
        return {**base, "status": "pending_review", "integrity": {"code": code,
                                                                  "message": str(exc)}}
    return {**base, "status": status, "quality": quality, "findings": scored,
            "reviewer_method": review.get("reviewer_method")}


def _review(pkg: Package, task: dict[str, Any], corpus: Any, submission: dict[str, Any],
            review: Any, base: dict[str, Any]) -> tuple[Any, str, list[Any]]:
    if not isinstance(review, dict):
        raise IntegrityError("STALE_REVIEW", "the review is not an object")
    for key in ("task_id", "task_sha256", "corpus_sha256", "submission_sha256",
                "reference_sha256", "scoring_version"):
        if review.get(key) != base[key]:
            raise IntegrityError("STALE_REVIEW", f"the review's {key} differs from the current "
                                 "value")
    findings = submission["findings"]
    annotations = verify_blind(pkg.blind, review.get("blind_check") or {}, task, corpus,
                               findings, pkg.discovery.audit)
    gates = Gates(pkg.discovery.protocol, task, corpus)
    sels = [gates.selection(f) for f in findings]
    return score_review(pkg.blind, pkg.discovery.scoring, review, findings, sels, annotations)
