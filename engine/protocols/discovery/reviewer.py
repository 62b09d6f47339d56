"""The review stage of finding-quality-discovery (§7-§9, §12): ``engine review``.

Per task: local gates, the seeded audit sample, the claim-blind check (batched requests,
one repair per batch, a cache bound to its inputs), the narrative judge (no repair), and a
review file bound to the task, corpus, submission, reference and scoring digests. Files are
created exclusively and never overwritten; a stale review needs a fresh review directory.
Every file written is sealed with the review's key (seal.py); a review file or blind cache
whose seal does not verify was not written by this job and is refused, never redone over
(REVIEW_FILE_FOREIGN: the folder is the evaluated party's to write).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from engine.canonical import digest
from engine.errors import VerifyError
from engine.evidence.verify import read_file, write_whole
from engine.judge import Client, check_key, key_path, load_key, open_client
from engine.protocols.discovery import check_submission, sample
from engine.protocols.discovery.ask import Reviewer, ReviewError, ask, load_reviewer, replace_system
from engine.protocols.discovery.audit import AuditError
from engine.protocols.discovery.blind import batches, definitions, payload, segments, validate
from engine.protocols.discovery.checks import Finding
from engine.protocols.discovery.checks_content import ARMS, FORMED_BY
from engine.protocols.discovery.corpus import Corpus, LoadError, load_corpus
from engine.protocols.discovery.gates import Gates
from engine.protocols.discovery.judge_settings import config_fields
from engine.protocols.discovery.names import task_file
from engine.protocols.discovery.review import (
    IntegrityError,
    check_judge_rows,
    evidence_gate,
    verify_blind,
)
from engine.protocols.discovery.seal import (
    SEALED_KEYS,
    canonical_digests,
    canonical_sha,
    derive,
    drawn_after,
    make_origin,
    origin_problem,
    seal,
    seal_file,
    sealed,
    sealed_file,
)
from engine.protocols.discovery.stats import audit_details
from engine.protocols.discovery.task import Package, _corpus_file, reference_sha256
from engine.records.strict_json import JsonError, loads

__all__ = ["ReviewError", "Reviewer", "judge_config", "load_reviewer",
           "review_all", "review_task"]

MAX_CONFIG = 1 << 20  # judge_config.json is under 2 KB; a larger file is refused unread
MAX_FILE = 1 << 28  # a review file or blind cache larger than this is refused unread


def _read_sealed(path: Path, key: bytes, what: str) -> dict[str, Any]:
    """A review file or blind cache this job wrote: its seal verifies with ``key``, else
    REVIEW_FILE_FOREIGN (planted or edited in the folder; refused, not redone over)."""
    try:
        stored = loads(read_file(path, MAX_FILE))
    except (JsonError, VerifyError) as exc:
        raise ReviewError("REVIEW_FILE_FOREIGN", f"{path.name} is not a {what} this review "
                          f"wrote ({exc}); start a fresh review directory") from None
    if not sealed_file(stored, key):
        raise ReviewError("REVIEW_FILE_FOREIGN", f"{path.name} was not written by this review "
                          f"job (its seal is missing or does not verify); a {what} it did not "
                          "write is neither used nor redone over: start a fresh review "
                          "directory")
    return dict(stored)


def _write_new(path: Path, value: Any) -> None:
    """Create a file exclusively (OUTPUT_EXISTS if it is there)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise ReviewError("OUTPUT_EXISTS", f"{path.name} already exists") from None
    with os.fdopen(fd, "wb") as handle:
        handle.write(json.dumps(value, indent=1, ensure_ascii=False).encode() + b"\n")


def seal_key(folder: Path, derived: bytes | None) -> tuple[bytes, str]:
    """The key that seals what the review writes, and its ``sealed_by``: ``derived`` (the
    signing key derived under seal.KEY_DOMAIN), else the runner's key file."""
    return (derived, "signing_key") if derived is not None else \
        (load_key(key_path(), folder), "runner_key")


def judge_config(pkg: Package, reviewer: Reviewer, tasks: list[dict[str, Any]], budget: int,
                 folder: Path, submissions: Path, sealer: tuple[bytes, str]) -> dict[str, Any]:
    """judge_config.json: created once, sealed, with a seed the review derives itself from
    the submissions as it reads them (seal.py); on every later run, its own seal, the seed's
    derivation and the submissions are checked, then every other field is compared."""
    current = config_fields(pkg, reviewer.model, reviewer.base_url, tasks, budget)
    seed_bytes = pkg.discovery.audit["seed_bytes"]
    key, sealed_by = sealer
    after = canonical_digests(tasks, submissions)  # the submissions as they now stand
    path = folder / "judge_config.json"
    if not os.path.lexists(path):
        if any(folder.iterdir()):  # reviews or blind caches someone else put there
            raise ReviewError("REVIEW_CONFIG_FOREIGN", "the review directory holds files but "
                              "no judge_config.json: this review did not write them; start a "
                              "fresh review directory")
        seed = derive(key, current["tasks_sha256"], after, seed_bytes)
        stored = seal({**current, "audit_seed": seed,
                       "audit_seed_origin": make_origin(seed_bytes, after, sealed_by)}, key)
        data = json.dumps(stored, indent=1, ensure_ascii=False).encode() + b"\n"
        try:  # whole or not at all, never over a file put there meanwhile
            written = write_whole(path, data)
        except OSError:  # no hard links on this file system: created exclusively instead
            _write_new(path, stored)
            written = True
        if not written:
            raise ReviewError("REVIEW_CONFIG_FOREIGN", "judge_config.json appeared while the "
                              "review was drawing its seed; start a fresh review directory")
        return stored
    try:
        stored = loads(read_file(path, MAX_CONFIG))
    except (JsonError, VerifyError) as exc:
        raise ReviewError("REVIEW_CONFIG_FOREIGN", f"judge_config.json is not one this "
                          f"review wrote ({exc}); start a fresh review directory") from None
    if not sealed(stored, key):  # planted, edited, or sealed by another job's key
        raise ReviewError("REVIEW_CONFIG_FOREIGN", "judge_config.json was not written by this "
                          f"review job (its seal is missing or does not verify with the "
                          f"{sealed_by.replace('_', ' ')}); the review never takes a seed it "
                          "did not draw: start a fresh review directory")
    problem = origin_problem(stored, seed_bytes, sealed_by, key)
    if problem:
        raise ReviewError("AUDIT_SEED_ORIGIN", f"judge_config.json: {problem}; start a fresh "
                          "review directory")
    if {k: v for k, v in stored.items() if k not in SEALED_KEYS} != current:
        raise ReviewError("JUDGE_CONFIG_MISMATCH", "the review directory was made with another "
                          "judge configuration; start a fresh review directory")
    return dict(stored)


async def _blind(client: Client, reviewer: Reviewer, pkg: Package, corpus: Corpus,
                 findings: list[dict[str, Any]], doc_ids: list[str]
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    record = pkg.blind.record
    defs = definitions(findings)
    segs = {d: segments(corpus.rows[d]["text"], record["segment_max_characters"],
                        record["segment_split_min_characters"]) for d in doc_ids}
    groups = batches(doc_ids, {d: len(corpus.rows[d]["text"]) for d in doc_ids},
                     record["batch_documents"], record["batch_characters"])
    gate = asyncio.Semaphore(reviewer.concurrency)

    async def one(group: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        docs = [segs[d] for d in group]
        texts = [corpus.rows[d]["text"] for d in group]
        user = payload(defs, docs)
        async with gate:
            answer, receipt = await ask(client, reviewer, user)
            rows, why = validate(answer, docs, texts, len(defs))
            receipts = [receipt]
            if rows is None:  # BLIND_OUTPUT_INVALID: exactly one repair
                repair = replace_system(reviewer, user["output_contract"]["row_length"])
                fixed = {**user, "previous_response": answer, "validation_error": why}
                answer, receipt = await ask(client, repair, fixed)
                receipts.append(receipt)
                rows, why = validate(answer, docs, texts, len(defs))
                if rows is None:
                    raise ReviewError("BLIND_CHECK_FAILED", f"the repaired response fails: {why}")
        return [{"doc_id": d, **row} for d, row in zip(group, rows, strict=True)], receipts

    # A task group, not gather: when one batch fails, the others are cancelled and awaited
    # before the client closes, so no connection is left open behind the error.
    try:
        async with asyncio.TaskGroup() as running:
            tasks = [running.create_task(one(g)) for g in groups]
    except ExceptionGroup as failed:
        raise failed.exceptions[0] from None
    results = [t.result() for t in tasks]  # assembled in batch order
    return [a for rows, _ in results for a in rows], [r for _, rs in results for r in rs]


def _packet(pkg: Package, task: dict[str, Any], corpus: Corpus, submission: dict[str, Any],
            doc_ids: list[str]) -> dict[str, Any]:
    evidence = {e["doc_id"] for f in submission["findings"] for e in f["evidence"]}
    states = {}
    for f in submission["findings"]:
        for a in f["assignments"]:
            key = f"{f['finding_id']}/{a['condition_id']}"
            states[key] = {d: s for s in ("positive", "negative", "unknown")
                           for d in a[f"{s}_doc_ids"]}
    documents = [{**corpus.rows[d], "participant_assignments": {
        k: v.get(d, "outside_selected_population") for k, v in states.items()},
        "participant_evidence": d in evidence} for d in doc_ids]
    shown = json.loads(json.dumps(submission))
    for f in shown["findings"]:
        f["assignment_counts"] = {a["condition_id"]: {s: len(a[f"{s}_doc_ids"]) for s in
                                                      ("positive", "negative", "unknown")}
                                  for a in f.pop("assignments")}
    audit = {"method": "stratified_assignment_and_corpus_sample",
             "corpus_documents": len(corpus.ids), "sample_documents": len(doc_ids),
             "participant_evidence_documents": len(evidence),
             "full_arithmetic_verified": True, "exhaustive_semantic_verification": False}
    return {"task": task, "documents": documents, "submission": shown, "semantic_audit": audit}


async def review_task(client: Client, pkg: Package, reviewer: Reviewer,
                      config: dict[str, Any], task: dict[str, Any], tasks: list[dict[str, Any]],
                      corpora: Path, submissions: Path, folder: Path,
                      key: bytes) -> dict[str, Any]:
    """One task's review-stage outcome: missing, abstained, reused, reviewed, or error."""
    try:
        path = task_file(submissions, task, ".json")  # before anything is read
    except LoadError as exc:
        return {"task_id": task.get("task_id"), "outcome": "error",
                "error": {"code": exc.code, "message": str(exc)}}
    if not path.is_file():
        return {"task_id": task["task_id"], "outcome": "missing"}
    try:
        corpus = load_corpus(_corpus_file(corpora, task), task["corpus_sha256"],
                             task["n_documents"])
        raw = path.read_bytes()
        result = check_submission(pkg.discovery, task, corpus, raw)
        if not result["valid"]:
            raise ReviewError(result["error"]["code"], result["error"]["message"])
        submission = result["submission"]
        if not submission["findings"]:
            return {"task_id": task["task_id"], "outcome": "abstained"}
        binding = {"task_id": task["task_id"], "submission_sha256": result["submission_sha256"],
                   "corpus_sha256": task["corpus_sha256"],
                   "reference_sha256": reference_sha256(pkg.benchmark_version, tasks),
                   "scoring_version": pkg.discovery.version, "task_sha256": digest(task)}
        review_path = task_file(folder, task, ".json")
        if os.path.lexists(review_path):
            stored = _read_sealed(review_path, key, "review file")
            if any(stored.get(k) != v for k, v in binding.items()):
                raise ReviewError("STALE_REVIEW", "the stored review no longer matches; use a "
                                  "fresh review directory")
            return {"task_id": task["task_id"], "outcome": "reused"}
        if not drawn_after(config["audit_seed_origin"], task["task_id"], canonical_sha(raw)):
            raise ReviewError("SEED_BEFORE_SUBMISSIONS", "the audit seed was not derived from "
                              "this submission as it is now (it changed after the seed); use "
                              "a fresh review directory")
        review = await _review(client, pkg, reviewer, config, task, corpus, submission,
                               binding, folder, key)
        _write_new(review_path, seal_file(review, key))
        return {"task_id": task["task_id"], "outcome": "reviewed"}
    except (ReviewError, LoadError, IntegrityError, AuditError) as exc:
        return {"task_id": task["task_id"], "outcome": "error",
                "error": {"code": exc.code, "message": str(exc)}}


async def _review(client: Client, pkg: Package, reviewer: Reviewer,
                  config: dict[str, Any], task: dict[str, Any], corpus: Corpus,
                  submission: dict[str, Any], binding: dict[str, Any],
                  folder: Path, key: bytes) -> dict[str, Any]:
    findings = submission["findings"]
    seed, budget = config["audit_seed"], config["audit_documents"]
    doc_ids = sample(seed, budget, task["task_id"], corpus.ids, findings,
                     pkg.discovery.audit)["document_ids"]
    cache_path = task_file(folder, task, ".blind.json")
    cache_binding = {k: binding[k] for k in ("task_sha256", "submission_sha256",
                                             "corpus_sha256")}
    cache_binding["judge_config_sha256"] = digest(config)
    if os.path.lexists(cache_path):
        cached = _read_sealed(cache_path, key, "blind cache")
        if cached.get("binding") != cache_binding:
            raise ReviewError("BLIND_CACHE_BINDING", "the blind cache was made for other inputs")
        check, receipts = cached["check"], list(cached["receipts"])
    else:
        annotations, receipts = await _blind(client, reviewer, pkg, corpus, findings, doc_ids)
        check = {"protocol_sha256": pkg.blind.sha256, "seed": seed, "budget": budget,
                 "annotations": annotations}
        _write_new(cache_path, seal_file({"binding": cache_binding, "check": check,
                                          "receipts": receipts}, key))
    annotations = verify_blind(pkg.blind, check, task, corpus, findings, pkg.discovery.audit)
    gates = Gates(pkg.discovery.protocol, task, corpus)
    robust = pkg.discovery.protocol.robustness
    diagnostics, audits, offset = {}, {}, 0
    for f in findings:
        sel = gates.selection(f)
        diagnostics[f["finding_id"]] = evidence_gate(pkg.blind, f, offset, sel, annotations)
        offset += len(f["definitions"])
        k0, k1, outcome = _known_arms(gates, f, sel)
        audits[f["finding_id"]] = audit_details([d for d in corpus.ids if d in sel], corpus.rows,
                                                k0, k1, outcome, robust["axes"],
                                                robust["min_known_per_arm"])
    packet = _packet(pkg, task, corpus, submission, doc_ids)
    user = {**packet, "robustness_audits": audits, "blind_evidence_diagnostics": diagnostics,
            "blind_annotations": annotations}
    answer, receipt = await ask(client, reviewer, user)
    try:
        if not isinstance(answer, dict) or set(answer) != {"findings"}:
            raise IntegrityError("JUDGE_OUTPUT_INVALID", "the output must be {\"findings\": ...}")
        check_judge_rows(answer["findings"], findings)
    except IntegrityError as exc:
        raise ReviewError("JUDGE_OUTPUT_INVALID", str(exc)) from None
    return {**binding, "reviewer_method": f"{reviewer.base_url} / {reviewer.model}",
            "audit_seed_origin": config["audit_seed_origin"],
            "findings": answer["findings"], "provider_receipts": [*receipts, receipt],
            "blind_check": check,
            "semantic_audit": {**packet["semantic_audit"], "document_ids": doc_ids}}


def _known_arms(gates: Gates, f: dict[str, Any], sel: set[str]
                ) -> tuple[set[str], set[str], set[str]]:
    """The known arms and the outcome of a finding that passed the gates, as G8 forms them."""
    state = Finding(0, f, sel=[d for d in gates.corpus.ids if d in sel], sel_set=sel)
    state.labels = {a["condition_id"]: {s[0].upper(): set(a[f"{s}_doc_ids"]) for s in
                                        ("positive", "negative", "unknown")}
                    for a in f["assignments"]}
    how = gates.rules["arms"]
    if how in FORMED_BY:
        FORMED_BY[how](gates, state)
    _, k0, k1, outcome = ARMS[how](state)
    return k0, k1, outcome


def review_all(pkg: Package, reviewer: Reviewer, tasks: list[dict[str, Any]], corpora: Path,
               submissions: Path, folder: Path, budget: int,
               derived: bytes | None = None) -> list[dict[str, Any]]:
    """Review every task of the inventory into ``folder``; one outcome per task. ``derived``
    (the signing key derived under seal.KEY_DOMAIN) seals the seed, else the key file."""
    check_key(reviewer.api_key_env)  # BAD_API_KEY before anything is asked or written
    folder.mkdir(parents=True, exist_ok=True)
    lo, hi = pkg.discovery.audit["budget_range"]
    if not isinstance(budget, int) or not lo <= budget <= hi:
        raise ReviewError("AUDIT_BUDGET_RANGE", f"audit budget {budget} is not in [{lo}, {hi}]")
    sealer = seal_key(folder, derived)
    config = judge_config(pkg, reviewer, tasks, budget, folder, submissions, sealer)

    async def everything() -> list[dict[str, Any]]:
        async with open_client(reviewer.concurrency, reviewer.timeout_s) as client:
            return [await review_task(client, pkg, reviewer, config, t, tasks, corpora,
                                      submissions, folder, sealer[0]) for t in tasks]

    return asyncio.run(everything())
