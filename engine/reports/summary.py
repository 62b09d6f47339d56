"""The run summary at the top of ``--out``: summary.md (a CI step summary) and summary.json.

One entry per evaluation of the run, read from what each evaluation's sealed evidence
says, with the run's id and the digests of the inputs each evaluation read. summary.json
is RFC 8785 JSON so that a signed run can seal it (engine/evidence/runs.py: its signature
covers summary.md and every scorecard.json too); neither is part of any one evaluation's
evidence.
"""

from __future__ import annotations

from typing import Any

from engine.canonical import canonical
from engine.reports.text import code as _code
from engine.reports.text import fmt
from engine.reports.text import md as _md

DECISIONS = ("PASS", "FAIL", "INCOMPLETE", "TRIAGE", "SELF_TEST")


def entry(evaluation: str, decision: str, exit_code: int, overall: float | None,
          folder: str, scorecard_sha256: str, reasons: list[dict[str, Any]],
          inputs: dict[str, str]) -> dict[str, Any]:
    """One evaluation's line of the summary; ``folder`` is relative to ``--out``,
    ``inputs`` each input's name and SHA-256."""
    return {"evaluation": evaluation, "decision": decision, "exit_code": exit_code,
            "overall": overall, "folder": folder, "scorecard_sha256": scorecard_sha256,
            "inputs": inputs,
            "reasons": [{k: r[k] for k in ("decision", "code", "message", "spec_path")}
                        for r in reasons]}


def summary_json(entries: list[dict[str, Any]], run_id: str, signed: bool) -> bytes:
    """summary.json: the run's id, whether the run is signed (then this file is sealed
    with its scorecards), its exit code (the worst) and every evaluation's entry."""
    worst = max(e["exit_code"] for e in entries)
    return canonical({"exit_code": worst, "run_id": run_id, "signed": signed,
                      "evaluations": entries})


def failing(decision: str, reasons: list[dict[str, Any]]) -> list[str]:
    """The FAIL reason codes an INCOMPLETE decision stands above: a run that is incomplete
    and already fails on what it has must not read as merely incomplete (a CI job that
    retries INCOMPLETE would retry a failure)."""
    if decision != "INCOMPLETE":
        return []
    return list(dict.fromkeys(r["code"] for r in reasons if r["decision"] == "FAIL"))


def _failing(entry: dict[str, Any]) -> str:
    codes = failing(entry["decision"], entry["reasons"])
    return ", and failing: " + ", ".join(f"`{_code(c)}`" for c in codes) if codes else ""


def summary_markdown(entries: list[dict[str, Any]], run_id: str, signed: bool) -> bytes:
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
        lines.append(f"| {_md(e['evaluation'])} | **{e['decision']}**{_failing(e)} | "
                     f"{e['exit_code']} | "
                     f"{fmt(e['overall'])} | {codes} | `{_code(folder)}` |")
    lines += ["", f"Run `{_code(run_id)}`. Each evidence folder holds the evaluation's "
              "scorecard.md, scorecard.html and junit.xml; where its policy gives caveats (what "
              "the measurements cannot show), the scorecard lists them: read them before "
              "relying on a decision. "
              + ("This summary, summary.json and every scorecard.json are sealed as one run: "
                 "verify the whole folder with `engine verify` and a pinned key."
                 if signed else "This run is unsigned: nothing here is sealed, and "
                 "`engine verify` will not vouch for it."), ""]
    return "\n".join(lines).encode()
