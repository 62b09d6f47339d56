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
from engine.records.otel import traceloop
from engine.records.otel.genai import INFERENCE, TOOL_SPAN
from engine.records.otel.otlp import spans
from engine.records.otel.registry import KEPT
from engine.records.otel.values import Malformed, Span, json_text, parsed

Source = tuple[str, str | None]  # an attribute, and a key of the JSON object it holds
CASE_SOURCES: tuple[Source, ...] = (("specgate.case_id", None), ("gen_ai.conversation.id", None))
TRIAL_SOURCES: tuple[Source, ...] = (("specgate.trial", None),)
TRIAL_TEXT = re.compile(r"[1-9][0-9]{0,15}")


def _text(messages: Any, role: str) -> Any:
    """The text parts of the last message of ``role`` joined by newlines; a plain string
    as it is; None when there is none."""
    if isinstance(messages, str):
        return messages
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == role:
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
    return call


def _usage(owner: Span) -> dict[str, Any]:
    """Token usage of the run below ``owner``, each span's counted once: a span's tokens
    are its own plus those below it, except that an agent span (the run's, or a sub-agent's
    inside it) records a total of what is below it, so it counts the larger of the two;
    no token is left out, none is counted twice."""
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
            below = sum(total[id(c)] for c in node.children)
            total[id(node)] = max(own or 0, below) if node.operation == "invoke_agent" \
                else (own or 0) + below
        if seen:
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
    """(the source's name, its value) of the first source a run names, else None."""
    for attribute, key in sources:
        for attrs in (owner.attrs, *(s.attrs for s in above), owner.resource):
            if attribute not in attrs:
                continue
            value = attrs[attribute]
            if key is not None:  # a key of the JSON object (or kvlist) the attribute holds
                holder = json_text(value) if isinstance(value, str) else value
                if not isinstance(holder, dict):  # unreadable: the key is not known absent
                    raise Malformed("OTEL_BAD_SPAN", f"{attribute} does not hold a JSON "
                                    "object the strict reader accepts, so its "
                                    f"{clip(key)!r} is unknown")
                if key not in holder:
                    continue
                value = holder[key]
            return (attribute if key is None else f"{attribute}[{key!r}]"), value
    return None


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


def unit(owner: Span, tools: list[Span], inference: list[Span], case: Any = None,
         trial: Any = None) -> dict[str, Any]:
    """The record of one agent run."""
    attrs = owner.attrs
    failed = _failed_agents(owner)
    status = "ERROR" if failed else _status(owner)
    ident = f"{owner.trace}-{owner.span}"
    case = ident if case is None else case
    model = attrs.get("gen_ai.request.model") or next(
        (s.attrs["gen_ai.request.model"] for s in inference
         if "gen_ai.request.model" in s.attrs), None)
    inputs = parsed(attrs.get("gen_ai.input.messages"))
    outputs = parsed(attrs.get("gen_ai.output.messages"))
    if inputs is None and inference:
        inputs = parsed(inference[0].attrs.get("gen_ai.input.messages"))
    if outputs is None and inference:
        outputs = parsed(inference[-1].attrs.get("gen_ai.output.messages"))
    record: dict[str, Any] = {
        "id": ident, "case_id": case,
        "trial": trial,  # a whole number >= 1 (_identity), or None
        "trace_id": owner.trace, "span_id": owner.span, "name": owner.name,
        "operation": owner.operation, "agent_name": attrs.get("gen_ai.agent.name"),
        "agent_id": attrs.get("gen_ai.agent.id"), "service": owner.service,
        "model": model,
        "response_model": attrs.get("gen_ai.response.model") or next(
            (s.attrs["gen_ai.response.model"] for s in reversed(inference)
             if "gen_ai.response.model" in s.attrs), None),
        "input": _text(inputs, "user"), "output": _text(outputs, "assistant"),
        "tool_calls": [_tool_call(s) for s in tools],
        "usage": _usage(owner), "inference_calls": len(inference),
        "latency_ms": (owner.end - owner.start) / 1e6,
        "status": status, "error": status == "ERROR", "failed_agents": failed,
        "error_type": attrs.get("error.type"),
        "status_message": owner.status_message or None,
        "attributes": attrs,
    }
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
                    not agents and id(node) in rooted)):  # a run; an agent inside is part
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
                            "cycle)")
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
    return mapped(owner.line, unit(owner, tools, inference, case, trial))


def _conventional(owner: Span) -> bool:
    """Whether a span, or one below it, carries an attribute of the GenAI conventions (an
    OpenInference span the reader reads has been given them)."""
    stack = [owner]
    while stack:
        node = stack.pop()
        if any(k.startswith("gen_ai.") for k in node.attrs):
            return True
        stack.extend(node.children)
    return False


def _unread_tool(owner: Span) -> Span | None:
    """A span in the run that another convention marks as a tool call and no GenAI
    operation names, else None."""
    stack = [owner]
    while stack:
        node = stack.pop()
        if traceloop.unread_tool(node.attrs):
            return node
        stack.extend(node.children)
    return None


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
