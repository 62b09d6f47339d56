"""OpenInference's conventions (Arize Phoenix and the instrumentations that feed it): a span
whose ``openinference.span.kind`` is ``AGENT``, ``TOOL`` or ``LLM`` is read as the GenAI
operation it is, each attribute the reader maps given under its GenAI name (never over one
the span gives itself). What the span does not record stays absent."""

from __future__ import annotations

import re
from typing import Any

from engine.records.otel.values import Malformed, Scope, json_text

LLAMA_INDEX = "openinference.instrumentation.llama_index"
SMOLAGENTS = "openinference.instrumentation.smolagents"
LANGCHAIN = "openinference.instrumentation.langchain"
CREWAI = "openinference.instrumentation.crewai"


def _object(value: Any) -> dict[str, Any] | None:
    """A tool span's input that is the call's arguments as a JSON object (what OpenInference
    means by a TOOL span's ``input.value``), unless it has the shape of a producer's
    wrapper around them: then what it means is not known here, so it is not recorded."""
    if not isinstance(value, dict) or set(value) == {"kwargs"} or \
            {"args", "kwargs"} <= set(value):
        return None
    return value


def _kwargs(value: Any) -> dict[str, Any] | None:
    """llama-index's ``{"kwargs": {...}}``: the keyword arguments the tool was called with."""
    if isinstance(value, dict) and set(value) == {"kwargs"} and isinstance(value["kwargs"],
                                                                         dict):
        return value["kwargs"]
    return None


def _args_kwargs(value: Any) -> dict[str, Any] | None:
    """smolagents' ``{"args": [], "sanitize_inputs_outputs": ..., "kwargs": {...}}``: the
    keyword arguments, when no argument was given by position (whose name is not known)."""
    if isinstance(value, dict) and set(value) <= {"args", "kwargs", "sanitize_inputs_outputs"} \
            and value.get("args") == [] and isinstance(value.get("kwargs"), dict):
        return value["kwargs"]
    return None


# what a TOOL span's ``input.value`` means, by the instrumentation that wrote it (its
# scope): the arguments, or None where the shape is not theirs (not recorded, never an
# object). LangChain's instrumentation records a one-argument tool's input as the bare
# value, whose name it does not give: that is no object, so not recorded here (the model's
# request in the LLM span's output gives the call's arguments).
ARGUMENTS = {LLAMA_INDEX: _kwargs, SMOLAGENTS: _args_kwargs}
# the framework's own tool by which a run delivers its answer: the answer, not an action
# (when it is the run's last call and is given nothing but the answer: runs._answering)
ANSWER_TOOLS = {SMOLAGENTS: {"FinalAnswerTool": "final_answer"}}
ANSWER_TOOL = "specgate.answer_tool"  # the reader's own mark (registry drops a span's own)
# LLM spans a producer writes that are no call of the model (llama-index prepares the
# request in a span of its own, recording no response): not read as a call
NOT_CALLS = {LLAMA_INDEX: "._prepare_chat_with_tools"}
# the GenAI operations each OpenInference kind may also be written as: a span giving its
# kind and another operation contradicts itself
AS = {"invoke_agent": {"invoke_agent"}, "execute_tool": {"execute_tool"},
      "chat": {"chat", "text_completion", "generate_content"}}

KIND = "openinference.span.kind"
# what OpenInference writes in place of content its configuration hides
# (OPENINFERENCE_HIDE_INPUTS, _HIDE_OUTPUT_TEXT, ...): not recorded, never the text
REDACTED = "__REDACTED__"
OPERATION = {"AGENT": "invoke_agent", "TOOL": "execute_tool", "LLM": "chat"}
MESSAGE = re.compile(r"llm\.(input|output)_messages\.([0-9]{1,6})\.message\.(.+)")


def normalize(name: str, attrs: dict[str, Any], events: Any, scope: Scope) -> None:
    kind = attrs.get(KIND)
    if not isinstance(kind, str) or kind.upper() not in OPERATION:
        return
    operation = OPERATION[kind.upper()]
    if attrs.get("gen_ai.operation.name", operation) not in AS[operation]:
        raise Malformed("OTEL_BAD_SPAN", f"the span is an OpenInference {kind[:20]} span and "
                        f"its gen_ai.operation.name is {str(attrs['gen_ai.operation.name'])[:40]!r}"
                        ": which it is would be a guess")
    if operation == "chat" and scope.name in NOT_CALLS and name.endswith(NOT_CALLS[scope.name]):
        operation = "prepare"  # no GenAI operation: neither a call nor a run
    given: dict[str, Any] = {"gen_ai.operation.name": operation}
    if operation == "invoke_agent":
        given["gen_ai.agent.name"] = attrs.get("agent.name", name)
        output = _agent_output(attrs, scope)
        if output is not None:
            given["gen_ai.output.messages"] = [
                {"role": "assistant", "parts": [{"type": "text", "content": output}]}]
    elif operation == "execute_tool":
        given["gen_ai.tool.name"] = attrs.get("tool.name", name)
        if ANSWER_TOOLS.get(scope.name, {}).get(name) == given["gen_ai.tool.name"]:
            given[ANSWER_TOOL] = True
        for theirs, ours in (("output.value", "gen_ai.tool.call.result"),
                             ("tool_call.id", "gen_ai.tool.call.id")):
            if theirs in attrs and attrs[theirs] != REDACTED:  # hidden: not recorded
                given[ours] = attrs[theirs]
        raw = attrs.get("input.value")
        if raw is not None and raw != REDACTED:
            arguments = ARGUMENTS.get(scope.name, _object)(
                json_text(raw) if isinstance(raw, str) else raw)
            if arguments is not None:
                given["gen_ai.tool.call.arguments"] = arguments
    else:
        if isinstance(attrs.get("llm.finish_reason"), str):
            given["gen_ai.response.finish_reasons"] = [attrs["llm.finish_reason"]]
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
        if attrs.setdefault(key, value) != value and key.startswith("gen_ai.usage."):
            raise Malformed("OTEL_BAD_SPAN", f"{key} and OpenInference's count of it differ: "
                            "which counts would be a guess")


def _agent_output(attrs: dict[str, Any], scope: Scope) -> str | None:
    """An AGENT span's answer: its ``output.value`` when that is plain text (smolagents,
    CrewAI's event listener); CrewAI's task output (JSON) holds it under ``raw``. Any other
    shape (LangGraph's whole state, a repr) is not read as an answer."""
    value = attrs.get("output.value")
    if not isinstance(value, str) or value == REDACTED:
        return None
    mime = attrs.get("output.mime_type")
    decoded = json_text(value)
    if scope.name == CREWAI and isinstance(decoded, dict) and isinstance(decoded.get("raw"),
                                                                         str):
        return str(decoded["raw"])
    if mime in (None, "text/plain") and not isinstance(decoded, dict | list):
        return value
    return None


def answer_tools(scope: Scope) -> set[str]:
    """The names of the tools by which runs of this producer deliver their answer."""
    return set(ANSWER_TOOLS.get(scope.name, {}).values())


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
