"""OpenInference's conventions (Arize Phoenix and the instrumentations that feed it): a span
whose ``openinference.span.kind`` is ``AGENT``, ``TOOL`` or ``LLM`` is read as the GenAI
operation it is, each attribute the reader maps given under its GenAI name (never over one
the span gives itself). What the span does not record stays absent."""

from __future__ import annotations

import re
from typing import Any

from engine.records.otel.values import Scope

KIND = "openinference.span.kind"
# what OpenInference writes in place of content its configuration hides
# (OPENINFERENCE_HIDE_INPUTS, _HIDE_OUTPUT_TEXT, ...): not recorded, never the text
REDACTED = "__REDACTED__"
OPERATION = {"AGENT": "invoke_agent", "TOOL": "execute_tool", "LLM": "chat"}
MESSAGE = re.compile(r"llm\.(input|output)_messages\.([0-9]{1,6})\.message\.(.+)")


def normalize(name: str, attrs: dict[str, Any], events: Any, scope: Scope) -> None:
    kind = attrs.get(KIND)
    if "gen_ai.operation.name" in attrs or not isinstance(kind, str) or \
            kind.upper() not in OPERATION:
        return
    operation = OPERATION[kind.upper()]
    given: dict[str, Any] = {"gen_ai.operation.name": operation}
    if operation == "invoke_agent":
        given["gen_ai.agent.name"] = attrs.get("agent.name", name)
    elif operation == "execute_tool":
        given["gen_ai.tool.name"] = attrs.get("tool.name", name)
        for theirs, ours in (("input.value", "gen_ai.tool.call.arguments"),
                             ("output.value", "gen_ai.tool.call.result"),
                             ("tool_call.id", "gen_ai.tool.call.id")):
            if theirs in attrs and attrs[theirs] != REDACTED:  # hidden: not recorded
                given[ours] = attrs[theirs]
    else:
        for theirs, ours in (("llm.model_name", "gen_ai.request.model"),
                             ("llm.token_count.prompt", "gen_ai.usage.input_tokens"),
                             ("llm.token_count.completion", "gen_ai.usage.output_tokens")):
            if theirs in attrs:
                given[ours] = attrs[theirs]
        messages: dict[str, dict[int, dict[str, Any]]] = {"input": {}, "output": {}}
        for key, value in attrs.items():
            found = MESSAGE.fullmatch(key)
            if found:
                side, index, rest = found.groups()
                messages[side].setdefault(int(index), {})[rest] = value
        for side, held in messages.items():
            if held:
                given[f"gen_ai.{side}.messages"] = [_message(held[i]) for i in sorted(held)]
    for key, value in given.items():
        attrs.setdefault(key, value)


def _message(flat: dict[str, Any]) -> dict[str, Any]:
    """One OpenInference message (its flattened ``message.*`` attributes) in the GenAI
    conventions' shape: a role and its parts; a text part only where content is recorded."""
    def text(value: Any) -> dict[str, Any]:  # a hidden text is a part whose content is
        return {"type": "text"} if value == REDACTED else {  # not recorded
            "type": "text", "content": value}

    parts: list[dict[str, Any]] = []
    if "content" in flat:
        parts.append(text(flat["content"]))
    texts = sorted((int(k.split(".")[1]), v) for k, v in flat.items()
                   if re.fullmatch(r"contents\.[0-9]{1,6}\.message_content\.text", k))
    parts.extend(text(v) for _, v in texts)
    calls: dict[int, dict[str, Any]] = {}
    for key, value in flat.items():
        found = re.fullmatch(r"tool_calls\.([0-9]{1,6})\.tool_call\.(.+)", key)
        if found:
            calls.setdefault(int(found.group(1)), {})[found.group(2)] = value
    for index in sorted(calls):
        call = calls[index]
        part = {"type": "tool_call", "name": call.get("function.name"), "id": call.get("id")}
        if "function.arguments" in call and call["function.arguments"] != REDACTED:
            part["arguments"] = call["function.arguments"]
        parts.append(part)
    return {"role": flat.get("role"), "parts": parts}
