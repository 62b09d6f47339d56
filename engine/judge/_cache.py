"""The judgement cache: content-addressed, one file per answer, each sealed with a local MAC.

The cache folder usually sits on a CI runner the evaluated party controls, so a plain digest
proves nothing (whoever edits an entry recomputes it). Every entry carries an HMAC-SHA256
over its canonical bytes, keyed with a secret that is created on first use (mode 600) in a
per-user place outside the cache folder and outside the evidence:
``$SPECGATE_CACHE_KEY`` if set (a file path), else ``$XDG_CONFIG_HOME/specgate/cache.key``,
else ``~/.config/specgate/cache.key``. An entry whose MAC fails is never believed: it is
counted, ignored and asked again. Even a sealed entry's verdict is derived again from its
stored response.

Each entry also seals the run that asked it (``obtained_by_run``) and its *draw* (a random
id shared by every answer one Evaluation asked in one run), so a release can take its
answers from one draw or none (engine.judge._runtime, docs/judges.md): deleting the entries
whose answers the team dislikes must not re-draw those answers alone.
"""

from __future__ import annotations

import errno
import hmac
import json
import os
import secrets
import stat
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.canonical import canonical
from engine.errors import UsageError, VerifyError
from engine.evidence.verify import read_file, write_whole

KEY_VARIABLE = "SPECGATE_CACHE_KEY"
# a MAC for this use only (v2: MAC line, then bytes; v3: the entry binds its run and draw,
# so an entry of v2, which names neither, fails its seal and is asked again)
_DOMAIN = b"specgate.judgement-cache/v3\n"
MAX_ENTRY = 64 << 20  # an entry holds one reply (at most 16 MiB decoded) and its request


def key_path() -> Path:
    """Where the cache key lives (see the module docstring)."""
    named = os.environ.get(KEY_VARIABLE)
    if named:
        return Path(named)
    base = os.environ.get("XDG_CONFIG_HOME")
    try:
        root = Path(base) if base else Path.home() / ".config"
    except RuntimeError:
        raise UsageError(f"no home folder for the judge cache key; set ${KEY_VARIABLE} to a "
                         "file path or pass --no-judge-cache", "CACHE_KEY_UNUSABLE") from None
    return root / "specgate" / "cache.key"


KEY_BYTES_READ = 4096  # a key file is 65 bytes; a larger one is refused without reading it all
# what os.link fails with where a file system has no hard links (vfat, some FUSE and SMB
# mounts): the key is then created in place
NO_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS,
                      errno.EXDEV})


def _create(path: Path) -> None:
    """A new key, whole before anyone can read it (verify.write_whole: written, synced, then
    linked into place, never over a key another run made first: then that one is read).
    Created in place, a second run could read it still empty (found by review). Where the
    file system has no hard links, it is created in place, and a reader finding it empty
    waits for it (_read)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = (secrets.token_hex(32) + "\n").encode("ascii")
    try:
        write_whole(path, key, mode=0o600)
    except OSError as exc:
        if exc.errno not in NO_LINKS:
            raise
        _create_in_place(path, key)


def _create_in_place(path: Path, key: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # another run made it first: read that one
    try:
        os.write(fd, key)
        os.fsync(fd)
    finally:
        os.close(fd)


def _read(path: Path) -> str:
    """The key file's text (verify.read_file: a regular file, never waited on, at most
    KEY_BYTES_READ); one still being made in place (no hard links) is waited for, a second
    at most."""
    for _ in range(20):
        text = read_file(path, KEY_BYTES_READ).decode("ascii").strip()
        if text:
            return text
        time.sleep(0.05)
    return text


def load_key(path: Path, folder: Path) -> bytes:
    """The cache key at ``path`` (made on first use); UsageError if it cannot be trusted."""
    where = path.resolve()
    if where.is_relative_to(folder.resolve()):
        raise UsageError(f"the judge cache key {path} lies inside the cache folder, where "
                         "whoever writes the cache could read it; keep it elsewhere",
                         "CACHE_KEY_UNUSABLE")
    try:
        if not where.exists():
            _create(where)
        info = where.stat()
        # its kind and mode are checked before it is read (a FIFO, /dev/zero: read_file too)
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077:
            raise UsageError(f"the judge cache key {path} must be a regular file only its "
                             "owner can read (chmod 600)", "CACHE_KEY_UNUSABLE")
        text = _read(where)
    except (OSError, UnicodeDecodeError, VerifyError) as exc:
        reason = getattr(exc, "strerror", None) or (
            str(exc) if isinstance(exc, VerifyError) else "not ASCII text")
        raise UsageError(f"the judge cache key {path} cannot be used: {reason}",
                         "CACHE_KEY_UNUSABLE") from None
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise UsageError(f"the judge cache key {path} is not 64 lower-case hex digits "
                         "(delete it to make a new one; the cache is then asked again)",
                         "CACHE_KEY_UNUSABLE")
    return bytes.fromhex(text)


class Cache:
    """Answers by content address, one sealed file each, written atomically."""

    def __init__(self, folder: Path, key: bytes) -> None:
        self.folder = folder
        self.key = key
        self.rejected = 0  # entries present whose MAC failed, or that could not be read
        self.unwritten = 0  # answers that could not be stored (the run goes on without)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def _mac_of(self, body: bytes) -> str:
        return hmac.new(self.key, _DOMAIN + body, "sha256").hexdigest()

    def get(self, request_key: str, trusted: Callable[[Any], dict[str, Any] | None]
            ) -> dict[str, Any] | None:
        """The sealed entry for ``request_key`` that ``trusted`` accepts, or None."""
        path = self._path(request_key)
        found = None
        try:  # a FIFO, device or oversized file by that name is never waited on or read
            mac, _, body = read_file(path, MAX_ENTRY).partition(b"\n")
            # the MAC is checked over the bytes before they are parsed: whoever writes the
            # cache cannot make the run parse anything it did not seal itself
            if hmac.compare_digest(mac, self._mac_of(body).encode()):
                found = trusted(json.loads(body))
        except VerifyError as exc:
            if exc.code == "UNREADABLE" and not os.path.lexists(path):
                return None
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            found = None
        self.rejected += found is None
        return found

    def put(self, rec: dict[str, Any]) -> None:
        """Store a successful answer (failures are retried next time, not cached)."""
        if rec.get("verdict") is None:
            return
        path = self._path(rec["key"])
        tmp = None
        try:  # a cache that cannot be written (a file where a folder goes) is only skipped
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            body = canonical(rec)
            with os.fdopen(fd, "wb") as handle:
                handle.write(self._mac_of(body).encode() + b"\n" + body)
            os.replace(tmp, path)
        except OSError:
            self.unwritten += 1
            if tmp is not None and os.path.lexists(tmp):
                os.unlink(tmp)
