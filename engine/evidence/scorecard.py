"""The scorecard, its canonical bytes, and the one place that writes output files.

A run writes into a hidden ``.partial`` folder next to its destination and renames it into
place only when every file is complete, so a destination either holds a whole run or
nothing. An existing destination that is not empty is never written to.
"""

from __future__ import annotations

import datetime as dt
import glob
import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from engine import folders as walk
from engine._version import __version__
from engine.canonical import canonical, plain_bytes
from engine.decide.aggregate import Tally, suite_digest
from engine.decide.lattice import Decision
from engine.errors import UsageError
from engine.evidence import candidate, signing
from engine.evidence.model import (
    FINDINGS_LISTED,
    SCORECARD_VERSION,
    Coverage,
    EvaluationId,
    Named,
    PolicyId,
    Scorecard,
    Statistics,
    findings_jsonl,
)
from engine.evidence.verify import write_whole
from engine.spec.evaluation import Evaluation

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

MAX_LISTED = 20
__all__ = ["FINDINGS_LISTED", "SCORECARD_VERSION", "RowWriter", "Scorecard", "Staging",
           "canonical", "findings_jsonl", "scorecard", "seal",
           "suite_digest", "validation_report"]


class RowWriter:
    """Writes rows as JCS lines and hashes the bytes as they go."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle, self.hash, self.count = handle, hashlib.sha256(), 0

    def __call__(self, row: dict[str, Any]) -> None:
        self.line(canonical(row) + b"\n")

    def plain_row(self, row: dict[str, Any]) -> None:
        """A row whose values are known to be plain JSON (``canonical._plain``): its
        canonical bytes are what the C encoder writes, so the check is not repeated."""
        self.line(plain_bytes(row) + b"\n")

    def line(self, line: bytes) -> None:
        self.handle.write(line)
        self.hash.update(line)
        self.count += 1


def scorecard(evaluation: Evaluation, tally: Tally, outcome: Decision, rows_sha256: str,
              inputs: dict[str, dict[str, Any]], agent_card: dict[str, Any] | None = None,
              report: dict[str, Any] | None = None,
              label: str | None = None,
              provenance: dict[str, Any] | None = None,
              candidates: dict[str, str] | None = None,
              as_of: dict[str, Any] | None = None) -> dict[str, Any]:
    """The scorecard value (see schemas/scorecard.schema.json): the one place a Decision
    becomes the scorecard's JSON."""
    policy, suite = evaluation.policy, evaluation.suite
    return Scorecard(
        engine=Named("specgate", __version__),
        evaluation=EvaluationId(evaluation.name, evaluation.version, evaluation.sha256),
        policy=PolicyId(policy.name, policy.version, policy.scoring_version),
        suite=Named(suite.name, suite.version),
        policy_sha256=policy.sha256, policy_document=policy.document,
        presentation_digests=policy.presentation_digests,
        suite_sha256=suite_digest(evaluation, tally), purpose=policy.purpose,
        decision=outcome.decision, metrics_decision=outcome.metrics_decision,
        overall_pass=outcome.overall_pass, exit_code=outcome.exit_code,
        reasons=[r.as_json() for r in outcome.reasons], categories=outcome.categories,
        required_categories=outcome.required_categories,
        missing_categories=outcome.missing_categories, overall=outcome.overall,
        conditions=outcome.conditions, reliability=outcome.reliability,
        controls=outcome.controls, validation=outcome.validation, findings=outcome.findings,
        waivers=outcome.waivers, agent_card=agent_card, coverage=_coverage(evaluation, tally),
        inputs=inputs, statistics=Statistics(policy.wilson_z), judge=outcome.judge,
        judge_sha256=outcome.judge["judge_sha256"] if outcome.judge else None,
        comparison=outcome.comparison, rows_sha256=rows_sha256, report=report,
        label=label, calibration=outcome.calibration, caveats=policy.caveats,
        provenance=provenance or {"specs": {"status": "not_checked"}, "inputs": {}},
        candidates=[{"name": n, "sha256": h} for n, h in candidates.items()]
        if candidates else None, as_of=as_of).as_json()


def _coverage(evaluation: Evaluation, tally: Tally) -> Coverage:
    suite = evaluation.suite
    short = [{"case": c, "runs": tally.case_units[c], "trials": want}
             for c, want in suite.trials.items() if tally.case_units[c] < want]
    return Coverage(
        records=tally.records, rows=tally.rows, cases=len(suite.cases),
        cases_observed=sum(1 for c in suite.cases if tally.case_units[c]),
        cases_short=short[:MAX_LISTED], cases_short_count=len(short),
        record_problems=dict(sorted(tally.record_problems.items())),
        record_problem_samples=tally.samples, control_rows=tally.controls.attempted)


def validation_report(evaluation: Evaluation, tally: Tally,
                      summary: dict[str, Any]) -> dict[str, Any]:
    """validation.json: every row that is not LABELED or carries a warning, with counts."""
    return {"input": evaluation.unit_input, **summary,
            "problems": sorted(tally.validation_rows, key=lambda r: r["line"])}


class Staging:
    """A hidden folder beside ``dest`` that becomes ``dest`` only when complete."""

    def __init__(self, dest: Path) -> None:
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise UsageError(f"{dest} already holds earlier evidence; it is never overwritten "
                             "(choose another --out)", "OUTPUT_EXISTS")
        dest.parent.mkdir(parents=True, exist_ok=True)
        self.dest = dest
        self.left = _remove_stale(dest)  # stale staging folders seen and left, to be said
        self.path = Path(tempfile.mkdtemp(prefix=_partial_prefix(dest) + f"{os.getpid()}-",
                                          dir=dest.parent))

    def write(self, name: str, data: bytes) -> None:
        """Write one whole file into the staging folder."""
        with (self.path / name).open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())

    def commit(self) -> Path:
        """Move the finished folder into place atomically; refuse if someone got there first."""
        self.path.chmod(0o755)  # mkdtemp makes it private; evidence is for readers
        try:
            os.rename(self.path, self.dest)
        except OSError:
            raise UsageError(f"{self.dest} appeared during the run; it is never overwritten",
                             "OUTPUT_EXISTS") from None
        return self.dest

    def discard(self) -> None:
        """Remove the unfinished folder."""
        self.left.extend(walk.remove(self.path))


def _partial_prefix(dest: Path) -> str:
    return f".{dest.name}.partial-{_host()}-"


def _host() -> str:
    """This machine's name: what gethostname() says, read from uname() where there is one
    (the same call underneath on Linux), so a run need not load the socket module."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


# The largest process id a system gives (pid_t is a C int; Linux stops at 2**22): a
# staging folder naming a larger one, or not a number, was made by no run of this engine.
MAX_PID = 2**31 - 1
_PID = re.compile(r"[1-9][0-9]{0,9}")  # ASCII digits only: str.isdigit() takes '²' too


def _remove_stale(dest: Path) -> list[str]:
    """Remove staging folders for ``dest`` left by runs on this host that were killed
    (SIGKILL, power loss): their process is gone. Never evidence: evidence only ever
    appears at ``dest`` by an atomic rename. Return what was seen and left, to be said
    on stderr: anyone who can write beside ``dest`` can plant a folder by that name, so
    one that names no possible process (the engine never made it) is not touched, and a
    link, a file or a tree too deep to remove is left; none of it ever stops the run."""
    prefix, left = _partial_prefix(dest), []
    for folder in dest.parent.glob(glob.escape(prefix) + "*"):
        pid = folder.name[len(prefix):].split("-", 1)[0]
        if not _PID.fullmatch(pid) or int(pid) > MAX_PID:
            left.append(f"{folder}: named like a staging folder of a run, but no process "
                        "has that id, so the engine did not make it; left where it is")
            continue
        if int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            if folder.is_symlink() or not folder.is_dir():
                left.append(f"{folder}: named like a staging folder, but not a folder; "
                            "left where it is")
                continue
            left.extend(walk.remove(folder))
        except OSError:  # alive, someone else's (PermissionError), or not ours to judge
            continue
    return left


def seal(staging: Staging, card: dict[str, Any], key: Ed25519PrivateKey | None,
         subjects: dict[str, str], run: dict[str, Any] | None = None,
         candidates: dict[str, str] | None = None) -> str:
    """Write the scorecard (and, with a key, its signature files, the statement naming
    the ``run`` that wrote it: engine/evidence/runs.py, and the ``candidates`` it judged,
    with their SLSA Verification Summary: engine/evidence/candidate.py); return its
    digest."""
    data = canonical(card)
    digest = hashlib.sha256(data).hexdigest()
    staging.write("scorecard.json", data)
    if key is None:
        return digest
    predicate = {
        "decision": card["decision"], "overall_pass": card["overall_pass"],
        "purpose": card["purpose"], "policy_sha256": card["policy_sha256"],
        "suite_sha256": card["suite_sha256"], "scorecard_sha256": digest,
        "rows_sha256": card["rows_sha256"], "engine_version": __version__,
        "scoring_version": card["policy"]["scoring_version"],
        "generated_at": signed_now(), "generated_at_note": "asserted by the signer",
    }
    if run is not None:
        predicate["run"] = run
    named = candidate.subjects(candidates or {})
    for name, signed in signing.signed_files(key, "scorecard.json", data,
                                             {**subjects, **named}, signing.PREDICATE_TYPE,
                                             predicate).items():
        staging.write(name, signed)
    evaluations = (run or {}).get("evaluations") or []
    if candidates and len(evaluations) <= 1:  # a run of several: one VSA at --out's top
        run_id = str((run or {}).get("id") or "")
        verdict = candidate.verdict([candidate.Judged.of(card, digest, "scorecard.json")],
                                    run_id)
        staging.write(candidate.VSA_FILE, candidate.vsa_file(
            key, candidates, verdict, predicate["generated_at"]))
    return digest


def publish(path: Path, data: bytes, replace: bool = False) -> Path:
    """Write a whole file beside ``path`` and put it in place (verify.write_whole): readers
    never see half a file. An existing file is never replaced (OUTPUT_EXISTS: evidence)
    unless ``replace`` says it may be (a governance bundle signed again)."""
    if not write_whole(path, data, replace=replace):
        raise UsageError(f"{path} appeared during the run; it is never overwritten",
                         "OUTPUT_EXISTS")
    return path


def signed_now() -> str:
    """The time a signer asserts, UTC to the second."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
