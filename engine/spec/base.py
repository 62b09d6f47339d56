"""``engine diff --base REF``: a policy's folder as it is in git at REF, written to a folder.

The old side of a diff must be the old policy with its own files. A Policy file alone
(``git show REF:policy.yaml > old.yaml``) names schemas, lexicons and caveats it does not
carry; read beside the new policy they are the new ones. Here the whole folder of the
policy (every file the loader may read: the loader keeps a policy's files under its
folder) is read from the repository that holds it, at the commit REF names, with ``git
ls-tree`` and ``git cat-file``, and written under a fresh folder: regular files with their
bytes, symbolic links as links (the loader holds a link to the folder as it does in a
checkout), submodules left out. Nothing of the working tree is read for the old side.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path, PurePosixPath

from engine.errors import UsageError

CODE = "BASE_UNREADABLE"
AMBIGUOUS = "BASE_AMBIGUOUS"
# Where git looks for a short name, in its order (git help revisions): a name found in two
# of them (a tag "origin/main" beside the remote branch) is read as the first, silently.
DWIM = ("{}", "refs/{}", "refs/tags/{}", "refs/heads/{}", "refs/remotes/{}",
        "refs/remotes/{}/HEAD")


def _git(top: Path, *args: str, stdin: bytes | None = None) -> bytes:
    """A git command in ``top``; its standard output, or a coded UsageError."""
    try:
        done = subprocess.run(["git", "--literal-pathspecs", "-C", str(top), *args],
                              input=stdin, capture_output=True, check=False)
    except OSError as exc:
        raise UsageError(f"--base needs git: {exc.strerror or exc}", CODE) from None
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(f"--base: git {args[0]} failed: {why[-1] if why else done.returncode}",
                         CODE)
    return done.stdout


def _top(folder: Path) -> Path:
    """The top folder of the git working tree holding ``folder``."""
    if not folder.is_dir():
        raise UsageError(f"--base: {folder} is not a folder", CODE)
    out = _git(folder, "rev-parse", "--show-toplevel")
    return Path(out.decode("utf-8").rstrip("\n")).resolve()


def commit(folder: Path, ref: str) -> tuple[Path, str]:
    """The repository top holding ``folder`` and the commit ``ref`` names there."""
    if not ref or ref.startswith("-"):
        raise UsageError(f"--base {ref!r} is not a git revision", CODE)
    top = _top(folder)
    _unambiguous(top, ref)
    sha = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    return top, sha.decode("ascii").strip()


def _unambiguous(top: Path, ref: str) -> None:
    """A BASE_AMBIGUOUS UsageError when the name REF starts with (before any ``~``, ``^``,
    ``@`` or ``:``) is two things to git: a ref in more than one place it looks (a tag and
    a branch, a tag and a remote branch), or a ref and an object name (a commit prefix)."""
    name = re.split(r"[~^@:]", ref, maxsplit=1)[0]
    if not name:
        return
    refs = set(_git(top, "for-each-ref", "--format=%(refname)").decode(
        "utf-8", "surrogateescape").splitlines())
    found = [form.format(name) for form in DWIM if form.format(name) in refs]
    if re.fullmatch(r"[0-9a-fA-F]{4,64}", name) and found:
        objects = _git(top, "rev-parse", f"--disambiguate={name.lower()}").split()
        if objects:
            found.append(f"the object {objects[0].decode('ascii')}"
                         + (f" (and {len(objects) - 1} more)" if len(objects) > 1 else ""))
    if len(found) > 1:
        raise UsageError(f"--base {ref!r} names more than one thing: {', '.join(found)}; "
                         "give a full ref name (refs/remotes/origin/main) or a commit",
                         AMBIGUOUS)


def checkout(policy: Path, ref: str, into: Path, folder: Path | None = None,
             required: bool = True) -> tuple[Path | None, str]:
    """Write ``folder`` (by default the folder of ``policy``, a path in the working tree,
    which need not exist there now) as it is at ``ref`` under ``into``; the path there of
    ``policy`` (None when it is not in that commit and not ``required``) and the commit
    read. A UsageError (BASE_UNREADABLE) when git cannot say, or the required file is not
    in that commit."""
    base = (folder or policy.parent).absolute()
    near = base
    while not near.is_dir() and near != near.parent:  # a folder the change removed
        near = near.parent
    top, sha = commit(near, ref)
    try:
        rel = PurePosixPath(Path(os.path.realpath(base)).relative_to(top).as_posix())
        target = PurePosixPath(Path(os.path.realpath(policy.absolute().parent))
                               .relative_to(top).as_posix()) / policy.name
    except ValueError:
        raise UsageError(f"--base: {policy} is not in the git repository at {top}",
                         CODE) from None
    wanted = [] if str(rel) == "." else ["--", f"{rel}/"]
    listing = _git(top, "ls-tree", "-r", "-z", "--full-tree", sha, *wanted)
    entries = []
    for entry in filter(None, listing.split(b"\0")):
        meta, _, raw = entry.partition(b"\t")
        mode, kind, blob = meta.decode("ascii").split()
        if kind == "blob":
            entries.append((mode, blob, raw.decode("utf-8", "surrogateescape")))
    if not any(name == target.as_posix() for _, _, name in entries):
        if not required:
            return None, sha
        raise UsageError(f"--base: {target} is not in {ref} ({sha[:12]})", CODE)
    for (mode, _, name), data in zip(entries, _blobs(top, [sha for _, sha, _ in entries]),
                                     strict=True):
        parts = PurePosixPath(name).parts
        if ".." in parts or not parts:
            raise UsageError(f"--base: {ref} holds the path {name!r}", CODE)
        path = into.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            os.symlink(os.fsdecode(data), path)
        else:
            path.write_bytes(data)
    return into.joinpath(*target.parts), sha


def _blobs(top: Path, shas: list[str]) -> list[bytes]:
    """The bytes of each blob, read with one ``git cat-file --batch``."""
    if not shas:
        return []
    out = _git(top, "cat-file", "--batch", stdin="".join(f"{s}\n" for s in shas).encode())
    blobs, at = [], 0
    for sha in shas:
        end = out.index(b"\n", at)
        name, kind, size = out[at:end].decode("ascii").split()
        if name != sha or kind != "blob":
            raise UsageError(f"--base: git cat-file gave {kind} for {sha}", CODE)
        start = end + 1
        blobs.append(out[start:start + int(size)])
        at = start + int(size) + 1
    return blobs
