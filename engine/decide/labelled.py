"""Baselines by label (agent-release-gate §10): the newest verified scorecard with a label.

``engine run --baseline-label NAME --history DIR`` looks at every scorecard.json under DIR.
One is a candidate only when it verifies against a trusted key, the signed bytes carry the
label, and the signed statement carries its time; the newest by that signed time is the
baseline (file times are the evaluated party's to set, so they are never read). A scorecard
that claims the label, or cannot be read, and does not verify is skipped and counted; it is
never chosen. With no candidate, the comparison is ``missing`` (``untrusted`` when no key is
configured), so a required comparison is INCOMPLETE exactly as for a missing --baseline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.decide import baseline
from engine.errors import EngineError
from engine.evidence.verify import read_file, scorecards

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

SKIPPED_LISTED = 10  # skipped scorecards named in the comparison; all are counted
CLAIM_BYTES = 16 * 1024 * 1024  # larger: verified without being read for its label first


def _claims(path: Path, label: str) -> bool:
    """Whether the scorecard is worth verifying: it names the label, or cannot be read
    (so that nothing unreadable passes unnoticed)."""
    try:  # bounded: these bytes are not verified yet (a verified scorecard is far smaller)
        card = json.loads(read_file(path, CLAIM_BYTES))
    except (EngineError, ValueError, RecursionError):
        return True
    return not isinstance(card, dict) or card.get("label") == label


def _verified(path: Path, keys: list[Ed25519PublicKey]) -> dict[str, Any] | str:
    """The scorecard verified by the first key it verifies with (``_verified`` says how);
    or why it verifies with none (the first key's reason)."""
    problems: list[str] = []
    for key in keys:
        try:
            return baseline.verified_card(path, key)
        except EngineError as exc:
            problems.append(f"{exc.code}: {exc}")
        except (OSError, ValueError, RecursionError) as exc:
            problems.append(f"UNREADABLE: {exc}")
    return problems[0]


def newest(folder: Path, label: str, keys: list[Ed25519PublicKey]) -> tuple[Path | None,
                                                                              list[str]]:
    """(the newest verified scorecard with ``label`` under ``folder``, or None; every
    scorecard skipped, each as 'path: why')."""
    if not keys or not folder.is_dir():
        return None, []
    paths, refused = scorecards(folder)
    skipped = [f"{f.path.relative_to(folder)}: {f.error.code}: {f.error}" for f in refused
               if f.error is not None]
    best: tuple[str, str, Path] | None = None
    for path in paths:
        if not _claims(path, label):
            continue
        where = path.relative_to(folder)
        card = _verified(path, keys)
        if isinstance(card, str):
            skipped.append(f"{where}: {card}")
            continue
        if card.get("label") != label:
            continue  # its signed bytes carry another label: not a candidate, not skipped
        found = card["_verified"]
        if not found["generated_at"]:
            skipped.append(f"{where}: NO_SIGNED_TIME: the signed statement has no time")
            continue
        # Newest by signed time; within one second the larger digest, so the choice never
        # depends on how the files are named or in which order they are found.
        candidate = (found["generated_at"], found["scorecard_sha256"], path)
        if best is None or candidate[:2] > best[:2]:
            best = candidate
    return (best[2] if best else None), skipped


def compare(card: dict[str, Any], folder: Path, label: str, keys: list[Ed25519PublicKey],
            rows: Path, rules: dict[str, Any], z: float,
            settings: Any = None) -> dict[str, Any]:
    """The comparison block against the newest verified scorecard labelled ``label``;
    ``selection`` says what was looked for and how many scorecards were skipped."""
    chosen, skipped = newest(folder, label, keys)
    block = baseline.compare(card, chosen, keys, rows, rules, z, settings)
    if not keys:
        block.update(status="untrusted",
                     reasons=["no trusted key is configured to verify a baseline"])
    elif chosen is None:
        block["reasons"] = [f"no scorecard labelled '{label}' under the history folder "
                            f"verifies against a trusted key ({len(skipped)} skipped)"]
    block["selection"] = {"label": label, "skipped": len(skipped),
                          "skipped_reasons": skipped[:SKIPPED_LISTED]}
    return block
