"""orjson's fast reader and writer give exactly what the strict reader and canonical() give
(issue 40): the strict reader is the reference.

Every line of every record fixture, a hostile set (each thing orjson accepts that the RECORD
rules refuse, and each thing it writes back differently), and hypothesis-drawn values and
bytes go through ``decode_value`` (orjson first) and ``strict_value`` (the strict reader
alone); both must give the same value, of the same Python types in the same order, and the
same plain flag, or the same code and message. ``canonical`` is compared with the C encoder
it replaced and with rfc8785 on the same values.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import orjson
import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.canonical import _PLAIN, MAX_INT, _plain, canonical, plain_bytes
from engine.records.formats import parse_line
from engine.records.strict_json import (
    MAX_DEPTH,
    JsonError,
    _fast,
    decode_value,
    strict_value,
)

ROOT = Path(__file__).resolve().parents[1]
PROFILE = settings(max_examples=500, derandomize=True, deadline=None)
FIXTURES = sorted(p for folder in ("tests/data", "tests/parity")
                  for p in (ROOT / folder).rglob("*") if p.suffix in (".jsonl", ".json"))


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types, members in the same order (-0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


def _outcome(read: Any, raw: bytes) -> tuple[Any, ...]:
    try:
        data, plain = read(raw)
    except JsonError as exc:
        return ("refused", exc.code, exc.record_code, str(exc))
    return ("read", data, plain)


def _agree(raw: bytes) -> tuple[Any, ...]:
    fast, strict = _outcome(decode_value, raw), _outcome(strict_value, raw)
    if strict[0] == "refused":
        assert fast == strict, raw[:200]
    else:
        assert fast[0] == "read" and _same(fast[1], strict[1]) and fast[2] == strict[2], \
            raw[:200]
    return strict


def _old_canonical(value: Any) -> bytes:
    """canonical() before orjson: the C encoder where ``_plain`` holds, else rfc8785."""
    if _plain(value):
        return _PLAIN.encode(value).encode("utf-8")
    return rfc8785.dumps(value)


def test_the_fixtures_are_found() -> None:
    assert sum(p.suffix == ".jsonl" for p in FIXTURES) >= 50


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_fixture_reads_alike(path: Path) -> None:
    data = path.read_bytes()
    lines = data.splitlines(keepends=True) if path.suffix == ".jsonl" else [data]
    for raw in lines:
        if not raw.strip():
            continue
        got = _agree(raw)
        if got[0] == "read":
            assert canonical(got[1]) == _old_canonical(got[1])


def _nest(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


# (line, the strict reader's record code or None when it reads the line)
HOSTILE = {
    "duplicate name (orjson keeps the last)": (b'{"a":1,"a":2}\n', "DUPLICATE_KEY"),
    "duplicate name, nested": (b'{"x":{"a":1,"b":2,"a":1}}', "DUPLICATE_KEY"),
    "duplicate name, same value": (b'{"a":1,"a":1}', "DUPLICATE_KEY"),
    "duplicate name, json.dumps form": (b'{"a": 1, "a": 2}', "DUPLICATE_KEY"),
    "duplicate name hidden in a string's commas": (b'{"a": "x, \\"a\\": 1", "a": "x"}',
                                                   "DUPLICATE_KEY"),
    "two spaces after a comma": (b'{"a": 1,  "b": 2}', None),
    "NaN": (b'{"a":NaN}', "NON_FINITE_NUMBER"),
    "Infinity": (b'{"a":-Infinity}', "NON_FINITE_NUMBER"),
    "overflowing exponent": (b'{"a":1e400}', "NON_FINITE_NUMBER"),
    "three-digit exponent": (b'{"a":1e300}', None),
    "lone high surrogate": (b'{"a":"\\ud800"}', "LONE_SURROGATE"),
    "lone low surrogate": (b'{"a":"x\\udc00y"}', "LONE_SURROGATE"),
    "lone surrogate in a name": (b'{"\\udbff":1}', "LONE_SURROGATE"),
    "surrogate pair escaped": (b'{"a":"\\ud83d\\ude00"}', None),
    "2**53 (16 digits)": (b'{"a":9007199254740992}', "NUMBER_OUT_OF_RANGE"),
    "-2**53": (b'{"a":-9007199254740992}', "NUMBER_OUT_OF_RANGE"),
    "2**53-1 (16 digits, allowed)": (b'{"a":9007199254740991}', None),
    "2**63 (orjson reads it as an integer)": (b'{"a":9223372036854775808}',
                                             "NUMBER_OUT_OF_RANGE"),
    "2**64 (orjson reads it as a float)": (b'{"a":18446744073709551616}',
                                          "NUMBER_OUT_OF_RANGE"),
    "16 significant digits in a float": (b'{"a":0.1234567890123456}', None),
    "1.0e2": (b'{"a":1.0e2}', None),
    "1E2": (b'{"a":1E2}', None),
    "1e2": (b'{"a":1e2}', None),
    "-0": (b'{"a":-0}', None),
    "1.10": (b'{"a":1.10}', None),
    "escaped slash": (b'{"a":"\\/"}', None),
    "escaped non-ASCII": (b'{"a":"\\u00e9"}', None),
    "escaped control character written short": (b'{"a":"\\u000a"}', None),
    "not UTF-8": (b'{"a":"\xff"}', "NOT_UTF8"),
    "UTF-8 of a surrogate": (b'{"a":"\xed\xa0\x80"}', "NOT_UTF8"),
    "byte-order mark": (b'\xef\xbb\xbf{"a":1}', "INVALID_JSON"),
    "white space unlike json.dumps": (b'{"a" : 1}', None),
    "json.dumps form with escaped non-ASCII": (b'{"a": "\\u00e9", "b": 1}', None),
    "extra data": (b'{"a":1} {"b":2}', "INVALID_JSON"),
    "trailing comma": (b'{"a":1,}', "INVALID_JSON"),
    "empty": (b"\n", "INVALID_JSON"),
    f"nested {MAX_DEPTH + 1} deep (orjson reads 1,024)": (_nest(MAX_DEPTH + 1),
                                                          "NESTED_TOO_DEEP"),
    "nested 300 deep (orjson writes 255)": (_nest(300), "NESTED_TOO_DEEP"),
    "nested 2,000 deep": (_nest(2000), "NESTED_TOO_DEEP"),
    "too many containers": (b"[" + b"[]," * 70_000 + b"[]]", "VALUE_TOO_LARGE"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_lines_take_the_strict_reader(name: str) -> None:
    raw, code = HOSTILE[name]
    assert _fast(raw) is None  # orjson does not decide this line
    got = _agree(raw)
    if code is None:
        assert got[0] == "read"
    else:
        assert got[:3] == ("refused", got[1], code)
        bad = parse_line(raw, 2)
        assert getattr(bad, "code", None) == code


def test_orjson_accepts_what_the_hostile_lines_are_about() -> None:
    """The fallbacks are needed: orjson on its own reads these."""
    assert orjson.loads(b'{"a":1,"a":2}') == {"a": 2}
    assert orjson.loads(b'{"a":9223372036854775808}') == {"a": 2**63}
    assert orjson.loads(_nest(300)) is not None
    assert orjson.loads(b"[" + b"[]," * 70_000 + b"[]]") is not None


TAKEN = [b'{"a":25,"b":25.0,"c":-0.0,"d":1e+16,"e":true,"f":null}\n',
         b'  {"a":"\\n\\t\\u0000\\"\\\\","\xc3\xa9":[{}]} \r\n',
         b'{"a":0.00001,"b":1e-7}', _nest(MAX_DEPTH), b"25", b'"x"',
         b'{"a": "\xc3\xa9", "b": [1, 2.5, -0.0], "c": {"d": "x, y: z"}}\n']


@pytest.mark.parametrize("raw", TAKEN)
def test_plain_lines_take_orjson_and_keep_their_types(raw: bytes) -> None:
    fast = _fast(raw)
    assert fast is not None
    assert _same(fast[0], strict_value(raw)[0]) and fast[1] == strict_value(raw)[1]
    if raw.startswith(b'{"a":25'):
        assert type(fast[0]["a"]) is int and type(fast[0]["b"]) is float


names = st.text(max_size=6) | st.sampled_from(["a", "b", "é", "\u2028", "\x00", "k\"\\"])
scalars = (st.none() | st.booleans()
           | st.integers(-MAX_INT - 2, MAX_INT + 2) | st.integers(-2**65, 2**65)
           | st.floats(allow_nan=False, allow_infinity=False)
           | st.floats(1e-6, 1e17) | st.sampled_from([0.0, -0.0, 25.0, 1e16, 1e-4, 5e-324])
           | st.text(max_size=10))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(names, inner, max_size=4), max_leaves=25)


def _lines(value: Any) -> list[bytes]:
    out = [json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace"),
           json.dumps(value).encode(), json.dumps({"v": value}, indent=1).encode()]
    try:
        out.append(orjson.dumps(value))
    except orjson.JSONEncodeError:
        pass
    return out


@PROFILE
@given(values)
def test_drawn_values_read_alike(value: Any) -> None:
    for raw in _lines(value):
        _agree(raw)
        _agree(raw + b"\n")


@PROFILE
@given(st.lists(st.tuples(st.sampled_from(['"a"', '"b"', '"\\u0061"', '"\\ud800"', '"é"']),
                          st.sampled_from(["1", "1.0", "-0", "1e2", "NaN", '"x, y"', '": "',
                                           '"x"', "[]", "{}", "12345678901234567",
                                           "9007199254740991"])),
                max_size=5))
def test_drawn_objects_with_repeated_names_read_alike(members: list[tuple[str, str]]) -> None:
    for comma, colon in ((",", ":"), (", ", ": "), (",", ": ")):
        _agree(("{" + comma.join(f"{k}{colon}{v}" for k, v in members) + "}").encode())


@PROFILE
@given(values, st.data())
def test_drawn_bytes_read_alike(value: Any, data: st.DataObject) -> None:
    """A valid line with a few bytes changed, cut or inserted."""
    raw = bytearray(_lines(value)[0])
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.integers(0, len(raw)))
        byte = data.draw(st.sampled_from(b'"\\{}[],:0-.eE \xff\xc3\xef\x00'))
        action = data.draw(st.sampled_from(["insert", "replace", "delete"]))
        if action == "insert" or where == len(raw):
            raw.insert(where, byte)
        elif action == "replace":
            raw[where] = byte
        else:
            del raw[where]
    _agree(bytes(raw))


@PROFILE
@given(st.binary(max_size=40))
def test_drawn_binary_reads_alike(raw: bytes) -> None:
    _agree(raw)


@PROFILE
@given(values)
def test_canonical_bytes_unchanged(value: Any) -> None:
    record = {"v": value, "w": [value]}
    for item in (value, record):
        try:
            old = _old_canonical(item)
        except (TypeError, ValueError, rfc8785.CanonicalizationError) as exc:
            with pytest.raises(type(exc)):
                canonical(item)
            continue
        assert canonical(item) == old
        if _plain(item) and type(item) is dict:
            assert plain_bytes(item) == old


@settings(max_examples=3000, derandomize=True, deadline=None)
@given(st.floats(1e-4, 1e16, exclude_max=True) | st.floats(-1e16, -1e-4, exclude_min=True))
def test_plain_floats_written_as_rfc8785_writes_them(x: float) -> None:
    assert canonical({"x": x}) == rfc8785.dumps({"x": x})


@pytest.mark.parametrize("value", [{"a": 2**70}, {"a": -(2**64)}, {"a": "\u2028\x7f"},
                                   {"a": 1e-5}, {"a": 25.0}, {"b": 1, "a": {"d": 0.5, "c": 1}},
                                   [[[0.25]]], "x", 3])
def test_canonical_edges(value: Any) -> None:
    assert canonical(value) == _old_canonical(value)


def test_canonical_refuses_a_lone_surrogate_as_before() -> None:
    with pytest.raises(UnicodeEncodeError):
        canonical({"a": "\ud800"})
    with pytest.raises(UnicodeEncodeError):
        plain_bytes({"a": "\ud800"})


def test_held_canonical_rows_take_their_own_size_not_orjsons_buffer() -> None:
    """orjson's bytes keep the allocation they were written into (about 4 KiB), so a
    SortedDigest holding 50,000 suite rows of 150 bytes grew a run by 200 MB at 100k
    records until it kept copies of their own size. Measured in a fresh process: the peak
    resident size it adds (a resource bound, not a timing)."""
    import subprocess
    import sys

    script = (
        "import resource\n"
        "from engine.decide.sorted_digest import SortedDigest\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "held = SortedDigest(chunk=10**9)\n"
        "for i in range(50_000):\n"
        "    held.add(str(i), {'id': f'c{i}-t0', 'dimension': 'pii', 'case_id': f'c{i}',"
        " 'input': 'x' * 80}, plain=True)\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)\n")
    grown = int(subprocess.run([sys.executable, "-c", script], check=True, text=True,
                               capture_output=True).stdout)
    assert grown < 60, f"{grown} MB for 50,000 rows of about 150 bytes"
