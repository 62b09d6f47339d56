"""``engine test``: policy unit tests written as YAML, so that a policy change is reviewed like
code. A case gives category counts straight to the decision step, or records that run
through the real inspections first (the same ``rows.run`` ``engine run`` uses, on the
Evaluation's input format, units and suite); it wants a decision, and may want reason codes
and, for records, the status of every row of an inspection. Beside each file's results:
rule coverage (which rules some case's reasons came from) and inspection coverage (which
inspections some record-level case saw PASS, and saw FAIL or ERROR)."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.decide.aggregate import Counts, Tally
from engine.decide.decision import decide
from engine.spec.evaluation import Evaluation, Input, Policy, Suite

if TYPE_CHECKING:
    from engine.spec.evaluation import PolicyTest

FAILING = ("FAIL", "ERROR", "WAIVED")  # a row that exercises an inspection's failing side


def rules(policy: Policy) -> list[str]:
    """The spec paths of every rule a test can exercise."""
    return list(rule_hints(policy))


def rule_hints(policy: Policy) -> dict[str, str]:
    """Every rule a test can exercise, by spec path, with what kind of case exercises it."""
    out: dict[str, str] = {}
    for name, cat in policy.categories.items():
        stat = "95% Wilson lower bound" if cat.gate_on == "wilson_lower" else "pass rate"
        if cat.threshold is not None:
            out[f"{cat.spec_path}.threshold"] = (
                f"a case whose '{name}' {stat} falls below its threshold {cat.threshold:g}")
        if cat.minimum is not None:
            out[f"{cat.spec_path}.minimum"] = (
                f"a case whose '{name}' pass rate falls below its minimum {cat.minimum:g} "
                f"(a FAIL row of {_listed(cat.inspections)})")
        out[f"{cat.spec_path}.min_n"] = f"a case with fewer than {cat.min_n} scored " \
            f"'{name}' rows"
        out[cat.spec_path] = (f"a case where '{name}' has no rows, or ERROR or ABSTAIN rows "
                              "that leave it unresolved")
    if policy.overall_threshold is not None:
        out["policy:spec.overall.threshold"] = (
            f"a case whose weighted overall score falls below {policy.overall_threshold:g}")
    for c in policy.conditions:
        out[c.spec_path] = f"a case where condition '{c.id}' is false or unknown: {c.formula}"
    return out


def inspection_hints(policy: Policy) -> dict[tuple[str, str], str]:
    """Every inspection outcome a record-level case can exercise, (id, PASS or FAIL), with
    what kind of record exercises it."""
    out: dict[tuple[str, str], str] = {}
    for iid, inspection in policy.inspections.items():
        actual = inspection.params.get("actual_source")
        what = f"{inspection.type}" + (f" on {actual}" if isinstance(actual, str) else "")
        cats = [n for n, c in policy.categories.items() if iid in c.inspections]
        what += f", in {_listed(cats)}" if cats else ""
        out[iid, "PASS"] = f"a record whose '{iid}' row PASSes ({what})"
        out[iid, "FAIL"] = f"a record whose '{iid}' row FAILs or ERRORs ({what})"
    return out


def _listed(names: list[str]) -> str:
    return " or ".join(f"'{n}'" for n in names) or "its inspections"


def _evaluation(file: Path, policy: Policy) -> Evaluation:
    """The smallest Evaluation that lets the decision run on given counts."""
    suite = Suite("policy-test", "0", {}, {}, "", derived=True)
    return Evaluation("policy-test", "0", file, policy, suite,
                      {"given": Input("given", file, "jsonl", "policytest:spec.cases")},
                      "given", None, None, "", as_of="0000-00-00")


def _counts_case(file: Path, policy: Policy, case: dict[str, Any]) -> Any:
    tally = Tally()
    for name, given in case["given"]["categories"].items():
        counts = Counts(**given)
        tally.categories[name] = counts
        tally.cases.add(name, "given", counts.n, counts.passed)
    return decide(_evaluation(file, policy), tally)


def _records_case(test: PolicyTest, index: int,
                  case: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    """The decision on the case's records after the real inspections, and the rows written."""
    from engine.run import rows as _rows

    evaluation, given = test.evaluation, case["given"]
    assert evaluation is not None  # checked at load (TEST_NEEDS_EVALUATION)
    source = evaluation.inputs[evaluation.unit_input]
    policy = dataclasses.replace(evaluation.policy,
                                 waivers=[*evaluation.policy.waivers, *given.get("waivers", [])])
    as_of = given.get("as_of") or datetime.now(UTC).date().isoformat()
    written: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="specgate-test-") as tmp:
        if "records" in given:  # JSON Lines, read by the format's own reader
            path = Path(tmp) / "records.jsonl"
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                    for r in given["records"]), "utf-8")
        else:
            path = test.records_files[index]
        inputs = {**evaluation.inputs,
                  evaluation.unit_input: dataclasses.replace(source, path=path)}
        run = dataclasses.replace(evaluation, inputs=inputs, policy=policy, as_of=as_of)
        tally = _rows.run(run, _rows.records(run), written.append)
        return decide(run, tally), written


def _status(row: dict[str, Any]) -> str:
    if "waived_by" in row:
        return "WAIVED"
    return str(row.get("inspection_status", row["status"]))  # a control row: the verdict


def run_case(test: PolicyTest, index: int, case: dict[str, Any]) -> dict[str, Any]:
    """One case: the decision, reasons (and for records, rows) the policy gives."""
    rows: dict[str, list[str]] | None = None
    problems: list[str] = []
    if "categories" in case["given"]:
        outcome = _counts_case(test.file, test.policy, case)
    else:
        outcome, written = _records_case(test, index, case)
        rows = {}
        for row in written:
            if "inspection" in row:
                rows.setdefault(row["inspection"], []).append(_status(row))
            else:  # a record the run refused (no case, a duplicate id...)
                problems.append(f"line {row.get('line')}: {row.get('code')}: "
                                f"{row.get('message')}")
    got: dict[str, Any] = {"decision": outcome.decision,
                           "reasons": sorted(r.code for r in outcome.reasons)}
    want = case["want"]
    ok = got["decision"] == want["decision"] and (
        "reasons" not in want or got["reasons"] == sorted(want["reasons"]))
    wrong_rows = {}
    if rows is not None:
        got["rows"] = rows
        for iid, wanted in want.get("rows", {}).items():
            have = rows.get(iid, [])
            if not _rows_match(wanted, have):
                wrong_rows[iid] = (wanted, have)
    # a record the run refused fails the case: a case must not pass on records it never read
    return {"name": case["name"], "ok": ok and not wrong_rows and not problems, "got": got,
            "want": want,
            "wrong_rows": wrong_rows, "problems": problems,
            "paths": sorted({r.spec_path for r in outcome.reasons})}


def _rows_match(wanted: str | list[str], have: list[str]) -> bool:
    """One status: there are rows and every one has it; a list: exactly these, in order."""
    if isinstance(wanted, str):
        return bool(have) and all(s == wanted for s in have)
    return list(wanted) == have


def run_file(test: PolicyTest) -> dict[str, Any]:
    """Every case of one PolicyTest file, with coverage of the policy's rules and, when a
    case gives records, of its inspections."""
    results = [run_case(test, i, case) for i, case in enumerate(test.data["spec"]["cases"])]
    hints = rule_hints(test.policy)
    hit = {p for r in results for p in r["paths"]}
    covered = [r for r in hints if r in hit]
    seen = {(iid, "PASS" if s == "PASS" else "FAIL") for r in results
            for iid, statuses in r["got"].get("rows", {}).items() for s in statuses
            if s == "PASS" or s in FAILING}
    outcomes = inspection_hints(test.policy)
    exercised = [k for k in outcomes if k in seen]
    spec = test.data["spec"]
    return {"file": test.file, "policy": test.policy.name, "results": results,
            "coverage": len(covered) / len(hints) if hints else 1.0,
            "uncovered": [r for r in hints if r not in hit],
            "hints": hints,
            "min_coverage": spec.get("min_coverage"),
            "records": any("categories" not in c["given"] for c in spec["cases"]),
            "inspection_coverage": len(exercised) / len(outcomes) if outcomes else 1.0,
            "inspection_counts": (len(exercised), len(outcomes)),
            "unexercised": [(k, outcomes[k]) for k in outcomes if k not in seen],
            "min_inspection_coverage": spec.get("min_inspection_coverage")}
