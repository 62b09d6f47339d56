"""What an evaluation reads beside the reviews and submissions (discovery §9.6, §12.4).

``judge_config.json`` in the review directory is checked again: every field but the seed is
worked out afresh from the spec package and the inventory, and each review it scores must
carry its reviewer method, seed and budget. ``run.json`` beside the submissions, when
present, must describe this inventory and profile; it is copied into the report.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from engine.canonical import digest
from engine.protocols.discovery.judge_settings import config_fields
from engine.protocols.discovery.names import task_file
from engine.protocols.discovery.report import ReviewIntegrityError
from engine.protocols.discovery.seal import (
    SEALED_KEYS,
    canonical_digests,
    drawn_after,
    origin_problem,
    pinned,
    sealed,
    sealed_file,
    submission_digests,
)
from engine.protocols.discovery.task import Package
from engine.records.strict_json import JsonError, is_integer, loads

RUN_KEYS = ("tasks_sha256", "command", "track", "timeout_seconds", "task_id", "limit",
            "difficulty", "effective_tasks_sha256")
TRACKS = ("task_only", "unlabeled_pool")
_SHA = re.compile(r"[0-9a-f]{64}")


def _object(path: Path, code: str) -> dict[str, Any]:
    try:
        value = loads(path.read_bytes())
    except (OSError, JsonError) as exc:
        raise ReviewIntegrityError(f"{path}: {exc}", code) from None
    if not isinstance(value, dict):
        raise ReviewIntegrityError(f"{path}: not a JSON object", code)
    return value


def reviewer_identity(pkg: Package, tasks: list[dict[str, Any]], folder: Path | None,
                      records: list[dict[str, Any]], submissions: Path, purpose: str,
                      derived: bytes | None) -> dict[str, Any] | None:
    """The verified judge configuration's reviewer, budget and audit size, or None when no
    review directory was given; ReviewIntegrityError when it does not match, or when its
    seed is not one the review job drew after these submissions (seal.py). ``derived`` is
    this run's signing key derived under seal.KEY_DOMAIN, None when the run is unsigned."""
    path = folder / "judge_config.json" if folder is not None else None
    reviewed = [r for r in records if r.get("reviewer_method")]
    if path is None or not path.exists():
        if reviewed:
            raise ReviewIntegrityError(f"{len(reviewed)} review(s) scored without the "
                                       "judge_config.json of their review directory",
                                       "JUDGE_CONFIG_MISSING")
        return None
    stored = _object(path, "JUDGE_CONFIG_MISMATCH")
    model, base_url, budget = (stored.get(k) for k in ("model", "base_url", "audit_documents"))
    if not (isinstance(model, str) and isinstance(base_url, str)
            and isinstance(budget, int) and not isinstance(budget, bool)):
        raise ReviewIntegrityError(f"{path}: model, base_url and audit_documents are missing "
                                   "or of the wrong type", "JUDGE_CONFIG_MISMATCH")
    current = config_fields(pkg, model, base_url, tasks, budget)
    kept = {k: v for k, v in stored.items() if k not in SEALED_KEYS}
    changed = sorted(k for k in set(kept) | set(current) if kept.get(k) != current.get(k))
    if changed:
        raise ReviewIntegrityError(f"{path}: {', '.join(changed)} differ(s) from this "
                                   "package and inventory", "JUDGE_CONFIG_MISMATCH")
    origin, key = _check_seed(pkg, tasks, path, stored, submissions, reviewed,
                              (purpose, derived)) if reviewed else (None, None)
    _check_reviews(folder, stored, records, origin, key)
    return {"model": model, "base_url": base_url,
            "max_input_chars": current["max_input_chars"],
            "max_output_tokens": current["max_output_tokens"], "audit_documents": budget,
            "audit_seed_origin": origin}


def _check_seed(pkg: Package, tasks: list[dict[str, Any]], path: Path, stored: dict[str, Any],
                submissions: Path, reviewed: list[dict[str, Any]],
                run: tuple[str, bytes | None]) -> tuple[str, bytes | None]:
    """How the scored reviews' seed is known not to be the evaluated party's choice, and
    the key that sealed it: ``derived`` (sealed by a review job holding this job's key, of
    audit.yaml's seed_bytes, derived with that key from the submissions it records, each
    scored task's being the one, in canonical form, it scores now) or ``pinned`` (audit.yaml
    pins it for these tasks and those submissions; no key). Anything else is refused:
    whoever writes the review directory could otherwise choose the audit sample.

    This job's key is the run's signing key derived under seal.KEY_DOMAIN; a triage or
    self-test run also takes the runner's key file. A release never does: the key file lies
    on a runner the evaluated party may control, so it could seal a seed it chose."""
    ids = [r["task_id"] for r in reviewed]
    sealer = _sealer(stored, path, *run)
    if sealer is not None:
        kind, key = sealer
        problem = origin_problem(stored, pkg.discovery.audit["seed_bytes"], kind, key)
        if problem:
            raise ReviewIntegrityError(f"{path}: {problem}", "AUDIT_SEED_ORIGIN")
        now = canonical_digests(tasks, submissions)
        late = [t for t in ids if not drawn_after(stored["audit_seed_origin"], t, now.get(t))]
        if late:
            raise ReviewIntegrityError(f"{', '.join(late)}: the audit seed was not derived "
                                       "from the submission as it is now",
                                       "SEED_BEFORE_SUBMISSIONS")
        return "derived", key
    if pinned(pkg.discovery.audit, stored, ids, submission_digests(tasks, submissions)):
        return "pinned", None
    raise ReviewIntegrityError(f"{path}: not written by a review job holding this job's key "
                               f"({_keys_tried(*run)}: its seal is missing or does not "
                               "verify), and audit.yaml pins no such seed for these "
                               "submissions", "REVIEW_CONFIG_FOREIGN")


def _sealer(stored: dict[str, Any], path: Path, purpose: str,
            derived: bytes | None) -> tuple[str, bytes] | None:
    """Which of this job's keys sealed the configuration (seal.SEALERS) and that key, or
    None."""
    if derived is not None and sealed(stored, derived):
        return "signing_key", derived
    if purpose == "release":  # the runner's key file is the evaluated party's to read
        return None
    from engine.judge import key_path, load_key  # its key file only when it may count

    key = load_key(key_path(), path.parent)
    return ("runner_key", key) if sealed(stored, key) else None


def _keys_tried(purpose: str, derived: bytes | None) -> str:
    signed = "the key derived from this run's signing key" if derived is not None else ""
    if purpose == "release":
        return signed or ("an unsigned release checks no derived seed: review and run with "
                          "the same --key")
    return f"{signed} or the runner's key file" if signed else "the runner's key file"


def _check_reviews(folder: Any, stored: dict[str, Any], records: list[dict[str, Any]],
                   origin: str | None, key: bytes | None) -> None:
    """Each scored review was made under this configuration (method, seed and budget); one
    whose seed was derived records the configuration's seed origin and carries a seal made
    with the configuration's key (REVIEW_FILE_FOREIGN: grades, annotations or audit records
    rewritten in the folder after the review job). A pinned seed's review files are
    governance's, shipped with the spec package the pin is part of."""
    method = f"{stored['base_url']} / {stored['model']}"
    for record in records:
        if not record.get("reviewer_method"):
            continue
        review = _object(task_file(folder, record, ".json"), "JUDGE_CONFIG_MISMATCH")
        if origin == "derived" and (key is None or not sealed_file(review, key)):
            raise ReviewIntegrityError(f"{record['task_id']}: the review file was not written "
                                       "by the review job that sealed judge_config.json (its "
                                       "seal is missing or does not verify with that key)",
                                       "REVIEW_FILE_FOREIGN")
        check = review.get("blind_check") or {}
        if (record["reviewer_method"], check.get("seed"), check.get("budget")) != \
                (method, stored.get("audit_seed"), stored["audit_documents"]):
            raise ReviewIntegrityError(f"{record['task_id']}: the review's reviewer method, "
                                       "seed or budget is not the judge configuration's",
                                       "JUDGE_CONFIG_MISMATCH")
        if origin == "derived" and review.get("audit_seed_origin") != stored["audit_seed_origin"]:
            raise ReviewIntegrityError(f"{record['task_id']}: the review does not record the "
                                       "judge configuration's seed origin",
                                       "AUDIT_SEED_ORIGIN")


def effective(tasks: list[Any], task_id: Any, limit: Any) -> list[Any] | None:
    """The tasks a run over ``tasks`` with this ``task_id`` and ``limit`` attempts (the
    task of that id, else the first ``limit``, else all); None when the id is not one of
    them."""
    if task_id is not None:
        chosen = [t for t in tasks if isinstance(t, dict) and t.get("task_id") == task_id]
        return chosen[:1] or None
    return tasks[:limit] if limit is not None else tasks


def run_manifest(pkg: Package, tasks: list[Any], folder: Path) -> dict[str, Any] | None:
    """``folder/run.json`` checked against this inventory and profile, or None: its
    ``effective_tasks_sha256`` must be the digest of the tasks its ``task_id`` and ``limit``
    select from this inventory."""
    path = folder / "run.json"
    if not path.exists():
        return None
    run = _object(path, "RUN_MANIFEST_INVALID")
    if sorted(run) != sorted(RUN_KEYS):
        missing = [k for k in RUN_KEYS if k not in run]
        extra = sorted(set(run) - set(RUN_KEYS))
        raise ReviewIntegrityError(f"{path}: missing {missing}, unknown {extra}",
                                   "RUN_MANIFEST_INVALID")
    wrong = _wrong_types(run)
    if wrong:
        raise ReviewIntegrityError(f"{path}: {', '.join(wrong)} of the wrong type or value",
                                   "RUN_MANIFEST_INVALID")
    chosen = effective(tasks, run["task_id"], run["limit"])
    if chosen is None:
        raise ReviewIntegrityError(f"{path}: task_id {run['task_id']!r} is not a task of "
                                   "this inventory", "RUN_MANIFEST_MISMATCH")
    for key, want in (("difficulty", pkg.discovery.difficulty),
                      ("tasks_sha256", digest(tasks)),
                      ("effective_tasks_sha256", digest(chosen))):
        if run[key] != want:
            raise ReviewIntegrityError(f"{path}: {key} is {run[key]!r}, this run's is "
                                       f"{want!r}", "RUN_MANIFEST_MISMATCH")
    return run


def _wrong_types(run: dict[str, Any]) -> list[str]:
    def number(v: Any) -> bool:
        return isinstance(v, int | float) and not isinstance(v, bool) and v > 0

    ok = {"tasks_sha256": isinstance(run["tasks_sha256"], str)
          and bool(_SHA.fullmatch(run["tasks_sha256"])),
          "effective_tasks_sha256": isinstance(run["effective_tasks_sha256"], str)
          and bool(_SHA.fullmatch(run["effective_tasks_sha256"])),
          "command": isinstance(run["command"], list)
          and all(isinstance(a, str) for a in run["command"]),
          "track": run["track"] in TRACKS,
          "timeout_seconds": run["timeout_seconds"] is None or number(run["timeout_seconds"]),
          "task_id": run["task_id"] is None or isinstance(run["task_id"], str),
          "limit": run["limit"] is None or (is_integer(run["limit"]) and run["limit"] > 0),
          "difficulty": isinstance(run["difficulty"], str)}
    return [k for k in RUN_KEYS if not ok[k]]


def inventory(path: Path, usable: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """tasks.json as the review stage reads it (every element), else the usable tasks."""
    try:
        raw = loads(path.read_bytes())
    except (OSError, JsonError):
        return usable
    return list(raw) if isinstance(raw, list) else usable
