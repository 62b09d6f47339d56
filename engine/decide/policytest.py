"""``engine test``: policy unit tests written as YAML (given counts, want decision and reasons),
with rule coverage, so that a policy change is reviewed like code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.decide.aggregate import Counts, Tally
from engine.decide.decision import decide
from engine.spec.evaluation import Evaluation, Input, Policy, Suite


def rules(policy: Policy) -> list[str]:
    """The spec paths of every rule a test can exercise."""
    out = []
    for cat in policy.categories.values():
        if cat.threshold is not None:
            out.append(f"{cat.spec_path}.threshold")
        if cat.minimum is not None:
            out.append(f"{cat.spec_path}.minimum")
        out.append(f"{cat.spec_path}.min_n")
        out.append(cat.spec_path)  # missing, skipped or unresolved
    if policy.overall_threshold is not None:
        out.append("policy:spec.overall.threshold")
    out += [c.spec_path for c in policy.conditions]
    return out


def _evaluation(file: Path, policy: Policy) -> Evaluation:
    """The smallest Evaluation that lets the decision run on given counts."""
    suite = Suite("policy-test", "0", {}, {}, "", derived=True)
    return Evaluation("policy-test", "0", file, policy, suite,
                      {"given": Input("given", file, "jsonl", "policytest:spec.cases")},
                      "given", None, None, "", as_of="0000-00-00")


def run_case(file: Path, policy: Policy, case: dict[str, Any]) -> dict[str, Any]:
    """One case: the decision and reasons the policy gives on the case's counts."""
    tally = Tally()
    for name, given in case["given"]["categories"].items():
        counts = Counts(**given)
        tally.categories[name] = counts
        tally.cases.add(name, "given", counts.n, counts.passed)
    outcome = decide(_evaluation(file, policy), tally)
    got = {"decision": outcome.decision, "reasons": sorted(r.code for r in outcome.reasons)}
    want = case["want"]
    ok = got["decision"] == want["decision"] and (
        "reasons" not in want or got["reasons"] == sorted(want["reasons"]))
    return {"name": case["name"], "ok": ok, "got": got, "want": want,
            "paths": sorted({r.spec_path for r in outcome.reasons})}


def run_file(file: Path, data: dict[str, Any], policy: Policy) -> dict[str, Any]:
    """Every case of one PolicyTest file, with coverage of the policy's rules."""
    results = [run_case(file, policy, case) for case in data["spec"]["cases"]]
    inventory = rules(policy)
    hit = {p for r in results for p in r["paths"]}
    covered = [r for r in inventory if r in hit]
    return {"file": file, "policy": policy.name, "results": results,
            "coverage": len(covered) / len(inventory) if inventory else 1.0,
            "uncovered": [r for r in inventory if r not in hit],
            "min_coverage": data["spec"].get("min_coverage")}
