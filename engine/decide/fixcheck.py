"""Fix verification (agent-release-gate §9): is each of the baseline's findings fixed?

A finding ``<category>:<case>`` of a verified baseline counts as fixed only when this run
is comparable with the baseline (same suite, policy and judge digests, a judge the
Evaluation chose), ran the case in that category at least as many times (trials) as the
baseline did and as the suite declares, and every one of those trials passed (case pass^k
= 1). Each finding
is ``verified``, ``still failing`` or ``not verifiable``, with the reason. Findings that
name no case (coverage, control and comparison blockers) are not listed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

Trials = dict[tuple[str, str], tuple[set[str], int]]  # (category, case) -> (units, not PASS)


def _trials(rows: Path) -> Trials:
    """Per (category, case) of the agent's rows: the trials (units) and the rows not PASS."""
    out: Trials = {}
    with rows.open("rb") as handle:
        for line in handle:
            row = json.loads(line)
            if row.get("control") or not isinstance(row.get("case"), str) or \
                    "category" not in row:
                continue
            units, bad = out.get((row["category"], row["case"]), (set(), 0))
            units.add(str(row["unit"]))
            out[(row["category"], row["case"])] = (units, bad + (row["status"] != "PASS"))
    return out


def _case_findings(findings: Path) -> Iterator[dict[str, Any]]:
    with findings.open("rb") as handle:
        for line in handle:
            finding = json.loads(line)
            if isinstance(finding.get("case"), str) and isinstance(finding.get("category"),
                                                                   str):
                yield finding


def _one(key: tuple[str, str], now: Trials, before: Trials,
         declared: int) -> tuple[str, str]:
    units, bad = now.get(key, (set(), 0))
    ran = len(before.get(key, (set(), 0))[0])
    if not units:
        return "not verifiable", "the case was not run in this category"
    if bad:
        return "still failing", f"{bad} of its rows in {len(units)} trials did not pass"
    if len(units) < max(ran, declared):
        whose = f"the baseline's {ran}" if ran >= declared else \
            f"the {declared} the suite declares"
        return "not verifiable", f"{len(units)} trials, fewer than {whose}"
    return "verified", f"every one of {len(units)} trials passed (the baseline ran {ran})"


def check(rows: Path, base_folder: Path, unverifiable: str,
          trials: dict[str, int]) -> list[dict[str, Any]]:
    """Each case finding of the baseline (in its order) with its status and reason (every
    one ``not verifiable`` when ``unverifiable`` says why); ``trials``: the suite's declared
    trials per case. One ``baseline`` entry saying why when the baseline's files went away
    or changed shape after they verified."""
    try:
        return _check(rows, base_folder, unverifiable, trials)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [{"id": "baseline", "status": "not verifiable",
                 "reason": f"the baseline's findings or rows could not be read ({exc})"}]


def _check(rows: Path, base_folder: Path, unverifiable: str,
           trials: dict[str, int]) -> list[dict[str, Any]]:
    found = list(_case_findings(base_folder / "findings.jsonl"))
    if not found:
        return []
    if unverifiable:
        return [{"id": f["id"], "status": "not verifiable", "reason": unverifiable}
                for f in found]
    now, before = _trials(rows), _trials(base_folder / "rows.jsonl")
    out = []
    for finding in found:
        status, reason = _one((finding["category"], finding["case"]), now, before,
                              trials.get(finding["case"], 0))
        out.append({"id": finding["id"], "status": status, "reason": reason})
    return out
