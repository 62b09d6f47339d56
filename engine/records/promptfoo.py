"""``promptfoo-results``: the JSON that ``promptfoo eval -o results.json`` writes, one unit
per test result (docs/promptfoo.md).

The file is one JSON document, ``{"evalId": ..., "results": {"version": 3, "prompts": [...],
"results": [RESULT, ...], "stats": {...}}, "config": ...}``. It is streamed: the members
are framed on a sliding buffer and each element of ``results.results`` is decoded on its
own by the strict RECORD decoder, so memory is bounded by the largest result, not the file.

promptfoo numbers results by ``testIdx`` (each repeat of ``--repeat`` and each expanded
combination of vars is its own test index) and ``promptIdx`` (a prompt x provider column),
but writes no repeat index. The unit's ``trial`` is therefore the rank of its ``testIdx``
among the results of the same case, prompt and provider: the file is read twice, the first
pass (which hashes every byte) collecting those ranks, the second yielding the records.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import re
from bisect import bisect_left
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.records.formats import BadRecord, Record
from engine.records.strict_json import (
    DEEP,
    RECORD_DECODER,
    JsonError,
    has_lone_surrogate,
    too_deep,
)

_CHUNK = 1 << 16
_LENIENT = json.JSONDecoder()  # finds where a value ends once the strict one refused it
_SURROGATE = re.compile(r"\\[uU][dD][89a-fA-F]")
_WS = " \t\n\r"


class _Stop(Exception):
    """The document cannot be framed further: a code and a message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class _Stream:
    """A UTF-8 JSON text read in chunks, consumed from the front."""

    def __init__(self, handle: Any, digest: Any) -> None:
        self.handle, self.digest = handle, digest
        self.text = codecs.getincrementaldecoder("utf-8")("strict")
        self.buf, self.pos, self.eof, self.offset = "", 0, False, 0

    def more(self, want: int = _CHUNK) -> bool:
        """Read at least ``want`` more bytes (fewer at the end); False at end of file."""
        if self.eof:
            return False
        if self.pos > _CHUNK:  # drop what was consumed
            self.offset += self.pos
            self.buf, self.pos = self.buf[self.pos:], 0
        raw = self.handle.read(max(want, _CHUNK))
        if self.digest is not None and raw:
            self.digest.update(raw)
        try:
            self.buf += self.text.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            raise _Stop("NOT_UTF8", f"not UTF-8 (near byte {self.offset + exc.start})"
                        ) from None
        if not raw:
            self.eof = True
        return True

    def peek(self) -> str:
        """The next character that is not white space ('' at the end)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def expect(self, chars: str, where: str) -> str:
        char = self.peek()
        if char == "":
            raise _Stop("PROMPTFOO_TRUNCATED", f"the file ends {where}")
        if char not in chars:
            raise _Stop("INVALID_JSON", f"expected {' or '.join(repr(c) for c in chars)} "
                        f"{where}, found {char!r} (character {self.offset + self.pos})")
        self.pos += 1
        return char

    def value(self, where: str) -> tuple[Any, str | None, str]:
        """The next JSON value: (value, None, text) or (None, code, message) when it is
        well-formed JSON the strict decoder refuses (framing goes on after it)."""
        self.peek()
        while True:
            start = self.pos
            try:
                try:
                    data, end = RECORD_DECODER.raw_decode(self.buf, start)
                    refused: tuple[str, str] | None = None
                except JsonError as exc:
                    _, end = _LENIENT.raw_decode(self.buf, start)
                    data, refused = None, (exc.code, str(exc))
                except RecursionError:
                    _, end = _LENIENT.raw_decode(self.buf, start)
                    data, refused = None, ("NESTED_TOO_DEEP", DEEP)
            except RecursionError:
                raise _Stop("NESTED_TOO_DEEP", f"{where}: {DEEP}") from None
            except json.JSONDecodeError as exc:
                near_end = exc.pos >= len(self.buf) - 16 or exc.msg.startswith("Unterminated")
                if near_end and self.more(len(self.buf)):  # the value may go on: read more
                    continue
                if near_end:
                    raise _Stop("PROMPTFOO_TRUNCATED", f"the file ends {where}") from None
                raise _Stop("INVALID_JSON", f"{where}: not JSON: {exc.msg} (character "
                            f"{self.offset + exc.pos})") from None
            except ValueError as exc:  # e.g. an integer of more than 4,300 digits
                raise _Stop("NUMBER_OUT_OF_RANGE", f"{where}: {exc}") from None
            if end == len(self.buf) and self.more():  # a number may go on past the buffer
                continue
            self.pos = end
            if refused is not None:
                return None, refused[0], refused[1]
            text = self.buf[start:end]
            if isinstance(data, dict | list) and too_deep(data):
                return None, "NESTED_TOO_DEEP", DEEP
            if _SURROGATE.search(text) and has_lone_surrogate(data):
                return None, "LONE_SURROGATE", "a string holds a lone UTF-16 surrogate"
            return data, None, text

    def key(self, where: str) -> str:
        if self.peek() != '"':
            self.expect('"', where)
        name, code, message = self.value(where)
        if code is not None or not isinstance(name, str):
            raise _Stop(code or "INVALID_JSON", f"{where}: {message}")
        self.expect(":", f"after the member name {name[:40]!r}")
        return name


def _members(stream: _Stream, where: str) -> Iterator[str]:
    """The member names of the object that starts next; the caller consumes each value.
    A name that appears twice is refused, as the strict decoder would."""
    stream.expect("{", where)
    seen: set[str] = set()
    if stream.peek() == "}":
        stream.pos += 1
        return
    while True:
        name = stream.key(where)
        if name in seen:
            raise _Stop("DUPLICATE_KEY", f"{where}: key '{name[:40]}' appears twice")
        seen.add(name)
        yield name
        if stream.expect(",}", f"{where}, after the member {name[:40]!r}") == "}":
            return


def _skip(stream: _Stream, where: str) -> None:
    _, code, message = stream.value(where)
    if code is not None:
        raise _Stop(code, f"{where}: {message}")


Element = tuple[int, Any, str | None, str]  # (1-based index, value, code, message)


def _elements(stream: _Stream) -> Iterator[Element]:
    """Each element of ``results.results``, then the rest of the document checked; a
    problem that stops the framing is raised as ``_Stop``."""
    found = False
    for name in _members(stream, "at the top level"):
        if name != "results":
            _skip(stream, f"in the top-level member {name[:40]!r}")
            continue
        if stream.peek() != "{":
            raise _Stop("PROMPTFOO_NOT_RESULTS", "'results' is not an object holding the "
                        "results list (write it with promptfoo eval -o results.json)")
        for inner in _members(stream, "in 'results'"):
            if inner != "results":
                _skip(stream, f"in results.{inner[:40]}")
                continue
            if stream.peek() != "[":
                raise _Stop("PROMPTFOO_NOT_RESULTS", "results.results is not a list")
            found = True
            stream.pos += 1
            index = 0
            if stream.peek() == "]":
                stream.pos += 1
                continue
            while True:
                index += 1
                where = f"in result {index}"
                value, code, message = stream.value(where)
                yield index, value, code, message
                if stream.expect(",]", f"after result {index}") == "]":
                    break
    if stream.peek() != "":
        raise _Stop("INVALID_JSON", "extra data after the JSON document")
    if not found:
        raise _Stop("PROMPTFOO_NOT_RESULTS", "no results.results list: not the JSON of "
                    "promptfoo eval -o results.json")


def _frame(path: Path, digest: Any) -> Iterator[Element]:
    """Every element, a framing problem as a last element with index -1."""
    count = 0
    with path.open("rb") as handle:
        stream = _Stream(handle, digest)
        try:
            head = handle.peek(3)[:3] if hasattr(handle, "peek") else b""
            if head == b"\xef\xbb\xbf":
                raise _Stop("BYTE_ORDER_MARK", "the file starts with a byte-order mark")
            for element in _elements(stream):
                count = element[0]
                yield element
        except _Stop as stop:
            yield -(count + 1), None, stop.code, str(stop)
        finally:
            if digest is not None:  # every byte of the file is hashed, even after a stop
                while block := handle.read(_CHUNK):
                    digest.update(block)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any) -> int | float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _case(result: dict[str, Any]) -> str:
    """The test case: its description, else a digest of its vars."""
    test = result.get("testCase")
    test = test if isinstance(test, dict) else {}
    description = test.get("description")
    if isinstance(description, str) and description:
        return description
    meta = test.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("testCaseId"), str) and \
            meta["testCaseId"]:
        return str(meta["testCaseId"])
    vars_ = json.dumps(result.get("vars"), sort_keys=True, ensure_ascii=True)
    return "vars-" + hashlib.sha256(vars_.encode()).hexdigest()[:16]


def _provider(result: dict[str, Any]) -> tuple[str | None, str | None]:
    provider = result.get("provider")
    if isinstance(provider, str):
        return provider, None
    if isinstance(provider, dict):
        return _text(provider.get("id")), _text(provider.get("label")) or None
    return None, None


def _problem(result: Any) -> tuple[str, str] | None:
    if not isinstance(result, dict):
        return "NOT_AN_OBJECT", "a result must be a JSON object"
    for name, kind in (("testIdx", "an integer"), ("promptIdx", "an integer"),
                       ("success", "true or false")):
        value = result.get(name)
        if name not in result:
            return "PROMPTFOO_FIELD", f"the result has no '{name}'"
        ok = isinstance(value, bool) if name == "success" else \
            isinstance(value, int) and not isinstance(value, bool) and value >= 0
        if not ok:
            return "PROMPTFOO_FIELD", f"'{name}' must be {kind}"
    return None


def _group(result: dict[str, Any]) -> tuple[str, int, str | None]:
    return _case(result), result["promptIdx"], _provider(result)[0]


def _tokens(usage: Any) -> dict[str, Any] | None:
    if not isinstance(usage, dict):
        return None
    names = {"prompt": "prompt", "completion": "completion", "total": "total",
             "cached": "cached", "numRequests": "num_requests"}
    return {ours: usage[theirs] for theirs, ours in names.items() if theirs in usage}


def _assertion(component: Any) -> dict[str, Any]:
    if not isinstance(component, dict):
        return {"type": None, "pass": None, "score": None, "reason": None}
    assertion = component.get("assertion")
    assertion = assertion if isinstance(assertion, dict) else {}
    out = {"type": _text(assertion.get("type")), "value": assertion.get("value"),
           "metric": assertion.get("metric"),
           "pass": component.get("pass") if isinstance(component.get("pass"), bool) else None,
           "score": _number(component.get("score")), "reason": component.get("reason")}
    return out


def unit(result: dict[str, Any], trial: int) -> dict[str, Any]:
    """One promptfoo result as a unit record (the mapping docs/promptfoo.md tabulates)."""
    test_idx, prompt_idx = result["testIdx"], result["promptIdx"]
    provider, provider_label = _provider(result)
    prompt = result.get("prompt")
    prompt = prompt if isinstance(prompt, dict) else {}
    response = result.get("response")
    response = response if isinstance(response, dict) else {}
    grading = result.get("gradingResult")
    grading = grading if isinstance(grading, dict) else {}
    components = grading.get("componentResults")
    assertions = [_assertion(c) for c in components] if isinstance(components, list) else []
    test = result.get("testCase")
    test = test if isinstance(test, dict) else {}
    return {
        "id": f"test-{test_idx}-prompt-{prompt_idx}",
        "case_id": _case(result),
        "trial": trial,
        "result_id": result.get("id"),
        "test_index": test_idx,
        "prompt_index": prompt_idx,
        "description": _text(test.get("description")),
        "provider": provider,
        "provider_label": provider_label,
        "prompt": prompt.get("raw"),
        "prompt_label": prompt.get("label"),
        "vars": result.get("vars"),
        "output": response.get("output"),
        "error": result.get("error"),
        "success": result["success"],
        "score": result.get("score"),
        "failure_reason": result.get("failureReason"),
        "latency_ms": result.get("latencyMs"),
        "cost": result.get("cost"),
        "cached": response.get("cached"),
        "tokens": _tokens(result.get("tokenUsage")),
        "named_scores": result.get("namedScores"),
        "grading": {"pass": grading.get("pass"), "score": grading.get("score"),
                    "reason": grading.get("reason")} if grading else None,
        "assertions": assertions,
        "assertions_passed": sum(1 for a in assertions if a["pass"] is True),
        "assertions_failed": sum(1 for a in assertions if a["pass"] is False),
    }


def read(path: Path, digest: Any = None) -> Iterator[Record | BadRecord]:
    """The units of a promptfoo results file, one per result, in file order."""
    ranks: dict[tuple[str, int, str | None], list[int]] = {}
    for _, value, code, _ in _frame(path, digest):  # first pass: hashes, collects ranks
        if code is None and _problem(value) is None:
            ranks.setdefault(_group(value), []).append(value["testIdx"])
    for group, indexes in ranks.items():  # a copied result (DUPLICATE_ID) takes no rank
        ranks[group] = sorted(set(indexes))
    seen: set[tuple[int, int]] = set()
    for index, value, code, message in _frame(path, None):
        if code is not None:
            yield BadRecord(abs(index), code, message)
            continue
        problem = _problem(value)
        if problem is not None:
            yield BadRecord(index, *problem)
            continue
        pair = value["testIdx"], value["promptIdx"]
        if pair in seen:  # one result per test and prompt: a copy must not count twice
            yield BadRecord(index, "DUPLICATE_ID", f"a second result for testIdx {pair[0]}, "
                            f"promptIdx {pair[1]}")
            continue
        seen.add(pair)
        taken = ranks.get(_group(value), [])
        trial = bisect_left(taken, value["testIdx"]) + 1
        yield Record(index, unit(value, trial))
