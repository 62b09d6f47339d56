"""Canonical bytes (RFC 8785) and their SHA-256: how specgate hashes meaning."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

import rfc8785

_PLAIN = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                          allow_nan=False)


def _plain(value: Any) -> bool:
    """True when the C JSON encoder writes exactly the RFC 8785 bytes: no floats (JCS writes
    numbers the ECMAScript way) and only ASCII keys (JCS sorts keys by UTF-16 units)."""
    if isinstance(value, dict):
        return all(k.isascii() and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return not isinstance(value, float)


def canonical(value: Any) -> bytes:
    """RFC 8785 bytes of a JSON value (the C encoder where it provably agrees)."""
    if _plain(value):
        return _PLAIN.encode(value).encode("utf-8")
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
