"""The date a run judges waivers on (docs/provenance.md#time).

A release is judged no earlier than the latest signed time it rests on: governance's specs
bundle, each harness attestation of an input, the pinned baseline, the calibration, the
scorecard whose judge answers it replays (engine/run/execute.py). The
runner's clock and ``--as-of`` can move the date forward only. Only times whose signature
verified against a key the run trusts count: the blocks read here record a time only then.
Other purposes are judged on the date asked for; their signed times are recorded all the
same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.evidence.verify import SIGNED_TIME

if TYPE_CHECKING:
    from engine.spec.evaluation import Evaluation


def _time(value: Any) -> str:
    """A signed time when it is UTC to the second, else ""."""
    return value if isinstance(value, str) and SIGNED_TIME.fullmatch(value) else ""


def signed_times(provenance: dict[str, Any], calibration: dict[str, Any] | None = None,
                 comparison: dict[str, Any] | None = None) -> dict[str, str]:
    """Each verified signed time the run rests on, by source (``specs``,
    ``attestation:NAME``, ``baseline``, ``calibration``), from the scorecard's blocks."""
    out: dict[str, str] = {}
    specs = provenance.get("specs") or {}
    if specs.get("status") == "verified" and _time(specs.get("signed_at")):
        out["specs"] = specs["signed_at"]
    for name, block in sorted((provenance.get("inputs") or {}).items()):
        if block.get("status") == "attested" and _time(block.get("signed_at")):
            out[f"attestation:{name}"] = block["signed_at"]
    baseline = (comparison or {}).get("baseline") or {}
    if (comparison or {}).get("status") == "comparable" and _time(baseline.get("generated_at")):
        out["baseline"] = baseline["generated_at"]
    artifact = (calibration or {}).get("artifact") or {}  # present only once it verified
    if _time(artifact.get("generated_at")):
        out["calibration"] = artifact["generated_at"]
    return out


def judged_on(purpose: str, base: str, clock: str, requested: str,
              signed: dict[str, str]) -> dict[str, Any]:
    """The scorecard's ``as_of`` block: the date, what set it, the clock as read, the date
    asked for and the signed times. It starts from ``base``, the date the command line set
    (today or a later ``--as-of``; for other purposes the date asked for); a release moves
    it to the date of a later signed time. On a tie the clock, then ``--as-of``, is named:
    a signed source is named only when it overruled them."""
    date = base
    set_by = "requested" if requested and date == requested and date != clock else "clock"
    if purpose == "release":
        for source, time in signed.items():
            if time[:10] > date:
                date, set_by = time[:10], source
    return {"date": date, "set_by": set_by, "clock": clock or None,
            "requested": requested or None, "signed": dict(signed)}


def expired_since(evaluation: Evaluation, date: str) -> list[str]:
    """The waivers active on ``evaluation.as_of`` (expiry inclusive) but expired on the
    later ``date``: rows they took out were judged too early."""
    return [w["id"] for w in evaluation.policy.waivers
            if evaluation.as_of <= w["expires"] < date]
