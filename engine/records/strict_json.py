"""Strict JSON reading that keeps the lexical class of numbers (discovery protocol §2.7).

A number token with no fraction and no exponent is an ``int``; any other number token is a
``LexFloat`` (a ``float`` that remembers it was written as a float). NaN and infinities,
numbers that overflow a double, duplicate member names, lone surrogates, a byte-order mark
and any syntax error are refused with a code.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

from engine.records.formats import has_lone_surrogate, too_deep


class LexFloat(float):
    """A JSON number written with a fraction or an exponent (``5.0``, ``5e0``)."""


class JsonError(ValueError):
    """A JSON text the protocol refuses: ``code`` is JSON_PARSE or NONFINITE_JSON;
    ``record_code`` is the engine's record-problem code when it is more precise."""

    def __init__(self, code: str, message: str, record_code: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.record_code = record_code or ("NON_FINITE_NUMBER" if code == "NONFINITE_JSON"
                                           else "INVALID_JSON")


MAX_DEPTH = 64  # the same limit as records (engine.records.MAX_DEPTH)
_DEEP = f"arrays and objects nest deeper than {MAX_DEPTH} levels"


def _float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise JsonError("NONFINITE_JSON", f"number {token} overflows a double")
    return LexFloat(value)


def _int(token: str) -> int:
    # lengths first: int() of a 5,000-digit token is refused by Python itself
    if len(token.lstrip("-")) > 309 or abs(int(token)) > sys.float_info.max:
        raise JsonError("NONFINITE_JSON", f"number {token[:40]} overflows a double")
    return int(token)


def _constant(name: str) -> Any:
    raise JsonError("NONFINITE_JSON", f"{name} is not a finite number")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise JsonError("JSON_PARSE", f"member name {key!r} appears twice")
        out[key] = value
    return out


_DECODER = json.JSONDecoder(parse_float=_float, parse_int=_int, parse_constant=_constant,
                            object_pairs_hook=_object)
_SURROGATE = re.compile(r"\\[uU][dD][89a-fA-F]")


def loads(data: bytes | str) -> Any:
    """Parse one JSON text by the protocol's rules; JsonError says why not."""
    if isinstance(data, bytes):
        if data.startswith(b"\xef\xbb\xbf"):
            raise JsonError("JSON_PARSE", "the text starts with a byte-order mark")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonError("JSON_PARSE", f"not UTF-8 (byte {exc.start})") from None
    else:
        text = data
    try:
        value, end = _DECODER.raw_decode(text, len(text) - len(text.lstrip()))
    except json.JSONDecodeError as exc:
        raise JsonError("JSON_PARSE", f"{exc.msg} at line {exc.lineno} column {exc.colno}"
                        ) from None
    except RecursionError:
        raise JsonError("JSON_PARSE", _DEEP, "NESTED_TOO_DEEP") from None
    if text[end:].strip():
        raise JsonError("JSON_PARSE", "extra data after the JSON value")
    if too_deep(value, MAX_DEPTH):
        raise JsonError("JSON_PARSE", _DEEP, "NESTED_TOO_DEEP")
    if _SURROGATE.search(text) and has_lone_surrogate(value):
        raise JsonError("JSON_PARSE", "a string holds a lone surrogate")
    return value


def is_integer(value: Any) -> bool:
    """An integer token (booleans and float-written numbers are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A JSON number (booleans are not)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_scalar(value: Any) -> bool:
    """A JSON string or number."""
    return isinstance(value, str) or is_number(value)
