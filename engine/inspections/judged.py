"""The ``judge`` primitive: a row an LLM judge decides with a rubric.

The judge runtime (httpx clients, rubrics, panels, cache, replay) is a later piece of work;
until it exists every judged row is SKIPPED with code NO_JUDGE, never PASS, so a required
judged category leaves the decision INCOMPLETE.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._base import SKIPPED, Context, Outcome, Primitive, params_schema


def judge(unit: Mapping[str, Any], params: Mapping[str, Any], ctx: Context) -> Outcome:
    """No judge is configured: the row is SKIPPED."""
    return Outcome(SKIPPED, code="NO_JUDGE",
                   message=f"no judge is configured to apply rubric '{params['rubric']}'")


TABLE = {
    "judge": Primitive(judge, params_schema({
        "rubric": {"type": "string", "minLength": 1, "description": "rubric name"},
    }, ["rubric"]), "an LLM judge decides with a rubric (SKIPPED while no judge is configured)",
        mode="llm-judge"),
}
