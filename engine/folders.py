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

import errno
import os
import shutil
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


def remove(root: Path) -> list[str]:
    """Remove the folder ``root`` and what it holds, without recursion and never through
    a symbolic link (a link is unlinked, never followed); what cannot be removed is left
    and said, one line each, in the list returned (empty when all is gone).

    shutil.rmtree recurses in Python 3.11 (RecursionError at about 1,000 levels, which
    ``ignore_errors`` does not ignore) and opens a descriptor per level; here each folder
    is opened relative to its parent's descriptor (no path grows past PATH_MAX, and a
    folder renamed or swapped for a link meanwhile is not followed out of the tree), at
    most MAX_DEPTH + 1 of them at once: a folder deeper than that is left where it is,
    with the folders above it, and said."""
    try:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        return [f"{root}: not removed ({exc.strerror or exc})"]
    left: list[str] = []
    # (descriptor, its name in the folder above, what it holds not yet gone through)
    stack: list[tuple[int, str, Iterator[tuple[str, bool]]]] = []
    try:
        _open_listing(stack, top, "", root, left)
        while stack:
            fd, here, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                os.close(fd)
                if stack:
                    _try(left, root, os.rmdir, here, stack[-1][0])
                continue
            name, is_dir = entry
            if not is_dir:
                _try(left, root, os.unlink, name, fd)
            elif len(stack) > MAX_DEPTH:
                left.append(f"{root}: a folder more than {MAX_DEPTH} folders deep in it was "
                            "left where it is, with the folders above it")
            else:
                try:
                    inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW,
                                    dir_fd=fd)
                except OSError as exc:
                    left.append(f"{root}: {name!r} not removed ({exc.strerror or exc})")
                    continue
                _open_listing(stack, inner, name, root, left)
    finally:
        for fd, _name, _entries in stack:
            os.close(fd)
    _try(left, root, os.rmdir, str(root), None)
    return list(dict.fromkeys(left))


def _open_listing(stack: list[tuple[int, str, Iterator[tuple[str, bool]]]], fd: int,
                  name: str, root: Path, left: list[str]) -> None:
    """Push folder ``fd`` (named ``name`` in the one above) with its sorted listing."""
    try:
        with os.scandir(fd) as listing:  # a link is listed as what it is, not followed
            entries = sorted((e.name, e.is_dir(follow_symlinks=False)) for e in listing)
    except OSError as exc:
        left.append(f"{root}: a folder in it could not be listed ({exc.strerror or exc})")
        entries = []
    stack.append((fd, name, iter(entries)))


def _try(left: list[str], root: Path, action: Callable[..., None], name: str,
         fd: int | None) -> None:
    """``action(name, dir_fd=fd)``; what it could not do said in ``left``."""
    try:
        action(name, dir_fd=fd)
    except FileNotFoundError:
        pass  # gone already: what was wanted
    except OSError as exc:
        if exc.errno == errno.ENOTEMPTY and left:
            return  # a folder holding what was left and said already
        shown_name = "it" if fd is None else repr(name)
        left.append(f"{root}: {shown_name} not removed ({exc.strerror or exc})")


def copy(source: Path, dest: Path, leave_out: frozenset[str] = frozenset()) -> None:
    """Copy the folder ``source`` to ``dest`` (which must not exist), walked by ``paths``:
    a tree too deep or a path too long raises PathTooDeep before ``dest`` is made. A
    file, or a link to one, is copied as the file; a link to a folder as a link (never
    walked into); an entry named in ``leave_out`` is left out wherever it lies. Replaces
    shutil.copytree, which recurses."""
    found = list(paths(source))  # the whole walk first: refused before a byte is copied
    os.mkdir(dest)
    skipped: list[Path] = []
    for path in found:
        if path.name in leave_out or any(s in path.parents for s in skipped):
            if path.is_dir() and not path.is_symlink():
                skipped.append(path)
            continue
        target = dest / path.relative_to(source)
        if path.is_symlink() and path.is_dir():
            os.symlink(os.readlink(path), target)
        elif path.is_dir():
            os.mkdir(target)
        else:
            shutil.copy2(path, target)
