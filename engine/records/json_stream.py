"""One JSON document framed value by value from a file, never loaded whole: the framer the
logs of evaluation tools share (inspect_ai's ``.json``, promptfoo's results, a
pretty-printed OTLP export).

The reader walks the document's structure here (``members``, ``items``) and takes each
value it wants as text (``text``), framed by a lenient scan that converts nothing; the
value is then decoded by the one strict record reader (``value``, or ``record`` for an
element that is a unit, as a JSONL line is). A value the strict reader refuses is a
problem of that value alone: framing goes on after it. A value the reader maps nothing
from (``skip``) is framed but not decoded.

Every byte read goes through ``digest``. A value still open at the end of the buffer is
re-scanned only after at least as many new bytes as it already holds arrive, so framing
is linear in the value's size; one value may hold at most ``MAX_VALUE`` characters
(``VALUE_TOO_LARGE``). Line numbers are counted as the buffer slides, once per byte.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import Any

from engine.records.formats import BadRecord, Record, parse_line
from engine.records.strict_json import (
    CONTAINERS_FLOOR,
    DEEP,
    JsonError,
    decode_value,
    too_many_containers,
)

CHUNK = 1 << 16
MAX_VALUE = 64 << 20  # characters of one framed value (a sample, a result, a span)
_NOT_WS = re.compile(r"[^ \t\n\r]")


def _nothing(*_: Any) -> None:
    return None


# find where a value ends, building no object, only arrays (the strict reader decides what
# the value is): the first lets the C scanner read numbers, the second, for a text holding
# an integer of more than 4,300 digits (which int() refuses), converts none
_SCAN = json.JSONDecoder(parse_constant=_nothing, object_pairs_hook=_nothing)
_SCAN_NO_NUMBERS = json.JSONDecoder(parse_int=_nothing, parse_float=_nothing,
                                    parse_constant=_nothing, object_pairs_hook=_nothing)


def _end(text: str, start: int) -> int:
    """Where the JSON value starting at ``start`` ends (JSONDecodeError if it does not)."""
    try:
        return int(_SCAN.raw_decode(text, start)[1])
    except json.JSONDecodeError:
        raise
    except ValueError:  # int() of a 5,000-digit token: not an error of the framing
        return int(_SCAN_NO_NUMBERS.raw_decode(text, start)[1])


class Stop(Exception):
    """The document cannot be framed further: ``code`` and a located message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class JsonStream:
    """A sliding window over a UTF-8 JSON text read from ``handle`` (``head``: bytes
    already read from it). ``truncated`` is the code for a text that ends early;
    ``first_line`` the line ``head`` starts on (blank lines the caller dropped)."""

    def __init__(self, handle: Any, digest: Any = None, head: bytes = b"",
                 truncated: str = "INVALID_JSON", first_line: int = 1) -> None:
        self.handle, self.digest, self.truncated = handle, digest, truncated
        self.utf8 = codecs.getincrementaldecoder("utf-8")()  # a character may straddle reads
        self.buf, self.pos, self.eof, self.read_bytes = "", 0, False, 0
        self._line, self._counted = first_line, 0  # the line number at buf[_counted]
        self._read1 = getattr(handle, "read1", handle.read)  # what a pipe has now
        self._head = head  # fed on the first read, where a refusal of it is caught

    # --- the window -------------------------------------------------------------------

    def _feed(self, raw: bytes) -> None:
        if self.digest is not None and raw:
            self.digest.update(raw)
        if self.read_bytes == 0 and raw.startswith(b"\xef\xbb\xbf"):
            raise Stop("BYTE_ORDER_MARK", "the file starts with a byte-order mark")
        try:
            self.buf += self.utf8.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            raise Stop("NOT_UTF8", f"not UTF-8 (near byte {self.read_bytes + exc.start})"
                       ) from None
        self.read_bytes += len(raw)

    def more(self, want: int = 1) -> bool:
        """Read until at least ``want`` more bytes came (fewer at the end of the file);
        False when nothing more is there."""
        if self.eof:
            return False
        if self.pos:  # drop what is consumed, counting its lines first
            self.line_at()
            self.buf, self.pos, self._counted = self.buf[self.pos:], 0, 0
        got = 0
        while got < want:
            raw, self._head = self._head or self._read1(max(CHUNK, want - got)), b""
            self._feed(raw)
            if not raw:
                self.eof = True
                return got > 0
            got += len(raw)
        return True

    def line_at(self) -> int:
        """The line the next value starts on (1-based)."""
        self._line += self.buf.count("\n", self._counted, self.pos)
        self._counted = self.pos
        return self._line

    def drain(self) -> None:
        """Hash the rest of the file: a refused document is still bound whole."""
        if self.digest is None:
            return
        while block := self.handle.read(CHUNK):
            self.digest.update(block)

    # --- structure --------------------------------------------------------------------

    def peek(self) -> str:
        """The next character that is not white space ('' at the end); not consumed."""
        while True:
            found = _NOT_WS.search(self.buf, self.pos)
            if found:
                self.pos = found.start()
                return self.buf[self.pos]
            self.pos = len(self.buf)
            if not self.more():
                return ""

    def expect(self, chars: str, where: str) -> str:
        """Consume one of ``chars`` as the next character."""
        found = self.peek()
        if not found:
            raise Stop(self.truncated, f"the file ends {where} (truncated)")
        if found not in chars:
            raise Stop("INVALID_JSON", f"expected {' or '.join(map(repr, chars))} {where}, "
                       f"found {found!r} (line {self.line_at()})")
        self.pos += 1
        return found

    def members(self, where: str) -> Iterator[str]:
        """The member names of the object that starts next, positioned before each value
        (which the caller consumes). A name given twice is refused, as the strict reader
        refuses it."""
        self.expect("{", where)
        if self.peek() == "}":
            self.pos += 1
            return
        seen: set[str] = set()
        while True:
            if self.peek() != '"':
                self.expect('"', f"{where}, for a member name")
            name = self.value(where)
            if name in seen:
                raise Stop("DUPLICATE_KEY", f"{where}: key '{str(name)[:40]}' appears twice")
            seen.add(name)
            self.expect(":", f"{where}, after the member name {name[:40]!r}")
            yield name
            if self.expect(",}", f"{where}, after the member {name[:40]!r}") == "}":
                return

    def items(self, where: str) -> Iterator[int]:
        """The 1-based index of each element of the array that starts next, positioned
        before it (the caller consumes it)."""
        self.expect("[", where)
        if self.peek() == "]":
            self.pos += 1
            return
        index = 0
        while True:
            index += 1
            yield index
            if self.expect(",]", f"{where}, after element {index}") == "]":
                return

    def end(self, code: str = "INVALID_JSON") -> None:
        """Nothing but white space may follow the document (else ``code``)."""
        if self.peek():
            raise Stop(code, "extra data after the JSON document "
                       f"(line {self.line_at()})")

    # --- values -----------------------------------------------------------------------

    def text(self, where: str) -> str:
        """The JSON text of the next value, framed but not yet decoded."""
        if not self.peek():
            raise Stop(self.truncated, f"the file ends {where} (truncated)")
        while True:
            try:
                end = _end(self.buf, self.pos)
            except RecursionError:
                raise Stop("NESTED_TOO_DEEP", f"{where}: {DEEP}") from None
            except json.JSONDecodeError as exc:
                held = len(self.buf) - self.pos
                open_ = exc.msg.startswith("Unterminated") or exc.pos >= len(self.buf) - 16
                if open_ and held > MAX_VALUE:
                    raise Stop("VALUE_TOO_LARGE", f"{where}: a value larger than "
                               f"{MAX_VALUE >> 20} MiB (line {self.line_at()})") from None
                # a large value is scanned again only once the window has doubled (linear
                # in its size); a small one as soon as a read gives more (a pipe's writer
                # may wait for this value to be read before it writes the next)
                if open_ and self.more(held if held >= CHUNK else 1):
                    self._uncrowded(where)
                    continue
                if open_:
                    raise Stop(self.truncated, f"the file ends inside a value {where} "
                               "(truncated)") from None
                raise Stop("INVALID_JSON", f"{where}: not JSON: {exc.msg} (line "
                           f"{self.line_at() + exc.doc.count(chr(10), self.pos, exc.pos)})"
                           ) from None
            held = end - self.pos
            if held > MAX_VALUE:
                raise Stop("VALUE_TOO_LARGE", f"{where}: a value larger than "
                           f"{MAX_VALUE >> 20} MiB (line {self.line_at()})")
            # a number ending with the buffer may go on in the next read: scanned again
            # once the window has doubled, as an open value is (linear in its size)
            if end == len(self.buf) and self.more(held if held >= CHUNK else 1):
                self._uncrowded(where)
                continue
            text = self.buf[self.pos:end]
            self.pos = end
            return text

    def _uncrowded(self, where: str) -> None:
        """Before an open value is scanned again: a scan builds every array it frames, so
        a value crowded with them (``too_many_containers``) is refused unbuilt. Checked
        only here, where the window has doubled: linear in the value's size."""
        brackets = self.buf.count("[", self.pos) + self.buf.count("{", self.pos)
        if brackets <= CONTAINERS_FLOOR:  # the common case: no copy of the window
            return
        crowded = too_many_containers(self.buf[self.pos:], brackets)
        if crowded is not None:
            raise Stop("VALUE_TOO_LARGE", f"{where}: {crowded} (line {self.line_at()})")

    def value(self, where: str) -> Any:
        """The next value, decoded by the strict record reader; a refusal stops framing."""
        try:
            return decode_value(self.text(where).encode("utf-8"))[0]
        except JsonError as exc:
            raise Stop(exc.record_code, f"{where}: {exc}") from None

    def skip(self, where: str) -> None:
        """The next value, framed and dropped: a part of the document the reader maps
        nothing from must be JSON, but is not decoded (nothing of it reaches a record, so
        a number Node wrote beyond 2**53 in promptfoo's config refuses nothing)."""
        self.text(where)

    def record(self, line: int, where: str) -> Record | BadRecord:
        """The next value as a unit record (an object), as a JSONL line is read; a
        refusal is this value's problem and framing goes on."""
        return parse_line(self.text(where).encode("utf-8"), line)
