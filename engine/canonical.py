"""Canonical bytes (RFC 8785) and their SHA-256: how specgate hashes meaning."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import rfc8785

from engine import folders

MAX_INT = 2**53 - 1  # the largest integer RFC 8785 (I-JSON) accepts: a double holds it exactly

_PLAIN = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                          allow_nan=False)
# The C encoder that _PLAIN.encode builds on every call, built once with the same settings.
_ENCODE = json.encoder.c_make_encoder(  # type: ignore[attr-defined]
    {}, _PLAIN.default, json.encoder.encode_basestring, None, ":", ",", True, False, False
) if json.encoder.c_make_encoder is not None else None  # type: ignore[attr-defined]


def _plain(value: Any) -> bool:
    """True when the C JSON encoder writes exactly the RFC 8785 bytes. Keys must be ASCII
    (JCS sorts keys by UTF-16 units). A float must be non-integral with 1e-4 <= |x| < 1e16:
    there Python's repr and ECMAScript's Number::toString both write the shortest
    round-tripping digits, nearest to the value, in plain decimal notation (outside it one
    of them switches to an exponent, and JS writes 3.0 as 3)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is dict:
        for key, item in value.items():
            if not (key.isascii() and _plain(item)):
                return False
        return True
    if kind is list:
        for item in value:
            if not _plain(item):
                return False
        return True
    if kind is float:
        return 1e-4 <= abs(value) < 1e16 and not value.is_integer()
    return False  # anything else takes the reference path (which refuses what isn't JSON)


def plain_bytes(value: dict[str, Any]) -> bytes:
    """The canonical bytes of an object the caller knows ``_plain`` holds for."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return _c_bytes(value)


def _c_bytes(value: Any) -> bytes:
    if _ENCODE is not None and type(value) is dict:
        return "".join(_ENCODE(value, 0)).encode("utf-8")
    return _PLAIN.encode(value).encode("utf-8")


def canonical(value: Any) -> bytes:
    """RFC 8785 bytes of a JSON value (orjson or the C encoder where they provably agree).

    Where ``_plain`` holds, orjson with sorted keys writes the C encoder's bytes: the same
    escapes (two-character forms, else lowercase ``\\u00xx``, for control characters only),
    ASCII keys sorted alike, and floats in the plain range as ``repr`` writes them (outside
    it orjson writes ``1e-6`` for ``1e-06``: the guard keeps those out). What orjson
    refuses (a lone surrogate, an integer beyond 64 bits, nesting past 255 levels) takes the
    C encoder, which fails or succeeds as it always did. Unlike rfc8785, an integer
    beyond 2**53-1 is written as its digits, not refused, as before orjson: no record
    reaches here with one (the readers refuse them, ``parse_jcs`` reads doubles), and
    tests/test_fast_json.py::test_canonical_edges pins it."""
    if _plain(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:
            return _c_bytes(value)
    return rfc8785.dumps(value)


def digest(value: Any) -> str:
    """SHA-256 (hex) of the canonical bytes of ``value``."""
    return hashlib.sha256(canonical(value)).hexdigest()


def digest_list(items: Iterable[Any]) -> str:
    """The digest of a JSON array, built item by item, so each item takes the fastest exact
    path."""
    return digest_joined(canonical(item) for item in items)


def digest_joined(encoded: Iterable[bytes]) -> str:
    """The digest of the JSON array whose items' canonical bytes are ``encoded`` (RFC 8785
    writes an array as its items' canonical bytes joined by commas)."""
    h = hashlib.sha256(b"[")
    for i, data in enumerate(encoded):
        h.update(b"," + data if i else data)
    h.update(b"]")
    return h.hexdigest()


def sha256_path(path: Path) -> str:
    """A file's SHA-256, or for a folder the digest of its files' names and digests."""
    if not path.is_dir():
        return sha256_file(path)
    return manifest_digest(folder_manifest(path))


def file_digests(files: dict[str, Path]) -> dict[str, str]:
    """The SHA-256 of each named file's bytes now, by name ("" when it cannot be read)."""
    out = {}
    for name, path in sorted(files.items()):
        try:
            out[name] = sha256_file(path)
        except OSError:
            out[name] = ""
    return out


def folder_manifest(path: Path) -> list[tuple[str, str]]:
    """Every file under a folder: (its POSIX path relative to the folder, its SHA-256),
    in path order (component by component, as ``sorted`` orders paths)."""
    return [(p.relative_to(path).as_posix(), sha256_file(p))
            for p in folders.paths(path) if p.is_file()]


def manifest_digest(entries: Iterable[tuple[str, str]]) -> str:
    """The digest of a folder from its manifest: one ``NAME NUL SHA256 LF`` line per file,
    in path order (``folder_manifest``), so that a list of names and digests (an
    attestation's subjects) gives the same digest as the folder itself."""
    ordered = sorted(entries, key=lambda entry: entry[0].split("/"))
    lines = "".join(f"{name}\u0000{sha}\n" for name, sha in ordered)
    # a name that is not UTF-8 is digested as the bytes the file system holds
    return hashlib.sha256(lines.encode("utf-8", "surrogateescape")).hexdigest()


def sha256_file(path: Path) -> str:
    """SHA-256 of a file's bytes, streamed."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
