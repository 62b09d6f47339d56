"""OTLP/JSON trace exports, framed: every span of a file (JSON Lines as the Collector's
file exporter writes them, protobuf's own JSON mapping with base64 ids, or one
pretty-printed request framed span by span), summarised as a ``Span`` once every convention
the reader knows has read it (``registry``), or a located problem."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.records.formats import BadRecord, parse_line
from engine.records.json_stream import CHUNK, MAX_VALUE, JsonStream, Stop
from engine.records.otel import registry
from engine.records.otel.values import Malformed, Scope, Span, attributes

HEX = re.compile(r"[0-9a-fA-F]+")
# OTLP's Status.code enum: 0 unset, 1 ok, 2 error, or its names (STATUS_CODE_<NAME>); a
# record says the name, as the SDK's StatusCode does
_STATUS_NAMES = ("unset", "ok", "error")
STATUS: dict[Any, str] = {**{i: n.upper() for i, n in enumerate(_STATUS_NAMES)},
                          **{f"status_code_{n}".upper(): n.upper() for n in _STATUS_NAMES}}

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


def span_of(data: Any, line: int, resource: dict[str, Any], scope: Scope) -> Span:
    """One OTLP span object, summarised (``scope`` is the instrumentation that wrote it)."""
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
    registry.normalize(name, attrs, data.get("events"), scope)
    return Span(line, _id(data.get("traceId"), 16, "traceId"),
                _id(data.get("spanId"), 8, "spanId"),
                _id(data.get("parentSpanId"), 8, "parentSpanId", optional=True), name,
                start, end, code, message if isinstance(message, str) else "", attrs,
                resource, scope)


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
                scope = scope_of(scope_spans.get("scope"))
            except Malformed as exc:
                yield BadRecord(line, exc.code, str(exc))
                continue
            for data in spans:
                try:
                    yield span_of(data, line, resource_attrs, scope)
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
    """The spans of one scopeSpans entry of a document; a span read before its entry's
    ``scope`` member (the members may come in any order) waits for it, parsed."""
    if stream.peek() != "{":
        raise Stop("OTEL_NOT_OTLP", "a scopeSpans entry is not an object")
    scope: Scope | None = None
    waiting: list[tuple[int, Any]] = []
    for key in stream.members("in a scopeSpans entry"):
        if key == "scope":
            try:
                scope = scope_of(stream.value("in a scope"))
            except Malformed as exc:
                raise Stop(exc.code, f"in a scope: {exc}") from None
            continue
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
            elif scope is None:
                waiting.append((line, parsed.data))
            else:
                yield from _held(held, parsed.data, line, scope)
    for line, data in waiting:
        yield from _held(held, data, line, scope or Scope())


def _held(held: list[Span], data: Any, line: int, scope: Scope) -> Iterator[BadRecord]:
    try:
        held.append(span_of(data, line, {}, scope))
    except Malformed as exc:
        yield BadRecord(line, exc.code, str(exc))


def scope_of(value: Any) -> Scope:
    """An InstrumentationScope's name and version ("" where not given)."""
    if value is None:
        return Scope()
    if not isinstance(value, dict):
        raise Malformed("OTEL_NOT_OTLP", "a scope is not a JSON object")
    name, version = value.get("name", ""), value.get("version", "")
    if not isinstance(name, str) or not isinstance(version, str):
        raise Malformed("OTEL_NOT_OTLP", "a scope's name or version is not a string")
    return Scope(name, version)


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
