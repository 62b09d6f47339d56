"""Replay: rescoring offline from judgements bound into a signed, trusted scorecard.

``--judge-replay`` (or an Evaluation's ``judge.replay``) names an earlier ``scorecard.json``
or the folder holding one, never a bare ``judgements.jsonl`` (anyone can write one). It is
used only when the scorecard verifies (``engine verify``'s checks) against a key the run
trusts (``--trusted-key`` on ``engine run``, or the Evaluation's ``history.trusted_keys``;
answers vouched for only by a command-line key, or made by a judge the command line chose,
are the command line's choice of judge: JUDGE_OVERRIDDEN, never a PASS),
records a judge, and the ``judgements.jsonl`` beside it has exactly the sha256 the
scorecard binds (``judge.judgements_sha256``). Anything else is a usage error (exit 2)
before a row is scored.

A replay keeps the recorded judge identity, so ``judge_sha256`` stays comparable with the
source run; the scorecard's judge block says ``provider: replay`` and ``replayed_from``
(the source scorecard's sha256) beside it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import UsageError, VerifyError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from engine.judge._runtime import JudgeConfig

_HINT = ("name the scorecard.json of a signed run (or its folder) and pin its signer with "
         "--trusted-key")


def _scorecard(source: Path) -> Path:
    card = source / "scorecard.json" if source.is_dir() else source
    if card.name.endswith(".jsonl") or not card.is_file():
        raise UsageError(f"--judge-replay {source}: not a signed scorecard; judgements are "
                         f"replayed only from one ({_HINT})", "REPLAY_NOT_A_SCORECARD")
    return card


def _verified(card: Path, keys: list[Ed25519PublicKey]
              ) -> tuple[str, dict[str, Any], int, str]:
    """The scorecard's sha256, its judge block, the index of the key it verifies with and
    the time it was signed, once it verifies against a trusted key."""
    from engine.evidence.verify import verify

    if not keys:
        raise UsageError(f"--judge-replay {card}: no trusted key to verify it with ({_HINT})",
                         "REPLAY_UNTRUSTED")
    problem = None
    for index, key in enumerate(keys):
        try:
            found = verify(card, key)
        except VerifyError as exc:
            problem = exc
            continue
        data = json.loads(card.read_bytes())
        if hashlib.sha256(card.read_bytes()).hexdigest() != found.scorecard_sha256:
            break  # changed between the check and the read
        judge = data.get("judge")
        if not isinstance(judge, dict):
            raise UsageError(f"--judge-replay {card}: the scorecard records no judge",
                             "REPLAY_MISMATCH")
        codes = [r.get("code") for r in data.get("reasons") or [] if isinstance(r, dict)]
        return found.scorecard_sha256, {**judge, "$overridden": "JUDGE_OVERRIDDEN" in codes}, \
            index, found.generated_at
    why = f"{problem.code}: {problem}" if problem else "it changed while being read"
    raise UsageError(f"--judge-replay {card}: the scorecard does not verify against a trusted "
                     f"key ({why})", "REPLAY_UNTRUSTED")


def _identity(judge: dict[str, Any], card: Path) -> dict[str, Any]:
    identity = judge.get("identity")
    fields = {"provider": str, "model": str, "panel": list, "temperature": int | float,
              "max_tokens": int}
    if not isinstance(identity, dict) or not all(
            isinstance(identity.get(k), t) for k, t in fields.items()) or \
            not isinstance(identity.get("seed"), int | None):
        raise UsageError(f"--judge-replay {card}: the scorecard's judge identity is malformed",
                         "REPLAY_MISMATCH")
    return identity


def bind(config: JudgeConfig, keys: list[Ed25519PublicKey]) -> JudgeConfig:
    """``config`` with its replay source verified: the recorded identity, the judgements
    file and its digest, and the source scorecard's digest (``replayed_from``)."""
    assert config.replay is not None
    card = _scorecard(config.replay)
    sha, judge, signer, signed_at = _verified(card, keys)
    identity = _identity(judge, card)
    judgements = card.parent / "judgements.jsonl"
    try:
        actual = hashlib.sha256(judgements.read_bytes()).hexdigest()
    except OSError:
        actual = None
    if actual is None or actual != judge.get("judgements_sha256"):
        raise UsageError(f"--judge-replay {card}: judgements.jsonl beside it "
                         f"{'is missing' if actual is None else 'is not the file it binds'}"
                         " (judge.judgements_sha256)", "REPLAY_MISMATCH")
    panel = tuple(str(m) for m in identity["panel"])
    recorded = judge.get("base_url")
    return replace(config, provider=identity["provider"],
                   # the endpoint the answers came from (part of each answer's key)
                   base_url=recorded if isinstance(recorded, str) else config.base_url,
                   replay_overridden=judge["$overridden"],
                   model=identity["model"], panel=panel,
                   temperature=identity["temperature"], max_tokens=identity["max_tokens"],
                   seed=identity["seed"], replay=judgements, replay_sha256=actual,
                   replayed_from=sha, replay_signer=signer, replayed_at=signed_at)


def load(config: JudgeConfig) -> dict[str, Any]:
    """The bound judgements by key; their bytes are checked again as they are read."""
    if config.replay is None or config.replayed_from is None:
        raise UsageError("judgements are replayed only from a verified scorecard "
                         f"({_HINT})", "REPLAY_UNTRUSTED")
    data = config.replay.read_bytes()
    if hashlib.sha256(data).hexdigest() != config.replay_sha256:
        raise UsageError(f"{config.replay} changed after it was verified", "REPLAY_MISMATCH")
    out: dict[str, Any] = {}
    for line in data.decode("utf-8").splitlines():
        rec = json.loads(line) if line.strip() else None
        if isinstance(rec, dict) and isinstance(rec.get("key"), str):
            out[rec["key"]] = rec
    return out
