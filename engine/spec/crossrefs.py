"""Names one spec takes from another, checked once both are compiled: a waiver's cases
against the Suite, a PolicyTest's categories and reason codes against its Policy.

A misspelt name here would never fail on its own: the waiver would match no row, the test
would give a category no rows (or expect a reason never given) and pass for the wrong reason.
"""

from __future__ import annotations

from typing import Any

from engine.decide.reasons import REASON_CODES
from engine.errors import Problem, did_you_mean
from engine.spec.yaml import Document


def waiver_scopes(doc: Document, cases: dict[str, dict[str, Any]],
                  suite: str) -> list[Problem]:
    """Every case a waiver scope names that the suite ``suite`` does not have."""
    out = []
    for i, waiver in enumerate(doc.data["spec"].get("waivers", [])):
        for j, name in enumerate(waiver["scope"].get("cases", [])):
            if name not in cases:
                out.append(doc.problem(
                    ("spec", "waivers", i, "scope", "cases", j), "UNKNOWN_WAIVER_SCOPE",
                    f"suite '{suite}' has no case '{name}': the waiver would match no row",
                    did_you_mean(name, cases)))
    return out


def policy_test(doc: Document, policy: Any, evaluation: Any) -> list[Problem]:
    """Every category a PolicyTest case gives counts for that the policy does not have, every
    reason code it wants that the decision never gives, every inspection it wants rows of
    that the policy lacks, and every part of a record-level case that has nothing to run on."""
    out = []
    categories = policy.categories
    for i, case in enumerate(doc.data["spec"]["cases"]):
        given, want, at = case["given"], case["want"], ("spec", "cases", i)
        for name in given.get("categories", {}):
            if name not in categories:
                out.append(doc.problem(
                    (*at, "given", "categories", name), "UNKNOWN_CATEGORY",
                    f"the policy has no category '{name}'", did_you_mean(name, categories),
                    key=True))
        for j, code in enumerate(want.get("reasons", [])):
            if code not in REASON_CODES:
                out.append(doc.problem(
                    (*at, "want", "reasons", j), "UNKNOWN_REASON_CODE",
                    f"'{code}' is not a reason the decision gives",
                    did_you_mean(code, REASON_CODES)))
        for name in want.get("rows", {}):
            if name not in policy.inspections:
                out.append(doc.problem(
                    (*at, "want", "rows", name), "UNKNOWN_INSPECTION_ID",
                    f"the policy has no inspection '{name}'",
                    did_you_mean(name, policy.inspections), key=True))
        out += _record_case(doc, case, at, policy, evaluation)
    return out


def _record_case(doc: Document, case: dict[str, Any], at: tuple[Any, ...], policy: Any,
                 evaluation: Any) -> list[Problem]:
    """What a case needs to run records: an Evaluation (whose unit input reads JSON Lines
    for inline records); what only records can have (rows, waivers) on a case of counts;
    waiver scopes naming what the policy or suite lacks."""
    given, out = case["given"], []
    if "categories" in given:
        for key, part in (("waivers", "given"), ("rows", "want")):
            if key in case[part]:
                out.append(doc.problem(
                    (*at, part, key), "NEEDS_RECORDS",
                    f"{part}.{key} applies to records: this case gives category counts",
                    "give records (given.records or given.records_file) instead of counts",
                    key=True))
        return out
    key = "records" if "records" in given else "records_file"
    if evaluation is None:
        out.append(doc.problem(
            (*at, "given", key), "TEST_NEEDS_EVALUATION",
            "a case that gives records needs the Evaluation they are records of",
            "name it in spec.evaluation (its input format, units and suite are used)",
            key=True))
        return out
    source = evaluation.inputs[evaluation.unit_input]
    if key == "records" and source.format != "jsonl":
        out.append(doc.problem(
            (*at, "given", key), "INLINE_RECORDS_FORMAT",
            f"records written inline are JSON Lines records; the Evaluation's unit input "
            f"'{source.name}' reads format {source.format}",
            "put the records in a file of that format and name it in given.records_file",
            key=True))
    for j, waiver in enumerate(given.get("waivers", [])):
        for k, name in enumerate(waiver["scope"].get("categories", [])):
            if name not in policy.categories:
                out.append(doc.problem(
                    (*at, "given", "waivers", j, "scope", "categories", k), "UNKNOWN_CATEGORY",
                    f"the policy has no category '{name}': the waiver would match no row",
                    did_you_mean(name, policy.categories)))
        if not evaluation.suite.derived:
            for k, name in enumerate(waiver["scope"].get("cases", [])):
                if name not in evaluation.suite.cases:
                    out.append(doc.problem(
                        (*at, "given", "waivers", j, "scope", "cases", k),
                        "UNKNOWN_WAIVER_SCOPE",
                        f"suite '{evaluation.suite.name}' has no case '{name}': the waiver "
                        "would match no row", did_you_mean(name, evaluation.suite.cases)))
    return out
