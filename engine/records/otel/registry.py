"""The conventions the ``otel-genai`` reader knows, in the order each reads a span: the
producers' own conventions first, each giving what it records under the GenAI names (never
over what the span gives itself under them), then the GenAI conventions' checks. A new
convention or producer family is one module here and one row of the support matrix
(engine/records/support.yaml)."""

from __future__ import annotations

from typing import Any

from engine.records.otel import genai, openinference, traceloop
from engine.records.otel.values import Scope

CONVENTIONS = (openinference, traceloop, genai)
# the attributes a run keeps of a span below it, beyond gen_ai.* (the rest is dropped as
# soon as the span is read)
KEPT = ("error.type", traceloop.KIND, openinference.ANSWER_TOOL)


def normalize(name: str, attrs: dict[str, Any], events: Any, scope: Scope) -> None:
    """A span's attributes, read by every convention in turn (``Malformed`` for a span
    that contradicts itself)."""
    attrs.pop(openinference.ANSWER_TOOL, None)  # the reader's own mark, never the span's
    for convention in CONVENTIONS:
        convention.normalize(name, attrs, events, scope)
