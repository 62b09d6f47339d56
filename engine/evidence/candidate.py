"""The candidate a release gate judges (``--subject NAME@sha256:HEX``) and the SLSA
Verification Summary (VSA) written beside a signed scorecard that names one.

A scorecard's signed statement names its files; without a candidate it says nothing about
which build of the agent the decision is for, so a deploy job could not ask "did this
build pass?" and an earlier PASS could be handed over for another build. A candidate is a
subject of the scorecard's statement (``candidates/NAME``: the prefix keeps it apart from
file names, which hold no ``/``) and of its own VSA, one DSSE envelope per candidate in
``vsa.intoto.jsonl`` (https://slsa.dev/verification_summary/v1), read by standard
admission tools.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from engine._version import __version__
from engine.errors import UsageError, VerifyError
from engine.evidence import signing

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

PREFIX = "candidates/"  # a candidate's subject name in the scorecard's statement
VSA_FILE = "vsa.intoto.jsonl"
VSA_PREDICATE_TYPE = "https://slsa.dev/verification_summary/v1"
VERIFIER_ID = "https://specgate.dev/verifier/engine-run"
LEVEL = "SPECGATE_GATE_PASSED"  # verifiedLevels of a PASS: <ORGANIZATION>_<PROPERTY>
MAX_NAME = 256
MAX_CANDIDATES = 16
HEX = re.compile(r"[0-9a-f]{64}", re.ASCII)


def plain_name(name: str) -> bool:
    """A candidate name: 1-256 printable characters, no space, no control or bidi
    character (isprintable() refuses both), so it prints as what it is."""
    return 0 < len(name) <= MAX_NAME and name.isprintable() and " " not in name


def parse(text: str, option: str = "--subject") -> tuple[str, str]:
    """``NAME@sha256:HEX`` as (NAME, HEX), or BAD_SUBJECT: HEX is 64 lowercase hex digits."""
    name, sep, hex_ = text.rpartition("@sha256:")
    if not sep or not plain_name(name) or not HEX.fullmatch(hex_):
        raise UsageError(f"{option} wants NAME@sha256:HEX (NAME 1-{MAX_NAME} printable "
                         "characters without spaces, HEX the 64 lowercase hex digits of "
                         f"the build's SHA-256), got {text[:120]!r}", "BAD_SUBJECT")
    return name, hex_


def parse_all(texts: list[str], option: str = "--subject") -> dict[str, str]:
    """Every ``--subject``, name -> hex; a name given twice is BAD_SUBJECT."""
    out: dict[str, str] = {}
    if len(texts) > MAX_CANDIDATES:
        raise UsageError(f"{option}: at most {MAX_CANDIDATES} candidates", "BAD_SUBJECT")
    for text in texts:
        name, hex_ = parse(text, option)
        if name in out:
            raise UsageError(f"{option} names {name!r} twice", "BAD_SUBJECT")
        out[name] = hex_
    return out


def subjects(candidates: dict[str, str]) -> dict[str, str]:
    """The candidates as subjects of the scorecard's statement."""
    return {PREFIX + name: hex_ for name, hex_ in candidates.items()}


def named(statement_subjects: dict[str, str]) -> dict[str, str]:
    """The candidates among a verified statement's subjects, name -> hex."""
    return {n.removeprefix(PREFIX): d for n, d in statement_subjects.items()
            if n.startswith(PREFIX)}


def summary(name: str, hex_: str, card: dict[str, Any], scorecard_sha256: str,
            time: str) -> dict[str, Any]:
    """The in-toto statement of one candidate's VSA: PASSED only for a PASS."""
    passed = card["decision"] == "PASS"
    policy = card["policy"]
    return {
        "_type": signing.STATEMENT_TYPE,
        "subject": [{"name": name, "digest": {"sha256": hex_}}],
        "predicateType": VSA_PREDICATE_TYPE,
        "predicate": {
            "verifier": {"id": VERIFIER_ID, "version": {"specgate": __version__}},
            "timeVerified": time,
            "resourceUri": name,
            "policy": {"uri": f"specgate:policy/{policy['name']}@{policy['version']}",
                       "digest": {"sha256": card["policy_sha256"]}},
            "inputAttestations": [{"uri": "scorecard.json",
                                   "digest": {"sha256": scorecard_sha256}}],
            "verificationResult": "PASSED" if passed else "FAILED",
            "verifiedLevels": [LEVEL] if passed else [],
        },
    }


def vsa_file(key: Ed25519PrivateKey, candidates: dict[str, str], card: dict[str, Any],
             scorecard_sha256: str, time: str) -> bytes:
    """``vsa.intoto.jsonl``: one DSSE envelope per candidate, signed by the runner's key."""
    lines = [json.dumps(signing.envelope(key, summary(n, h, card, scorecard_sha256, time)),
                        sort_keys=True) + "\n" for n, h in candidates.items()]
    return "".join(lines).encode()


def check_vsa(data: bytes, key: Ed25519PublicKey, candidates: dict[str, str],
              decision: str, scorecard_sha256: str) -> None:
    """The VSA beside a verified scorecard says what the scorecard says: one envelope per
    candidate it names, signed by the same key, about this scorecard, PASSED only for a
    PASS; else VerifyError (VSA_MISMATCH)."""
    lines = data.decode("utf-8", "replace").splitlines()
    if len(lines) != len(candidates):
        raise VerifyError(f"{VSA_FILE} holds {len(lines)} summaries for the scorecard's "
                          f"{len(candidates)} candidate(s)", "VSA_MISMATCH")
    seen: dict[str, str] = {}
    for line in lines:
        try:
            envelope = json.loads(line)
        except (ValueError, RecursionError):
            raise VerifyError(f"{VSA_FILE} holds a line that is not JSON",
                              "VSA_MISMATCH") from None
        if not isinstance(envelope, dict):
            raise VerifyError(f"{VSA_FILE} holds a line that is not an envelope",
                              "VSA_MISMATCH")
        try:
            statement = signing.open_envelope(envelope, key)
        except VerifyError as exc:  # another key's summary is not this scorecard's
            raise VerifyError(f"{VSA_FILE}: {exc}", "VSA_MISMATCH") from None
        predicate = statement.get("predicate")
        try:
            [subject] = statement["subject"]
            seen[subject["name"]] = subject["digest"]["sha256"]
            wanted = "PASSED" if decision == "PASS" else "FAILED"
            ok = statement["predicateType"] == VSA_PREDICATE_TYPE and \
                isinstance(predicate, dict) and \
                predicate["verificationResult"] == wanted and \
                predicate["resourceUri"] == subject["name"] and \
                predicate["inputAttestations"] == [{"uri": "scorecard.json", "digest": {
                    "sha256": scorecard_sha256}}]
        except (KeyError, TypeError, ValueError):
            ok = False
        if not ok:
            raise VerifyError(f"{VSA_FILE} holds a summary that is not of this scorecard, "
                              "its decision and candidate", "VSA_MISMATCH")
    if seen != candidates:
        raise VerifyError(f"{VSA_FILE} names other candidates than the scorecard",
                          "VSA_MISMATCH")
