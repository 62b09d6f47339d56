"""Walking a folder tree: with an explicit stack, never into a symbolic link, never more
than MAX_DEPTH folders down, never to a path longer than the system opens.

Every tree the engine walks may be written by the gated team: the spec checkout, an
evidence or history folder, an input folder. pathlib's ``rglob`` and ``os.walk`` both
recurse in Python 3.11, so a tree 1,100 folders deep ended every command in
RecursionError; and past PATH_MAX a path cannot be opened at all. ``paths`` refuses such a
tree with PATH_TOO_DEEP (PathTooDeep, a UsageError), which each command turns into its
usual exit: a spec problem (2), an evidence folder that does not verify (1), an input
that cannot be read (2)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from engine.errors import PathTooDeep

# Folders below the folder walked. The deepest shipped spec tree is 2 levels, a run's
# evidence 1 (its evaluations' folders), a history folder of runs 2 or 3: 64 is far past
# any real tree, and 64 levels of short names stay far inside PATH_MAX.
MAX_DEPTH = 64
PATH_MAX = 4096  # bytes, with the final NUL: the longest path Linux opens (ENAMETOOLONG)

Skip = Callable[[Path, "OSError | PathTooDeep"], None]


def paths(root: Path, skip: Skip | None = None) -> Iterator[Path]:
    """Every path under ``root`` (not ``root``), in the order ``sorted(root.rglob("*"))``
    gives (component by component: each folder's entries sorted by name, a folder's
    contents right after it), so digests over a folder are those rglob gave. A symbolic
    link is yielded, never followed. A folder that cannot be listed or lies too deep, or
    a path too long, raises (OSError, PathTooDeep); with ``skip`` it is handed to
    ``skip`` and left out instead."""
    stack: list[tuple[Path, Iterator[tuple[str, bool]]]] = []
    _enter(stack, root, root, skip)
    while stack:
        folder, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        path = folder / entry[0]
        if len(os.fsencode(path)) >= PATH_MAX:
            _refuse(skip, PathTooDeep(
                f"{shown(root, path)}: its path is longer than the {PATH_MAX:,} bytes the "
                "system opens, so it is not read (flatten the tree or shorten its names)",
                path), path)
            continue
        yield path
        if entry[1]:
            _enter(stack, root, path, skip)


def _enter(stack: list[tuple[Path, Iterator[tuple[str, bool]]]], root: Path, folder: Path,
           skip: Skip | None) -> None:
    """List ``folder`` (``len(stack)`` folders below ``root``) onto the stack, or refuse."""
    if len(stack) > MAX_DEPTH:
        _refuse(skip, PathTooDeep(
            f"{shown(root, folder)}: a folder more than {MAX_DEPTH} folders deep under "
            f"{root}; no spec, evidence or input folder is that deep, so it is not walked "
            "(flatten it or move it out)", folder), folder)
        return
    try:
        with os.scandir(folder) as listing:  # a link is listed as what it is, not followed
            entries = sorted((e.name, e.is_dir(follow_symlinks=False)) for e in listing)
    except OSError as exc:
        _refuse(skip, exc, folder)
        return
    stack.append((folder, iter(entries)))


def _refuse(skip: Skip | None, error: OSError | PathTooDeep, where: Path) -> None:
    if skip is None:
        raise error
    skip(where, error)


def shown(root: Path, path: Path) -> str:
    """``path`` under ``root``, its middle left out when long: the first three and the
    last of its folders below ``root``, each name clipped to 40 characters."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return str(path)[:200]
    names = [p if len(p) <= 40 else p[:37] + "..." for p in parts]
    if len(names) > 5:
        names = [*names[:3], f"...({len(names) - 4} more)...", names[-1]]
    return str(root.joinpath(*names))
