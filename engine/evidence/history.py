"""``engine history DIR...``: every scorecard under the folders, verified, as a history.

Each scorecard is verified with the pinned runner key (and, with governance keys, shown to
have been decided under specs those keys signed); one that does not verify is named with
its code and left out of everything else. The verified runs are grouped by evaluation and
ordered by their signed time (runs signed in the same second by their folders' paths, as
timestamped --out folders sort); a run whose policy digest, suite digest or judge identity
differs from the run before it starts a new segment (the protocol forbids comparing across
them, so a chart never joins two segments' points). What a run contributes is read from its
signed scorecard only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import EngineError, UsageError
from engine.evidence import provenance
from engine.evidence.verify import scorecards, verified_card, verify

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

SEGMENT_KEYS = (("policy_sha256", "policy"), ("suite_sha256", "suite"),
                ("judge_sha256", "judge"))
CATEGORY_KEYS = ("rate", "wilson_lower", "wilson_upper", "n", "threshold", "minimum",
                 "state", "waived")


@dataclass
class Run:
    """One verified run of an evaluation, as the history shows it."""

    path: Path
    evaluation: str
    run_id: str
    signed_at: str
    decision: str
    segment: int
    digests: dict[str, Any]
    categories: dict[str, dict[str, Any]]
    waivers: list[str]  # the waivers active in this run, by id
    label: str = ""


@dataclass
class History:
    """Verified runs by evaluation, and the scorecards left out with why."""

    runs: dict[str, list[Run]] = field(default_factory=dict)
    refused: list[dict[str, str]] = field(default_factory=list)
    segments: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def collect(folders: list[Path], trusted: Ed25519PublicKey,
            governance: list[Ed25519PublicKey] | None = None) -> History:
    """Every scorecard under ``folders``, verified; the history of those that hold."""
    out = History()
    found: list[tuple[Any, Run]] = []  # each run's verification and what it shows, small
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"{folder} is not a folder: nothing to read", "INPUT_NOT_FOUND")
        paths, refused = scorecards(folder)
        out.refused += [{"path": str(f.path), "code": f.error.code if f.error else "VERIFY",
                         "message": str(f.error)} for f in refused]
        for path in paths:
            try:
                verified = verify(path, trusted)
                if governance:
                    provenance.verify_card(path, governance, [], verified.generated_at)
                found.append((verified, _run(path, verified_card(path, verified), verified)))
            except EngineError as exc:
                out.refused.append({"path": str(path), "code": exc.code, "message": str(exc)})
    seen: set[tuple[str, str, str]] = set()
    for verified, run in found:
        # two runs over the same records can write the same scorecard bytes; a copy of one
        # run's folder is the same run (its signed statement names the run and the time)
        key = (verified.scorecard_sha256, verified.run_id, verified.generated_at)
        if key in seen:  # a copy would count one run twice
            out.refused.append({"path": str(run.path), "code": "DUPLICATE_SCORECARD",
                                "message": "the same run's scorecard is in more than one "
                                           "place under these folders; shown once"})
            continue
        seen.add(key)
        out.runs.setdefault(verified.evaluation, []).append(run)
    if not found and not out.refused:
        raise UsageError(f"no scorecard.json under {', '.join(map(str, folders))}: give the "
                         "folders holding runs' evidence", "NO_SCORECARD")
    for name, runs in out.runs.items():
        runs.sort(key=lambda r: (r.signed_at, r.path.parts, r.run_id))  # ties: by folder
        out.segments[name] = _segment(runs)
    return out


def _run(path: Path, card: dict[str, Any], verified: Any) -> Run:
    categories = {name: {k: cat.get(k) for k in CATEGORY_KEYS}
                  for name, cat in (card.get("categories") or {}).items()
                  if isinstance(cat, dict)}
    block = card.get("waivers") or {}
    active = [str(e.get("id")) for e in block.get("entries") or []
              if isinstance(e, dict) and e.get("status") == "active"] \
        if isinstance(block, dict) else []
    return Run(path, verified.evaluation, verified.run_id, verified.generated_at,
               verified.decision, 0, {k: card.get(k) for k, _ in SEGMENT_KEYS}, categories,
               active, str(card.get("label") or ""))


def _segment(runs: list[Run]) -> list[dict[str, Any]]:
    """Number each run's segment; a segment starts where a digest or the judge changes.
    Returns each segment's first run and what changed there."""
    segments: list[dict[str, Any]] = []
    for i, run in enumerate(runs):
        before = runs[i - 1] if i else None
        changed = [what for key, what in SEGMENT_KEYS
                   if before is not None and before.digests.get(key) != run.digests.get(key)]
        if before is None or changed:
            segments.append({"first": i, "changed": changed, "digests": run.digests})
        run.segment = len(segments) - 1
    return segments
