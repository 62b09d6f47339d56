"""The claim-blind evidence check's text side (discovery protocol §8.2-§8.6).

Segmentation and batching walk document text; the payload carries definitions and segments
only; the validator runs both passes over a checker's response. Nothing here talks to a model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.records.strict_json import is_integer

STATES = ("positive", "negative", "unknown")
TERMINATORS = frozenset(".!?")


def segments(text: str, max_chars: int, split_min: int) -> list[str]:
    """Ordered exact substrings of ``text``: sentences, split at spaces to at most max_chars."""
    out: list[str] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos].isspace():
            pos += 1
        if pos >= n:
            return out
        start, end = pos, n
        for j in range(start + 1, n):
            if text[j] == "\n":
                end = j + 1
                break
            if text[j] in TERMINATORS and (j + 1 == n or text[j + 1].isspace()):
                end = j + 1
                break
        s = start
        while s < end:
            stop = s + max_chars
            if stop < end:
                space = text.rfind(" ", s + split_min, s + max_chars)
                if space != -1:
                    stop = space
            else:
                stop = end
            out.append(text[s:stop])
            s = stop
        pos = end


def batches(doc_ids: list[str], sizes: Mapping[str, int], max_docs: int,
            max_chars: int) -> list[list[str]]:
    """Packet-order batches: a new batch when full or when the next document would overflow."""
    out: list[list[str]] = []
    current: list[str] = []
    total = 0
    for doc_id in doc_ids:
        size = sizes[doc_id]
        if current and (len(current) >= max_docs or total + size > max_chars):
            out.append(current)
            current, total = [], 0
        current.append(doc_id)
        total += size
    if current:
        out.append(current)
    return out


def definitions(findings: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """All definitions in finding then definition order, numbered "0", "1", ..."""
    flat = [d for f in findings for d in f["definitions"]]
    return [{"condition_id": str(i), "inclusion": d["inclusion"], "exclusion": d["exclusion"]}
            for i, d in enumerate(flat)]


def payload(defs: list[dict[str, str]], docs: list[list[str]]) -> dict[str, Any]:
    """The user payload of one batch request (§8.5)."""
    return {"stage": "blind_evidence_check", "definitions": defs,
            "documents": [{"i": i, "segments": [{"s": s, "text": t}
                                                for s, t in enumerate(segs)]}
                          for i, segs in enumerate(docs)],
            "output_contract": {"condition_count": len(defs), "row_length": 1 + 2 * len(defs),
                                "example_row": [0] + ["negative", None] * len(defs)}}


def validate(response: Any, docs: list[list[str]], texts: list[str],
             width: int) -> tuple[list[dict[str, Any]] | None, str]:
    """(per-document states and quotes, '') for a usable response, else (None, why)."""
    if not isinstance(response, dict) or set(response) != {"labels"} or \
            not isinstance(response["labels"], list):
        return None, "the response must be exactly {\"labels\": [...]}"
    parsed: dict[int, tuple[list[str], list[str]]] = {}
    for row in response["labels"]:
        if not isinstance(row, list) or len(row) != 1 + 2 * width:
            return None, f"every row must have length {1 + 2 * width}"
        i = row[0]
        if not is_integer(i) or not 0 <= i < len(docs):
            return None, f"row index {i!r} is not a document of this batch"
        states, quotes = [], []
        for state, seg in zip(row[1::2], row[2::2], strict=True):
            if seg is not None and (not is_integer(seg) or not 0 <= seg < len(docs[i])):
                return None, f"document {i}: segment id {seg!r} does not exist"
            if state == "positive" and seg is None:
                return None, f"document {i}: a positive state needs a segment id"
            states.append(state)
            quotes.append("" if seg is None else docs[i][seg])
        if i in parsed:
            return None, f"document {i} has two rows"
        parsed[i] = (states, quotes)
    if set(parsed) != set(range(len(docs))):
        return None, "the rows must cover every document of the batch exactly once"
    for i, (states, quotes) in parsed.items():
        for state, quote in zip(states, quotes, strict=True):
            if state not in STATES:
                return None, f"document {i}: unknown state {state!r}"
            if state == "positive" and not quote:
                return None, f"document {i}: a positive state needs a non-empty quote"
            if quote and quote not in texts[i]:
                return None, f"document {i}: a quote is not in the text"
    return [{"states": parsed[i][0], "quotes": parsed[i][1]} for i in range(len(docs))], ""
