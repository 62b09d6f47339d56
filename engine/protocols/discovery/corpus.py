"""Corpus loading, metadata access, strict dates and value semantics (§2.2, §2.3)."""

from __future__ import annotations

import gzip
import hashlib
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from engine.records.strict_json import JsonError, is_number, loads

MISSING: Any = object()
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class LoadError(ValueError):
    """A task or corpus that cannot be loaded: ``code`` is one of §4.3."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Corpus:
    """The documents of one task, in corpus (line) order."""

    ids: list[str]
    rows: dict[str, dict[str, Any]]
    sha256: str


def strict_date(value: Any) -> date | None:
    """The date of the first 10 code points when they are exactly YYYY-MM-DD, else None."""
    if not isinstance(value, str) or len(value) < 10 or not _DATE.fullmatch(value[:10]):
        return None
    try:
        found = date(int(value[:4]), int(value[5:7]), int(value[8:10]))
    except ValueError:
        return None
    return found if found.year >= 1 else None


def meta(doc: dict[str, Any], field: str) -> Any:
    """A document's metadata value, or MISSING (absent or null); report_year is derived."""
    if field == "report_year":
        day = strict_date(doc.get("timestamp"))
        return MISSING if day is None else day.year
    value = doc.get(field)
    return MISSING if value is None else value


def equal(a: Any, b: Any) -> bool:
    """Strings by code points, numbers by value; a string never equals a number; booleans,
    arrays and objects equal nothing."""
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if is_number(a) and is_number(b):
        return bool(a == b)
    return False


def ordered(a: Any, b: Any) -> bool:
    """True when a and b can be compared: both numbers, or both strings."""
    return (is_number(a) and is_number(b)) or (isinstance(a, str) and isinstance(b, str))


def load_corpus(path: Path, sha256: str, n_documents: int) -> Corpus:
    """Load and verify a corpus file (gzip or plain JSON Lines), in the order of §2.2."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise LoadError("CORPUS_CHECKSUM", f"{path.name}: {exc.strerror}") from None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != sha256:
        raise LoadError("CORPUS_CHECKSUM", f"{path.name}: sha256 {digest} differs from the "
                        f"task's corpus_sha256 {sha256}")
    try:
        text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise LoadError("CORPUS_ROW", f"{path.name}: unreadable ({exc})") from None
    ids: list[str] = []
    rows: dict[str, dict[str, Any]] = {}
    duplicate = None
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = loads(line)
        except JsonError as exc:
            raise LoadError("CORPUS_ROW", f"{path.name}:{number}: {exc}") from None
        if not isinstance(row, dict) or not isinstance(row.get("doc_id"), str) or \
                not isinstance(row.get("text"), str):
            raise LoadError("CORPUS_ROW", f"{path.name}:{number}: a row needs a string doc_id "
                            "and a string text")
        if row["doc_id"] in rows and duplicate is None:
            duplicate = (number, row["doc_id"])
        ids.append(row["doc_id"])
        rows[row["doc_id"]] = row
    if len(ids) != n_documents:
        raise LoadError("CORPUS_LINE_COUNT", f"{path.name}: {len(ids)} rows, the task says "
                        f"{n_documents}")
    if duplicate is not None:
        raise LoadError("CORPUS_DUPLICATE_ID", f"{path.name}:{duplicate[0]}: doc_id "
                        f"{duplicate[1]!r} appears twice")
    return Corpus(ids, rows, digest)
