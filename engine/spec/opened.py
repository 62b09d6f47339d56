"""Which files loading an Evaluation opened: the subjects of a governance-signed spec
bundle (engine/evidence/provenance.py, docs/provenance.md).

Nothing is listed by hand. While ``recording()`` is active, a Python audit hook (PEP 578)
sees every file the process opens (``open``, ``os.open``, ``Path.read_bytes``, a rubric,
a detector, a protocol's prompt) and adds its resolved path to every active recording.
The loader memoises documents and compiled policies; a cache hit replays the paths its
first computation opened (``replay``), so each Evaluation gets the whole set even when it
shares a policy with another. The hook is installed on first use, does nothing while no
recording is active, and can never raise into the code that opened the file.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

Identity = tuple[int, int, int, int, int] | None  # device, inode, size, ctime, mtime (ns)


@dataclass
class Opened:
    """What one recording saw: each path opened with the identities it had just before
    (``ids``), and, for files read through ``read_bytes``, the SHA-256 of every read's
    bytes (``shas``): the digest of what was loaded, not of a later read."""

    ids: dict[str, set[Identity]] = field(default_factory=dict)
    shas: dict[str, set[str]] = field(default_factory=dict)

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def merge(self, other: Opened) -> None:
        for name, seen in other.ids.items():
            self.ids.setdefault(name, set()).update(seen)
        for name, shas in other.shas.items():
            self.shas.setdefault(name, set()).update(shas)


_ACTIVE: ContextVar[tuple[Opened, ...]] = ContextVar("specgate_opened", default=())
_installed = False


def identity(info: os.stat_result) -> Identity:
    """What changes whenever a file's bytes could have: a rename changes the inode or the
    ctime, a write the ctime and mtime; nobody can set a ctime back."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_ctime_ns, info.st_mtime_ns)


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event != "open":
        return
    active = _ACTIVE.get()
    if not active:
        return
    try:
        target = args[0]
        if isinstance(target, int) or target is None:
            return  # a descriptor already open: its path was seen when it was opened
        name = os.path.abspath(os.fsdecode(target))  # type: ignore[arg-type]
    except (TypeError, ValueError, IndexError):
        return
    try:  # just before the open: a file swapped after it was read is told apart later
        seen: Identity = identity(os.stat(name))
    except (OSError, ValueError):
        seen = None
    for paths in active:
        paths.ids.setdefault(name, set()).add(seen)


def _install() -> None:
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True


@contextmanager
def recording() -> Iterator[Opened]:
    """Collect the absolute paths of the files opened inside the block, each with the
    identities it had when opened (and, through ``replay``, those a memoised step
    opened before)."""
    _install()
    paths = Opened()
    token = _ACTIVE.set((*_ACTIVE.get(), paths))
    try:
        yield paths
    finally:
        _ACTIVE.reset(token)


def replay(paths: Opened) -> None:
    """Add ``paths`` to every active recording: a memoised step opened them before."""
    for active in _ACTIVE.get():
        active.merge(paths)


def read_bytes(path: Path) -> bytes:
    """A spec file's bytes, read through one descriptor, their SHA-256 recorded: what the
    loader parses is what the bundle must sign (a folder swapped between a check and the
    open, found by a hostile review, changes the digest, not only what is read)."""
    with path.open("rb") as handle:
        data = handle.read()
    sha = hashlib.sha256(data).hexdigest()
    name = os.path.abspath(path)
    for active in _ACTIVE.get():
        active.shas.setdefault(name, set()).add(sha)
    return data


def read_text(path: Path, encoding: str = "utf-8") -> str:
    """``read_bytes`` decoded as ``Path.read_text`` decodes (universal newlines)."""
    text = read_bytes(path).decode(encoding)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def loaded(path: Path, paths: Opened) -> tuple[str, Identity]:
    """The SHA-256 of a recorded file as it was loaded, and its identity now: the digest
    of the bytes ``read_bytes`` gave the loader when every read agreed; for a file opened
    another way, of its bytes now if it is the file every open saw; "" otherwise."""
    name = str(path)
    digest, now = hashed(path, paths.ids.get(name, set()))
    shas = paths.shas.get(name)
    if shas is None:
        return digest, now
    return (next(iter(shas)) if len(shas) == 1 else ""), now


def hashed(path: Path, seen: set[Identity]) -> tuple[str, Identity]:
    """The SHA-256 of a file's bytes and its identity as they were hashed; the digest is
    "" when it cannot be read, or when the file hashed is not the one every open saw (it
    was replaced or written while it was being loaded)."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            now = identity(os.fstat(handle.fileno()))
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return "", None
    return (digest.hexdigest() if seen <= {now} else ""), now
