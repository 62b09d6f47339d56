"""OTLP/JSON values and the span summary every part of the ``otel-genai`` reader shares."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from engine.canonical import MAX_INT
from engine.records.strict_json import JsonError, decode_value

_VALUE_KINDS = {"stringValue", "boolValue", "intValue", "doubleValue", "arrayValue",
                "kvlistValue", "bytesValue"}  # AnyValue's oneof


class Malformed(Exception):
    """A request, scope or span that is not of OTLP's shape, or a span that contradicts
    itself (``code`` says how)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Scope:
    """The instrumentation scope that wrote a span: who produced it, at which version."""

    name: str = ""
    version: str = ""


@dataclass(eq=False, slots=True)
class Span:
    """What the reader keeps of one span: its attributes, after each convention the reader
    knows has given what it records under the GenAI conventions' names."""

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
    scope: Scope = Scope()
    children: list[Span] = field(default_factory=list)

    @property
    def operation(self) -> Any:
        return self.attrs.get("gen_ai.operation.name")

    @property
    def service(self) -> Any:
        return self.resource.get("service.name")


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


def json_text(text: str) -> Any:
    """A JSON text inside an attribute, decoded by the strict record reader; None if it is
    not one it accepts."""
    try:
        return decode_value(text.encode("utf-8"))[0]
    except (JsonError, UnicodeEncodeError):
        return None


def parsed(value: Any) -> Any:
    """An attribute that may hold JSON text: the text parsed (strictly), else as recorded."""
    if isinstance(value, str):
        found = json_text(value)
        return found if found is not None else value
    return value
