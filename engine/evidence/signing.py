"""Ed25519 keys, the raw detached signature, the DSSE envelope, and verification.

cryptography is imported by the functions that use it, so a run that signs and verifies
nothing never loads it (25-45 ms of start-up)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.canonical import canonical
from engine.errors import UsageError, VerifyError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://specgate.dev/scorecard/v1"
CALIBRATION_PREDICATE_TYPE = "https://specgate.dev/calibration/v1"  # never a scorecard's
RUN_PREDICATE_TYPE = "https://specgate.dev/run/v1"  # the seal of one engine run's summary
MAX_SIGNATURES = 8  # signatures on one envelope: more is refused, never tried one by one


def keygen(out_dir: Path) -> tuple[Path, Path]:
    """Write ``private.pem`` (PKCS#8, mode 600) and ``public.pem`` (SPKI); never overwrite."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = out_dir / "private.pem", out_dir / "public.pem"
    for path in paths:
        if path.exists():
            raise UsageError(f"{path} already exists; keys are never overwritten", "KEY_EXISTS")
    for path, data, mode in ((paths[0], private, 0o600), (paths[1], public, 0o644)):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    return paths


def load_private(path: Path) -> Ed25519PrivateKey:
    """An Ed25519 private key from a PEM file, or a coded usage error."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise UsageError(f"{path}: not a readable unencrypted PEM private key ({exc})",
                         "BAD_KEY") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise UsageError(f"{path}: not an Ed25519 key", "BAD_KEY")
    return key


def derived_key(key: Ed25519PrivateKey, domain: bytes) -> bytes:
    """A 32-byte MAC key derived from a signing key for one use, named by ``domain``:
    HMAC-SHA256(raw private key, domain). Only a holder of the signing key can make it, so
    what it seals on a runner the evaluated party controls was sealed by the protected job;
    each use has its own domain, so a MAC made for one is never taken for another."""
    from cryptography.hazmat.primitives import serialization
    raw = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                            serialization.NoEncryption())
    return hmac.new(raw, domain, "sha256").digest()


def load_public(path: Path) -> Ed25519PublicKey:
    """An Ed25519 public key from a PEM file, or a coded usage error."""
    try:
        return public_from_pem(path.read_bytes(), str(path))
    except OSError as exc:
        raise UsageError(f"{path}: not a readable PEM public key ({exc})", "BAD_KEY") from None


def public_from_pem(data: bytes, where: str) -> Ed25519PublicKey:
    """An Ed25519 public key from PEM bytes, or a coded usage error naming ``where``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{where}: not a readable PEM public key ({exc})", "BAD_KEY") from None
    if not isinstance(key, Ed25519PublicKey):
        raise UsageError(f"{where}: not an Ed25519 public key", "BAD_KEY")
    return key


def raw_public(key: Ed25519PublicKey) -> bytes:
    """The 32 raw bytes of a public key."""
    from cryptography.hazmat.primitives import serialization
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_pem(key: Ed25519PublicKey) -> bytes:
    """A public key as SPKI PEM."""
    from cryptography.hazmat.primitives import serialization
    return key.public_bytes(serialization.Encoding.PEM,
                            serialization.PublicFormat.SubjectPublicKeyInfo)


def pae(payload_type: str, body: bytes) -> bytes:
    """DSSE pre-authentication encoding."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(body), body)


def keyid(key: Ed25519PublicKey) -> str:
    """The hex SHA-256 of a public key's raw bytes (DSSE's keyid hint, the signer's name)."""
    return hashlib.sha256(raw_public(key)).hexdigest()


def envelope(key: Ed25519PrivateKey, statement: dict[str, Any]) -> dict[str, Any]:
    """A DSSE envelope over the JCS bytes of an in-toto statement."""
    body = canonical(statement)
    keyid_ = keyid(key.public_key())
    return {"payload": base64.b64encode(body).decode(), "payloadType": PAYLOAD_TYPE,
            "signatures": [{"keyid": keyid_,
                            "sig": base64.b64encode(key.sign(pae(PAYLOAD_TYPE, body))).decode()}]}


def open_envelope(data: dict[str, Any], key: Ed25519PublicKey) -> dict[str, Any]:
    """The statement inside a DSSE envelope whose signature verifies with ``key``. The
    payload is parsed only once a signature over it holds: unsigned bytes are never
    interpreted (a payload nested 200,000 deep was a RecursionError before)."""
    from cryptography.exceptions import InvalidSignature
    mine = keyid(key)
    try:
        body = base64.b64decode(data["payload"], validate=True)
        if data["payloadType"] != PAYLOAD_TYPE:
            raise VerifyError("the envelope's payloadType is not in-toto", "BAD_ENVELOPE")
        if len(data["signatures"]) > MAX_SIGNATURES:  # each costs a pass over the payload
            raise VerifyError(f"the envelope has more than {MAX_SIGNATURES} signatures",
                              "BAD_ENVELOPE")
        sigs = [base64.b64decode(s["sig"], validate=True) for s in data["signatures"]
                if not s.get("keyid") or s["keyid"] == mine]  # a named other key: skipped
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise VerifyError(f"the DSSE envelope is malformed ({exc})", "BAD_ENVELOPE") from None
    for sig in sigs:
        try:
            key.verify(sig, pae(PAYLOAD_TYPE, body))
        except InvalidSignature:
            continue
        try:
            statement = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise VerifyError(f"the signed payload is not JSON ({str(exc)[:80]})",
                              "BAD_ENVELOPE") from None
        if not isinstance(statement, dict):
            raise VerifyError("the signed payload is not an in-toto statement", "BAD_ENVELOPE")
        return statement
    raise VerifyError("no signature on the DSSE envelope verifies with the key", "BAD_SIGNATURE")


def signed_files(key: Ed25519PrivateKey, name: str, data: bytes, subjects: dict[str, str],
                 predicate_type: str, predicate: dict[str, Any]) -> dict[str, bytes]:
    """The files that sign ``name`` (whose bytes are ``data``): the raw ``<name>.sig``,
    ``signer.pub.pem`` and ``<stem>.intoto.jsonl``, a DSSE envelope over an in-toto
    statement whose subjects are ``name`` and then ``subjects``."""
    sha = hashlib.sha256(data).hexdigest()
    statement = {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": n, "digest": {"sha256": d}}
                    for n, d in {name: sha, **subjects}.items()],
        "predicateType": predicate_type,
        "predicate": predicate,
    }
    line = json.dumps(envelope(key, statement), sort_keys=True) + "\n"
    return {name + ".sig": key.sign(data), "signer.pub.pem": public_pem(key.public_key()),
            name.removesuffix(".json") + ".intoto.jsonl": line.encode()}
