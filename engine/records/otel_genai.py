"""``otel-genai``: OTLP/JSON trace exports whose spans follow the OpenTelemetry GenAI
semantic conventions, as one record per agent run (docs/otel.md).

Input: JSON Lines, each line one ExportTraceServiceRequest
(``{"resourceSpans": [{"resource", "scopeSpans": [{"scope", "spans": [...]}]}]}``), as
the OTLP file exporter writes; or one pretty-printed request (a file whose first
non-blank line is a lone ``{``), whose spans are framed one by one (never the whole
document in memory). Ids are hex (OTLP/JSON) or base64 (protobuf's own JSON mapping).

A unit is each ``invoke_agent`` span below no other (an agent it calls is part of its
run), and the root span of a trace that has none. Tool calls (``execute_tool`` spans)
and token usage (spans with ``gen_ai.usage.*``) belong to the run above them. Spans of
one trace may be spread over lines, so the reader keeps a compact summary of every span
(ids, times, status, the attributes it maps) until the end of the file and then yields
the units: memory grows with the spans and the ``gen_ai.*`` attributes they keep (events,
links and other attributes of non-unit spans are dropped as soon as a span is read).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.canonical import MAX_INT
from engine.records.clip import clip
from engine.records.formats import BadRecord, Record, mapped, parse_line
from engine.records.json_stream import CHUNK, MAX_VALUE, JsonStream, Stop
from engine.records.strict_json import JsonError, decode_value

HEX = re.compile(r"[0-9a-fA-F]+")
# OTLP's Status.code enum: 0 unset, 1 ok, 2 error, or its names (STATUS_CODE_<NAME>); a
# record says the name, as the SDK's StatusCode does
_STATUS_NAMES = ("unset", "ok", "error")
STATUS: dict[Any, str] = {**{i: n.upper() for i, n in enumerate(_STATUS_NAMES)},
                          **{f"status_code_{n}".upper(): n.upper() for n in _STATUS_NAMES}}
INFERENCE = ("chat", "text_completion", "generate_content")
Source = tuple[str, str | None]  # an attribute, and a key of the JSON object it holds
CASE_SOURCES: tuple[Source, ...] = (("specgate.case_id", None), ("gen_ai.conversation.id", None))
TRIAL_SOURCES: tuple[Source, ...] = (("specgate.trial", None),)
TRIAL_TEXT = re.compile(r"[1-9][0-9]{0,15}")
COUNTED = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")
# the conventions' earlier names for them, still written by older instrumentations
LEGACY = {"gen_ai.usage.prompt_tokens": "gen_ai.usage.input_tokens",
          "gen_ai.usage.completion_tokens": "gen_ai.usage.output_tokens"}
_VALUE_KINDS = {"stringValue", "boolValue", "intValue", "doubleValue", "arrayValue",
                "kvlistValue", "bytesValue"}  # AnyValue's oneof
TOOL_SPAN = "execute_tool "  # the semantic conventions name a tool span "execute_tool {tool}"


class Malformed(Exception):
    """A request, scope or span that is not of OTLP's shape (``code`` says how)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(eq=False, slots=True)
class Span:
    """What the reader keeps of one span."""

    line: int
    trace: str
    span: str
    parent: str
    name: str
    start: int
    end: int
    status: str
    status_message: str
    attrs: dict[str, Any]
    resource: dict[str, Any] = field(default_factory=dict)  # its resource's attributes
    children: list[Span] = field(default_factory=list)

    @property
    def operation(self) -> Any:
        return self.attrs.get("gen_ai.operation.name")

    @property
    def service(self) -> Any:
        return self.resource.get("service.name")


# --- OTLP/JSON values -------------------------------------------------------------------

def _id(value: Any, size: int, what: str, optional: bool = False) -> str:
    """A trace (16 bytes) or span (8 bytes) id as lowercase hex: given as hex (OTLP/JSON)
    or as base64 (protobuf's JSON mapping of ``bytes``)."""
    if optional and value in (None, ""):
        return ""
    if not isinstance(value, str):
        raise Malformed("OTEL_BAD_ID", f"{what} is not a string")
    if len(value) == 2 * size and HEX.fullmatch(value):
        raw = bytes.fromhex(value)
    else:
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != size:
            raise Malformed("OTEL_BAD_ID", f"{what} {value[:40]!r} is not {size} bytes in hex "
                            f"({2 * size} digits) or base64")
    if not any(raw):
        raise Malformed("OTEL_BAD_ID", f"{what} is all zeros")
    return raw.hex()


def _nanos(value: Any, what: str) -> int:
    """A fixed64 time: a decimal string (OTLP/JSON) or a number."""
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,20}", value, re.ASCII) and \
            int(value) < 2**64:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64:
        return value
    if value is None:
        raise Malformed("OTEL_BAD_SPAN", f"{what} is missing (a span is exported ended)")
    raise Malformed("OTEL_BAD_SPAN", f"{what} is not a time in nanoseconds")


def any_value(value: Any) -> Any:
    """An OTLP AnyValue as plain JSON: int64 strings become integers (kept as strings
    beyond 2**53-1), non-finite doubles stay strings, arrays and kvlists nest."""
    if not isinstance(value, dict):
        raise Malformed("OTEL_BAD_SPAN", "an attribute value is not an object")
    if len(value.keys() & _VALUE_KINDS) > 1:  # a oneof: which counts would be a guess
        raise Malformed("OTEL_BAD_SPAN", "an attribute value gives more than one of "
                        f"{', '.join(sorted(value.keys() & _VALUE_KINDS))}")
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "intValue" in value:
        number = value["intValue"]
        if isinstance(number, str) and re.fullmatch(r"-?[0-9]{1,20}", number):
            return int(number) if abs(int(number)) <= MAX_INT else number
        if isinstance(number, int) and not isinstance(number, bool):
            return number
        raise Malformed("OTEL_BAD_SPAN", "an intValue is not an integer")
    if "doubleValue" in value:
        number = value["doubleValue"]
        if isinstance(number, str):
            try:
                as_float = float(number)
            except ValueError:
                raise Malformed("OTEL_BAD_SPAN", "a doubleValue is not a number") from None
            return as_float if math.isfinite(as_float) else number
        if isinstance(number, int | float) and not isinstance(number, bool):
            return number
        raise Malformed("OTEL_BAD_SPAN", "a doubleValue is not a number")
    if "arrayValue" in value:
        items = (value["arrayValue"] or {}).get("values", []) \
            if isinstance(value["arrayValue"], dict) else None
        if not isinstance(items, list):
            raise Malformed("OTEL_BAD_SPAN", "an arrayValue holds no values list")
        return [any_value(v) for v in items]
    if "kvlistValue" in value:
        pairs = value["kvlistValue"].get("values", []) \
            if isinstance(value["kvlistValue"], dict) else None
        return attributes(pairs)
    if "bytesValue" in value:
        return value["bytesValue"]
    return None  # an empty AnyValue


def attributes(pairs: Any) -> dict[str, Any]:
    """``[{key, value}]`` as a dict (a key given twice is refused: the SDK never writes
    one, and which value counts would be the reader's guess)."""
    if pairs is None:
        return {}
    if not isinstance(pairs, list):
        raise Malformed("OTEL_BAD_SPAN", "attributes is not a list")
    out: dict[str, Any] = {}
    for pair in pairs:
        if not isinstance(pair, dict) or not isinstance(pair.get("key"), str):
            raise Malformed("OTEL_BAD_SPAN", "an attribute is not {key, value}")
        if pair["key"] in out:  # which value counts would be the reader's guess
            raise Malformed("OTEL_BAD_SPAN", f"attribute {pair['key'][:60]!r} is given twice")
        out[pair["key"]] = any_value(pair.get("value", {}))
    return out


def span_of(data: Any, line: int, resource: dict[str, Any]) -> Span:
    """One OTLP span object, summarised."""
    if not isinstance(data, dict):
        raise Malformed("NOT_AN_OBJECT", "a span is not a JSON object")
    status = data.get("status") or {}
    if not isinstance(status, dict):
        raise Malformed("OTEL_BAD_SPAN", "status is not an object")
    raw_code = status.get("code", 0)
    code = STATUS.get(raw_code) if isinstance(raw_code, int | str) and \
        not isinstance(raw_code, bool) else None
    if code is None:
        raise Malformed("OTEL_BAD_SPAN", f"status code {str(status.get('code'))[:40]} is "
                        "not 0, 1 or 2")
    name = data.get("name", "")
    if not isinstance(name, str):
        raise Malformed("OTEL_BAD_SPAN", "name is not a string")
    message = status.get("message", "")
    start = _nanos(data.get("startTimeUnixNano"), "startTimeUnixNano")
    end = _nanos(data.get("endTimeUnixNano"), "endTimeUnixNano")
    if start == 0 or end < start:  # else a latency that is no duration (negative, epoch)
        raise Malformed("OTEL_BAD_SPAN", f"the span ends ({end}) before it starts ({start}),"
                        " or starts at 0")
    attrs = attributes(data.get("attributes"))
    _openinference(name, attrs)
    _details(data.get("events"), attrs)
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
    return Span(line, _id(data.get("traceId"), 16, "traceId"),
                _id(data.get("spanId"), 8, "spanId"),
                _id(data.get("parentSpanId"), 8, "parentSpanId", optional=True), name,
                start, end, code, message if isinstance(message, str) else "", attrs,
                resource)


# --- other conventions -------------------------------------------------------------------

OI_KIND = "openinference.span.kind"  # OpenInference (Arize Phoenix, many instrumentations)
# what OpenInference writes in place of content its configuration hides
# (OPENINFERENCE_HIDE_INPUTS, _HIDE_OUTPUT_TEXT, ...): not recorded, never the text
OI_REDACTED = "__REDACTED__"
# a span another convention marks as a tool call, which the reader does not read: its call
# would be missing from the run, so the run is refused (OpenLLMetry's traceloop.span.kind)
UNREAD_TOOL = {"traceloop.span.kind": "tool"}
OI_OPERATION = {"AGENT": "invoke_agent", "TOOL": "execute_tool", "LLM": "chat"}
OI_MESSAGE = re.compile(r"llm\.(input|output)_messages\.([0-9]{1,6})\.message\.(.+)")


def _openinference(name: str, attrs: dict[str, Any]) -> None:
    """A span following OpenInference's conventions instead of the GenAI ones, read as the
    GenAI operation it is: each attribute the reader maps given under its GenAI name (never
    over one the span gives itself). What the span does not record stays absent."""
    kind = attrs.get(OI_KIND)
    if "gen_ai.operation.name" in attrs or not isinstance(kind, str) or \
            kind.upper() not in OI_OPERATION:
        return
    operation = OI_OPERATION[kind.upper()]
    given: dict[str, Any] = {"gen_ai.operation.name": operation}
    if operation == "invoke_agent":
        given["gen_ai.agent.name"] = attrs.get("agent.name", name)
    elif operation == "execute_tool":
        given["gen_ai.tool.name"] = attrs.get("tool.name", name)
        for theirs, ours in (("input.value", "gen_ai.tool.call.arguments"),
                             ("output.value", "gen_ai.tool.call.result"),
                             ("tool_call.id", "gen_ai.tool.call.id")):
            if theirs in attrs and attrs[theirs] != OI_REDACTED:  # hidden: not recorded
                given[ours] = attrs[theirs]
    else:
        for theirs, ours in (("llm.model_name", "gen_ai.request.model"),
                             ("llm.token_count.prompt", "gen_ai.usage.input_tokens"),
                             ("llm.token_count.completion", "gen_ai.usage.output_tokens")):
            if theirs in attrs:
                given[ours] = attrs[theirs]
        messages: dict[str, dict[int, dict[str, Any]]] = {"input": {}, "output": {}}
        for key, value in attrs.items():
            found = OI_MESSAGE.fullmatch(key)
            if found:
                side, index, rest = found.groups()
                messages[side].setdefault(int(index), {})[rest] = value
        for side, held in messages.items():
            if held:
                given[f"gen_ai.{side}.messages"] = [_oi_message(held[i]) for i in sorted(held)]
    for key, value in given.items():
        attrs.setdefault(key, value)


def _oi_message(flat: dict[str, Any]) -> dict[str, Any]:
    """One OpenInference message (its flattened ``message.*`` attributes) in the GenAI
    conventions' shape: a role and its parts; a text part only where content is recorded."""
    def text(value: Any) -> dict[str, Any]:  # a hidden text is a part whose content is
        return {"type": "text"} if value == OI_REDACTED else {  # not recorded
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
        if "function.arguments" in call and call["function.arguments"] != OI_REDACTED:
            part["arguments"] = call["function.arguments"]
        parts.append(part)
    return {"role": flat.get("role"), "parts": parts}


DETAILS = "gen_ai.client.inference.operation.details"  # the conventions' event for content
DETAILED = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
            "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")


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
        given.update((k, v) for k, v in attributes(event.get("attributes")).items()
                     if k in DETAILED)
    for key, value in given.items():
        if attrs.setdefault(key, value) != value:
            raise Malformed("OTEL_BAD_SPAN", f"{key} is given by the span and by its "
                            f"{DETAILS} event, differently")


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


def _list(container: Any, key: str, what: str) -> list[Any]:
    if not isinstance(container, dict):
        raise Malformed("OTEL_NOT_OTLP", f"{what} is not a JSON object")
    value = container.get(key, [])
    if not isinstance(value, list):
        raise Malformed("OTEL_NOT_OTLP", f"{what}.{key} is not a list")
    return value


def spans_of_request(request: Any, line: int) -> Iterator[Span | BadRecord]:
    """The spans of one ExportTraceServiceRequest (a bad span is a problem of its own)."""
    try:
        resources = _list(request, "resourceSpans", "the request")
        if "resourceSpans" not in request:
            raise Malformed("OTEL_NOT_OTLP", "no resourceSpans: not an OTLP trace export")
    except Malformed as exc:
        yield BadRecord(line, exc.code, str(exc))
        return
    for resource_spans in resources:
        try:
            scopes = _list(resource_spans, "scopeSpans", "a resourceSpans entry")
            resource = resource_spans.get("resource") or {}
            resource_attrs = attributes(resource.get("attributes")
                                        if isinstance(resource, dict) else None)
        except Malformed as exc:
            yield BadRecord(line, exc.code, str(exc))
            continue
        for scope_spans in scopes:
            try:
                spans = _list(scope_spans, "spans", "a scopeSpans entry")
            except Malformed as exc:
                yield BadRecord(line, exc.code, str(exc))
                continue
            for data in spans:
                try:
                    yield span_of(data, line, resource_attrs)
                except Malformed as exc:
                    yield BadRecord(line, exc.code, str(exc))


# --- framing ------------------------------------------------------------------------------

def _document(stream: JsonStream) -> Iterator[Span | BadRecord]:
    """The spans of one pretty-printed request, each framed on its own."""
    if stream.peek() != "{":
        raise Stop("NOT_AN_OBJECT", "the document is not a JSON object")
    seen = False
    for key in stream.members("at the top level"):
        if key != "resourceSpans":
            stream.skip(f"in the top-level member {key[:40]!r}")
            continue
        seen = True
        if stream.peek() != "[":
            raise Stop("OTEL_NOT_OTLP", "resourceSpans is not a list")
        for _ in stream.items("in resourceSpans"):
            if stream.peek() != "{":
                raise Stop("OTEL_NOT_OTLP", "a resourceSpans entry is not an object")
            held: list[Span] = []
            resource_attrs: dict[str, Any] = {}
            for rkey in stream.members("in a resourceSpans entry"):
                if rkey == "resource":
                    resource = stream.value("in a resource")
                    if isinstance(resource, dict):
                        try:
                            resource_attrs = attributes(resource.get("attributes"))
                        except Malformed as exc:
                            raise Stop(exc.code, f"in a resource: {exc}") from None
                elif rkey == "scopeSpans":
                    if stream.peek() != "[":
                        raise Stop("OTEL_NOT_OTLP", "scopeSpans is not a list")
                    for _ in stream.items("in scopeSpans"):
                        yield from _scope(stream, held)
                else:
                    stream.skip(f"in a resourceSpans entry's {rkey[:40]!r}")
            for span in held:  # the resource may follow its spans
                span.resource = resource_attrs
                yield span
    stream.end()
    if not seen:
        raise Stop("OTEL_NOT_OTLP", "no resourceSpans: not an OTLP trace export")


def _scope(stream: JsonStream, held: list[Span]) -> Iterator[BadRecord]:
    if stream.peek() != "{":
        raise Stop("OTEL_NOT_OTLP", "a scopeSpans entry is not an object")
    for key in stream.members("in a scopeSpans entry"):
        if key != "spans":
            stream.skip(f"in a scopeSpans entry's {key[:40]!r}")
            continue
        if stream.peek() != "[":
            raise Stop("OTEL_NOT_OTLP", "spans is not a list")
        for _ in stream.items("in spans"):
            line = stream.line_at()
            parsed = stream.record(line, "a span")
            if isinstance(parsed, BadRecord):
                yield parsed
                continue
            try:
                held.append(span_of(parsed.data, line, {}))
            except Malformed as exc:
                yield BadRecord(line, exc.code, str(exc))


def spans(path: Path, digest: Any = None) -> Iterator[Span | BadRecord]:
    """Every span of the file, in file order, or a located problem."""
    with path.open("rb") as handle:
        blank = 0  # blank lines before the first that is not, hashed and dropped
        while not (head := handle.readline(MAX_VALUE + 1)).strip():
            if not head:
                return
            if digest is not None:
                digest.update(head)
            blank += 1
        if head.strip() == b"{":  # a pretty-printed single document
            stream = JsonStream(handle, digest, head, first_line=blank + 1)  # hashes head
            try:
                yield from _document(stream)
            except Stop as exc:
                yield BadRecord(stream.line_at(), exc.code, str(exc))
            finally:
                stream.drain()  # the digest covers every byte
            return
        if digest is not None:
            digest.update(head)
        number = blank + 1
        raw = head
        while raw:
            if len(raw) - raw.rfind(b"\n") - 1 > MAX_VALUE:  # a line is one value: capped
                while raw and not raw.endswith(b"\n"):  # hashed to its end, never held
                    raw = handle.readline(CHUNK)
                    if digest is not None:
                        digest.update(raw)
                yield BadRecord(number, "VALUE_TOO_LARGE", f"a line longer than "
                                f"{MAX_VALUE >> 20} MiB")
            elif raw.strip():
                parsed = parse_line(raw, number)
                if isinstance(parsed, BadRecord):
                    yield parsed
                else:
                    yield from spans_of_request(parsed.data, number)
            raw = handle.readline(MAX_VALUE + 1)
            if digest is not None:
                digest.update(raw)
            number += 1


# --- units --------------------------------------------------------------------------------

def _messages(value: Any) -> Any:
    """A ``gen_ai.*.messages`` attribute: JSON text parsed (strictly), else as recorded."""
    if isinstance(value, str):
        parsed = _json_text(value)
        return parsed if parsed is not None else value
    return value


def _json_text(text: str) -> Any:
    """A JSON text inside an attribute, decoded by the strict record reader; None if it is
    not one it accepts."""
    try:
        return decode_value(text.encode("utf-8"))[0]
    except (JsonError, UnicodeEncodeError):
        return None


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
        parsed = _json_text(arguments) if isinstance(arguments, str) else arguments
        call["arguments"] = parsed if isinstance(parsed, dict) else arguments
    if "gen_ai.tool.call.result" in attrs:
        call["result"] = _messages(attrs["gen_ai.tool.call.result"])
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
                holder = _json_text(value) if isinstance(value, str) else value
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
    inputs = _messages(attrs.get("gen_ai.input.messages"))
    outputs = _messages(attrs.get("gen_ai.output.messages"))
    if inputs is None and inference:
        inputs = _messages(inference[0].attrs.get("gen_ai.input.messages"))
    if outputs is None and inference:
        outputs = _messages(inference[-1].attrs.get("gen_ai.output.messages"))
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
        if node.operation is None and any(node.attrs.get(k) == v
                                           for k, v in UNREAD_TOOL.items()):
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
                          if k.startswith("gen_ai.") or k == "error.type" or k in kept
                          or k in UNREAD_TOOL}
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
