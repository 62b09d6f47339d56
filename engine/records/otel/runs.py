"""Agent runs out of the spans of an OTLP/JSON trace export: which spans are runs, which
tool calls, model calls and tokens belong to each, its answer, and the case and trial it
names (docs/otel.md).

A unit is each ``invoke_agent`` span below no other (an agent it calls is part of its
run), and the root span of a trace that has none. Tool calls (``execute_tool`` spans)
and token usage (spans with ``gen_ai.usage.*``) belong to the run above them. Spans of
one trace may be spread over lines, so the reader keeps a compact summary of every span
(ids, times, status, the attributes it maps) until the end of the file and then yields
the units: memory grows with the spans and the ``gen_ai.*`` attributes they keep (events,
links and other attributes of non-unit spans are dropped as soon as a span is read).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.records.clip import clip
from engine.records.formats import BadRecord, Record, mapped
from engine.records.otel import openinference, traceloop
from engine.records.otel.genai import INFERENCE, TOOL_SPAN
from engine.records.otel.openinference import ANSWER_TOOL
from engine.records.otel.otlp import spans
from engine.records.otel.registry import KEPT
from engine.records.otel.values import Malformed, Span, json_text, parsed
from engine.spec._keywords import json_equal

Source = tuple[str, str | None]  # an attribute, and a key of the JSON object it holds
CASE_SOURCES: tuple[Source, ...] = (("specgate.case_id", None), ("gen_ai.conversation.id", None))
TRIAL_SOURCES: tuple[Source, ...] = (("specgate.trial", None),)
TRIAL_TEXT = re.compile(r"[1-9][0-9]{0,15}")


def _text(messages: Any, role: str, first: bool = False) -> Any:
    """The text parts of the last message of ``role`` joined by newlines (with ``first``:
    of an output's choices the first, the one an application delivers, which must be of
    ``role``); None when there is none, or when the messages are not the conventions' JSON
    (a value cut short by an attribute length limit is no text)."""
    if not isinstance(messages, list):
        return None
    candidates = messages[:1] if first else list(reversed(messages))
    for message in candidates:
        if isinstance(message, dict) and str(message.get("role")).lower() == role:
            parts = message.get("parts")
            if isinstance(parts, list):
                texts = [p.get("content") for p in parts
                         if isinstance(p, dict) and p.get("type") == "text"]
                known = [t for t in texts if isinstance(t, str)]
                if not texts or len(known) < len(texts):
                    return None  # no text (only tool calls), or its content not recorded
                return "\n".join(known)
            content = message.get("content")
            return content if isinstance(content, str) else None
    return None


def _status(span: Span) -> str:
    """The span's status; ERROR also when it carries ``error.type``, the semantic
    conventions' mark of a failed operation (whatever status the span was left with)."""
    return "ERROR" if "error.type" in span.attrs else span.status


def _tool_call(span: Span) -> dict[str, Any]:
    attrs = span.attrs
    call: dict[str, Any] = {"name": attrs.get("gen_ai.tool.name",
                                              span.name[len(TOOL_SPAN):]),  # _check_tool
                            "id": attrs.get("gen_ai.tool.call.id"),
                            "status": _status(span)}
    if "gen_ai.tool.call.arguments" in attrs:
        arguments = attrs["gen_ai.tool.call.arguments"]
        decoded = json_text(arguments) if isinstance(arguments, str) else arguments
        call["arguments"] = decoded if isinstance(decoded, dict) else arguments
    if "gen_ai.tool.call.result" in attrs:
        call["result"] = parsed(attrs["gen_ai.tool.call.result"])
    if "gen_ai.tool.type" in attrs:
        call["type"] = attrs["gen_ai.tool.type"]
    if span.status == "ERROR" or "error.type" in attrs:
        call["error"] = attrs.get("error.type") or span.status_message or "error"
    call["duration_ms"] = (span.end - span.start) / 1e6
    call["span_id"] = span.span
    if attrs.get(ANSWER_TOOL):
        call["answer_tool"] = True
    return call


def _usage(owner: Span, calls: list[ModelCall] | None = None) -> dict[str, Any]:
    """Token usage of the run below ``owner``, each token counted once: producers record
    one call's tokens at several levels of a branch (an agent span the total of what is
    below it, a model call on an outer and an inner span, ADK's ``call_llm`` around its
    ``generate_content``), so a span counts the larger of its own count and the sum of
    those below it; no token is left out, none is counted twice. A count that some model
    calls record and another does not is unknown (never the smaller sum), unless the run's
    own span records the run's total."""
    usage: dict[str, Any] = {}
    order, stack = [], [owner]
    while stack:  # parents before children; summed in reverse: children first
        node = stack.pop()
        order.append(node)
        stack.extend(node.children)
    for key in ("input_tokens", "output_tokens"):
        name = f"gen_ai.usage.{key}"  # whole numbers >= 0 (span_of)
        total: dict[int, int] = {}
        seen = False
        for node in reversed(order):
            own = node.attrs.get(name)
            seen = seen or own is not None
            total[id(node)] = max(own or 0, sum(total[id(c)] for c in node.children))
        counted = [c.counted(name) for c in calls or []]
        if seen and (all(counted) or name in owner.attrs):
            usage[key] = total[id(owner)]
    if len(usage) == 2:  # one of the two counted nowhere: the total is unknown, not smaller
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
    return usage


def _failed_agents(owner: Span) -> list[dict[str, Any]]:
    """The agents inside the run (sub-agents, handoffs) that ended in error: the run's
    failure too, whatever status its own span was left with."""
    failed, stack = [], list(owner.children)
    while stack:
        node = stack.pop()
        if node.operation == "invoke_agent" and _status(node) == "ERROR":
            failed.append({"name": node.name, "span_id": node.span,
                           "error": node.attrs.get("error.type") or node.status_message
                           or "error"})
        stack.extend(node.children)
    return failed


@dataclass(frozen=True)
class Naming:
    """Where a run's case and trial are read: each source in turn, on the run's span, then
    on the spans above it, then on its resource (the Evaluation's ``options``)."""

    case: tuple[Source, ...] = CASE_SOURCES
    trial: tuple[Source, ...] = TRIAL_SOURCES

    @staticmethod
    def of(case: Any = None, trial: Any = None) -> Naming:
        def sources(given: Any, default: tuple[Source, ...]) -> tuple[Source, ...]:
            if given is None:
                return default
            return tuple((g, None) if isinstance(g, str) else (g["attribute"], g["key"])
                         for g in (given if isinstance(given, list) else [given]))
        return Naming(sources(case, CASE_SOURCES), sources(trial, TRIAL_SOURCES))

    @property
    def attributes(self) -> set[str]:
        return {attribute for attribute, _ in (*self.case, *self.trial)}


def _named(owner: Span, above: list[Span], sources: tuple[Source, ...]) -> \
        tuple[str, Any] | None:
    """(the source's name, its value) of the first source a run names, else None: on the
    run's span, the spans above it, then the spans below it (OpenLLMetry's association
    properties sit on every span but the run's own; all that give it must agree), then its
    resource."""
    below = [s.attrs for s in _below(owner)]
    for attribute, key in sources:
        for attrs in (owner.attrs, *(s.attrs for s in above), None, owner.resource):
            if attrs is None:  # the spans below: one value, or a contradiction
                values = [v for v in (_value(a, attribute, key) for a in below)
                          if v is not _ABSENT]
                if any(v != values[0] or type(v) is not type(values[0]) for v in values):
                    raise Malformed("OTEL_BAD_SPAN", f"the spans below the run give "
                                    f"{attribute} differently: which run it names would "
                                    "be a guess")
                if values:
                    return _source_name(attribute, key), values[0]
                continue
            value = _value(attrs, attribute, key)
            if value is not _ABSENT:
                return _source_name(attribute, key), value
    return None


_ABSENT = object()


def _source_name(attribute: str, key: str | None) -> str:
    return attribute if key is None else f"{attribute}[{key!r}]"


def _value(attrs: dict[str, Any], attribute: str, key: str | None) -> Any:
    """The value one span gives a source, or ``_ABSENT``."""
    if attribute not in attrs:
        return _ABSENT
    value = attrs[attribute]
    if key is None:
        return value
    holder = json_text(value) if isinstance(value, str) else value  # a JSON object, kvlist
    if not isinstance(holder, dict):  # unreadable: the key is not known absent
        raise Malformed("OTEL_BAD_SPAN", f"{attribute} does not hold a JSON object the "
                        f"strict reader accepts, so its {clip(key)!r} is unknown")
    return holder[key] if key in holder else _ABSENT


def _below(owner: Span) -> list[Span]:
    found, stack = [], list(reversed(owner.children))
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(reversed(node.children))
    return found


def _identity(owner: Span, above: list[Span], naming: Naming) -> tuple[Any, Any]:
    """The run's case (its id when no source names one) and trial (None when none does);
    ``Malformed`` for a value that is no case or no trial number."""
    case: Any = f"{owner.trace}-{owner.span}"
    found = _named(owner, above, naming.case)
    if found is not None:
        case = found[1]
        if isinstance(case, bool) or not isinstance(case, str | int) or case == "":
            raise Malformed("OTEL_BAD_SPAN", f"the run's case ({found[0]}) is "
                            f"{clip(case)!r}: not text or a whole number")
    trial = None
    found = _named(owner, above, naming.trial)
    if found is not None:
        trial = found[1]
        if isinstance(trial, str) and TRIAL_TEXT.fullmatch(trial):
            trial = int(trial)  # a resource attribute from the environment is text
        if isinstance(trial, bool) or not isinstance(trial, int) or trial < 1:
            raise Malformed("OTEL_BAD_SPAN", f"the run's trial ({found[0]}) is "
                            f"{clip(found[1])!r}: not a whole number >= 1")
    return case, trial


# a model call that ended asking for tools (OpenAI's, Anthropic's and Bedrock's words)
ASKS_TOOLS = frozenset({"tool_calls", "tool_use", "function_call", "tool_call"})
# what the spans of one model call must record alike where more than one records it
ONE_CALL = ("gen_ai.output.messages", "gen_ai.response.finish_reasons")


class Disagree(Exception):
    """Two places of one run record it differently."""


@dataclass(frozen=True)
class ModelCall:
    """One call of the model: the outermost inference span of it and the inference spans
    nested in it (some instrumentations write a call as several), in start order."""

    spans: tuple[Span, ...]
    depth: int = 0  # the agent spans between it and the run's (a sub-agent's call: > 0)

    def first(self, key: str) -> Any:
        """What the call's spans record under ``key`` (the first that does; ``Disagree``
        when another records it differently: a call nested in another is the same call)."""
        found = [s.attrs[key] for s in self.spans if key in s.attrs]
        if key in ONE_CALL and any(parsed(v) != parsed(found[0]) for v in found[1:]):
            raise Disagree(f"the spans of one model call ({', '.join(s.span for s in self.spans)})"
                           f" record {key} differently")
        return parsed(found[0]) if found else None

    def counted(self, key: str) -> bool:
        return any(key in s.attrs for s in self.spans)

    @property
    def asked_for_tools(self) -> bool:
        reasons = self.first("gen_ai.response.finish_reasons")
        reasons = [reasons] if isinstance(reasons, str) else reasons
        return isinstance(reasons, list) and any(
            isinstance(r, str) and r.lower() in ASKS_TOOLS for r in reasons)

    @property
    def start(self) -> int:
        return self.spans[0].start


def model_calls(owner: Span, inference: list[Span], spans_by_id: dict[str, Span]) -> \
        list[ModelCall]:
    """The run's calls of the model, in start order: an inference span inside another is
    part of that one's call (a span that is no call of the model, such as llama-index's
    ``_prepare_chat_with_tools``, is not an inference span: openinference.NOT_CALLS)."""
    inside: dict[int, list[Span]] = {id(s): [s] for s in inference}
    outer: list[tuple[Span, int]] = []
    for span in inference:  # (start order)
        parent = spans_by_id.get(span.parent)
        holder, depth = None, 0
        for _ in range(len(spans_by_id)):  # (no cycle: every span here is reached)
            if parent is None or parent is owner:
                break
            if id(parent) in inside:
                holder = parent
            depth += parent.operation == "invoke_agent"
            parent = spans_by_id.get(parent.parent)
        if holder is None:
            outer.append((span, depth))
        else:
            inside[id(holder)].append(span)
    return [ModelCall(tuple(inside[id(s)]), depth) for s, depth in outer]


def _asked(call: ModelCall) -> list[dict[str, Any]] | None:
    """The tool calls a model call's output asks for: the ``tool_call`` parts of its first
    output message (of several choices, the first is the one acted on); None when the call
    asked for tools (its finish reason) but its output is not recorded, or not readable."""
    messages = call.first("gen_ai.output.messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[0], dict) \
            or not isinstance(messages[0].get("parts"), list):
        return None  # what it asked for is not recorded (several producers write no finish
        # reason that says so, and Google ADK writes "stop" on a call asking for tools)
    asked = []
    for part in messages[0]["parts"]:
        if isinstance(part, dict) and part.get("type") == "tool_call":
            found: dict[str, Any] = {"name": part.get("name"), "id": part.get("id")}
            if "arguments" in part:
                found["arguments"] = _arguments(part["arguments"])
            asked.append(found)
    if call.asked_for_tools and not asked:
        return None  # asked for tools, and none is recorded: unknown
    return asked


def _arguments(value: Any) -> Any:
    decoded = json_text(value) if isinstance(value, str) else value
    return decoded if isinstance(decoded, dict) else value


def _agree(ran: list[dict[str, Any]], asked: list[dict[str, Any]], whole: bool = True) -> None:
    """Raise ``Disagree`` unless the calls run (tool spans) are the calls the model asked
    for (its output messages): the same number (with ``whole``; else every call asked for is
    among those run, in order, where some call's requests are not recorded), and pair by pair
    (by call id where every call on both sides gives one, no id twice, else in order) the
    same tool and, where both record them, equal arguments. Arguments missing from a tool
    span are taken from the model's request."""
    if len(ran) < len(asked) or (whole and len(ran) != len(asked)):
        raise Disagree(f"{len(ran)} tool calls ran (tool spans) but the model asked for "
                       f"{len(asked)}{'' if whole else ' or more'} (its output messages)")
    ran_ids, asked_ids = [c.get("id") for c in ran], [c.get("id") for c in asked]
    pairs: list[tuple[int, dict[str, Any], dict[str, Any]]] = []
    if all(isinstance(i, str) and i for i in ran_ids + asked_ids):
        if len(set(ran_ids)) < len(ran_ids) or len(set(asked_ids)) < len(asked_ids) or \
                not set(asked_ids) <= set(ran_ids) or (whole and set(ran_ids) != set(asked_ids)):
            raise Disagree("the tool spans' call ids and those the model asked for are not "
                           "the same calls, each once")
        by_id = {c["id"]: c for c in asked}
        pairs = [(i, c, by_id[c["id"]]) for i, c in enumerate(ran) if c["id"] in by_id]
    elif whole:
        pairs = [(i, c, other) for i, (c, other) in enumerate(zip(ran, asked, strict=True))]
    else:  # each call asked for, the next call run of its tool
        at = 0
        for other in asked:
            at = next((i for i in range(at, len(ran)) if ran[i].get("name") ==
                       other.get("name")), len(ran))
            if at == len(ran):
                raise Disagree(f"the model asked for {clip(other.get('name'))!r}, which no "
                               "tool span after the earlier calls ran")
            pairs.append((at, ran[at], other))
            at += 1
    for i, call, other in pairs:
        if other.get("name") != call.get("name"):
            raise Disagree(f"tool call {i} ran {clip(call.get('name'))!r} but the model "
                           f"asked for {clip(other.get('name'))!r}")
        if "arguments" in call and "arguments" in other and \
                not json_equal(call["arguments"], other["arguments"]):
            raise Disagree(f"tool call {i} ({clip(call.get('name'))!r}) ran with "
                           f"{clip(call['arguments'])} but the model asked for "
                           f"{clip(other['arguments'])}")
        if "arguments" not in call and "arguments" in other:
            call["arguments"] = other["arguments"]
            call["arguments_from"] = "output_messages"


def _answer_names(calls: list[ModelCall]) -> set[str]:
    """The answer tools of the producers that wrote the run's model calls."""
    return set().union(*(openinference.answer_tools(s.scope) for c in calls for s in c.spans))


def _answer_given(tools: list[Span], calls: list[ModelCall]) -> str | None:
    """The answer a run's answer tool was given (the last tool span, marked by its
    convention's reader, or the last call's request of it), else None."""
    last = _tool_call(tools[-1]) if tools else {}
    if not last.get("answer_tool"):
        asked = (_asked(calls[-1]) or [{}]) if calls else [{}]
        last = asked[-1] if asked[-1].get("name") in _answer_names(calls) else {}
    arguments = last.get("arguments")
    answer = arguments.get("answer") if isinstance(arguments, dict) else None
    return answer if isinstance(answer, str) else None


def _answering(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calls without the last one when that is the framework's own answer tool
    (smolagents' ``final_answer``, marked by its reader) given nothing but the answer: the
    run's answer, not an action. An answer tool anywhere else is a call like any other."""
    if calls and calls[-1].get("answer_tool") and (
            "arguments" not in calls[-1] or set(calls[-1]["arguments"]) <= {"answer"}):
        return calls[:-1]
    return calls


def tool_calls(tools: list[Span], calls: list[ModelCall]) -> list[dict[str, Any]] | None:
    """The run's tool calls from every place the conventions record them: its tool spans
    and the tool-call parts of its model calls' output; where both record calls they must
    agree (``Disagree``). None when a model call asked for tools that no place records:
    the calls are unknown, never none."""
    ran = _answering([_tool_call(s) for s in tools])
    per_call = [_asked(c) for c in calls]
    answer_names = _answer_names(calls)
    if per_call and per_call[-1]:  # the answer tool, asked for by the last call only
        per_call[-1] = _answering([{**c, "answer_tool": c.get("name") in answer_names}
                                   for c in per_call[-1]])
        for c in per_call[-1]:
            c.pop("answer_tool", None)
    asked = [c for p in per_call for c in p or []]
    if per_call and all(p is None for p in per_call):  # no call's output recorded (content
        return ran or None  # off): the tool spans are the record, with no span: unknown
    if any(p is None for p in per_call):  # some call's requests unknown: a tool ran after
        starts = [s.start for s in tools]  # each such call, and those known ran
        ends = [c.start for c in calls[1:]] + [max([*starts, *(c.start for c in calls)]) + 1]
        if not ran or any(p is None and not any(c.start <= t < end for t in starts)
                          for p, c, end in zip(per_call, calls, ends, strict=True)):
            return None
        _agree(ran, asked, whole=False)
        return ran
    if ran and asked:
        _agree(ran, asked)
        return ran
    if asked:
        return [{**c, "status": "UNSET", "from": "output_messages"} for c in asked]
    return ran


def unit(owner: Span, tools: list[Span], inference: list[Span], case: Any = None,
         trial: Any = None, spans_by_id: dict[str, Span] | None = None) -> dict[str, Any]:
    """The record of one agent run (``Disagree`` when its tool calls contradict)."""
    attrs = owner.attrs
    failed = _failed_agents(owner)
    status = "ERROR" if failed else _status(owner)
    ident = f"{owner.trace}-{owner.span}"
    case = ident if case is None else case
    calls = model_calls(owner, inference, spans_by_id or {owner.span: owner})
    model = attrs.get("gen_ai.request.model") or next(
        (s.attrs["gen_ai.request.model"] for c in calls for s in c.spans
         if "gen_ai.request.model" in s.attrs), None)
    inputs = parsed(attrs.get("gen_ai.input.messages"))
    outputs = parsed(attrs.get("gen_ai.output.messages"))
    if inputs is None and calls:
        inputs = calls[0].first("gen_ai.input.messages")
    answer = _text(outputs, "assistant", first=True)
    # the answer is the last call of the outermost agent that calls the model: a call of an
    # agent inside it (a guardrail, a sub-agent) is not what the run answered
    own = [c for c in calls if c.depth == min(c.depth for c in calls)]
    if own:  # the run's own answer and its last model call's, where both give one, agree
        last = own[-1].first("gen_ai.output.messages")
        said = _text(last, "assistant", first=True)
        if answer is not None and said is not None and answer.strip() not in said:
            raise Disagree(f"the run span's answer {clip(answer)!r} is not in its last model "
                           f"call's {clip(said)!r}")
        if outputs is None:
            outputs, answer = last, said
    given = _answer_given(tools, calls)  # smolagents' final_answer(answer=...)
    if given is not None and answer is not None and given.strip() != answer.strip():
        raise Disagree(f"the run's answer {clip(answer)!r} is not the {clip(given)!r} its "
                       "answer tool was given")
    found = tool_calls(tools, calls)
    record: dict[str, Any] = {
        "id": ident, "case_id": case,
        "trial": trial,  # a whole number >= 1 (_identity), or None
        "trace_id": owner.trace, "span_id": owner.span, "name": owner.name,
        "operation": owner.operation, "agent_name": attrs.get("gen_ai.agent.name"),
        "agent_id": attrs.get("gen_ai.agent.id"), "service": owner.service,
        "model": model,
        "response_model": attrs.get("gen_ai.response.model") or next(
            (s.attrs["gen_ai.response.model"] for c in reversed(calls) for s in c.spans
             if "gen_ai.response.model" in s.attrs), None),
        "input": _text(inputs, "user"), "output": answer,
        "tool_calls": found,
        "usage": _usage(owner, calls), "inference_calls": len(calls),
        "latency_ms": (owner.end - owner.start) / 1e6,
        "status": status, "error": status == "ERROR", "failed_agents": failed,
        "error_type": attrs.get("error.type"),
        "status_message": owner.status_message or None,
        "attributes": attrs,
    }
    if found is None:  # a model call asked for tools recorded nowhere: unknown, not none
        del record["tool_calls"]
        record["tool_calls_unrecorded"] = ("the model asked for tools (finish reason) but "
                                           "no tool span or output message records the calls")
    if inputs is not None:
        record["input_messages"] = inputs
    if outputs is not None:
        record["output_messages"] = outputs
    return record


def _trace_units(spans_by_id: dict[str, Span], naming: Naming = Naming()) -> \
        Iterator[Record | BadRecord]:
    """The units of one trace, in start order, or why a span cannot be placed."""
    roots: list[Span] = []
    for span in spans_by_id.values():
        parent = spans_by_id.get(span.parent) if span.parent else None
        if parent is not None:
            parent.children.append(span)
        elif span.parent and span.operation != "invoke_agent":
            yield BadRecord(span.line, "OTEL_ORPHAN_SPAN",
                            f"span {span.span} of trace {span.trace} names parent "
                            f"{span.parent}, which is not in the file")
        else:
            roots.append(span)  # an agent run may start under a span exported elsewhere
    agents = any(s.operation == "invoke_agent" for s in spans_by_id.values())
    rooted = {id(r) for r in roots}
    found: list[tuple[Span, list[Span], list[Span]]] = []
    unowned: list[Span] = []

    def walk(span: Span, owner: tuple[Span, list[Span], list[Span]] | None) -> None:
        stack = [(span, owner)]
        while stack:
            node, current = stack.pop()
            if current is None and (node.operation == "invoke_agent" or (
                    not agents and id(node) in rooted  # a run; an agent inside is part
                    and node.operation != "create_agent")):  # (an agent made, not run)
                current = (node, [], [])
                found.append(current)
                if node.operation == "execute_tool":  # a root that is itself a call
                    current[1].append(node)
                elif node.operation in INFERENCE:
                    current[2].append(node)
            elif node.operation == "execute_tool" or node.operation in INFERENCE or (
                    node.operation != "invoke_agent" and any(
                        k.startswith("gen_ai.usage.") for k in node.attrs)):
                if current is None:  # its calls or tokens would count for no run
                    unowned.append(node)
                else:
                    (current[1] if node.operation == "execute_tool" else current[2]
                     ).append(node)
            stack.extend((c, current) for c in reversed(node.children))

    for root in roots:
        walk(root, None)
    reached: set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        reached.add(id(node))
        stack.extend(node.children)
    for span in spans_by_id.values():
        if id(span) not in reached and span.parent in spans_by_id:
            yield BadRecord(span.line, "OTEL_ORPHAN_SPAN", f"span {span.span} of trace "
                            f"{span.trace} is not below any root span (its parents form a "
                            "cycle, or one of them was refused)")
    for span in unowned:
        yield BadRecord(span.line, "OTEL_UNOWNED_SPAN", f"span {span.span} of trace "
                        f"{span.trace} ({span.operation or 'token usage'}) is below no "
                        "invoke_agent span: its tool call or tokens belong to no agent run")
    for owner, tools, inference in sorted(found, key=lambda f: (f[0].start, f[0].line)):
        yield _run(owner, tools, inference, spans_by_id, naming)


def _run(owner: Span, tools: list[Span], inference: list[Span],
         spans_by_id: dict[str, Span], naming: Naming) -> Record | BadRecord:
    """One run's record, or why the run cannot be read (a convention the reader does not
    read, a case or trial that is none)."""
    unread = _unread_tool(owner)
    if unread is not None:
        return BadRecord(unread.line, "OTEL_NO_CONVENTION", f"span {unread.span} of trace "
                         f"{unread.trace} ({clip(unread.name)!r}) is a tool call by a "
                         "convention the reader does not read (OpenLLMetry's "
                         "traceloop.span.kind): the run's calls would be read without it")
    if owner.operation is None and not _conventional(owner):
        return BadRecord(owner.line, "OTEL_NO_CONVENTION", f"span {owner.span} of trace "
                         f"{owner.trace} ({clip(owner.name)!r}) and the spans below it "
                         "follow no convention the reader knows (no gen_ai.* attribute, no "
                         "OpenInference span kind it reads): its tool calls, tokens and "
                         "answer are unknown, never none")
    tools.sort(key=lambda s: s.start)
    inference.sort(key=lambda s: s.start)
    above: list[Span] = []
    parent = spans_by_id.get(owner.parent)
    while parent is not None and len(above) < len(spans_by_id):  # (no cycle: reached)
        above.append(parent)
        parent = spans_by_id.get(parent.parent)
    try:
        case, trial = _identity(owner, above, naming)
    except Malformed as exc:
        return BadRecord(owner.line, exc.code, f"span {owner.span} of trace {owner.trace}: "
                         f"{exc}")
    try:
        return mapped(owner.line, unit(owner, tools, inference, case, trial, spans_by_id))
    except Disagree as exc:
        return BadRecord(owner.line, "OTEL_DISAGREE", f"span {owner.span} of trace "
                         f"{owner.trace}: {exc}: what the run did would be a guess")


def _conventional(owner: Span) -> bool:
    """Whether a span, or one below it, carries an attribute of the GenAI conventions (an
    OpenInference span the reader reads has been given them)."""
    return any(k.startswith("gen_ai.") for node in (owner, *_below(owner))
               for k in node.attrs)


def _unread_tool(owner: Span) -> Span | None:
    """A span in the run that another convention marks as a tool call and no GenAI
    operation names, else None."""
    return next((node for node in (owner, *_below(owner))
                 if traceloop.unread_tool(node.attrs)), None)


Numbered = dict[str, tuple[int, Any, set[int]]]  # case -> its first line, id, trials


def _numbered(item: Record, numbered: Numbered) -> Record | BadRecord:
    """A run naming its trial: refused when a run of its case already named it."""
    data = item.data
    _, _, trials = numbered.setdefault(json.dumps(data["case_id"]),  # 1 and "1": two cases
                                       (item.line, data["case_id"], set()))
    if data["trial"] in trials:
        return BadRecord(item.line, "DUPLICATE_ID", f"case {clip(data['case_id'])!r} has "
                         f"trial {data['trial']} twice")
    trials.add(data["trial"])
    return item


def read(path: Path, digest: Any = None, case: Any = None, trial: Any = None) -> \
        Iterator[Record | BadRecord]:
    """The agent runs of an OTLP/JSON trace export (see the module docstring); ``case`` and
    ``trial`` are the Evaluation's sources of a run's case and trial (docs/otel.md)."""
    naming = Naming.of(case, trial)
    kept = naming.attributes
    traces: dict[str, dict[str, Span]] = {}
    bad = False  # a problem was found: the run is INCOMPLETE, whatever else is missing
    for item in spans(path, digest):
        if isinstance(item, BadRecord):
            bad = True
            yield item
            continue
        held = traces.setdefault(item.trace, {})
        if item.span in held:
            bad = True
            yield BadRecord(item.line, "DUPLICATE_ID", f"span {item.span} of trace "
                            f"{item.trace} appears twice (first on line {held[item.span].line})")
            continue
        if item.parent and item.operation != "invoke_agent":  # keep what a unit maps
            item.attrs = {k: v for k, v in item.attrs.items()
                          if k.startswith("gen_ai.") or k in KEPT or k in kept}
        held[item.span] = item
    numbered: Numbered = {}
    unnumbered: dict[str, tuple[int, Any]] = {}  # case -> its first run naming no trial
    for trace in sorted(traces.values(), key=lambda t: min(s.line for s in t.values())):
        for unit_of in _trace_units(trace, naming):
            if isinstance(unit_of, Record) and unit_of.data["trial"] is not None:
                unit_of = _numbered(unit_of, numbered)
            elif isinstance(unit_of, Record):
                unnumbered.setdefault(json.dumps(unit_of.data["case_id"]),
                                      (unit_of.line, unit_of.data["case_id"]))
            bad = bad or isinstance(unit_of, BadRecord)
            yield unit_of
    for case, (line, case_id) in unnumbered.items():
        if case in numbered:  # which trial it is is unknown: it could stand in for any
            yield BadRecord(line, "RUN_UNNUMBERED", f"case {clip(case_id)!r} has runs naming "
                            "their trial and this one naming none: which trial it is is "
                            "unknown")
    for line, case_id, trials in [] if bad else numbered.values():  # else INCOMPLETE anyway
        first = next(t for t in range(1, len(trials) + 2) if t not in trials)
        if first < max(trials):  # a trial below the highest is absent: a run left out
            yield BadRecord(line, "RUN_MISSING", f"case {clip(case_id)!r} has trial "
                            f"{max(trials)} but not trial {first}: a run "
                            "left out is never replaced by another")
