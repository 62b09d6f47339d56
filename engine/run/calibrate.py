"""``engine calibrate``: run one Evaluation's inspections over a labelled hold-out set and
measure the judge against the human labels (agent-release-gate §11).

The rows come from the ordinary run machinery (``execute``, into a temporary folder,
unsigned, without a baseline or a calibration check); each row's ``(input, line)`` finds its
record and the label. The artifact is written like evidence: all of it, or nothing.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine._version import __version__
from engine.canonical import canonical
from engine.decide import calibration as stats
from engine.errors import EngineError, UsageError
from engine.evidence import signing
from engine.evidence.calibration import CALIBRATION_VERSION, judged, repeats
from engine.evidence.scorecard import Staging, signed_now
from engine.records.formats import Record
from engine.run import rows as runner
from engine.run import shards
from engine.run.execute import RunOptions, execute
from engine.spec.evaluation import Evaluation, display

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

VERDICTS = {"PASS": True, "FAIL": False}


class Incomplete(EngineError):
    """A labelled row of a judged category got no verdict: nothing can be measured."""


@dataclass(frozen=True)
class Calibrated:
    """What ``engine calibrate`` reports back."""

    out: Path
    value: dict[str, Any]
    exit_code: int  # 0: every judged category reaches min_kappa; 1: one does not


def labels(evaluation: Evaluation) -> tuple[dict[int, bool], int]:
    """(line -> human passes, records without the label field) of the unit input; a label
    that is not one of the accepted values is a located usage error (BAD_HUMAN_LABEL)."""
    field, found, unlabelled = evaluation.policy.label_field, {}, 0
    where = display(evaluation.inputs[evaluation.unit_input].path)
    for item in runner.records(evaluation):
        if not isinstance(item, Record) or not isinstance(item.data, dict):
            continue
        if field not in item.data:
            unlabelled += 1
            continue
        try:
            found[item.line] = stats.label(item.data[field])
        except ValueError as exc:
            raise UsageError(f"{where}:{item.line}: field '{field}': {exc}",
                             "BAD_HUMAN_LABEL") from None
    return found, unlabelled


def _judge_decided(evaluation: Evaluation, row: dict[str, Any]) -> bool:
    """Whether the row's verdict is the judge's: its inspection asks the judge, and (for a
    primitive that decides some rows without it, like injection's canaries) this row's."""
    inspection = evaluation.policy.inspections.get(row.get("inspection", ""))
    primitive = inspection.primitive if inspection is not None else None
    if primitive is None or not primitive.asks_judge:
        return False
    return primitive.judged_row is None or primitive.judged_row(row)


def _tables(evaluation: Evaluation, rows: Path, human: dict[int, bool],
            categories: dict[str, str]) -> dict[str, stats.Table]:
    """Per judged category, the judge's verdicts on labelled rows against the labels (rows
    an inspection decided without the judge are not the judge's, so not counted)."""
    tables = {name: stats.Table() for name in categories}
    unresolved: dict[str, int] = {}
    unit_input, seen = evaluation.unit_input, set()
    with rows.open("rb") as handle:
        for line in handle:
            row = json.loads(line)
            if row.get("input") == unit_input and "category" in row:  # a scored row
                seen.add(row.get("line"))
            name = row.get("category")
            if name not in tables or row.get("control") or row.get("input") != unit_input \
                    or row.get("line") not in human or row["status"] == "SKIPPED" \
                    or not _judge_decided(evaluation, row):
                continue
            if row["status"] not in VERDICTS:
                unresolved[row["status"]] = unresolved.get(row["status"], 0) + 1
                continue
            tables[name].add(VERDICTS[row["status"]], human[row["line"]])
    lost = sorted(set(human) - seen)
    if lost:  # refused records (duplicate ids, unknown cases, ...): their labels went unused
        unresolved[f"refused record (line {', '.join(map(str, lost[:5]))})"] = len(lost)
    if unresolved:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(unresolved.items()))
        raise Incomplete(f"{sum(unresolved.values())} labelled row(s) of judged categories "
                         f"have no verdict ({counts}); nothing was written",
                         "CALIBRATION_INCOMPLETE")
    if not any(t.n for t in tables.values()):
        raise Incomplete("no labelled row in any judged category "
                         f"({', '.join(sorted(tables))}); nothing was written",
                         "CALIBRATION_INCOMPLETE")
    return tables


def _measured(table: stats.Table, min_kappa: float) -> dict[str, Any]:
    measured = stats.statistics(table)
    return {**measured, "met": stats.meets(measured, min_kappa)}


def _value(evaluation: Evaluation, card: dict[str, Any], tables: dict[str, stats.Table],
           unlabelled: int, judgements: bytes) -> dict[str, Any]:
    """calibration.json (schemas/calibration.schema.json)."""
    policy, whole = evaluation.policy, stats.Table()
    for table in tables.values():
        for cell in ("tp", "fp", "tn", "fn"):
            setattr(whole, cell, getattr(whole, cell) + getattr(table, cell))
    return {
        "calibration_version": CALIBRATION_VERSION,
        "engine": {"name": "specgate", "version": __version__},
        "evaluation": {"name": evaluation.name, "sha256": evaluation.sha256},
        "policy_sha256": policy.sha256,
        "judge": {"identity": card["judge"]["identity"],
                  "judge_sha256": card["judge"]["judge_sha256"]},
        "judged": judged(evaluation), "repeats": repeats(policy),
        "label_field": policy.label_field,
        "inputs": card["inputs"], "min_kappa": policy.min_kappa,
        "categories": {n: _measured(t, policy.min_kappa) for n, t in tables.items() if t.n},
        "overall": _measured(whole, policy.min_kappa), "unlabelled": unlabelled,
        "judgements_sha256": hashlib.sha256(judgements).hexdigest(),
        "generated_at": signed_now(),
    }


def _plain(evaluation: Evaluation) -> Evaluation:
    """The Evaluation as the calibration runs it: no baseline, no calibration check, full
    PASS rows (whether the judge decided a row can depend on its expected value, as for an
    injection row with a canary; these rows stay in a temporary folder)."""
    policy = replace(evaluation.policy, comparison_required=False, calibration_required=False,
                     passing_rows="full")
    return replace(evaluation, policy=policy, baseline=None, trusted_keys=[],
                   calibration=None)


def calibrate(evaluation: Evaluation, dest: Path, key: Ed25519PrivateKey | None,
              cache: Path | None, progress: Callable[[int, int], None] | None) -> Calibrated:
    """Measure the judge on the labelled records and write the artifact into ``dest``."""
    if evaluation.judge.provider in ("none", "replay", "mock") or \
            not shards.rubrics(evaluation):
        raise UsageError(f"'{evaluation.name}' asks no live judge (provider "
                         f"{evaluation.judge.provider}): calibration measures one",
                         "CALIBRATION_NO_JUDGE")
    human, unlabelled = labels(evaluation)
    categories = judged(evaluation)
    staging = Staging(dest)
    try:
        with tempfile.TemporaryDirectory(prefix="specgate-calibrate-") as tmp:
            run = Path(tmp) / "run"
            execute(_plain(evaluation), run, RunOptions(cache=cache, progress=progress))
            card = json.loads((run / "scorecard.json").read_bytes())
            judgements = (run / "judgements.jsonl").read_bytes()
            tables = _tables(evaluation, run / "rows.jsonl", human, categories)
        value = _value(evaluation, card, tables, unlabelled, judgements)
        data = canonical(value)
        staging.write("calibration.json", data)
        staging.write("judgements.jsonl", judgements)
        if key is not None:
            subjects = {"judgements.jsonl": value["judgements_sha256"],
                        **{f"inputs/{n}": m["sha256"] for n, m in value["inputs"].items()}}
            predicate = {"evaluation": evaluation.name, "judge_sha256":
                         value["judge"]["judge_sha256"], "policy_sha256": value["policy_sha256"],
                         "engine_version": __version__, "generated_at": value["generated_at"],
                         "generated_at_note": "asserted by the signer"}
            for name, signed in signing.signed_files(
                    key, "calibration.json", data, subjects,
                    signing.CALIBRATION_PREDICATE_TYPE, predicate).items():
                staging.write(name, signed)
        out = staging.commit()
    except BaseException:
        staging.discard()
        raise
    met = all(c["met"] for c in value["categories"].values())
    return Calibrated(out, value, 0 if met else 1)
