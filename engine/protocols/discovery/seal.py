"""Where the audit seed comes from (discovery §7.1): derived by ``engine review`` itself
from the submissions it reviews, under a key only the protected job holds, and sealed into
the ``judge_config.json`` it writes; every review file it writes is sealed too.

The review directory is a folder the evaluated party may write before and after the review
job runs. A seed read from a file there would let it choose the audit sample (seeds can be
tried offline until the sample misses the documents that disprove a finding). A seed drawn
at random would let it re-run the protected job (re-trigger CI, delete the folder) until a
draw it likes comes up. So the seed is neither: it is the first ``seed_bytes`` bytes of an
HMAC-SHA256 expansion, keyed by a key derived from the seal's key under
``SEED_KEY_DOMAIN``, over the inventory's digest, each task's submission digest and
``seed_bytes``; a re-run over the same submissions derives the same seed. A submission is
digested in its canonical form (RFC 8785 of its strict-JSON parse; its raw bytes when it
does not parse), so re-spacing or re-ordering its keys derives the same seed too.

The configuration records ``audit_seed_origin`` (how, when, how many bytes, those
submission digests, and which key sealed it) and ``seal``, an HMAC-SHA256 over the rest,
under a MAC domain of its own. Each review file ``<task>.json`` and blind cache
``<task>.blind.json`` carries its own ``seal`` under another domain, so grades, annotations
or audit records rewritten after the job are refused. The key is derived from the protected
job's signing key (``--key``, ``KEY_DOMAIN``: ``sealed_by: signing_key``) when the review
has one, else the judge cache's key file (``engine.judge.key_path``: ``sealed_by:
runner_key``). The key file lies on the runner, which the evaluated party may control (it
can read or choose that key), so a release evaluation takes only a seal made with the key
derived from its own signing key; triage and self-test runs also take the key file's.

At evaluation a seed is also accepted when governance pinned it in ``audit.yaml``
(``pinned_seeds``) for exactly these tasks and submissions: the shipped demo's scripted
review, whose submissions governance fixed. A pin names each submission's sha256, so it
chooses no sample for any other submission. Only the tasks a review scores use the seed, so
only their submissions are compared: each must be the very one (in canonical form) the seed
was derived from (or the one the pin names).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.canonical import canonical, digest
from engine.protocols.discovery.corpus import LoadError
from engine.protocols.discovery.names import task_file
from engine.records.strict_json import JsonError, loads

__all__ = ["KEY_DOMAIN", "ORIGIN_KEYS", "SEALED_KEYS", "SEALERS", "canonical_digests",
           "canonical_sha", "derive", "drawn_after", "make_origin", "origin_problem", "pinned",
           "seal", "seal_file", "sealed", "sealed_file", "submission_digests"]

_DOMAIN = b"specgate.discovery-judge-config/v1\n"  # this key's MACs for this use only
SEALED_KEYS = ("audit_seed", "audit_seed_origin", "seal")  # beyond §9.6's worked-out fields
_FILE_DOMAIN = b"specgate.discovery-review-file/v1\n"  # review files and blind caches
ORIGIN_KEYS = ("how", "seed_bytes", "derived_at", "submissions", "sealed_by")
KEY_DOMAIN = b"specgate.review-seed-seal/v1"  # derives the seal's key from a signing key
SEED_KEY_DOMAIN = b"specgate.review-audit-seed/v1"  # derives the seed's key from the seal's
SEALERS = ("signing_key", "runner_key")  # what ``sealed_by`` may say
_SHA = re.compile(r"[0-9a-f]{64}")


def _digests(tasks: list[Any], folder: Path,
             digest_of: Callable[[bytes], str]) -> dict[str, str | None]:
    """Each inventory task's submission file as it stands, digested by ``digest_of``, or
    null when there is none (a task id that names no file is left out: never reviewed)."""
    found: dict[str, str | None] = {}
    for task in tasks:
        try:
            path = task_file(folder, task, ".json")
            data = path.read_bytes() if path.is_file() else None
        except (LoadError, OSError, TypeError, AttributeError, KeyError):
            continue
        found[task["task_id"]] = digest_of(data) if data is not None else None
    return found


def submission_digests(tasks: list[Any], folder: Path) -> dict[str, str | None]:
    """Each inventory task's submission as it stands: the sha256 of its bytes (a pin names
    exact bytes)."""
    return _digests(tasks, folder, lambda data: hashlib.sha256(data).hexdigest())


def canonical_sha(data: bytes) -> str:
    """The sha256 of a submission's canonical form: RFC 8785 of its strict-JSON parse, so
    whitespace and key order do not count; of its raw bytes when it does not parse (such a
    submission is never reviewed)."""
    try:
        return digest(loads(data))
    except (JsonError, TypeError, ValueError, RecursionError):
        return hashlib.sha256(data).hexdigest()


def canonical_digests(tasks: list[Any], folder: Path) -> dict[str, str | None]:
    """Each inventory task's submission as it stands, in canonical form (canonical_sha)."""
    return _digests(tasks, folder, canonical_sha)


def derive(key: bytes, tasks_sha256: Any, submissions: dict[str, str | None],
           seed_bytes: int) -> str:
    """The audit seed (lowercase hex) the review derives for these tasks and submissions:
    the first ``seed_bytes`` bytes of HMAC(k, counter || message) blocks, counter a 4-byte
    big-endian block number from 1, k = HMAC(key, SEED_KEY_DOMAIN), message the canonical
    JSON of the inventory digest, the submission digests and ``seed_bytes``. The same
    submissions give the same seed, so re-running the job chooses nothing."""
    k = hmac.new(key, SEED_KEY_DOMAIN, "sha256").digest()
    message = canonical({"tasks_sha256": tasks_sha256, "submissions": submissions,
                         "seed_bytes": seed_bytes})
    out = b""
    counter = 1
    while len(out) < seed_bytes:
        out += hmac.new(k, counter.to_bytes(4, "big") + message, "sha256").digest()
        counter += 1
    return out[:seed_bytes].hex()


def make_origin(seed_bytes: int, submissions: dict[str, str | None],
           sealed_by: str) -> dict[str, Any]:
    """The seed's origin: derived, when, from which submissions, sealed by which key."""
    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {"how": "derived", "seed_bytes": seed_bytes, "derived_at": when,
            "submissions": submissions, "sealed_by": sealed_by}


def _mac(config: dict[str, Any], key: bytes) -> str:
    body = canonical({k: v for k, v in config.items() if k != "seal"})
    return hmac.new(key, _DOMAIN + body, "sha256").hexdigest()


def seal(config: dict[str, Any], key: bytes) -> dict[str, Any]:
    """``config`` with its ``seal``."""
    return {**config, "seal": _mac(config, key)}


def sealed(config: Any, key: bytes) -> bool:
    """True when ``config`` carries a seal made with ``key`` over exactly its other fields."""
    if not isinstance(config, dict) or not isinstance(config.get("seal"), str):
        return False
    try:
        mac = _mac(config, key)
    except (TypeError, ValueError):  # a value canonical JSON refuses: not ours
        return False
    return hmac.compare_digest(config["seal"].encode(), mac.encode())


def origin_problem(config: dict[str, Any], seed_bytes: int, sealed_by: str,
                   key: bytes) -> str | None:
    """Why the configuration's seed is not recorded as one the review derived, of
    ``seed_bytes`` bytes, sealed by the kind of key whose seal verified, and re-derived
    here with ``key`` from the submissions it records (AUDIT_SEED_ORIGIN); None when it is.
    A seed recorded as ``drawn`` (at random, before issue 36 closed re-drawing) is refused:
    it may be one of many draws the evaluated party chose among."""
    origin = config.get("audit_seed_origin")
    if isinstance(origin, dict) and origin.get("how") != "derived":
        return (f"the seed was not derived by the review ({origin.get('how')!r}; a drawn seed "
                "may be one of many draws)")
    if not isinstance(origin, dict) or sorted(origin) != sorted(ORIGIN_KEYS):
        return "the seed's origin is not recorded"
    if origin["sealed_by"] != sealed_by:
        return (f"the origin says the seed was sealed by the {origin['sealed_by']!r}, but the "
                f"{sealed_by} sealed it")
    seed = config.get("audit_seed")
    if origin["seed_bytes"] != seed_bytes or not isinstance(seed, str) \
            or len(seed) != 2 * seed_bytes or seed.strip("0123456789abcdef"):
        return f"the seed is not {seed_bytes} bytes as lowercase hex (audit.yaml seed_bytes)"
    subs = origin["submissions"]
    if not isinstance(subs, dict) or not all(v is None or (isinstance(v, str) and _SHA.fullmatch(v))
                                             for v in subs.values()):
        return "the submissions the seed was derived from are not recorded"
    if seed != derive(key, config.get("tasks_sha256"), subs, seed_bytes):
        return "the seed is not the one derived from the recorded submissions"
    return None


def drawn_after(origin: dict[str, Any], task_id: str, now: str | None) -> bool:
    """True when the seed was derived from the task's submission as it is now (canonical
    digest ``now``)."""
    then = origin["submissions"].get(task_id)
    return then is not None and then == now


def pinned(audit: dict[str, Any], config: dict[str, Any], task_ids: list[str],
           now: dict[str, str | None]) -> bool:
    """True when audit.yaml pins this configuration's seed for its tasks (already checked
    against the inventory) and for exactly the current submissions of ``task_ids``."""
    return any(pin["seed"] == config.get("audit_seed")
               and pin["tasks_sha256"] == config.get("tasks_sha256")
               and all(now.get(t) is not None and pin["submissions"].get(t) == now[t]
                       for t in task_ids)
               for pin in audit.get("pinned_seeds", ()))


def _file_mac(body: dict[str, Any], key: bytes) -> str:
    return hmac.new(key, _FILE_DOMAIN + canonical({k: v for k, v in body.items()
                                                   if k != "seal"}), "sha256").hexdigest()


def seal_file(body: dict[str, Any], key: bytes) -> dict[str, Any]:
    """A review file or blind cache with its ``seal`` (its own domain: a configuration's
    seal is never taken for a review file's, nor the reverse)."""
    return {**body, "seal": _file_mac(body, key)}


def sealed_file(body: Any, key: bytes) -> bool:
    """True when a review file or blind cache carries a seal made with ``key`` over exactly
    its other fields."""
    if not isinstance(body, dict) or not isinstance(body.get("seal"), str):
        return False
    try:
        mac = _file_mac(body, key)
    except (TypeError, ValueError):
        return False
    return hmac.compare_digest(body["seal"].encode(), mac.encode())
