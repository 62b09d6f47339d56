"""The run summary at the top of ``--out``: summary.md (a CI step summary) and summary.json.

One entry per evaluation of the run, read from what each evaluation's sealed evidence
says. Neither file is part of any evaluation's signed evidence: they point at the
evidence folders, whose scorecards are what an auditor verifies.
"""

from __future__ import annotations

import json
from typing import Any

from engine.reports.text import code as _code
from engine.reports.text import fmt
from engine.reports.text import md as _md

DECISIONS = ("PASS", "FAIL", "INCOMPLETE", "TRIAGE", "SELF_TEST")


def entry(evaluation: str, decision: str, exit_code: int, overall: float | None,
          folder: str, scorecard_sha256: str, reasons: list[dict[str, Any]]) -> dict[str, Any]:
    """One evaluation's line of the summary; ``folder`` is relative to ``--out``."""
    return {"evaluation": evaluation, "decision": decision, "exit_code": exit_code,
            "overall": overall, "folder": folder, "scorecard_sha256": scorecard_sha256,
            "reasons": [{k: r[k] for k in ("decision", "code", "message", "spec_path")}
                        for r in reasons]}


def summary_json(entries: list[dict[str, Any]]) -> bytes:
    """summary.json: every evaluation's entry and the run's exit code (the worst)."""
    worst = max(e["exit_code"] for e in entries)
    return (json.dumps({"exit_code": worst, "signed": False, "evaluations": entries},
                       indent=2, ensure_ascii=False) + "\n").encode()


def summary_markdown(entries: list[dict[str, Any]]) -> bytes:
    """summary.md: a headline with the run's exit code and a row per evaluation."""
    worst = max(e["exit_code"] for e in entries)
    tally = ", ".join(f"{sum(e['decision'] == d for e in entries)} {d}" for d in DECISIONS
                      if any(e["decision"] == d for e in entries))
    lines = [f"## specgate: exit code {worst}", "",
             f"{len(entries)} evaluation(s): {tally}.", "",
             "| evaluation | decision | exit code | overall score | reason codes | evidence |",
             "|---|---|---|---|---|---|"]
    for e in entries:
        codes = ", ".join(f"`{_code(c)}`" for c in
                          dict.fromkeys(r["code"] for r in e["reasons"])) or "–"
        folder = "./" if e["folder"] == "." else e["folder"] + "/"
        lines.append(f"| {_md(e['evaluation'])} | **{e['decision']}** | {e['exit_code']} | "
                     f"{fmt(e['overall'])} | {codes} | `{_code(folder)}` |")
    lines += ["", "Each evidence folder holds the evaluation's scorecard.md, scorecard.html "
              "and junit.xml. This summary is not signed: verify each scorecard.json with "
              "`engine verify` and a pinned key.", ""]
    return "\n".join(lines).encode()
