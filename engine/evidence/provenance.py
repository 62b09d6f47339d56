"""Provenance: governance's signed spec bundle and the harness's attestations of inputs
(docs/provenance.md; the provenance chain of the design's trust boundary).

A bundle (``specs.intoto.jsonl`` beside an Evaluation) holds one DSSE envelope per
Evaluation in that folder: an in-toto Statement v1 whose subjects are every file loading
the Evaluation opened (engine/spec/opened.py), with the SHA-256 of their bytes. An
attestation (``FILE.intoto.jsonl`` beside an input) is a statement whose subjects name the
input's bytes (for a folder, every file in it). Both are believed only once an Ed25519
signature by a pinned key verifies; their payloads are parsed only then.

The checks return a block for the scorecard (``provenance``) and, when something is not
as governance requires, the reason code; the run turns those into release blockers.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import rfc8785

from engine import folders as walk
from engine._version import __version__
from engine.canonical import file_digests, manifest_digest
from engine.errors import UsageError, VerifyError
from engine.evidence import signing
from engine.evidence.scorecard import publish, signed_now
from engine.evidence.verify import MAX_ENVELOPE_BYTES, SIGNED_TIME, read_file
from engine.spec import opened
from engine.spec.yaml import parse as parse_yaml

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

    from engine.spec.evaluation import Evaluation

SPECS_FILE = "specs.intoto.jsonl"
SPECS_PREDICATE = "https://specgate.dev/specs/v1"
ATTESTATION_PREDICATE = "https://specgate.dev/attestation/v1"
ATTESTATION_SUFFIX = ".intoto.jsonl"
MAX_PREDICATE = 16 * 1024  # canonical bytes of an attestation's predicate kept in a scorecard
SHA256 = re.compile(r"[0-9a-f]{64}", re.ASCII)
MAX_ENVELOPES = 64  # envelopes of one .intoto.jsonl that are tried; the rest are not
LISTED = 10  # file names a message lists before "and N more"


def attestation_copy(name: str) -> str:
    """The name of an input's attestation in the evidence folder."""
    return f"attestation-{name}{ATTESTATION_SUFFIX}"


def beside(path: Path) -> Path:
    """Where an attestation of ``path`` (a file or a folder) is looked for by default."""
    return path.with_name(path.name + ATTESTATION_SUFFIX)


@dataclass
class Check:
    """The outcome of one provenance check: the scorecard's block, the reason code and
    message when it fails, and the file to copy into the evidence (name, bytes)."""

    block: dict[str, Any]
    code: str = ""
    message: str = ""
    copy: tuple[str, bytes] | None = None
    spec_path: str = "evaluation:spec"


# --- governance: signing and checking spec bundles -------------------------------------

def specs_statement(evaluation: Evaluation, digests: dict[str, str]) -> dict[str, Any]:
    """The in-toto statement governance signs for one Evaluation."""
    policy, suite = evaluation.policy, evaluation.suite
    return {
        "_type": signing.STATEMENT_TYPE,
        "subject": [{"name": n, "digest": {"sha256": d}} for n, d in sorted(digests.items())],
        "predicateType": SPECS_PREDICATE,
        "predicate": {
            "evaluation": {"file": evaluation.file.name, "name": evaluation.name,
                           "version": evaluation.version, "sha256": evaluation.sha256},
            "policy": {"name": policy.name, "version": policy.version,
                       "sha256": policy.sha256},
            "suite": None if suite.derived else {"name": suite.name, "version": suite.version,
                                                 "sha256": suite.sha256},
            "engine_version": __version__,
            "signed_at": signed_now(),
        },
    }


def sign_specs(evaluations: list[Evaluation], key: Ed25519PrivateKey) -> list[tuple[Path, int]]:
    """Write ``specs.intoto.jsonl`` beside each Evaluation (one line per Evaluation of that
    folder, by file name), atomically; return each bundle with how many files it signs."""
    folders: dict[Path, list[Evaluation]] = {}
    for evaluation in evaluations:
        folders.setdefault(evaluation.file.resolve().parent, []).append(evaluation)
    written = []
    for folder, members in sorted(folders.items()):
        given = {e.file.resolve() for e in members}
        left = sorted(p.name for p in folder.glob("*.y*ml") if p.resolve() not in given and
                      _is_evaluation(p))
        if left:  # the bundle is the folder's: rewriting it would unsign the others
            raise UsageError(f"{folder}: {', '.join(left)} is an Evaluation of this folder "
                             "too; sign the folder, so its bundle signs every one",
                             "NO_EVALUATION")
        lines, count = [], 0
        for evaluation in sorted(members, key=lambda e: e.file.name):
            digests = file_digests(evaluation.spec_files)
            if digests != evaluation.spec_sha256:
                raise UsageError(f"{evaluation.file}: a spec file changed while it was "
                                 "signed; sign again", "SPECS_CHANGED")
            lines.append(json.dumps(signing.envelope(key, specs_statement(evaluation, digests)),
                                    sort_keys=True) + "\n")
            count += len(digests)
        written.append((publish(folder / SPECS_FILE, "".join(lines).encode(), replace=True),
                        count))
    return written


def _is_evaluation(path: Path) -> bool:
    """Whether a file beside the Evaluations signed holds another, read as the loader
    reads a document (a folder, a dangling link or unreadable YAML by a YAML name holds
    none: the loader itself says what is wrong with it)."""
    try:
        if not path.is_file():
            return False
        doc, _ = parse_yaml(path.read_bytes().decode("utf-8"), str(path))
    except (OSError, UnicodeDecodeError):
        return False
    return doc is not None and isinstance(doc.data, dict) and \
        doc.data.get("kind") == "Evaluation"


def _statements(data: bytes, keys: list[Ed25519PublicKey]
                ) -> tuple[list[tuple[dict[str, Any], str]], int]:
    """Every statement in a ``.intoto.jsonl`` file whose envelope a key verifies (with the
    keyid of the first key in ``keys`` that does), and how many lines no key verified.
    Payloads are parsed only after their signature holds (signing.open_envelope)."""
    found, unverified = [], 0
    lines = [line for line in data.decode("utf-8", errors="replace").splitlines()
             if line.strip()]
    unverified = max(0, len(lines) - MAX_ENVELOPES)
    for line in lines[:MAX_ENVELOPES]:  # each costs up to 8 signature checks per key
        try:
            envelope = json.loads(line)
        except (ValueError, RecursionError):
            unverified += 1
            continue
        statement = None
        for key in keys:
            if not isinstance(envelope, dict):
                break
            try:
                statement = signing.open_envelope(envelope, key)
            except VerifyError:
                continue
            found.append((statement, signing.keyid(key)))
            break
        if statement is None:
            unverified += 1
    return found, unverified


def _subjects(statement: dict[str, Any]) -> dict[str, str] | None:
    """A statement's subjects as name -> sha256, or None when they are malformed (a name
    twice, a digest that is not 64 lowercase hex digits)."""
    subjects = statement.get("subject")
    if statement.get("_type") != signing.STATEMENT_TYPE or not isinstance(subjects, list):
        return None
    out: dict[str, str] = {}
    for entry in subjects:
        name = entry.get("name") if isinstance(entry, dict) else None
        digest = entry.get("digest") if isinstance(entry, dict) else None
        if not isinstance(digest, dict) or not isinstance(name, str):
            return None
        if "sha256" not in digest:
            continue  # named by other algorithms only (in-toto allows it): not one we check
        sha = digest["sha256"]
        if not isinstance(sha, str) or not SHA256.fullmatch(sha) or name in out:
            return None
        out[name] = sha
    return out


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:LISTED])
    return shown + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")


SPEC_WORDS = ("changed since governance signed", "loaded but not signed",
              "signed but not loaded")
FOLDER_WORDS = ("changed since the harness attested", "not attested", "attested but not there")


def compare_files(signed: dict[str, str], loaded: dict[str, str],
                  words: tuple[str, str, str] = SPEC_WORDS) -> list[str]:
    """What differs between the files a statement names and the files read, in words."""
    changed = sorted(n for n in signed.keys() & loaded.keys() if signed[n] != loaded[n])
    unsigned = sorted(loaded.keys() - signed.keys())
    unloaded = sorted(signed.keys() - loaded.keys())
    return [f"{word}: {_listed(names)}" for word, names in
            zip(words, (changed, unsigned, unloaded), strict=True) if names]


def check_specs(evaluation: Evaluation, keys: list[Ed25519PublicKey]) -> Check:
    """Whether governance signed exactly the files this Evaluation loaded (with
    ``--governance-key``); without keys the block says the specs were not checked."""
    loaded = evaluation.spec_sha256
    name = evaluation.file.name
    if not keys:
        return Check({"status": "not_checked", "evaluation_file": name, "files": loaded})
    bundle = evaluation.file.resolve().parent / SPECS_FILE
    block: dict[str, Any] = {"evaluation_file": name, "files": loaded,
                             "governance_keys": sorted(signing.keyid(k) for k in keys)}
    try:
        data = read_file(bundle, MAX_ENVELOPE_BYTES)
    except VerifyError as exc:
        return Check({"status": "unsigned", **block}, "SPECS_UNSIGNED",
                     f"no governance bundle for {name}: {exc} (governance signs the specs "
                     "with engine sign-specs)")
    block["bundle_sha256"] = hashlib.sha256(data).hexdigest()
    copy = (SPECS_FILE, data)
    found, _ = _statements(data, keys)
    mine = [(s, k) for s, k in found if s.get("predicateType") == SPECS_PREDICATE
            and isinstance(s.get("predicate"), dict)
            and isinstance(s["predicate"].get("evaluation"), dict)
            and s["predicate"]["evaluation"].get("file") == name]
    if not mine:
        code, why = ("SPECS_UNSIGNED", f"{SPECS_FILE} holds no statement for {name} signed "
                     "by a --governance-key") if found else (
            "SPECS_SIGNATURE_INVALID", f"no signature in {SPECS_FILE} verifies with a "
            "--governance-key (keyids " + ", ".join(k[:16] for k in block["governance_keys"])
            + ")")
        return Check({"status": "unsigned" if found else "invalid", **block}, code, why,
                     copy)
    statement, signer = next(((s, k) for s, k in mine if _subjects(s) == loaded), mine[0])
    block |= {"signer": signer, "signed_at": str(statement["predicate"].get("signed_at", ""))}
    signed = _subjects(statement)
    if signed is None:
        return Check({"status": "invalid", **block}, "SPECS_SIGNATURE_INVALID",
                     f"the statement for {name} in {SPECS_FILE} has malformed subjects", copy)
    differences = compare_files(signed, loaded)
    if differences:
        return Check({"status": "changed", **block, "differences": differences},
                     "SPECS_CHANGED", f"{name}: " + "; ".join(differences), copy)
    return Check({"status": "verified", **block}, copy=copy)


def recheck_specs(evaluation: Evaluation, check: Check) -> Check:
    """The same check before the decision: a spec file replaced or written while it was
    loaded, or since (the runner owns the checkout), makes the specs changed, whatever
    they were; a file swapped and put back has another ctime, which nobody can set."""
    moved = sorted(n for n, d in evaluation.spec_sha256.items() if not d)
    for name, path in evaluation.spec_files.items():
        try:
            now = opened.identity(os.stat(path))
        except OSError:
            now = None
        if now != evaluation.spec_identity.get(name) and name not in moved:
            moved.append(name)
    if not moved:
        return check
    note = f"changed while or after they were loaded: {_listed(sorted(moved))}"
    block = {**check.block, "status": "changed",
             "differences": [*check.block.get("differences", []), note]}
    return Check(block, "SPECS_CHANGED", f"{evaluation.file.name}: {note}", check.copy)


# --- the harness: attesting inputs ----------------------------------------------------

def attest(path: Path, key: Ed25519PrivateKey, predicate_type: str,
           predicate: dict[str, Any], out: Path | None = None) -> tuple[Path, int]:
    """Write the attestation of a file or folder (``PATH.intoto.jsonl`` unless ``out``);
    never over an existing file. Returns where, and how many subjects it names."""
    from engine.canonical import folder_manifest, sha256_file
    path = path.resolve()  # "." and ".." have no name to write the attestation beside
    target = out or beside(path)
    if path.is_dir():
        subjects = folder_manifest(path)
    else:
        os.close(_regular(path))
        subjects = [(path.name, sha256_file(path))]
    for name, _ in subjects:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError(f"{path}: the file name {name!r} is not UTF-8, which an in-toto "
                             "subject cannot name; rename it", "BAD_PATH") from None
    statement = {"_type": signing.STATEMENT_TYPE,
                 "subject": [{"name": n, "digest": {"sha256": d}} for n, d in subjects],
                 "predicateType": predicate_type, "predicate": predicate}
    line = (json.dumps(signing.envelope(key, statement), sort_keys=True) + "\n").encode()
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise UsageError(f"{target} already exists; an attestation is never overwritten "
                         "(--out another name)", "OUTPUT_EXISTS") from None
    with os.fdopen(fd, "wb") as handle:
        handle.write(line)
    return target, len(subjects)


@dataclass
class Held:
    """An attested input as the run reads it: a private copy in the staging folder, made
    and hashed before anything reads it (``path``; the original is ``source``), its
    digest, its manifest when it is a folder, and the identity of the copy's every folder
    and file (opened.identity) once written, so that anything that touches the copy while
    the run reads it is told apart afterwards. The original may change at will: it is
    not what is read (a folder swapped and swapped back beside the original, found by a
    hostile review, leaves its files' identities as they were)."""

    source: Path
    path: Path
    sha256: str
    manifest: list[tuple[str, str]] | None
    identities: dict[str, opened.Identity]

    def moved(self) -> list[str]:
        """The copy's folders and files whose identity is not what it was once written."""
        now = _tree(self.path.parent)
        return sorted(n for n in self.identities.keys() | now.keys()
                      if self.identities.get(n) != now.get(n))


def _tree(root: Path) -> dict[str, opened.Identity]:
    out: dict[str, opened.Identity] = {}
    for path in [root, *walk.paths(root)]:
        try:
            out[path.relative_to(root).as_posix()] = opened.identity(os.lstat(path))
        except OSError:
            out[path.relative_to(root).as_posix()] = None
    return out


def _regular(path: Path) -> int:
    """A descriptor of a regular file, opened without waiting (a FIFO or a device is a
    usage error, never read: /dev/zero would fill the disk, a FIFO hang the run)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(f"{path} is not a regular file or a folder; only those are attested "
                         "and read", "BAD_PATH")
    return fd


def _copy(source: Path, target: Path) -> str:
    """Copy one regular file, hashing the bytes as they are written."""
    digest = hashlib.sha256()
    with os.fdopen(_regular(source), "rb") as reading, target.open("xb") as writing:
        for block in iter(lambda: reading.read(1 << 20), b""):
            digest.update(block)
            writing.write(block)
    return digest.hexdigest()


def hold(source: Path, into: Path) -> Held:
    """Copy an attested input (a file, or every file of a folder) into the private folder
    ``into`` (made here), hashing it as it is copied; the run then reads the copy only."""
    into.mkdir(mode=0o700)
    target = into / source.name
    if source.is_dir():
        manifest = []
        # listed whole first: a tree too deep is refused before a byte is copied
        for file in [p for p in walk.paths(source) if p.is_file()]:
            name = file.relative_to(source).as_posix()
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            manifest.append((name, _copy(file, target / name)))
        target.mkdir(exist_ok=True)
        return Held(source, target, manifest_digest(manifest), manifest, _tree(into))
    sha = _copy(source, target)
    return Held(source, target, sha, None, _tree(into))


@dataclass
class Attested:
    """One input as the attestation check sees it: its recorded digest and, for a
    folder, its manifest (name, sha256) of the same bytes; the files that changed while
    the run read them."""

    name: str
    sha256: str
    manifest: list[tuple[str, str]] | None = None
    keys: list[Ed25519PublicKey] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)


def check_input(source: Attested, where: Path, refused: frozenset[str]) -> Check:
    """Whether the attestation at ``where`` names exactly the bytes recorded for the
    input and verifies with a harness key the Evaluation lists (never one that signs
    runs: ``refused``); a failing block says why (``problem``)."""
    check = _check_input(source, where, refused)
    if check.code:
        check.block["problem"] = check.message
    return check


def _check_input(source: Attested, where: Path, refused: frozenset[str]) -> Check:
    spec_path = f"evaluation:spec.inputs.{source.name}.attestation"
    block: dict[str, Any] = {"trusted_keys": sorted(signing.keyid(k) for k in source.keys)}
    try:
        data = read_file(where, MAX_ENVELOPE_BYTES)
    except VerifyError as exc:
        return Check({"status": "unattested", **block}, "INPUT_UNATTESTED",
                     f"input {source.name}: no attestation ({exc}); the harness writes one "
                     "with engine attest", spec_path=spec_path)
    copy = (attestation_copy(source.name), data)
    block["attestation_sha256"] = hashlib.sha256(data).hexdigest()
    if source.moved:
        return Check({"status": "invalid", **block}, "INPUT_ATTESTATION_INVALID",
                     f"input {source.name}: changed while the run read it: "
                     f"{_listed(source.moved)}; what was read is not what was hashed",
                     copy, spec_path)
    keys = sorted(source.keys, key=lambda k: signing.keyid(k) in refused)  # refused last
    every, _ = _statements(data, keys)
    found = [(s, k) for s, k in every if k not in refused]
    if not found:
        why = ("is signed only by a key that signs runs, which vouches for no input" if every
               else "verifies with none of the harness keys the Evaluation lists")
        return Check({"status": "invalid", **block}, "INPUT_ATTESTATION_INVALID",
                     f"input {source.name}: the attestation {why}", copy, spec_path)
    for statement, signer in found:
        signed = _subjects(statement)
        if signed is not None and _names(source, signed):
            return Check({"status": "attested", **block, "signer": signer,
                          **_signed_at(statement), **_predicate(statement)},
                         copy=copy, spec_path=spec_path)
    what = f"the bytes read (sha256 {source.sha256})"
    if source.manifest is not None:
        named = [d for s, _ in found if (d := _subjects(s)) is not None]
        what = "the folder's files as read" + (": " + "; ".join(compare_files(
            named[0], dict(source.manifest), FOLDER_WORDS)) if named else "")
    return Check({"status": "invalid", **block}, "INPUT_ATTESTATION_INVALID",
                 f"input {source.name}: the attestation does not name {what}", copy,
                 spec_path)


def _names(source: Attested, signed: dict[str, str]) -> bool:
    """A file: one subject has its digest. A folder: the subjects are its files exactly."""
    if source.manifest is None:
        return source.sha256 in signed.values()
    return signed == dict(source.manifest) and \
        manifest_digest(signed.items()) == source.sha256


def _signed_at(statement: dict[str, Any]) -> dict[str, str]:
    """When the harness says it attested (``predicate.signed_at``, UTC to the second, as
    engine attest writes it), for the date a release is judged on; {} when it says not."""
    predicate = statement.get("predicate")
    value = predicate.get("signed_at") if isinstance(predicate, dict) else None
    return {"signed_at": value} if isinstance(value, str) and SIGNED_TIME.fullmatch(value) \
        else {}


def _predicate(statement: dict[str, Any]) -> dict[str, Any]:
    """What the harness says made the input, as recorded in the scorecard (its
    predicate when it is small canonical JSON, else only its type)."""
    out: dict[str, Any] = {"predicate_type": str(statement.get("predicateType", ""))[:200]}
    try:  # rfc8785 itself: the scorecard is written by it (no integer beyond 2**53)
        data = rfc8785.dumps(statement.get("predicate"))
    except (ValueError, TypeError, OverflowError, rfc8785.CanonicalizationError):
        return {**out, "predicate_omitted": "not canonical JSON"}
    if len(data) > MAX_PREDICATE:
        return {**out, "predicate_omitted": f"larger than {MAX_PREDICATE} bytes",
                "predicate_sha256": hashlib.sha256(data).hexdigest()}
    return {**out, "predicate": statement.get("predicate")}


# --- the auditor: what engine verify proves with the governance and harness keys -------

_SPECS_CODES = {"not_checked": "SPECS_UNSIGNED", "unsigned": "SPECS_UNSIGNED",
                "invalid": "SPECS_SIGNATURE_INVALID", "changed": "SPECS_CHANGED"}


def verify_card(scorecard: Path, governance: list[Ed25519PublicKey],
                harness: list[Ed25519PublicKey], signed_at: str = "") -> list[str]:
    """Check, offline, the provenance a verified scorecard records against the pinned
    governance and harness keys, with the bundle and attestations copied beside it, and
    that the scorecard (its statement's ``signed_at``) was not signed before them; the
    lines to print, or VerifyError. Call only after the scorecard itself verified."""
    card = json.loads(read_file(scorecard))
    recorded = card.get("provenance")
    if not isinstance(recorded, dict):
        raise VerifyError("the scorecard records no provenance (written before specgate "
                          "checked specs and inputs)", "SPECS_UNSIGNED")
    lines: list[str] = []
    times: dict[str, str] = {}
    if governance:
        lines.append(_verify_specs(scorecard.parent, card, recorded.get("specs") or {},
                                   governance, times))
    if harness:
        lines += _verify_inputs(scorecard.parent, card, recorded.get("inputs") or {}, harness,
                                times)
    _not_before(signed_at, times)
    return lines


def _not_before(signed_at: str, times: dict[str, str]) -> None:
    """A scorecard signed before the specs or an attestation it binds was signed: its
    runner's clock was behind theirs (set back to revive a waiver, or unsynchronised).
    Times are UTC to the second, so they compare as text."""
    later = {what: t for what, t in times.items() if not signed_at or t > signed_at}
    if later:
        what, when = max(later.items(), key=lambda item: item[1])
        raise VerifyError(f"the scorecard was signed {signed_at or 'at no stated time'}, "
                          f"before the {what} it binds ({when}): the runner's clock was "
                          "behind (docs/provenance.md#time)", "SIGNED_BEFORE_INPUTS")


def _copied(folder: Path, name: str, sha: Any, code: str) -> bytes:
    data = read_file(folder / name, MAX_ENVELOPE_BYTES)
    if hashlib.sha256(data).hexdigest() != sha:
        raise VerifyError(f"{name} is not the file the run recorded", code)
    return data


def _verify_specs(folder: Path, card: dict[str, Any], specs: dict[str, Any],
                  keys: list[Ed25519PublicKey], times: dict[str, str]) -> str:
    status = specs.get("status")
    if status != "verified":
        why = "made without --governance-key: nobody checked whose specs these are" \
            if status == "not_checked" else f"found the specs {status}"
        raise VerifyError(f"the run {why}" + "".join(
            f"; {d}" for d in specs.get("differences", [])), _SPECS_CODES.get(
                str(status), "SPECS_UNSIGNED"))
    data = _copied(folder, SPECS_FILE, specs.get("bundle_sha256"), "SPECS_CHANGED")
    name = specs.get("evaluation_file")
    mine = [(s, k) for s, k in _statements(data, keys)[0]
            if s.get("predicateType") == SPECS_PREDICATE and isinstance(s.get("predicate"), dict)
            and isinstance(s["predicate"].get("evaluation"), dict)
            and s["predicate"]["evaluation"].get("file") == name]
    if not mine:
        raise VerifyError(f"{SPECS_FILE} holds no statement for {name} that a "
                          "--governance-key signed", "SPECS_SIGNATURE_INVALID")
    recorded = specs.get("files") or {}
    statement, signer = next(((s, k) for s, k in mine if _subjects(s) == recorded), mine[0])
    signed = _subjects(statement) or {}
    differences = compare_files(signed, recorded)
    if statement["predicate"]["evaluation"].get("sha256") != card["evaluation"]["sha256"]:
        differences.append("the signed Evaluation is not the one the scorecard names")
    if differences:
        raise VerifyError("; ".join(differences), "SPECS_CHANGED")
    when = statement["predicate"].get("signed_at")
    if isinstance(when, str) and SIGNED_TIME.fullmatch(when):
        times["specs bundle"] = when
    return (f"specs: {len(signed)} file(s) of {name}, exactly as loaded, signed by the pinned "
            f"governance key (keyid {signer[:16]}) at "
            f"{statement['predicate'].get('signed_at') or 'no stated time'}")


def _verify_inputs(folder: Path, card: dict[str, Any], inputs: dict[str, Any],
                   keys: list[Ed25519PublicKey], times: dict[str, str]) -> list[str]:
    if not inputs:
        raise VerifyError("the scorecard has no attested input (the Evaluation requires "
                          "none: inputs.NAME.attestation)", "INPUT_UNATTESTED")
    lines = []
    for name, block in sorted(inputs.items()):
        if block.get("status") != "attested":
            raise VerifyError(f"input {name}: the run found it {block.get('status')}",
                              "INPUT_UNATTESTED" if block.get("status") == "unattested"
                              else "INPUT_ATTESTATION_INVALID")
        data = _copied(folder, attestation_copy(name), block.get("attestation_sha256"),
                       "INPUT_ATTESTATION_INVALID")
        recorded = (card.get("inputs") or {}).get(name, {}).get("sha256")
        signer, statement = next(((k, s) for s, k in _statements(data, keys)[0]
                                  if (signed := _subjects(s)) is not None
                                  and recorded is not None
                                  and (recorded in signed.values()
                                       or manifest_digest(signed.items()) == recorded)),
                                 ("", {}))
        if not signer:
            raise VerifyError(f"input {name}: no statement a --harness-key signed names the "
                              f"bytes the scorecard records (sha256 {recorded})",
                              "INPUT_ATTESTATION_INVALID")
        if "signed_at" in _signed_at(statement):
            times[f"attestation of input {name}"] = _signed_at(statement)["signed_at"]
        lines.append(f"input {name}: sha256 {str(recorded)[:16]}... attested by the pinned "
                     f"harness key (keyid {signer[:16]})")
    return lines


def bundle_status(evaluation: Evaluation, keys: list[Ed25519PublicKey]) -> Check | None:
    """What ``engine validate`` says about the bundle beside an Evaluation: with keys, the
    run's own check; without, whether its subjects (read unverified, for the author's
    convenience only) are the files loaded. None when there is no bundle and no key."""
    if keys:
        return check_specs(evaluation, keys)
    bundle = evaluation.file.resolve().parent / SPECS_FILE
    if not bundle.exists():
        return None
    try:
        data = read_file(bundle, MAX_ENVELOPE_BYTES)
        payloads = [json.loads(base64.b64decode(json.loads(line)["payload"]))
                    for line in data.decode("utf-8").splitlines() if line.strip()]
    except (VerifyError, ValueError, KeyError, TypeError, RecursionError) as exc:
        return Check({"status": "invalid"}, "SPECS_SIGNATURE_INVALID",
                     f"{SPECS_FILE} is not readable ({str(exc)[:120]})")
    name = evaluation.file.name
    mine = [p for p in payloads if isinstance(p, dict) and isinstance(p.get("predicate"), dict)
            and isinstance(p["predicate"].get("evaluation"), dict)
            and p["predicate"]["evaluation"].get("file") == name]
    if not mine:
        return Check({"status": "unsigned"}, "SPECS_UNSIGNED",
                     f"{SPECS_FILE} holds no statement for {name}")
    differences = compare_files(_subjects(mine[0]) or {}, evaluation.spec_sha256)
    if differences:
        return Check({"status": "changed"}, "SPECS_CHANGED", f"{name}: " + "; ".join(
            differences))
    return Check({"status": "unverified"})
