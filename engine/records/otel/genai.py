"""The OpenTelemetry GenAI semantic conventions: the names the reader reads every other
convention as (``gen_ai.operation.name`` of ``invoke_agent``, ``chat``, ``execute_tool``;
``gen_ai.tool.*``; ``gen_ai.usage.*``; ``gen_ai.input.messages`` / ``output.messages``), the
conventions' earlier names for them, and content given on span events."""

from __future__ import annotations

from typing import Any

from engine.records.clip import clip
from engine.records.otel.values import Malformed, Scope, attributes, json_text

INFERENCE = ("chat", "text_completion", "generate_content")
COUNTED = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")
# the conventions' earlier names for them, still written by older instrumentations
LEGACY = {"gen_ai.usage.prompt_tokens": "gen_ai.usage.input_tokens",
          "gen_ai.usage.completion_tokens": "gen_ai.usage.output_tokens"}
TOOL_SPAN = "execute_tool "  # the semantic conventions name a tool span "execute_tool {tool}"
DETAILS = "gen_ai.client.inference.operation.details"  # the conventions' event for content
# what a later event may give again, replacing the earlier (strands writes a loop cycle's
# input twice, once per model call); anything else given twice must be the same
REPEATED = ("gen_ai.input.messages", "gen_ai.system_instructions")
DETAILED = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
            "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")


def normalize(name: str, attrs: dict[str, Any], events: Any, scope: Scope) -> None:
    """Check a span's GenAI attributes and give what its events record as its own."""
    _details(events, attrs)
    _per_message(events, attrs)
    for key in (*COUNTED, *LEGACY):  # a value the sum would skip would hide what it counts
        if key in attrs and not (isinstance(attrs[key], int) and not isinstance(
                attrs[key], bool) and attrs[key] >= 0):
            raise Malformed("OTEL_BAD_SPAN", f"{key} is not a whole number >= 0")
    for old, new in LEGACY.items():  # counted under the current name, once
        if old in attrs:
            if attrs.setdefault(new, attrs[old]) != attrs[old]:
                raise Malformed("OTEL_BAD_SPAN", f"{old} and {new} differ: which counts "
                                "would be a guess")
    _check_tool(name, attrs)


def _details(events: Any, attrs: dict[str, Any]) -> None:
    """Content the conventions allow on a span event instead of the span's attributes
    (``gen_ai.client.inference.operation.details``), read as the span's own. A later event
    giving a key again replaces the earlier one's value, as a later write of the attribute
    does (strands writes the input of a loop cycle twice, once per model call); an event
    giving a key the span's own attributes give differently is refused (which one counts
    would be a guess)."""
    if not isinstance(events, list):
        return
    given: dict[str, Any] = {}
    for event in events:
        if not isinstance(event, dict) or event.get("name") != DETAILS:
            continue
        for key, value in attributes(event.get("attributes")).items():
            if key in REPEATED or given.get(key, value) == value:
                given[key] = value
            elif key in DETAILED:  # an output, a call's arguments given twice, differently
                raise Malformed("OTEL_BAD_SPAN", f"two {DETAILS} events of the span give "
                                f"{key} differently: which counts would be a guess")
    for key, value in given.items():
        if attrs.setdefault(key, value) != value:
            raise Malformed("OTEL_BAD_SPAN", f"{key} is given by the span and by its "
                            f"{DETAILS} event, differently")


# the conventions' earlier, deprecated events, one per message (strands-agents' default
# mode): the input's messages by role, and the output's choices
MESSAGE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                  "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
CHOICE = "gen_ai.choice"


def _per_message(events: Any, attrs: dict[str, Any]) -> None:
    """The deprecated per-message events read as the current attributes, where the span
    gives none of them itself: on a tool span the ``gen_ai.tool.message`` is the call's
    input and the ``gen_ai.choice`` its result; elsewhere the message events are the input
    and the choices (by ``index``) the output. A message's content is its text, or the
    content blocks strands writes (``text``, ``toolUse``, ``toolResult``)."""
    if not isinstance(events, list):
        return
    inputs: list[dict[str, Any]] = []
    choices: list[tuple[Any, dict[str, Any]]] = []
    tool_input = tool_output = None
    for event in events:
        if not isinstance(event, dict) or (event.get("name") not in MESSAGE_EVENTS and
                                           event.get("name") != CHOICE):
            continue
        given = attributes(event.get("attributes"))
        if attrs.get("gen_ai.operation.name") == "execute_tool":
            if event["name"] == "gen_ai.tool.message" and "content" in given:
                if tool_input is not None and tool_input != given["content"]:
                    raise Malformed("OTEL_BAD_SPAN", "two gen_ai.tool.message events of a "
                                    "tool span give its input differently")
                tool_input = given["content"]
            elif event["name"] == CHOICE and "message" in given:
                if tool_output is not None and tool_output != given["message"]:
                    raise Malformed("OTEL_BAD_SPAN", "two gen_ai.choice events of a tool "
                                    "span give its result differently")
                tool_output = given["message"]
            continue
        if event["name"] == CHOICE:
            index = given.get("index", len(choices))
            if isinstance(index, bool) or not isinstance(index, int) or index < 0 or \
                    index in (i for i, _ in choices):
                raise Malformed("OTEL_BAD_SPAN", f"a {CHOICE} event's index {clip(index)} is "
                                "not a whole number >= 0 given once: which choice is first "
                                "would be a guess")
            if "message" in given:
                choices.append((index,
                                {"role": "assistant", "parts": _parts(given["message"]),
                                 **({"finish_reason": given["finish_reason"]}
                                    if "finish_reason" in given else {})}))
        elif "content" in given:
            inputs.append({"role": given.get("role") or MESSAGE_EVENTS[event["name"]],
                           "parts": _parts(given["content"])})
    given_by_events: dict[str, Any] = {}
    for key, value in (("gen_ai.tool.call.arguments", tool_input),
                       ("gen_ai.tool.call.result", tool_output)):
        if value is not None:
            given_by_events[key] = value
    if inputs:
        given_by_events["gen_ai.input.messages"] = inputs
    if choices:
        ordered = [m for _, m in sorted(choices, key=lambda c: c[0])]
        given_by_events["gen_ai.output.messages"] = ordered
        reasons = [m["finish_reason"] for m in ordered if "finish_reason" in m]
        if reasons:
            given_by_events["gen_ai.response.finish_reasons"] = reasons
    for key, value in given_by_events.items():
        if key in attrs:  # no producer writes both forms: which counts would be a guess
            raise Malformed("OTEL_BAD_SPAN", f"{key} is given by the span and by its "
                            "deprecated per-message events")
        attrs[key] = value


def _parts(content: Any) -> list[dict[str, Any]]:
    """A deprecated event's message content as parts: plain text, or a list of content
    blocks; a block of another shape is a part whose content is not read (so the text of
    the message is not known, never shorter)."""
    blocks = json_text(content) if isinstance(content, str) else content
    if not isinstance(blocks, list):
        return [{"type": "text", "content": content}] if isinstance(content, str) else \
            [{"type": "unread"}]
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append({"type": "text", "content": block["text"]})
        elif isinstance(block, dict) and isinstance(block.get("toolUse"), dict):
            use = block["toolUse"]
            parts.append({"type": "tool_call", "name": use.get("name"),
                          "id": use.get("toolUseId"),
                          **({"arguments": use["input"]} if "input" in use else {})})
        elif isinstance(block, dict) and isinstance(block.get("toolResult"), dict):
            parts.append({"type": "tool_call_response",
                          "id": block["toolResult"].get("toolUseId")})
        else:
            parts.append({"type": "text"})  # not read: its text is unknown
    return parts


def _check_tool(name: str, attrs: dict[str, Any]) -> None:
    """A tool span names its tool one way: ``gen_ai.tool.name``, else its span name
    ``execute_tool {tool}``. A span named as a tool call that is not one, one naming no
    tool, or two names that differ are refused: the gate's action checks would otherwise
    read a name of the reader's choosing (a forbidden call under another name, or none)."""
    operation = attrs.get("gen_ai.operation.name")
    named = name[len(TOOL_SPAN):] if name.startswith(TOOL_SPAN) else None
    if operation != "execute_tool":
        if named is not None:
            raise Malformed("OTEL_BAD_SPAN", f"span {name[:60]!r} is named as a tool call, "
                            f"but its gen_ai.operation.name is {str(operation)[:40]!r}")
        return
    tool = attrs.get("gen_ai.tool.name")
    if tool is None and not named:
        raise Malformed("OTEL_BAD_SPAN", "an execute_tool span names no tool (no "
                        "gen_ai.tool.name, and its name is not 'execute_tool {tool}')")
    if tool is not None and (not isinstance(tool, str) or not tool or
                             (named is not None and named != tool)):
        raise Malformed("OTEL_BAD_SPAN", f"gen_ai.tool.name {str(tool)[:60]!r} is not a "
                        f"name, or differs from the tool its span name {name[:60]!r} names")
