"""The shared framer of the tool logs (engine/records/json_stream.py) and the strict
record decoder around it: bounds that hold for any input, counted, never timed."""

from __future__ import annotations

import io
from typing import Any

import pytest

from engine.records import json_stream
from engine.records.formats import BadRecord, parse_line
from engine.records.json_stream import CHUNK, JsonStream, Stop


class _Counting:
    """A file of ``size`` bytes: ``head``, then digits, then ``tail``, made as read."""

    def __init__(self, head: bytes, size: int, tail: bytes) -> None:
        self.head, self.size, self.tail, self.at = head, size, tail, 0

    def read1(self, n: int) -> bytes:
        return self.read(n)

    def read(self, n: int = -1) -> bytes:
        body = len(self.head) + self.size
        total = body + len(self.tail)
        lo = self.at
        hi = total if n < 0 else min(total, lo + n)
        self.at = hi
        return (self.head[lo:hi]
                + b"7" * max(0, min(hi, body) - max(lo, len(self.head)))
                + self.tail[max(lo - body, 0):max(hi - body, 0)])


def _scans(monkeypatch: Any) -> list[int]:
    calls: list[int] = []
    real = json_stream._end

    def counted(text: str, start: int) -> int:
        calls.append(len(text) - start)
        return real(text, start)
    monkeypatch.setattr(json_stream, "_end", counted)
    return calls


def test_a_long_number_is_framed_in_a_few_scans(monkeypatch: Any) -> None:
    # third review: a number ending where the buffer ended was scanned again after every
    # 64 KiB read (quadratic: 80 MiB of digits took 146 s); now after each doubling
    size = 4 << 20
    calls = _scans(monkeypatch)
    stream = JsonStream(_Counting(b'{"version": 1', size, b', "samples": []}'))
    names = []
    for name in stream.members("in the log"):
        names.append(name)
        stream.text(name)
    assert names == ["version", "samples"]
    # 4 MiB from 64 KiB, doubling: about log2(64) + a few scans, not 64 of them
    assert len(calls) <= 2 * (size // CHUNK).bit_length() + 4, len(calls)


def test_a_number_over_the_cap_stops_before_it_is_read_whole(monkeypatch: Any) -> None:
    monkeypatch.setattr(json_stream, "MAX_VALUE", 1 << 20)
    source = _Counting(b"[1", 64 << 20, b"]")
    stream = JsonStream(source)
    with pytest.raises(Stop) as stopped:
        for _ in stream.items("in the samples"):
            stream.text("a sample")
    assert stopped.value.code == "VALUE_TOO_LARGE"
    assert source.at <= 4 << 20  # a few MiB read of the 64, never the whole number


@pytest.mark.parametrize("space", ["\u00a0", "\u2028", "\x1c", "\u3000"])
def test_only_json_white_space_may_surround_a_record(space: str) -> None:
    # str.strip() took any Unicode white space; JSON has four characters of it
    line = f'{space}{{"id": "a"}}{space}\n'.encode()
    found = parse_line(line, 1)
    assert isinstance(found, BadRecord) and found.code == "INVALID_JSON"
    assert not isinstance(parse_line(b' \t{"id": "a"}\r\n', 1), BadRecord)


def test_the_framed_stream_hashes_what_it_reads() -> None:
    import hashlib
    data = b'{"a": [1, 2, 3], "b": "x"}'
    digest = hashlib.sha256()
    stream = JsonStream(io.BytesIO(data), digest)
    for name in stream.members("at the top"):
        stream.skip(name)
    stream.end()
    stream.drain()
    assert digest.hexdigest() == hashlib.sha256(data).hexdigest()


def test_a_value_crowded_with_arrays_is_refused_before_it_is_built() -> None:
    # sixth review: the framer's scan builds every array: 60 MiB of "[]," in promptfoo's
    # config (a member mapped to nothing) took 1.6 GB; an .eval sample of it, 3.1 GB
    import tracemalloc
    crowd = b'{"config": [' + b"[]," * (2 << 20) + b'[]], "results": 1}'
    tracemalloc.start()
    stream = JsonStream(io.BytesIO(crowd))
    with pytest.raises(Stop) as stopped:
        for name in stream.members("at the top"):
            stream.skip(name)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert stopped.value.code == "VALUE_TOO_LARGE"
    assert peak < 32 << 20  # 2 million lists would be over 100 MB
    # the strict decoder refuses such a record before building it (a JSONL line too)
    found = parse_line(b'{"a": [' + b"[]," * 100_000 + b"[]]}", 1)
    assert isinstance(found, BadRecord) and found.code == "VALUE_TOO_LARGE"
    # and real logs' density (one array or object per 40 bytes and more) is not refused
    assert not isinstance(parse_line(b'{"a": [' + b'{"k": "abcdefghijklmnopqrstuvwxyz"},'
                                     * 100_000 + b"{}]}", 1), BadRecord)


def test_brackets_inside_strings_are_text_not_arrays() -> None:
    # seventh review: a model's answer of 70,000 "[" was counted as 70,000 arrays, and in
    # the .json form the refusal stopped every sample after it
    text = '{"completion": "' + "[" * 140_000 + '", "n": 1}'
    assert not isinstance(parse_line(text.encode(), 1), BadRecord)
    stream = JsonStream(io.BytesIO(b'{"samples": [' + text.encode() + b", " + text.encode()
                                   + b"]}"))
    found = []
    for _ in stream.members("at the top"):
        for index in stream.items("in the samples"):
            found.append(stream.record(index, "a sample"))
    assert [type(f).__name__ for f in found] == ["Record", "Record"]
