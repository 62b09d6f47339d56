"""``engine verify``: canonical bytes, the signed statement opened with the key, then every
file the statement names, then the raw signature — in that order. ``verify_folder`` does it
for every scorecard under an output folder, each on its own.

The statement's subjects are believed only after its DSSE signature verifies with the key:
the pinned ``--trusted-key`` when one is given (``signer.pub.pem`` is then never read), or
else the key shipped beside the evidence, which proves integrity only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import rfc8785

from engine import folders as walk
from engine.canonical import canonical as jcs
from engine.canonical import sha256_file
from engine.errors import EngineError, PathTooDeep, UsageError, VerifyError
from engine.evidence import candidate, signing
from engine.records.strict_json import parse_jcs

if TYPE_CHECKING:  # cryptography is imported only when something is verified
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

SIGNATURE_FILES = frozenset({"scorecard.json.sig", "scorecard.intoto.jsonl", "signer.pub.pem"})
# Bound by fields of the scorecard itself, so never optional.
BOUND = {"rows.jsonl": "rows_sha256", "findings.jsonl": "findings_sha256"}
# Renderings of scorecard.json that add nothing to it: checked when present, and their
# absence is reported but not an error (CI often keeps only some of them).
PROJECTIONS = frozenset({"scorecard.md", "scorecard.html", "junit.xml"})
SIGNED_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", re.ASCII)
MAX_SIGNED_BYTES = 256 * 1024 * 1024  # a signed JSON file read whole
MAX_ENVELOPE_BYTES = 16 * 1024 * 1024  # a DSSE envelope: a statement of digests, parsed unsigned
RUN_ID = re.compile(r"[A-Za-z0-9._:@+-]{1,128}", re.ASCII)  # --run-id, and a made-up one
INPUTS = "inputs/"  # digests of the run's inputs, which live elsewhere; never looked for here


@dataclass(frozen=True)
class Verified:
    """A scorecard whose integrity holds; ``trusted`` says whether the signer was pinned."""

    scorecard_sha256: str
    decision: str
    trusted: bool
    checked: tuple[str, ...] = ()    # files whose SHA-256 equals the signed statement's
    absent: tuple[str, ...] = ()     # projections the statement names, not beside it
    unsigned: tuple[str, ...] = ()   # files beside the scorecard that no signature covers
    signer: str = ""                 # keyid (hex SHA-256 of the raw public key) that verified
    evaluation: str = ""             # the Evaluation the signed scorecard names
    generated_at: str = ""           # the signed statement's time (YYYY-MM-DDTHH:MM:SSZ)
    run_id: str = ""                 # the engine run that wrote it ("" before runs were sealed)
    run_evaluations: tuple[str, ...] = ()  # every evaluation that run wrote into its --out
    candidates: tuple[tuple[str, str], ...] = ()  # (name, sha256) of each build it judged
    policy: str = ""                 # NAME@VERSION of the policy it was decided under
    policy_sha256: str = ""


def read_file(path: Path, limit: int = MAX_SIGNED_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes. A FIFO, device or folder by
    that name is NOT_A_FILE, never waited on (whoever writes the evidence can put one
    there); missing, too large or unreadable is UNREADABLE."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise VerifyError(f"{path.name}: {exc.strerror or exc}", "UNREADABLE") from None
    info = os.fstat(handle)  # before fdopen, which refuses a folder with its own error
    if not stat.S_ISREG(info.st_mode):
        os.close(handle)
        raise VerifyError(f"{path.name} is not a regular file", "NOT_A_FILE")
    with os.fdopen(handle, "rb") as file:
        if info.st_size > limit:
            raise VerifyError(f"{path.name} is larger than {limit} bytes", "UNREADABLE")
        try:
            data = file.read(limit + 1)
        except OSError as exc:
            raise VerifyError(f"{path.name}: {exc.strerror or exc}", "UNREADABLE") from None
    if len(data) > limit:
        raise VerifyError(f"{path.name} is larger than {limit} bytes", "UNREADABLE")
    return data


def write_whole(path: Path, data: bytes, mode: int = 0o644, replace: bool = False) -> bool:
    """read_file's twin: ``data`` written and synced under a temporary name beside ``path``,
    then put in place, so no reader ever sees half a file. It replaces what is there when
    ``replace`` says so; otherwise it is linked, never over an existing file (False when
    one is there). An OSError (a file system without hard links) is the caller's."""
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temp, mode)
        if replace:
            os.replace(temp, path)
        else:
            os.link(temp, path)
    except FileExistsError:
        return False
    finally:
        Path(temp).unlink(missing_ok=True)
    return True


def _canonical(data: bytes, name: str = "scorecard") -> dict[str, Any]:
    """The signed JSON, which must be its own RFC 8785 form. ``engine.canonical`` writes
    rfc8785's bytes (orjson only where the two provably agree, rfc8785 itself elsewhere;
    parse_jcs reads every number as JCS does, a double), about ten times faster than
    rfc8785 alone on a scorecard: engine history verifies a thousand of them."""
    try:
        value = parse_jcs(data)
        canonical = jcs(value) == data and isinstance(value, dict)
    except (ValueError, RecursionError, rfc8785.CanonicalizationError):
        canonical = False
    if not canonical:
        raise VerifyError(f"the {name} bytes are not RFC 8785 canonical JSON", "NOT_CANONICAL")
    return dict(value)


def _envelope(envelope_file: Path) -> dict[str, Any]:
    try:
        line = read_file(envelope_file, MAX_ENVELOPE_BYTES).decode("utf-8").splitlines()[0]
        envelope = json.loads(line)
    except (ValueError, IndexError, RecursionError) as exc:
        raise VerifyError(f"{envelope_file.name} is malformed ({exc})", "BAD_ENVELOPE") from None
    if not isinstance(envelope, dict):
        raise VerifyError(f"{envelope_file.name} is not a DSSE envelope", "BAD_ENVELOPE")
    return envelope


def _key(folder: Path, trusted: Ed25519PublicKey | None) -> Ed25519PublicKey:
    """The pinned key; without one, the key shipped beside the evidence (integrity only)."""
    if trusted is not None:
        return trusted
    shipped = folder / "signer.pub.pem"
    if not shipped.exists():
        raise VerifyError("no key to check the signature with (pin the signer's key with "
                          "--trusted-key)", "KEY_NOT_TRUSTED")
    return signing.public_from_pem(read_file(shipped), str(shipped))


def _open(envelope: dict[str, Any], key: Ed25519PublicKey, pinned: bool) -> dict[str, Any]:
    """The statement, once its DSSE signature verifies with ``key``."""
    try:
        return signing.open_envelope(envelope, key)
    except VerifyError as exc:
        if not pinned or exc.code != "BAD_SIGNATURE":
            raise
        keyid = hashlib.sha256(signing.raw_public(key)).hexdigest()
        claimed = [s.get("keyid") for s in envelope["signatures"] if isinstance(s, dict)]
        if claimed and keyid not in claimed:  # a diagnosis only: either way it fails
            raise VerifyError("signed by a key that is not the pinned --trusted-key (keyid "
                              f"{str(claimed[0])[:16]}...)", "KEY_NOT_TRUSTED") from None
        raise


def _plain(name: str) -> bool:
    """A file name that names no other folder: no separator, no control character."""
    return 0 < len(name.encode()) <= 255 and name not in (".", "..") and \
        not any(c in "/\\" or c < " " for c in name)


def _subjects(statement: dict[str, Any], nested: bool = False) -> dict[str, str]:
    """name -> sha256 of the statement's subjects; names must be plain file names (with
    ``nested``, a run's seal, also ``FOLDER/NAME`` one level down)."""
    subjects: dict[str, str] = {}
    try:
        for subject in statement["subject"]:
            name, sha = subject["name"], subject["digest"]["sha256"]
            if not isinstance(name, str) or not isinstance(sha, str) or name in subjects:
                raise ValueError(f"subject {str(name)[:80]!r} is repeated or not a string")
            parts = name.split("/", 1) if nested else [name.removeprefix(INPUTS)]
            if not nested and name.startswith(candidate.PREFIX):  # a build, not a file
                plain = candidate.plain_name(name.removeprefix(candidate.PREFIX))
            else:
                plain = all(_plain(part) for part in parts)
            if not plain:
                raise ValueError(f"subject {name[:80]!r} is not a file name")
            subjects[name] = sha
    except (KeyError, TypeError, ValueError) as exc:
        raise VerifyError(f"the signed statement's subjects are malformed ({exc})",
                          "BAD_ENVELOPE") from None
    return subjects


def _digest(path: Path) -> str | None:
    """A file's SHA-256, or None when there is no file by that name."""
    try:
        return sha256_file(path) if path.is_file() else None
    except OSError as exc:
        raise VerifyError(f"{path.name}: {exc.strerror}", "UNREADABLE") from None


def _check_files(folder: Path, card: dict[str, Any],
                 subjects: dict[str, str]) -> tuple[list[str], list[str]]:
    """Compare every local subject with its file: (checked, absent projections)."""
    wanted = {n: s for n, s in subjects.items()
              if not n.startswith((INPUTS, candidate.PREFIX))}
    for name, field in BOUND.items():
        bound = card.get(field)
        if not isinstance(bound, str) or wanted.setdefault(name, bound) != bound:
            raise VerifyError(f"{name} is not bound: the scorecard's {field} and the signed "
                              "statement disagree", "DIGEST_MISMATCH")
    changed: list[str] = []
    missing: list[str] = []
    absent: list[str] = []
    checked: list[str] = []
    for name in sorted(set(wanted) - {"scorecard.json"}):
        actual = _digest(folder / name)
        if actual is None:
            (absent if name in PROJECTIONS else missing).append(name)
        elif actual != wanted[name]:
            changed.append(name)
        else:
            checked.append(name)
    if changed:
        raise VerifyError(f"{', '.join(changed)} changed after signing (SHA-256 differs from "
                          "the signed statement)", "DIGEST_MISMATCH")
    if missing:
        raise VerifyError(f"{', '.join(missing)} named by the signed statement "
                          f"{'is' if len(missing) == 1 else 'are'} missing beside the "
                          "scorecard", "SUBJECT_MISSING")
    return checked, absent


@dataclass(frozen=True)
class Signed:
    """A signed JSON file whose signatures verify with ``key``: its bytes and value, and the
    statement's subjects (every other subject is still to be compared with its file)."""

    data: bytes
    value: dict[str, Any]
    sha256: str
    statement: dict[str, Any]
    subjects: dict[str, str]
    signer: str  # keyid (hex SHA-256 of the raw public key) that verified


def open_signed(path: Path, trusted: Ed25519PublicKey | None, predicate_type: str,
                nested: bool = False) -> Signed:
    """The DSSE statement (``<stem>.intoto.jsonl`` beside the file) opened with the key and
    of ``predicate_type``, its digest of this file, the raw ``.sig``, and only then the
    file's bytes read as RFC 8785 JSON: bytes no signature vouches for are never parsed
    (a 256 MiB scorecard took 7 GB to parse before it was found unsigned)."""
    from cryptography.exceptions import InvalidSignature
    folder = path.parent
    sig_file = path.with_name(path.name + ".sig")
    envelope_file = folder / (path.name.removesuffix(".json") + ".intoto.jsonl")
    data = read_file(path)
    if not sig_file.exists() or not envelope_file.exists():
        raise VerifyError(f"{path.name} is not signed (no .sig or attestation beside it)",
                          "UNSIGNED")
    key = _key(folder, trusted)
    statement = _open(_envelope(envelope_file), key, trusted is not None)
    if statement.get("predicateType") != predicate_type:
        raise VerifyError(f"the signed statement is a {str(statement.get('predicateType'))[:80]}"
                          f", not a {predicate_type}", "WRONG_PREDICATE")
    subjects = _subjects(statement, nested)
    digest = hashlib.sha256(data).hexdigest()
    if subjects.get(path.name) != digest:
        raise VerifyError(f"{path.name} changed after signing (the signed statement names "
                          "another digest)", "DIGEST_MISMATCH")
    try:
        key.verify(read_file(sig_file, 1024), data)  # NOT_A_FILE, UNREADABLE pass through
    except InvalidSignature:
        raise VerifyError(f"{sig_file.name} does not verify over these bytes",
                          "BAD_SIGNATURE") from None
    value = _canonical(data, path.name)  # signed, so parsed; a signer's bad bytes still fail
    return Signed(data, value, digest, statement, subjects,
                  hashlib.sha256(signing.raw_public(key)).hexdigest())


def verify(path: Path, trusted: Ed25519PublicKey | None) -> Verified:
    """Verify a scorecard and the files beside it; raise VerifyError with a code if not."""
    signed = open_signed(path, trusted, signing.PREDICATE_TYPE)
    card, subjects, folder = signed.value, signed.subjects, path.parent
    checked, absent = _check_files(folder, card, subjects)
    builds = _candidates(card, subjects)
    run_id, evaluations = run_of(signed.statement)
    _signed_after_its_inputs(card, signed_time(signed.statement))
    judged = candidate.Judged.of(card, signed.sha256, "scorecard.json")
    vsa = folder / candidate.VSA_FILE
    here = vsa.exists() or vsa.is_symlink()
    if here and not builds:  # a summary of some other run, planted for admission tools
        raise VerifyError(f"{candidate.VSA_FILE} beside a scorecard that names no candidate: "
                          "no run wrote it here", "VSA_MISMATCH")
    if builds and len(evaluations) > 1 and here:  # the run's VSA is at its folder's top
        raise VerifyError(f"{candidate.VSA_FILE} beside the scorecard of one of run "
                          f"{run_id}'s {len(evaluations)} evaluations: the run's summary is "
                          "at the top of its folder, for the whole run", "VSA_MISMATCH")
    if builds and len(evaluations) <= 1:  # the candidates' SLSA summary, same key
        if here:
            candidate.check_vsa(read_file(vsa, MAX_ENVELOPE_BYTES), _key(folder, trusted),
                                builds, candidate.verdict([judged], run_id))
            checked.append(candidate.VSA_FILE)
        else:
            absent.append(candidate.VSA_FILE)
    covered = set(subjects) | SIGNATURE_FILES | {path.name} | \
        ({candidate.VSA_FILE} if builds and len(evaluations) <= 1 else set())
    unsigned = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir()
                      if p.name not in covered)
    named = card.get("evaluation")
    return Verified(signed.sha256, str(card.get("decision")), trusted is not None,
                    ("scorecard.json", *checked), tuple(absent), tuple(unsigned),
                    signed.signer,
                    str(named.get("name", "")) if isinstance(named, dict) else "",
                    signed_time(signed.statement), run_id, evaluations,
                    candidates=tuple(builds.items()), policy=judged.policy,
                    policy_sha256=judged.policy_sha256)


def verified_card(path: Path, verified: Verified) -> dict[str, Any]:
    """The scorecard at ``path`` as the bytes ``verify`` checked: read again and held to the
    verified digest, so a file swapped after verification is never what a caller reads."""
    data = read_file(path)
    if hashlib.sha256(data).hexdigest() != verified.scorecard_sha256:
        raise VerifyError(f"{path.name} changed after it was verified", "DIGEST_MISMATCH")
    return _canonical(data)


def _signed_after_its_inputs(card: dict[str, Any], signed_at: str) -> None:
    """The signed times a scorecard says it rests on (``as_of.signed``: the specs bundle,
    attestations, baseline, calibration, replayed scorecard, each verified when the run
    read it) are no later than the scorecard's own signature: else the runner's clock was
    behind them (set back to revive a waiver). Checked with no other key than the runner's,
    since the times are the run's own signed record (docs/provenance.md#time)."""
    dated = card.get("as_of")
    signed = dated.get("signed") if isinstance(dated, dict) else None
    if not isinstance(signed, dict) or not signed_at:
        return
    later = {what: when for what, when in signed.items()
             if isinstance(when, str) and SIGNED_TIME.fullmatch(when) and when > signed_at}
    if later:
        what, when = max(later.items(), key=lambda item: item[1])
        source, _, name = what.partition(":")
        named = {"specs": "specs bundle", "attestation": f"attestation of input {name}",
                 "replay": "replayed scorecard"}.get(source, source)
        raise VerifyError(f"the scorecard was signed {signed_at}, before the {named} it rests "
                          f"on ({when}): the runner's clock was behind "
                          "(docs/provenance.md#time)", "SIGNED_BEFORE_INPUTS")


def _candidates(card: dict[str, Any], subjects: dict[str, str]) -> dict[str, str]:
    """The builds a verified statement names, which the scorecard must list alike."""
    named = candidate.named(subjects)
    listed = card.get("candidates") or []
    try:
        same = {c["name"]: c["sha256"] for c in listed} == named and \
            len(listed) == len(named)
    except (TypeError, KeyError):
        same = False
    if not same:
        raise VerifyError("the scorecard's candidates and the signed statement's disagree",
                          "DIGEST_MISMATCH")
    return named


def run_of(statement: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """(run id, evaluations of that run) a signed scorecard statement names; ("", ()) for
    one signed before runs were sealed (or naming none well-formed)."""
    predicate = statement.get("predicate")
    run = predicate.get("run") if isinstance(predicate, dict) else None
    if not isinstance(run, dict):
        return "", ()
    ident, names = run.get("id"), run.get("evaluations")
    if not isinstance(ident, str) or not RUN_ID.fullmatch(ident) or \
            not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return "", ()
    return ident, tuple(names)


def signed_time(statement: dict[str, Any]) -> str:
    """The statement's ``generated_at`` when it is a UTC time to the second, else ""."""
    predicate = statement.get("predicate")
    value = predicate.get("generated_at") if isinstance(predicate, dict) else None
    return value if isinstance(value, str) and SIGNED_TIME.fullmatch(value) else ""


@dataclass(frozen=True)
class Found:
    """One scorecard under a folder: ``verified`` when it holds, else the ``error`` why not."""

    path: Path
    verified: Verified | None = None
    error: EngineError | None = None


def scorecards(folder: Path) -> tuple[list[Path], list[Found]]:
    """Every ``scorecard.json`` under ``folder``, parents first; the subfolders that could
    not be listed and every symlink (whatever lies there was not checked here, so it
    fails)."""
    refused: list[Found] = []

    def unlistable(where: Path, exc: OSError | PathTooDeep) -> None:
        error = VerifyError(f"{exc}; no scorecard under it was checked", exc.code) \
            if isinstance(exc, PathTooDeep) else VerifyError(
                f"{where}: {exc.strerror}; no scorecard under it was checked", "UNREADABLE")
        refused.append(Found(where, error=error))

    paths: list[Path] = []
    for path in walk.paths(folder, unlistable):  # links are listed, never followed
        if path.is_symlink():
            refused.append(Found(path, error=VerifyError(
                f"{path} is a symlink: evidence elsewhere is not this folder's, so it is "
                "not checked", "SYMLINK")))
        elif path.name == "scorecard.json" and not path.is_dir():
            if path.is_file():
                paths.append(path)
            else:  # a FIFO or a device: reading it could wait for ever
                refused.append(Found(path, error=VerifyError(
                    f"{path.name} is not a regular file, so it is not checked", "NOT_A_FILE")))
    paths.sort(key=lambda p: p.parent.parts)  # parents first (each folder holds one)
    return paths, refused


def _bad(found: Found, code: str, message: str) -> Found:
    return Found(found.path, error=VerifyError(message, code))


def _placed(folder: Path, found: list[Found], expect: list[str]) -> list[Found]:
    """Each scorecard where a run put it, once: in ``folder`` itself or in the subfolder
    named after its evaluation; no digest twice; with ``expect``, exactly those
    evaluations (a removed or an added one is a failure, not a shorter list)."""
    seen: dict[str, int] = {}
    for one in found:
        if one.verified is not None:
            seen[one.verified.scorecard_sha256] = seen.get(one.verified.scorecard_sha256, 0) + 1
    out = []
    for one in found:
        v = one.verified
        if v is None:
            out.append(one)
        elif one.path.parent != folder and one.path.parent.name != v.evaluation:
            out.append(_bad(one, "WRONG_FOLDER", f"the scorecard of '{v.evaluation}' is in "
                            f"the folder of '{one.path.parent.name}'"))
        elif seen[v.scorecard_sha256] > 1:
            out.append(_bad(one, "DUPLICATE_SCORECARD", "the same scorecard is in more than "
                            "one place under this folder"))
        elif expect and v.evaluation not in expect:
            out.append(_bad(one, "UNEXPECTED_EVALUATION", f"'{v.evaluation}' is not one of "
                            "the evaluations --expect names"))
        else:
            out.append(one)
    names = [f.verified.evaluation for f in out if f.verified is not None]
    for name in expect:
        if name not in names:
            out.append(Found(folder / name, error=VerifyError(
                f"no verified scorecard of '{name}' under {folder}", "MISSING_EVALUATION")))
    return out


def verify_folder(folder: Path, trusted: Ed25519PublicKey | None,
                  expect: list[str] | None = None) -> list[Found]:
    """Verify every scorecard.json under ``folder`` (at any depth), each with the same key,
    each where a run puts it, and with ``expect`` exactly the evaluations named; a folder
    holding none is a usage error (NO_SCORECARD)."""
    paths, refused = scorecards(folder)
    if not paths and not refused:
        raise UsageError(f"{folder}: no scorecard.json under this folder (give a scorecard, "
                         "or the --out folder of a run)", "NO_SCORECARD")
    found = list(refused)
    for path in paths:
        try:
            found.append(Found(path, verified=verify(path, trusted)))
        except EngineError as exc:  # e.g. a malformed signer.pub.pem: this scorecard fails
            found.append(Found(path, error=exc))
    return sorted(_placed(folder, found, expect or []), key=lambda f: f.path.parts)
