"""The candidate a release gate judges (``--subject NAME@sha256:HEX``) and the SLSA
Verification Summary (VSA) of the run that judged it: beside the signed scorecard of a run
of one evaluation, at the top of ``--out`` beside the signed ``summary.json`` of a run of
several (PASSED only when every evaluation PASSed: one evaluation's PASS is not the run's).

A scorecard's signed statement names its files; without a candidate it says nothing about
which build of the agent the decision is for, so a deploy job could not ask "did this
build pass?" and an earlier PASS could be handed over for another build. A candidate is a
subject of the scorecard's statement (``candidates/NAME``: the prefix keeps it apart from
file names, which hold no ``/``) and of its own VSA, one DSSE envelope per candidate in
``vsa.intoto.jsonl`` (https://slsa.dev/verification_summary/v1), read by standard
admission tools.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

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
SLSA_VERSION = "1.0"
MAX_NAME = 256
MAX_CANDIDATES = 16
HEX = re.compile(r"[0-9a-f]{64}", re.ASCII)


def plain_name(name: str) -> bool:
    """A candidate name: 1-256 printable characters, no space, no control or bidi
    character (isprintable() refuses both), so it prints as what it is."""
    return 0 < len(name) <= MAX_NAME and name.isprintable() and " " not in name and \
        "@sha256:" not in name  # one digest a name: x@sha256:GOOD@sha256:BAD shows GOOD


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


@dataclass(frozen=True)
class Judged:
    """One signed scorecard as a VSA names it: ``uri`` is its path from the VSA's folder."""

    evaluation: str
    decision: str
    policy: str  # NAME@VERSION
    policy_sha256: str
    uri: str
    scorecard_sha256: str

    @classmethod
    def of(cls, card: dict[str, Any], scorecard_sha256: str, uri: str) -> Judged:
        """A scorecard's own members (a library caller's card may lack them: "")."""
        def text(value: Any) -> str:
            return value if isinstance(value, str) else ""
        evaluation = card.get("evaluation")
        policy = card.get("policy")
        name = text(evaluation.get("name")) if isinstance(evaluation, dict) else ""
        named = f"{text(policy.get('name'))}@{text(policy.get('version'))}" \
            if isinstance(policy, dict) else "@"
        return cls(name, text(card.get("decision")), named,
                   text(card.get("policy_sha256")), uri, scorecard_sha256)


@dataclass(frozen=True)
class Verdict:
    """What every candidate's VSA of one run says: PASSED only when every evaluation the
    run wrote decided PASS; the policy they were judged under; the signed files it rests
    on, each named after the run and evaluation (ResourceDescriptor ``name``)."""

    passed: bool
    policy: dict[str, Any]
    inputs: list[dict[str, Any]]


def _run_name(run_id: str, evaluation: str | None = None) -> str:
    where = f"specgate:run/{run_id}" if run_id else "specgate:run"
    return where + (f"/evaluation/{evaluation}" if evaluation is not None else "")


def verdict(judged: list[Judged], run_id: str,
            summary: tuple[str, str] | None = None) -> Verdict:
    """The VSA of a run's ``judged`` scorecards (``summary``: the run's signed summary's
    (uri, sha256) for a run of several evaluations). The policy is the one they share,
    else every distinct one, by a digest of their digests (docs/verifying.md)."""
    policies = sorted({(j.policy, j.policy_sha256) for j in judged})
    if len(policies) == 1:
        [(named, sha)] = policies
    else:
        named = ",".join(p for p, _ in policies)
        sha = hashlib.sha256("".join(d + "\n" for _, d in policies).encode()).hexdigest()
    inputs = [] if summary is None else [
        {"name": _run_name(run_id), "uri": summary[0], "digest": {"sha256": summary[1]}}]
    inputs += [{"name": _run_name(run_id, j.evaluation), "uri": j.uri,
                "digest": {"sha256": j.scorecard_sha256}} for j in judged]
    return Verdict(bool(judged) and all(j.decision == "PASS" for j in judged),
                   {"uri": f"specgate:{'policy' if len(policies) == 1 else 'policies'}/"
                    f"{_uri_text(named)}", "digest": {"sha256": sha}}, inputs)


# a URI already: a scheme with an authority (oci://, https://) or an opaque one that names
# packages (pkg:, urn:); agent:latest and host:PORT/... are registry references
SCHEME = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*://|(?:pkg|urn):)", re.ASCII)


def _uri_text(text: str) -> str:
    """``text`` with every character a URI may not hold percent-encoded (``%`` kept)."""
    return quote(text, safe="!#$&'()*+,/:;=?@[]~%")


def resource_uri(name: str) -> str:
    """The VSA's ``resourceUri`` of a candidate NAME: NAME itself when it is a URI
    (``pkg:``, ``urn:``, or a scheme with ``//``: ``oci://``, ``https://``), else
    ``oci://NAME``, a registry reference as ``docker pull`` reads it; characters a URI
    may not hold are percent-encoded."""
    return _uri_text(name if SCHEME.match(name) else "oci://" + name)


def summary(name: str, hex_: str, verdict_: Verdict, time: str) -> dict[str, Any]:
    """The in-toto statement of one candidate's VSA (SLSA VSA v1.0): ``verifiedLevels``
    holds the custom level of a PASS, or ``FAILED`` (the spec's value when policy
    verification failed)."""
    return {
        "_type": signing.STATEMENT_TYPE,
        "subject": [{"name": name, "digest": {"sha256": hex_}}],
        "predicateType": VSA_PREDICATE_TYPE,
        "predicate": {
            "verifier": {"id": VERIFIER_ID, "version": {"specgate": __version__}},
            "timeVerified": time,
            "resourceUri": resource_uri(name),
            "policy": verdict_.policy,
            "inputAttestations": verdict_.inputs,
            "verificationResult": "PASSED" if verdict_.passed else "FAILED",
            "verifiedLevels": [LEVEL] if verdict_.passed else ["FAILED"],
            "slsaVersion": SLSA_VERSION,
        },
    }


def vsa_file(key: Ed25519PrivateKey, candidates: dict[str, str], verdict_: Verdict,
             time: str) -> bytes:
    """``vsa.intoto.jsonl``: one DSSE envelope per candidate, signed by the runner's key."""
    lines = [json.dumps(signing.envelope(key, summary(n, h, verdict_, time)),
                        sort_keys=True) + "\n" for n, h in candidates.items()]
    return "".join(lines).encode()


def check_vsa(data: bytes, key: Ed25519PublicKey, candidates: dict[str, str],
              verdict_: Verdict) -> None:
    """The VSA says what the evidence says: one envelope per candidate, signed by the same
    key, each the very summary the engine writes of ``verdict_`` (any signed time);
    else VerifyError (VSA_MISMATCH)."""
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
        try:
            [subject] = statement["subject"]
            name, hex_ = subject["name"], subject["digest"]["sha256"]
            time = statement["predicate"]["timeVerified"]
            ok = isinstance(name, str) and isinstance(hex_, str) and \
                isinstance(time, str) and statement == summary(name, hex_, verdict_, time)
        except (KeyError, TypeError, ValueError):
            ok = False
        if not ok:
            raise VerifyError(f"{VSA_FILE} holds a summary that is not of this evidence: "
                              "its decision, evaluations, run and candidate", "VSA_MISMATCH")
        seen[name] = hex_
    if seen != candidates:
        raise VerifyError(f"{VSA_FILE} names other candidates than the scorecard",
                          "VSA_MISMATCH")
