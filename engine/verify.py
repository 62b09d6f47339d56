"""``engine verify``: canonical bytes, digests, signature, pinned key — in that order."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from . import signing
from .errors import VerifyError
from .evidence import sha256_file
from .records import parse_jcs


@dataclass(frozen=True)
class Verified:
    """A scorecard whose integrity holds; ``trusted`` says whether the signer was pinned."""

    scorecard_sha256: str
    decision: str
    trusted: bool


def _canonical(data: bytes) -> dict[str, Any]:
    try:
        value = parse_jcs(data)
        canonical = rfc8785.dumps(value) == data and isinstance(value, dict)
    except (ValueError, rfc8785.CanonicalizationError):
        canonical = False
    if not canonical:
        raise VerifyError("the scorecard bytes are not RFC 8785 canonical JSON", "NOT_CANONICAL")
    return dict(value)


def _statement_digest(envelope_file: Path) -> tuple[dict[str, Any], str | None]:
    try:
        envelope = json.loads(envelope_file.read_text("utf-8").splitlines()[0])
        statement = json.loads(base64.b64decode(envelope["payload"], validate=True))
        subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise VerifyError(f"{envelope_file.name} is malformed ({exc})", "BAD_ENVELOPE") from None
    return envelope, subjects.get("scorecard.json")


def verify(path: Path, trusted: Ed25519PublicKey | None) -> Verified:
    """Verify a scorecard and the files beside it; raise VerifyError with a code if not."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise VerifyError(f"{path}: {exc.strerror}", "UNREADABLE") from None
    card = _canonical(data)
    digest = hashlib.sha256(data).hexdigest()
    folder = path.parent
    for name, field in (("rows.jsonl", "rows_sha256"), ("findings.jsonl", "findings_sha256")):
        beside = folder / name
        if not beside.exists():
            raise VerifyError(f"{name} is missing beside the scorecard", "DIGEST_MISMATCH")
        if sha256_file(beside) != card.get(field):
            raise VerifyError(f"{name} does not match {field}", "DIGEST_MISMATCH")
    envelope_file = folder / "scorecard.intoto.jsonl"
    envelope, claimed = _statement_digest(envelope_file) if envelope_file.exists() else ({}, None)
    if envelope and claimed != digest:
        raise VerifyError("the attestation names another scorecard digest", "DIGEST_MISMATCH")
    sig_file, embedded_file = path.with_name(path.name + ".sig"), folder / "signer.pub.pem"
    if not sig_file.exists() or not envelope:
        raise VerifyError("the scorecard is not signed (no .sig or attestation beside it)",
                          "UNSIGNED")
    key = signing.load_public(embedded_file) if embedded_file.exists() else trusted
    if key is None:
        raise VerifyError("no key to check the signature with (pin one with --trusted-key)",
                          "KEY_NOT_TRUSTED")
    try:
        key.verify(sig_file.read_bytes(), data)
    except InvalidSignature:
        raise VerifyError("the signature does not verify over these bytes",
                          "BAD_SIGNATURE") from None
    signing.open_envelope(envelope, key)
    pinned = trusted is not None
    if pinned and signing.raw_public(key) != signing.raw_public(trusted):  # type: ignore[arg-type]
        raise VerifyError("signed by a key that is not the pinned --trusted-key",
                          "KEY_NOT_TRUSTED")
    return Verified(digest, str(card.get("decision")), pinned)
