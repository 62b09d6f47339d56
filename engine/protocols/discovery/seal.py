"""Where the audit seed comes from (discovery §7.1): drawn by ``engine review`` itself, after
the submissions exist, and sealed into the ``judge_config.json`` it writes.

The review directory is a folder the evaluated party may write before the review job runs.
A seed read from a file there would let it choose the audit sample (seeds can be tried
offline until the sample misses the documents that disprove a finding). So the review never
takes a seed it did not draw: the configuration it writes carries ``audit_seed_origin``
(how, when, how many bytes, and the sha256 of each submission that existed when it was
drawn, and which key sealed it) and ``seal``, an HMAC-SHA256 over the rest, under a MAC
domain of its own. The key is derived from the protected job's signing key (``--key``,
``KEY_DOMAIN``: ``sealed_by: signing_key``) when the review has one, else the judge cache's
key file (``engine.judge.key_path``: ``sealed_by: runner_key``). The key file lies on the
runner, which the evaluated party may control (it can read or choose that key and seal a
seed it tried offline), so a release evaluation takes only a seal made with the key derived
from its own signing key; triage and self-test runs also take the key file's. A
configuration without a seal that verifies was not written by this job.

At evaluation a seed is also accepted when governance pinned it in ``audit.yaml``
(``pinned_seeds``) for exactly these tasks and submissions: the shipped demo's scripted
review, whose submissions governance fixed. A pin names each submission's sha256, so it
chooses no sample for any other submission. Only the tasks a review scores use the seed, so
only their submissions are compared: each must be the very one that existed when the seed
was drawn (or that the pin names).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.canonical import canonical
from engine.protocols.discovery.corpus import LoadError
from engine.protocols.discovery.names import task_file

__all__ = ["KEY_DOMAIN", "ORIGIN_KEYS", "SEALED_KEYS", "SEALERS", "draw", "drawn_after",
           "origin_problem", "pinned", "seal", "sealed", "submission_digests"]

_DOMAIN = b"specgate.discovery-judge-config/v1\n"  # this key's MACs for this use only
SEALED_KEYS = ("audit_seed", "audit_seed_origin", "seal")  # beyond §9.6's worked-out fields
ORIGIN_KEYS = ("how", "seed_bytes", "drawn_at", "submissions", "sealed_by")
KEY_DOMAIN = b"specgate.review-seed-seal/v1"  # derives the seal's key from a signing key
SEALERS = ("signing_key", "runner_key")  # what ``sealed_by`` may say
_SHA = re.compile(r"[0-9a-f]{64}")


def submission_digests(tasks: list[Any], folder: Path) -> dict[str, str | None]:
    """Each inventory task's submission file as it stands: the sha256 of its bytes, or null
    when there is none (a task id that names no file is left out: it is never reviewed)."""
    found: dict[str, str | None] = {}
    for task in tasks:
        try:
            path = task_file(folder, task, ".json")
            data = path.read_bytes() if path.is_file() else None
        except (LoadError, OSError, TypeError, AttributeError, KeyError):
            continue
        found[task["task_id"]] = hashlib.sha256(data).hexdigest() if data is not None else None
    return found


def draw(seed_bytes: int, submissions: dict[str, str | None],
         sealed_by: str) -> tuple[str, dict[str, Any]]:
    """A fresh seed of ``seed_bytes`` secure random bytes (lowercase hex) and its origin:
    when it was drawn, the submissions that existed by then, and the key that seals it."""
    seed = secrets.token_bytes(seed_bytes).hex()
    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return seed, {"how": "drawn", "seed_bytes": seed_bytes, "drawn_at": when,
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


def origin_problem(config: dict[str, Any], seed_bytes: int, sealed_by: str) -> str | None:
    """Why the configuration's seed is not recorded as one the review drew, of
    ``seed_bytes`` bytes, sealed by the kind of key whose seal verified (AUDIT_SEED_ORIGIN);
    None when it is."""
    origin = config.get("audit_seed_origin")
    if not isinstance(origin, dict) or sorted(origin) != sorted(ORIGIN_KEYS):
        return "the seed's origin is not recorded"
    if origin["sealed_by"] != sealed_by:
        return (f"the origin says the seed was sealed by the {origin['sealed_by']!r}, but the "
                f"{sealed_by} sealed it")
    if origin["how"] != "drawn":
        return f"the seed was not drawn by the review ({origin['how']!r})"
    seed = config.get("audit_seed")
    if origin["seed_bytes"] != seed_bytes or not isinstance(seed, str) \
            or len(seed) != 2 * seed_bytes or seed.strip("0123456789abcdef"):
        return f"the seed is not {seed_bytes} bytes as lowercase hex (audit.yaml seed_bytes)"
    subs = origin["submissions"]
    if not isinstance(subs, dict) or not all(v is None or (isinstance(v, str) and _SHA.fullmatch(v))
                                             for v in subs.values()):
        return "the submissions the seed was drawn after are not recorded"
    return None


def drawn_after(origin: dict[str, Any], task_id: str, now: str | None) -> bool:
    """True when the task's submission existed, with these bytes, when the seed was drawn."""
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
