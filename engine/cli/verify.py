"""engine verify (the auditor): signed scorecards, the run they make, and whose specs
and inputs they rest on."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cli.common import USAGE_EXIT, described, shown
from engine.errors import UsageError, VerifyError
from engine.evidence import candidate, provenance, runs, signing
from engine.evidence.verify import Verified, verify

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

EXITS = ("0 every scorecard VALID under the pinned key (and, for a folder, one whole run), 1 "
         "anything INVALID, authorship unverified (no --trusted-key), a scorecard not about "
         "the --subject build or not of the --require-decision decision, "
         + USAGE_EXIT + ": a missing path, an unreadable key")
EXAMPLES = (
    "engine verify out/ --trusted-key keys/runner/public.pem",
    "engine verify out/support-agent/scorecard.json --trusted-key keys/runner/public.pem "
    "--governance-key keys/governance/public.pem",
    "engine verify out/ --trusted-key keys/runner/public.pem --subject "
    "ghcr.io/acme/support-agent@sha256:" + "0" * 64 + " --require-decision PASS",
)


def add(sub: Any) -> None:
    """engine verify: the runner's key, and the governance and harness keys (provenance)."""
    verify_cmd = sub.add_parser("verify", help="verify a signed scorecard, or every "
                                "scorecard under a folder",
                                **described(EXITS, *EXAMPLES))
    verify_cmd.add_argument("scorecard", type=Path, metavar="SCORECARD|FOLDER",
                            help="a scorecard.json, or a folder such as a run's --out")
    verify_cmd.add_argument("--trusted-key", type=Path, help="the signer's pinned public key")
    verify_cmd.add_argument("--expect", action="append", default=[], metavar="EVALUATION",
                            help="with a folder: an evaluation that must be there, verified "
                            "(repeatable); any other is then a failure")
    verify_cmd.add_argument("--run-id", metavar="ID", help="the run id the run was given or "
                            "printed (a CI step records it): every scorecard must be of it")
    verify_cmd.add_argument("--governance-key", action="append", default=[], type=Path,
                            metavar="PUB", help="prove the decision was made under the specs "
                            "this key signed (repeatable)")
    verify_cmd.add_argument("--harness-key", action="append", default=[], type=Path,
                            metavar="PUB", help="prove each attested input came from the "
                            "harness holding this key (repeatable)")
    verify_cmd.add_argument("--not-before", metavar="TIME", help="UTC date or time "
                            "(YYYY-MM-DD[THH:MM[:SS]Z]): nothing signed earlier is valid")
    verify_cmd.add_argument("--subject", action="append", default=[],
                            metavar="NAME@sha256:HEX", help="the build a deploy is about: "
                            "every scorecard must name it as its candidate (repeatable)")
    verify_cmd.add_argument("--require-decision", choices=("PASS",), metavar="PASS",
                            help="every scorecard must have decided PASS (a validly signed "
                            "FAIL is otherwise valid evidence, exit 0)")
    verify_cmd.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    trusted = signing.load_public(args.trusted_key) if args.trusted_key else None
    run_id = runs.checked_id(args.run_id) if args.run_id is not None else None
    earliest = runs.not_before(args.not_before) if args.not_before is not None else None
    pinned = _Pinned([signing.load_public(p) for p in args.governance_key],
                     [signing.load_public(p) for p in args.harness_key])
    if not args.scorecard.exists() and not args.scorecard.is_symlink():
        raise UsageError(f"{args.scorecard} does not exist: nothing to verify",
                         "INPUT_NOT_FOUND")  # a mistyped path is not invalid evidence
    pinned.subjects = candidate.parse_all(args.subject)
    pinned.decision = args.require_decision
    if args.scorecard.is_dir():
        return _verify_folder(args.scorecard, trusted, args.expect, run_id, earliest, pinned)
    try:
        result = verify(args.scorecard, trusted)
        late = runs.single(result, run_id, earliest) or _expected(result, args.expect) or \
            pinned.whole(result, args.scorecard) or pinned.demanded(result)
        if late is not None:
            raise late
        proven = pinned.check(args.scorecard, result.generated_at)
    except VerifyError as exc:
        _say(f"INVALID {exc.code}: {exc}")
        return 1
    for line in _verified(result) + proven:
        _say(line)
    return 0 if result.trusted else 1


def _say(line: str) -> None:
    """One line of output: names and values in it come from the evidence, so every control
    character is escaped (a file named with ESC [2K CR could otherwise rewrite the line)."""
    print(shown(line))


def _verified(result: Verified) -> list[str]:
    """What ``engine verify`` says about one scorecard whose integrity holds."""
    if not result.trusted:
        lines = [f"INTEGRITY OK, AUTHORSHIP UNVERIFIED: sha256 {result.scorecard_sha256}, "
                 "checked only against the signer.pub.pem shipped with the evidence, which "
                 "anyone can replace; pin the signer's public key obtained out of band, e.g. "
                 "--trusted-key runner-signing.pub.pem"]
    else:
        lines = [f"VALID: sha256 {result.scorecard_sha256}, decision {result.decision}, "
                 f"signed by the pinned key (keyid {result.signer[:16]})"]
    for name, sha in result.candidates:
        lines.append(f"candidate: {name}@sha256:{sha} (as the signer states)")
    lines.append(f"signed files checked: {', '.join(result.checked)}")
    lines.append(f"run {result.run_id or '(none named: signed before runs were sealed)'}, "
                 f"signed {result.generated_at or 'at no stated time'} (as the signer asserts)")
    if result.absent:
        lines.append(f"projections not present (not checked): {', '.join(result.absent)}")
    if result.unsigned:
        lines.append(f"NOT COVERED by the signature, do not rely on: "
                     f"{', '.join(result.unsigned)}")
    return lines


def _verify_folder(folder: Path, trusted: Ed25519PublicKey | None, expect: list[str],
                   run_id: str | None, earliest: str | None,
                   pinned: _Pinned | None = None) -> int:
    """Every scorecard under ``folder``, each named with its result, then the run they
    make: 0 only if all are VALID and are one whole run (engine/evidence/runs.py)."""
    result = runs.check(folder, trusted, expect, run_id, earliest)
    for i, one in enumerate(result.found):
        proven: list[str] = []
        if one.verified is not None and pinned is not None:
            try:
                refused = pinned.demanded(one.verified)
                if refused is not None:
                    raise refused
                proven = pinned.check(one.path, one.verified.generated_at)
            except VerifyError as exc:
                result.found[i] = one = replace(one, verified=None, error=exc)
        if one.verified is None:
            error = one.error or VerifyError("not verified", "VERIFY")
            _say(f"{one.path}: INVALID {error.code}: {error}")
            continue
        first, *rest = _verified(one.verified) + proven
        _say(f"{one.path}: {first}")
        for line in rest:
            _say(f"  {line}")
    seal_ok = _print_seal(folder, result)
    invalid = [str(f.path) for f in result.found if f.verified is None]
    valid = sum(1 for f in result.found if f.verified is not None and f.verified.trusted)
    unpinned = len(result.found) - valid - len(invalid)
    if not expect and not result.run_id:
        _say("note: these scorecards name no run, so a removed evaluation folder goes "
              "unnoticed here; name every evaluation you require with --expect NAME")
    _say(f"{len(result.found)} scorecard(s) under {folder}: {valid} valid"
          + (f", {unpinned} integrity only (no --trusted-key)" if unpinned else "")
          + (f", {len(invalid)} INVALID: {', '.join(invalid)}" if invalid else "")
          + (f"; run {result.run_id}" if result.run_id else ""))
    return 0 if valid == len(result.found) and seal_ok else 1


def _print_seal(folder: Path, result: runs.Checked) -> bool:
    """The line about the run's signed summary; whether it holds (or is not needed)."""
    where = folder / runs.SUMMARY
    if result.seal_error is not None:
        _say(f"{where}: INVALID {result.seal_error.code}: {result.seal_error}")
        return False
    seal = result.seal
    if seal is None:
        return True
    if not seal.trusted:
        _say(f"{where}: INTEGRITY OK, AUTHORSHIP UNVERIFIED: run {seal.run_id} (pin the "
              "signer's public key with --trusted-key)")
        return False
    _say(f"{where}: VALID: run {seal.run_id} of {len(seal.scorecards)} evaluation(s), "
          f"sealed {seal.generated_at or 'at no stated time'} by the pinned key (keyid "
          f"{seal.signer[:16]})")
    _say(f"  signed files checked: {', '.join(seal.checked)}")
    if seal.absent:
        _say(f"  not present (not checked): {', '.join(seal.absent)}")
    if seal.unsigned:
        _say(f"  NOT COVERED by the signature, do not rely on: {', '.join(seal.unsigned)}")
    return True


class _Pinned:
    """The governance and harness keys an auditor pinned (engine verify)."""

    def __init__(self, governance: list[Ed25519PublicKey],
                 harness: list[Ed25519PublicKey]) -> None:
        self.governance, self.harness = governance, harness
        self.subjects: dict[str, str] = {}  # --subject: name -> sha256
        self.decision: str | None = None  # --require-decision

    def demanded(self, result: Verified) -> VerifyError | None:
        """What a deploy job asks of a scorecard that verified: it is about the --subject
        build (an earlier PASS of another build is not), and decided --require-decision."""
        theirs = dict(result.candidates)
        for name, sha in self.subjects.items():
            if theirs.get(name) != sha:
                said = ", ".join(f"{n}@sha256:{d[:16]}..." for n, d in theirs.items())
                return VerifyError(f"the scorecard of '{result.evaluation}' is not about "
                                   f"{name}@sha256:{sha[:16]}...: it names "
                                   f"{said or 'no candidate'}", "CANDIDATE_MISMATCH")
        if self.decision is not None and result.decision != self.decision:
            return VerifyError(f"the scorecard of '{result.evaluation}' decided "
                               f"{result.decision}, not {self.decision} "
                               "(--require-decision)", "DECISION_REFUSED")
        return None

    def whole(self, result: Verified, path: Path) -> VerifyError | None:
        """A deploy job's question asked of one scorecard of a run of several: the build
        passed only if the whole run did, which one scorecard cannot say (its run's
        other evaluations may have failed)."""
        others = [n for n in result.run_evaluations if n != result.evaluation]
        if not (self.subjects or self.decision) or not others:
            return None
        return VerifyError(f"the scorecard of '{result.evaluation}' is one of run "
                           f"{result.run_id}'s {len(result.run_evaluations)} evaluations "
                           f"(also {', '.join(others)}): whether a build passed is the "
                           "whole run's; verify the run's folder (engine verify "
                           f"{path.parent.parent} ...)", "PART_OF_RUN")

    def check(self, scorecard: Path, signed_at: str) -> list[str]:
        """The provenance lines of a scorecard that verified (signed at ``signed_at``, as
        its statement says), or VerifyError."""
        if not self.governance and not self.harness:
            return []
        return provenance.verify_card(scorecard, self.governance, self.harness, signed_at)


def _expected(result: Verified, expect: list[str]) -> VerifyError | None:
    """--expect held against one scorecard: it names exactly the one evaluation it is."""
    if not expect or set(expect) == {result.evaluation}:
        return None
    if result.evaluation not in expect:
        return VerifyError(f"the scorecard is of '{result.evaluation}', which --expect does "
                           "not name", "UNEXPECTED_EVALUATION")
    others = sorted(set(expect) - {result.evaluation})
    return VerifyError(f"one scorecard is of '{result.evaluation}' only; no scorecard of "
                       f"'{others[0]}' was given", "MISSING_EVALUATION")

