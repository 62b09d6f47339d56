"""OpenLLMetry's conventions (Traceloop's instrumentations): ``traceloop.span.kind`` marks
workflows, tasks, agents and tools."""

from __future__ import annotations

from typing import Any

from engine.records.otel.values import Scope

KIND = "traceloop.span.kind"
# a span this convention marks as a tool call, which the reader does not read: its call
# would be missing from the run, so the run is refused
UNREAD_TOOL = {KIND: "tool"}


def normalize(name: str, attrs: dict[str, Any], events: Any, scope: Scope) -> None:
    return None


def unread_tool(attrs: dict[str, Any]) -> bool:
    """Whether a span no GenAI operation names is a tool call by this convention."""
    return "gen_ai.operation.name" not in attrs and any(
        attrs.get(k) == v for k, v in UNREAD_TOOL.items())
