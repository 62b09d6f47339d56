"""OpenLLMetry's conventions (Traceloop's instrumentations): ``traceloop.span.kind`` marks
workflows, tasks, agents and tools."""

from __future__ import annotations

from typing import Any

from engine.records.otel.values import Scope, json_text

KIND = "traceloop.span.kind"
LANGCHAIN = "opentelemetry.instrumentation.langchain"
# LangChain's tool-callback envelope, which Traceloop's LangChain instrumentation writes as
# the tool call's arguments: the arguments are its ``inputs``
ENVELOPE = {"input_str", "tags", "metadata", "inputs", "kwargs"}
# a span this convention marks as a tool call, which the reader does not read: its call
# would be missing from the run, so the run is refused
UNREAD_TOOL = {KIND: "tool"}


def normalize(name: str, attrs: dict[str, Any], events: Any, scope: Scope) -> None:
    """A tool call's ``gen_ai.tool.call.arguments`` as what its producer means: from
    Traceloop's LangChain instrumentation the envelope's ``inputs``; an envelope from any
    other producer, or one without an ``inputs`` object, is not recorded arguments (never
    the envelope read as them)."""
    raw = attrs.get("gen_ai.tool.call.arguments")
    if raw is None or attrs.get("gen_ai.operation.name", "execute_tool") != "execute_tool":
        return
    value = json_text(raw) if isinstance(raw, str) else raw
    if not (isinstance(value, dict) and set(value) == ENVELOPE):
        return
    inputs = value.get("inputs")
    if scope.name == LANGCHAIN and isinstance(inputs, dict):
        attrs["gen_ai.tool.call.arguments"] = inputs
    else:
        del attrs["gen_ai.tool.call.arguments"]


def unread_tool(attrs: dict[str, Any]) -> bool:
    """Whether a span no GenAI operation names is a tool call by this convention."""
    return "gen_ai.operation.name" not in attrs and any(
        attrs.get(k) == v for k, v in UNREAD_TOOL.items())
