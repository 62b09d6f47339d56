"""One ``engine run`` as one sealed thing (issue 26).

Every scorecard's signed statement names the run that wrote it (``predicate.run``: its id
and every evaluation it wrote into the same ``--out``); a run of several evaluations also
signs its ``summary.json`` (``summary.intoto.jsonl``, predicate type
``https://specgate.dev/run/v1``), whose subjects are ``summary.md`` and each evaluation's
``FOLDER/scorecard.json``. ``engine verify FOLDER`` then checks, beyond each scorecard on
its own, that they are one run: the same run id, the scorecards the seal names and no
other, none of the run's evaluations missing, and, when the auditor states it, the run id
a CI step recorded (``--run-id``) and a time no signature may predate (``--not-before``).

The run id and the signing time live in the signed statements, never in ``scorecard.json``,
so a rerun of unchanged work still gives identical scorecard bytes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine._version import __version__
from engine.errors import EngineError, UsageError, VerifyError
from engine.evidence import candidate, signing
from engine.evidence.verify import (
    MAX_ENVELOPE_BYTES,
    RUN_ID,
    Found,
    Verified,
    _digest,
    _key,
    open_signed,
    read_file,
    signed_time,
    verify_folder,
)

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

SUMMARY = "summary.json"
SUMMARY_MD = "summary.md"
SEAL_FILES = (SUMMARY, SUMMARY + ".sig", "summary.intoto.jsonl")
TIME = re.compile(r"\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d)?Z)?", re.ASCII)


def new_id() -> str:
    """A run id nobody can foresee: 128 random bits, in hex."""
    return secrets.token_hex(16)


def checked_id(value: str, option: str = "--run-id") -> str:
    """A run id as the command line gives it, or a usage error (BAD_RUN_ID)."""
    if not RUN_ID.fullmatch(value):
        raise UsageError(f"{option} wants 1-128 characters of A-Z, a-z, 0-9, '.', '_', ':', "
                         f"'@', '+' or '-', got {value[:80]!r}", "BAD_RUN_ID")
    return value


def not_before(value: str) -> str:
    """--not-before as the signed times are written (YYYY-MM-DDTHH:MM:SSZ, UTC)."""
    if not TIME.fullmatch(value):
        raise UsageError("--not-before wants a UTC time YYYY-MM-DD, YYYY-MM-DDTHH:MMZ or "
                         f"YYYY-MM-DDTHH:MM:SSZ, got {value[:80]!r}", "BAD_DATE")
    text = value if "T" in value else value + "T00:00:00Z"
    text = text if text.count(":") == 2 else text[:-1] + ":00Z"
    try:
        dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise UsageError(f"--not-before {value!r} is not a calendar time", "BAD_DATE") from None
    return text


def predicate(run_id: str, evaluations: list[str]) -> dict[str, Any]:
    """The ``run`` member of each scorecard statement of the run."""
    return {"id": run_id, "evaluations": evaluations}


def seal_files(key: Ed25519PrivateKey, summary: bytes, markdown: bytes,
               scorecards: dict[str, str], run_id: str, exit_code: int,
               generated_at: str) -> dict[str, bytes]:
    """``summary.json.sig``, ``summary.intoto.jsonl`` and ``signer.pub.pem``: the summary
    signed, with ``summary.md`` and every ``FOLDER/scorecard.json`` as subjects."""
    subjects = {SUMMARY_MD: hashlib.sha256(markdown).hexdigest(), **scorecards}
    value = {"run_id": run_id, "exit_code": exit_code,
             "scorecards": sorted(scorecards), "engine_version": __version__,
             "generated_at": generated_at, "generated_at_note": "asserted by the signer"}
    return signing.signed_files(key, SUMMARY, summary, subjects, signing.RUN_PREDICATE_TYPE,
                                value)


@dataclass(frozen=True)
class Seal:
    """A run's summary whose signature holds."""

    run_id: str
    scorecards: dict[str, str]  # FOLDER/scorecard.json -> sha256
    generated_at: str
    signer: str
    trusted: bool
    checked: tuple[str, ...]
    absent: tuple[str, ...]
    unsigned: tuple[str, ...] = ()  # at the top of the folder, covered by no signature
    sha256: str = ""  # of summary.json


@dataclass
class Checked:
    """``engine verify FOLDER``: every scorecard's result, and the run's seal."""

    found: list[Found]
    seal: Seal | None = None
    seal_error: EngineError | None = None
    run_id: str = ""  # the run the folder is taken to hold ("" when none could be told)
    notes: list[str] = field(default_factory=list)


def _open_seal(folder: Path, trusted: Ed25519PublicKey | None) -> Seal:
    signed = open_signed(folder / SUMMARY, trusted, signing.RUN_PREDICATE_TYPE, nested=True)
    value, statement = signed.value, signed.statement
    stated = statement.get("predicate")
    run_id = value.get("run_id") if isinstance(value, dict) else None
    if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id) or \
            not isinstance(stated, dict) or stated.get("run_id") != run_id:
        raise VerifyError("the signed summary names no run id, or another than its "
                          "statement", "BAD_ENVELOPE")
    scorecards = {n: d for n, d in signed.subjects.items() if n.endswith("/scorecard.json")}
    checked, absent = [SUMMARY], []
    if SUMMARY_MD in signed.subjects:
        actual = _digest(folder / SUMMARY_MD)
        if actual is None:
            absent.append(SUMMARY_MD)
        elif actual != signed.subjects[SUMMARY_MD]:
            raise VerifyError(f"{SUMMARY_MD} changed after signing (SHA-256 differs from the "
                              "signed statement)", "DIGEST_MISMATCH")
        else:
            checked.append(SUMMARY_MD)
    covered = {*SEAL_FILES, SUMMARY_MD, "signer.pub.pem", candidate.VSA_FILE,
               *(name.split("/", 1)[0] for name in scorecards)}
    unsigned = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir()
                      if p.name not in covered)
    return Seal(run_id, scorecards, signed_time(statement), signed.signer,
                trusted is not None, tuple(checked), tuple(absent), tuple(unsigned),
                signed.sha256)


def _bad(one: Found, code: str, message: str) -> Found:
    return Found(one.path, error=VerifyError(message, code))


def _the_run(valid: list[Found], seal: Seal | None, wanted: str | None) -> str:
    """The run the folder holds: the seal's, else the one stated, else the one most of its
    scorecards name (none when two are as common)."""
    if seal is not None:
        return seal.run_id
    if wanted is not None:
        return wanted
    counts = Counter(f.verified.run_id for f in valid if f.verified is not None)
    ranked = counts.most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return ""
    return ranked[0][0]


def _member(folder: Path, one: Found, run: str, seal: Seal | None, several: bool,
            earliest: str | None, names: set[str]) -> Found:
    """One verified scorecard, held against the run the folder holds (``names``: the
    evaluations of every verified scorecard in the folder)."""
    v = one.verified
    assert v is not None
    when = v.generated_at or "at no stated time"
    if not v.run_id and several:
        return _bad(one, "RUN_UNBOUND", f"the scorecard of '{v.evaluation}' (signed {when}) "
                    "names no run, so nothing shows it belongs with the others here; it was "
                    "signed before runs were sealed, or by another tool")
    if v.run_id != run and (run or v.run_id):
        return _bad(one, "RUN_MISMATCH", f"the scorecard of '{v.evaluation}' belongs to run "
                    f"{v.run_id or '(none)'} (signed {when}), not to run {run or '(none)'} "
                    "this folder holds")
    if several and v.run_id and not names <= set(v.run_evaluations):
        return _bad(one, "RUN_MISMATCH", f"the scorecard of '{v.evaluation}' is of run "
                    f"{v.run_id}, which wrote only {', '.join(v.run_evaluations)} into its "
                    "folder: separate runs under one id are not one run")
    rel = one.path.relative_to(folder).as_posix()
    if seal is not None and seal.scorecards.get(rel) != v.scorecard_sha256:
        return _bad(one, "RUN_MISMATCH", f"{rel} is not the scorecard run {run} sealed in "
                    f"{SUMMARY} ({'it names another' if rel in seal.scorecards else 'none'})")
    if earliest is not None and (not v.generated_at or v.generated_at < earliest):
        return _bad(one, "STALE", f"the scorecard of '{v.evaluation}' was signed {when}, "
                    f"before --not-before {earliest}")
    return one


def _missing(folder: Path, found: list[Found], run: str, seal: Seal | None) -> list[Found]:
    """The run's evaluations with no scorecard here: from the seal, else from what the
    run's own signed statements say it wrote."""
    present = {f.path.relative_to(folder).as_posix(): f for f in found}
    if seal is not None:
        return [Found(folder / rel, error=VerifyError(
            f"run {run} sealed {rel}, which is not under {folder}", "MISSING_EVALUATION"))
            for rel in sorted(seal.scorecards) if rel not in present]
    named: set[str] = set()
    for one in found:
        if one.verified is not None and one.verified.run_id == run and run:
            named.update(one.verified.run_evaluations)
    have = {f.verified.evaluation for f in found if f.verified is not None}
    here = {Path(rel).parent.name for rel in present}
    return [Found(folder / name, error=VerifyError(
        f"run {run} also evaluated '{name}'; no scorecard of it is under {folder}",
        "MISSING_EVALUATION")) for name in sorted(named - have - here)]


def check(folder: Path, trusted: Ed25519PublicKey | None, expect: list[str] | None = None,
          run_id: str | None = None, earliest: str | None = None) -> Checked:
    """Every scorecard under ``folder`` on its own (verify_folder), then as one run."""
    found = verify_folder(folder, trusted, expect)
    result = Checked(found)
    if any((folder / name).exists() or (folder / name).is_symlink() for name in SEAL_FILES):
        try:
            result.seal = _open_seal(folder, trusted)
        except EngineError as exc:
            result.seal_error = exc
    valid = [f for f in found if f.verified is not None]
    several = len(valid) > 1 or result.seal is not None
    if result.seal_error is None and result.seal is None and \
            any(len(f.verified.run_evaluations) > 1 for f in valid if f.verified):
        result.seal_error = VerifyError(f"the run's signed {SUMMARY} is missing: a run of "
                                        "several evaluations seals them in it",
                                        "SUBJECT_MISSING")
    run = _the_run(valid, result.seal, run_id)
    if result.seal is not None and run_id is not None and result.seal.run_id != run_id:
        result.seal_error = VerifyError(f"the run is {result.seal.run_id}, not --run-id "
                                        f"{run_id}", "RUN_MISMATCH")
    if result.seal is not None and earliest is not None and \
            (not result.seal.generated_at or result.seal.generated_at < earliest):
        result.seal_error = VerifyError(f"the run was sealed {result.seal.generated_at}, "
                                        f"before --not-before {earliest}", "STALE")
    result.run_id = run_id if run_id is not None else run
    names = {f.verified.evaluation for f in valid if f.verified is not None}
    result.found = [_member(folder, f, result.run_id, result.seal, several, earliest, names)
                    if f.verified is not None else f for f in found]
    result.found += _missing(folder, found, result.run_id, result.seal)
    result.found.sort(key=lambda f: f.path.parts)
    if result.seal is not None and result.seal_error is None:
        try:
            result.seal = _run_vsa(folder, result.seal, result.found, trusted)
        except VerifyError as exc:
            result.seal_error = exc
    return result


def _run_vsa(folder: Path, seal: Seal, found: list[Found],
             trusted: Ed25519PublicKey | None) -> Seal:
    """The VSA at the top of a sealed run: of every scorecard the seal names, PASSED only
    when all decided PASS (VSA_MISMATCH otherwise). Checked once every scorecard of the
    run verified (else the run fails already); listed as absent when the run named
    candidates and it is not there."""
    members = {f.path.relative_to(folder).as_posix(): f.verified for f in found}
    verified = [members.get(rel) for rel in sorted(seal.scorecards)]
    vsa = folder / candidate.VSA_FILE
    here = vsa.exists() or vsa.is_symlink()
    if not all(verified) or not verified:
        return seal
    builds = {v.candidates for v in verified if v is not None}
    named = dict(verified[0].candidates) if verified[0] is not None else {}
    if len(builds) != 1:
        raise VerifyError("the run's scorecards name different candidates", "VSA_MISMATCH")
    if not here:
        return replace(seal, absent=seal.absent + (candidate.VSA_FILE,)) if named else seal
    judged = [candidate.Judged(v.evaluation, v.decision, v.policy, v.policy_sha256, rel,
                               v.scorecard_sha256)
              for rel, v in zip(sorted(seal.scorecards), verified, strict=True) if v]
    candidate.check_vsa(read_file(vsa, MAX_ENVELOPE_BYTES), _key(folder, trusted), named,
                        candidate.verdict(judged, seal.run_id, (SUMMARY, seal.sha256)))
    return replace(seal, checked=seal.checked + (candidate.VSA_FILE,))


def single(verified: Verified, run_id: str | None, earliest: str | None) -> VerifyError | None:
    """--run-id and --not-before held against one scorecard verified on its own."""
    if run_id is not None and verified.run_id != run_id:
        return VerifyError(f"the scorecard belongs to run {verified.run_id or '(none)'}, not "
                           f"--run-id {run_id}", "RUN_MISMATCH")
    if earliest is not None and (not verified.generated_at or verified.generated_at < earliest):
        when = verified.generated_at or "at no stated time"
        return VerifyError(f"the scorecard was signed {when}, before --not-before "
                           f"{earliest}", "STALE")
    return None
