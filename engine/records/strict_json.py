"""The one strict JSON reader: every JSON the engine reads from outside goes through it.

Three uses differ only in how numbers are read and what a refusal is called, each a
``Dialect`` here:

- ``RECORD`` (input records, one per line): integers beyond 2**53-1 are refused
  (NUMBER_OUT_OF_RANGE), non-finite numbers too (NON_FINITE_NUMBER);
- ``JCS`` (signed RFC 8785 evidence, read back by ``engine verify``): numbers are doubles,
  so a large integral double written as an integer literal reads as a float;
- ``LEXICAL`` (finding-quality-discovery §2.7 inputs): a number token with no fraction and
  no exponent is an ``int``; any other number token is a ``LexFloat`` (a ``float`` that
  remembers it was written as a float).

All three refuse NaN and infinities, duplicate member names, lone surrogates, nesting
deeper than ``MAX_DEPTH`` and any syntax error, with a code (``JsonError.code``).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from engine.canonical import MAX_INT

MAX_DEPTH = 64  # arrays and objects nested, the value itself being level 1
DEEP = f"arrays and objects nest deeper than {MAX_DEPTH} levels"
_DIGITS = len(str(MAX_INT))
# A value may hold at most one array or object per BYTES_PER_CONTAINER bytes of its text
# beyond CONTAINERS_FLOOR of them: each costs 56 to 200+ bytes once built, so "[]," over
# 60 MiB would take gigabytes. Real tool logs hold one per 40 to 140 bytes.
CONTAINERS_FLOOR, BYTES_PER_CONTAINER = 1 << 16, 16


# a JSON string (an unrolled loop), or one still open where a framed window ends
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)')
_STRING_BYTES = re.compile(_STRING.pattern.encode())


def too_many_containers(text: str | bytes, brackets: int | None = None) -> str | None:
    """Why the arrays and objects of ``text`` are too many to build, else None.
    ``brackets`` (its opening brackets, an upper bound) may be given when counted already;
    only when they are over the limit are the strings taken out and they are counted again
    (a model's output of 70,000 brackets is text, not arrays)."""
    if brackets is None:
        brackets = _brackets(text)
    if not _crowded(brackets, len(text)):
        return None
    bare = _STRING_BYTES.sub(b"", text) if isinstance(text, bytes) else _STRING.sub("", text)
    containers = _brackets(bare)
    if not _crowded(containers, len(text)):
        return None
    return (f"{containers} arrays and objects in {len(text)} bytes: more than one per "
            f"{BYTES_PER_CONTAINER} bytes would cost gigabytes to build")


def _brackets(text: str | bytes) -> int:
    if isinstance(text, bytes):
        return text.count(b"[") + text.count(b"{")
    return text.count("[") + text.count("{")


def _crowded(containers: int, size: int) -> bool:
    return containers > CONTAINERS_FLOOR and containers * BYTES_PER_CONTAINER > size


WHITE_SPACE = " \t\n\r"  # JSON's white space (RFC 8259, section 2); str.strip() takes more


class LexFloat(float):
    """A JSON number written with a fraction or an exponent (``5.0``, ``5e0``)."""


class JsonError(ValueError):
    """A JSON text refused: ``code`` is the dialect's code; ``record_code`` is the
    engine's record-problem code for it (the same code in the RECORD dialect)."""

    def __init__(self, code: str, message: str, record_code: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.record_code = record_code or ("NON_FINITE_NUMBER" if code == "NONFINITE_JSON"
                                           else "INVALID_JSON")


@dataclass(frozen=True)
class Dialect:
    """How one use of strict JSON reads numbers and names its refusals."""

    name: str
    parse_int: Callable[[str], Any]
    parse_float: Callable[[str], Any]
    constant: Callable[[str], Any]  # NaN, Infinity, -Infinity: always refused
    duplicate: Callable[[str], JsonError]  # a member name that appears twice

    def decoder(self, numbers: bool = True) -> json.JSONDecoder:
        """A stdlib decoder applying these rules (built once per dialect). ``numbers=False``
        leaves number tokens to the C scanner: only for texts where no token can break the
        dialect's number rules (see ``plain_numbers``)."""
        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            out = dict(items)
            if len(out) == len(items):
                return out
            seen: set[str] = set()
            for key, _ in items:  # the first name that appears twice, as written
                if key in seen:
                    raise self.duplicate(key)
                seen.add(key)
            raise AssertionError("unreachable: a shorter dict has a repeated name")
        if not numbers:
            return json.JSONDecoder(parse_constant=self.constant, object_pairs_hook=pairs)
        return json.JSONDecoder(parse_int=self.parse_int, parse_float=self.parse_float,
                                parse_constant=self.constant, object_pairs_hook=pairs)


def _record_int(text: str) -> int:
    # compare lengths first: int() of a 5,000-digit token is refused by Python itself
    if len(text.lstrip("-")) > _DIGITS or abs(int(text)) > MAX_INT:
        raise JsonError("NUMBER_OUT_OF_RANGE", "an integer beyond 2**53-1 loses precision",
                        "NUMBER_OUT_OF_RANGE")
    return int(text)


def _record_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonError("NON_FINITE_NUMBER", f"the number {text[:40]} overflows a double",
                        "NON_FINITE_NUMBER")
    return value


def _int_or_double(text: str) -> int | float:
    if len(text.lstrip("-")) <= _DIGITS and abs(int(text)) <= MAX_INT:
        return int(text)
    return _record_float(text)


def _record_constant(name: str) -> Any:
    raise JsonError("NON_FINITE_NUMBER", f"{name} is not a JSON number", "NON_FINITE_NUMBER")


class NotANumber:
    """A ``NaN`` a reader accepts where a tool writes it on purpose (inspect_ai's unscored
    score), decoded as this sentinel for the reader to place or refuse."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NaN"


NAN = NotANumber()


def _nan_constant(name: str) -> Any:
    return NAN if name == "NaN" else _record_constant(name)


def _record_duplicate(key: str) -> JsonError:
    return JsonError("DUPLICATE_KEY", f"key '{key}' appears twice", "DUPLICATE_KEY")


def _lexical_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise JsonError("NONFINITE_JSON", f"number {token} overflows a double")
    return LexFloat(value)


def _lexical_int(token: str) -> int:
    # lengths first: int() of a 5,000-digit token is refused by Python itself
    if len(token.lstrip("-")) > 309 or abs(int(token)) > sys.float_info.max:
        raise JsonError("NONFINITE_JSON", f"number {token[:40]} overflows a double")
    return int(token)


def _lexical_constant(name: str) -> Any:
    raise JsonError("NONFINITE_JSON", f"{name} is not a finite number")


def _lexical_duplicate(key: str) -> JsonError:
    return JsonError("JSON_PARSE", f"member name {key!r} appears twice")


RECORD = Dialect("record", _record_int, _record_float, _record_constant, _record_duplicate)
_RECORD_NAN = Dialect("record", _record_int, _record_float, _nan_constant,
                      _record_duplicate).decoder()
JCS = Dialect("jcs", _int_or_double, _record_float, _record_constant, _record_duplicate)
LEXICAL = Dialect("lexical", _lexical_int, _lexical_float, _lexical_constant,
                  _lexical_duplicate)
RECORD_DECODER, JCS_DECODER, LEXICAL_DECODER = (RECORD.decoder(), JCS.decoder(),
                                                LEXICAL.decoder())
# A line with no run of 16 digits and no digit followed by a three-digit exponent holds no
# integer beyond 2**53-1 (16 digits) and no number that overflows a double: there the C
# scanner reads every number exactly as the RECORD dialect would, without a Python call per
# number. The line is looked at through a table (digits -> 0, e/E -> e, signs -> +, opening
# brackets -> [ for the fast path to count, all else a space), where both are plain
# substring searches.
_SHAPES = bytes(ord("0") if chr(b).isdigit() and b < 128 else ord("e") if b in b"eE" else
                ord("+") if b in b"+-" else ord(".") if b == ord(".") else
                ord("[") if b in b"[{" else ord(" ") for b in range(256))
_LONG_NUMBER = (b"0" * len(str(MAX_INT)), b"0e000", b"0e+000")
_DIGITS_16, _EXPONENT_3, _SIGNED_EXPONENT_3 = _LONG_NUMBER
_RECORD_PLAIN = RECORD.decoder(numbers=False)


def record_decoder(raw: bytes) -> tuple[json.JSONDecoder, bool]:
    """The RECORD decoder for one line (the one without number hooks where it is exact),
    and whether the value read is sure to be plain JSON for the C encoder
    (``canonical._plain``): an ASCII line with no \\u escape holds only ASCII names, and one
    with no digit before a '.' or an exponent holds no float."""
    shapes = raw.translate(_SHAPES)
    decoder = RECORD_DECODER if any(s in shapes for s in _LONG_NUMBER) else _RECORD_PLAIN
    return decoder, _plain_line(raw, shapes)


def _plain_line(raw: bytes, shapes: bytes) -> bool:
    return raw.isascii() and b"\\u" not in raw and b"0." not in shapes and \
        b"0e" not in shapes


_WHITE_BYTES = WHITE_SPACE.encode()


def _fast(raw: bytes) -> tuple[Any, bool] | None:
    """The value of a line and whether it is plain (``record_decoder``), read by orjson
    where that is sure to give what the RECORD rules give, else None (the strict reader
    then reads it, with its codes and messages).

    orjson accepts what the rules refuse (a name given twice, the last kept; integers to
    2**64; nesting to 1,024; any number of containers), so a line is taken only when orjson
    writes the value it read back as the line's own bytes, compared with the separators'
    spaces of ``json.dumps`` (``", "`` and ``": "``, how Python harnesses write lines) taken
    out of both (``_unspaced``). That removal keeps every token as it is, but for those
    spaces, so the two have the same tokens: no name given twice (the value holds it once),
    no escape orjson does not write (``\\u00e9``, ``\\/``), no ``-0``, ``1.0e2`` or ``1E2``;
    every number is orjson's own shortest text for the value, so ``float()`` or ``int()``
    of it (what the strict reader does) gives the same number of the same type. No run of
    16 digits (an integer beyond 2**53-1 has 16) and no three-digit exponent; containers
    (before orjson builds any) and depth are checked as the strict reader does."""
    shapes = raw.translate(_SHAPES)
    if _DIGITS_16 in shapes or _EXPONENT_3 in shapes or _SIGNED_EXPONENT_3 in shapes:
        return None  # _LONG_NUMBER, one search each
    containers = shapes.count(b"[")
    if too_many_containers(raw, containers) is not None:
        return None
    body = raw.strip(_WHITE_BYTES)
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:  # a lone surrogate, NaN, not UTF-8, a BOM, too deep ...
        return None
    if containers > MAX_DEPTH and too_deep(data):
        return None
    written = orjson.dumps(data)
    if written != body and (_unspaced(written) if b", " in written or b": " in written
                            else written) != _unspaced(body):
        return None  # (orjson writes no separator spaces: only a string can hold ", ")
    return data, _plain_line(raw, shapes)


def _unspaced(text: bytes) -> bytes:
    """``text`` without the space after each ", " and ": " (in strings too: the same
    removal on both sides of a comparison)."""
    return text.replace(b", ", b",").replace(b": ", b":")


ESCAPED_SURROGATE = re.compile(rb"\\[uU][dD][89a-fA-F]")


def decode_value(raw: bytes, nan: bool = False) -> tuple[Any, bool]:
    """One JSON value in UTF-8 bytes (white space around it allowed) by the RECORD rules,
    and whether it is sure to be plain JSON (``record_decoder``). ``JsonError`` with the
    record code says why not: not JSON, a refused number or name, too deep, a lone
    surrogate. The one decoder of records, whether a JSONL line or a framed value.
    ``nan``: a ``NaN`` is ``NAN`` (for a reader to place), not refused."""
    if not nan:
        fast = _fast(raw)
        if fast is not None:
            return fast
    return strict_value(raw, nan)


def strict_value(raw: bytes, nan: bool = False) -> tuple[Any, bool]:
    """``decode_value`` by the strict reader alone (the reference the fast path is tested
    against)."""
    try:
        text = raw.decode("utf-8").strip(WHITE_SPACE)
    except UnicodeDecodeError as exc:
        raise JsonError("NOT_UTF8", f"not UTF-8 (byte {exc.start})", "NOT_UTF8") from None
    containers = raw.count(b"[") + raw.count(b"{")  # brackets in strings too: an upper bound
    crowded = too_many_containers(raw, containers)
    if crowded is not None:
        raise JsonError("INVALID_JSON", crowded, "VALUE_TOO_LARGE")
    decoder, plain = (_RECORD_NAN, False) if nan else record_decoder(raw)
    try:
        data, end = decoder.raw_decode(text)
    except json.JSONDecodeError as exc:
        raise JsonError("INVALID_JSON", f"not JSON: {exc.msg} at column {exc.colno}"
                        ) from None
    except RecursionError:
        raise JsonError("NESTED_TOO_DEEP", DEEP, "NESTED_TOO_DEEP") from None
    if end != len(text):
        raise JsonError("INVALID_JSON", "extra data after the JSON value")
    if containers > MAX_DEPTH and too_deep(data):
        # a value nests at most as deep as the text has opening brackets
        raise JsonError("NESTED_TOO_DEEP", DEEP, "NESTED_TOO_DEEP")
    if ESCAPED_SURROGATE.search(raw) and has_lone_surrogate(data):
        raise JsonError("LONE_SURROGATE", "a string holds a lone UTF-16 surrogate",
                        "LONE_SURROGATE")
    return data, plain
_SURROGATE = re.compile(r"\\[uU][dD][89a-fA-F]")


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True if arrays and objects nest more than ``limit`` levels (walked without recursion)."""
    if not isinstance(value, dict | list):
        return False  # a scalar nests nothing
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def has_lone_surrogate(value: Any) -> bool:
    """True if any string (key or value) cannot be encoded as UTF-8."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(has_lone_surrogate(k) or has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_lone_surrogate(v) for v in value)
    return False


def out_of_range(value: Any) -> tuple[str, str] | None:
    """Why a value built from records (a sum, a product) is no longer JSON the evidence can
    hold, as (record code, message): a number that overflowed a double, or an integer
    beyond 2**53-1; None if it is fine."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return "NON_FINITE_NUMBER", "a number computed from the record overflows a double"
        if isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_INT:
            return "NUMBER_OUT_OF_RANGE", "an integer computed from the record is beyond " \
                "2**53-1"
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def loads_record(text: str) -> Any:
    """A JSON text held in a record's string (a tool call's arguments), by the record
    rules: ``JsonError`` for NaN, an overflowing number, a name given twice (which value
    counts would be the reader's guess) ... as for the record itself."""
    return decode_value(text.encode("utf-8", "surrogatepass"))[0]


def parse_jcs(data: bytes) -> Any:
    """Parse bytes that claim to be RFC 8785 JSON; ValueError if they are not JSON at all."""
    try:
        value, end = JCS_DECODER.raw_decode(data.decode("utf-8"))
    except (JsonError, json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(str(exc)) from None
    if end != len(data.decode("utf-8")):
        raise ValueError("extra data after the JSON value")
    return value


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
        value, end = LEXICAL_DECODER.raw_decode(text, len(text) - len(text.lstrip(WHITE_SPACE)))
    except json.JSONDecodeError as exc:
        raise JsonError("JSON_PARSE", f"{exc.msg} at line {exc.lineno} column {exc.colno}"
                        ) from None
    except JsonError as exc:
        if exc.code == "NONFINITE_JSON":
            raise _earlier_problem(text) or exc from None
        raise
    except RecursionError:
        raise JsonError("JSON_PARSE", DEEP, "NESTED_TOO_DEEP") from None
    if text[end:].strip(WHITE_SPACE):
        raise JsonError("JSON_PARSE", "extra data after the JSON value")
    if too_deep(value, MAX_DEPTH):
        raise JsonError("JSON_PARSE", DEEP, "NESTED_TOO_DEEP")
    if _SURROGATE.search(text) and has_lone_surrogate(value):
        raise JsonError("JSON_PARSE", "a string holds a lone surrogate")
    return value


# The tokens of a JSON text as far as its first refused number: a string, a bare
# NaN/Infinity, a number, or one of the structural characters (anything else is not reached:
# the decoder found no syntax error before that number).
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|-?Infinity|NaN|'
                    r'-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|[{}\[\]:,]')


def _earlier_problem(text: str) -> JsonError | None:
    """The JSON_PARSE problem that comes before the first number NONFINITE_JSON refused, in
    document order (finding-quality-discovery §2.7 rule 5), or None. The decoder raises on
    a number as it reads it, but finds a name given twice only when its object closes and a
    lone surrogate or too deep a nesting only after the whole text: here the text is walked
    left to right up to that number, by tokens (it has no syntax error before it)."""
    objects: list[set[str] | None] = []  # per open container: names seen, None for arrays
    key = True  # the next string in an object is a member name
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in ("{", "["):
            objects.append(set() if token == "{" else None)
            key = token == "{"
            if len(objects) > MAX_DEPTH:
                return JsonError("JSON_PARSE", DEEP, "NESTED_TOO_DEEP")
        elif token in ("}", "]"):
            objects.pop()
            key = False
        elif token == ",":
            key = bool(objects) and objects[-1] is not None
        elif token == ":":
            key = False
        elif token.startswith('"'):
            string = json.loads(token)
            if has_lone_surrogate(string):
                return JsonError("JSON_PARSE", "a string holds a lone surrogate")
            names = objects[-1] if objects else None
            if key and names is not None:
                if string in names:
                    return _lexical_duplicate(string)
                names.add(string)
        else:
            try:
                LEXICAL_DECODER.decode(token)
            except JsonError:
                return None  # the refused number comes first
    return None


def is_integer(value: Any) -> bool:
    """An integer token (booleans and float-written numbers are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A JSON number (booleans are not)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_scalar(value: Any) -> bool:
    """A JSON string or number."""
    return isinstance(value, str) or is_number(value)


class TooDeep(json.JSONDecodeError):
    """Arrays and objects nested deeper than MAX_DEPTH: a JSONDecodeError (a ValueError),
    so a caller that handles bad JSON handles this too, or names it by its own code."""

    def __init__(self, text: str | bytes) -> None:
        super().__init__(DEEP, text if isinstance(text, str) else "", 0)

    def __str__(self) -> str:
        return DEEP


def shallow(text: str | bytes) -> Any:
    """``json.loads`` of a file a spec names (a JSON Schema, a data file), whose numbers
    and duplicate keys are read as Python reads them (their digests were taken so), but
    nesting deeper than MAX_DEPTH is TooDeep: the C decoder recurses, so a file nested
    3,000 deep was RecursionError (and one nested 900 deep would recurse again in every
    reader after it). The shipped specs' schemas nest at most 13 levels."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(text) from None
    if too_deep(value):
        raise TooDeep(text)
    return value
