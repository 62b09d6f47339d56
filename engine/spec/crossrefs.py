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


def policy_test(doc: Document, categories: dict[str, Any]) -> list[Problem]:
    """Every category a PolicyTest case gives counts for that the policy does not have,
    and every reason code it wants that the decision never gives."""
    out = []
    for i, case in enumerate(doc.data["spec"]["cases"]):
        for name in case["given"]["categories"]:
            if name not in categories:
                out.append(doc.problem(
                    ("spec", "cases", i, "given", "categories", name), "UNKNOWN_CATEGORY",
                    f"the policy has no category '{name}'", did_you_mean(name, categories),
                    key=True))
        for j, code in enumerate(case["want"].get("reasons", [])):
            if code not in REASON_CODES:
                out.append(doc.problem(
                    ("spec", "cases", i, "want", "reasons", j), "UNKNOWN_REASON_CODE",
                    f"'{code}' is not a reason the decision gives",
                    did_you_mean(code, REASON_CODES)))
    return out
