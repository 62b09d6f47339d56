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

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

_ACTIVE: ContextVar[tuple[set[str], ...]] = ContextVar("specgate_opened", default=())
_installed = False


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
    for paths in active:
        paths.add(name)


def _install() -> None:
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True


@contextmanager
def recording() -> Iterator[set[str]]:
    """Collect the absolute paths of the files opened inside the block (and, through
    ``replay``, those a memoised step opened before)."""
    _install()
    paths: set[str] = set()
    token = _ACTIVE.set((*_ACTIVE.get(), paths))
    try:
        yield paths
    finally:
        _ACTIVE.reset(token)


def replay(paths: set[str]) -> None:
    """Add ``paths`` to every active recording: a memoised step opened them before."""
    for active in _ACTIVE.get():
        active |= paths


def note(path: Path) -> None:
    """Add one file read outside an ``open`` event's reach (none today; kept for a reader
    that maps files) to every active recording."""
    replay({os.path.abspath(path)})
