"""The judge calibration artifact (agent-release-gate §11): what ``engine calibrate`` writes,
and what ``engine run`` believes of it.

The hold-out set, its human labels and the artifact are governance's; the run records, the
CI runner and perhaps the command line are the evaluated party's. So an artifact counts only
when it verifies against a key the Evaluation declares for calibration
(``judge.calibration_keys``; never a ``--trusted-key`` of the command line, never the
``signer.pub.pem`` beside it) that signs no runs (not this run's key, not a key vouching for
baselines: whoever holds a CI key holds it whether or not this run is signed), is a
calibration statement (a scorecard is not), names the judge identity of this run, and was
made over the same judged inspection definitions, each category's kappa reaching the
policy's *current* ``min_kappa``. Anything else is a status with a reason, never a crash.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.canonical import digest
from engine.decide.calibration import meets
from engine.errors import VerifyError
from engine.evidence import signing
from engine.evidence.verify import open_signed, signed_time
from engine.spec.evaluation import Evaluation
from engine.spec.schema import validator

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

CALIBRATION_VERSION = "specgate.calibration/v1"
WHERE = "evaluation:spec.judge.calibration"


def judged(evaluation: Evaluation) -> dict[str, str]:
    """Each judged category (one with an inspection that may ask the judge) -> the SHA-256
    of the canonical JSON of its judged inspection entries as written in the policy, so a
    changed ``pass_when``, rubric name or input binding invalidates a calibration."""
    policy = evaluation.policy
    written = {e.get("id"): e for e in policy.document["policy"]["spec"]["inspections"]}
    out = {}
    for name, category in policy.categories.items():
        ids = [i for i in category.inspections if policy.inspections[i].primitive.asks_judge]
        if ids:
            out[name] = digest([written[i] for i in ids])
    return out


def _artifact(path: Path | None, keys: list[Ed25519PublicKey],
              runs: frozenset[str]) -> tuple[str, str, dict[str, Any] | None,
                                             dict[str, Any] | None]:
    """(status, reason, artifact summary, calibration value) of the named artifact."""
    if path is None:
        return "missing", f"no calibration artifact is named ({WHERE})", None, None
    try:
        present = path.exists()
    except (OSError, ValueError):
        present = False
    if not present:
        return "missing", f"the artifact {WHERE} names ({path.name}) does not exist", \
            None, None
    if not keys:
        return "untrusted", ("no key in the Evaluation's judge.calibration_keys to verify the "
                             "calibration with (history.trusted_keys and a --trusted-key vouch "
                             "for baselines, which run keys sign, never for governance's "
                             "calibration)"), None, None
    problems = []
    for key in keys:
        try:
            signed = open_signed(path, key, signing.CALIBRATION_PREDICATE_TYPE)
        except VerifyError as exc:
            problems.append(f"{exc.code}: {exc}")
            continue
        found = next(iter(validator("calibration").iter_errors(signed.value)), None)
        if found is not None:
            return "mismatch", f"the calibration is malformed ({found.message[:200]})", \
                None, None
        if signed.signer in runs:
            return "untrusted", (
                f"signed by {signed.signer[:16]}..., a key that signs runs (this run's key, "
                "or one history.trusted_keys or --trusted-key trusts for baselines): whoever "
                "holds a CI signing key cannot vouch for governance's calibration"), None, None
        summary = {"sha256": signed.sha256, "signer": signed.signer,
                   "generated_at": signed_time(signed.statement) or None}
        return "verified", "", summary, signed.value
    return "untrusted", f"not verified: {problems[0]}", None, None


def _category(name: str, sha: str, value: dict[str, Any] | None, reason: str,
              min_kappa: float) -> dict[str, Any]:
    """One judged category's calibration: its statistics and whether they hold now."""
    entry: dict[str, Any] = {"kappa": None, "n": None, "accuracy": None, "sensitivity": None,
                             "specificity": None, "cells": None, "calibrated": False,
                             "why": reason}
    if value is None:
        return entry
    stats = value["categories"].get(name)
    if value["judged"].get(name) != sha:
        entry["why"] = ("its judged inspections changed since the calibration (or were not "
                        "calibrated): inspections_sha256 differs")
        return entry
    if stats is None:
        entry["why"] = "the calibration has no labelled rows of it"
        return entry
    entry.update({k: stats[k] for k in ("kappa", "n", "accuracy", "sensitivity",
                                        "specificity")})
    entry["cells"] = {k: stats[k] for k in ("tp", "fp", "tn", "fn")}
    if not meets(stats, min_kappa):
        entry["why"] = f"kappa {stats['kappa']:.4g} is below min_kappa {min_kappa:g}"
        return entry
    entry.update(calibrated=True, why="")
    return entry


def repeats(policy: Any) -> dict[str, Any]:
    """How many answers make one verdict (judge.repeats, min_agreement), as an artifact
    records it."""
    return {"k": policy.judge_repeats, "min_agreement": policy.min_agreement}


def _same_repeats(value: dict[str, Any], policy: Any) -> bool:
    """Whether the calibration measured the judge as this policy asks it (an artifact
    written before judge.repeats existed measured one answer per prompt)."""
    return value.get("repeats", {"k": 1, "min_agreement": 1.0}) == repeats(policy)


def check(evaluation: Evaluation, judge: dict[str, Any] | None,
          keys: list[Ed25519PublicKey], runs: frozenset[str] = frozenset()
          ) -> dict[str, Any] | None:
    """The scorecard's ``calibration`` block; None when there is nothing to check (no live
    judge ran, or no artifact is named and the policy neither requires calibration nor
    corrects judged rates with it). ``keys`` are the
    Evaluation's calibration keys, ``runs`` the key ids of every key known to sign runs."""
    policy = evaluation.policy
    if judge is None or (evaluation.calibration is None and not policy.calibration_required
                         and policy.judge_correct == "none"):
        return None
    status, reason, artifact, value = _artifact(evaluation.calibration, keys, runs)
    if artifact is not None and artifact["sha256"] != evaluation.calibration_sha256:
        status, reason, value = "mismatch", (
            "the artifact is not the one the specs were loaded with (it appeared or changed "
            "since): only the calibration loaded with the specs, which a governance-signed "
            "bundle binds, is governance's current one"), None
    if value is not None and not _same_repeats(value, policy):
        status, reason, value = "mismatch", (
            f"the calibration asked the judge {value.get('repeats', {}).get('k', 1)} time(s) "
            f"per prompt; this policy asks {policy.judge_repeats} (judge.repeats and "
            "min_agreement change what a verdict is, so the judge's error too)"), None
    if value is not None and value["judge"]["judge_sha256"] != judge["judge_sha256"]:
        status, reason = "mismatch", (
            f"the judge identity differs: calibrated {value['judge']['judge_sha256'][:16]}..., "
            f"this run {judge['judge_sha256'][:16]}... (provider, model, panel, parameters "
            "or rubrics)")
        value = None
    categories = {name: _category(name, sha, value, reason, policy.min_kappa)
                  for name, sha in judged(evaluation).items()}
    return {"required": policy.calibration_required, "min_kappa": policy.min_kappa,
            "artifact": artifact, "status": status, "reason": reason,
            "categories": categories}

