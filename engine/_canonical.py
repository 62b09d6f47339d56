"""Canonical bytes (RFC 8785) and their SHA-256: how specgate hashes meaning."""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785


def canonical(value: Any) -> bytes:
    """RFC 8785 bytes of a JSON value."""
    return rfc8785.dumps(value)


def digest(value: Any) -> str:
    """SHA-256 (hex) of the canonical bytes of ``value``."""
    return hashlib.sha256(canonical(value)).hexdigest()
