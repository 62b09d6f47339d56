"""The digest of a JSON array sorted by a key, in memory that does not grow with the input.

A suite derived from records is digested over its rows sorted by id (agent-release-gate
§10). Keeping every row until the end would make memory grow with the dataset, so rows
are held as canonical bytes in chunks; a full chunk is sorted and spilled to an anonymous
temporary file (removed by the OS even if the process is killed), and the digest streams a
k-way merge of the chunks. The order is the stable sort by key, exactly as
``sorted(items, key=key)`` on the whole input would give.
"""

from __future__ import annotations

import heapq
import pickle
import tempfile
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path
from typing import IO, Any

from engine.canonical import canonical, digest_joined, plain_bytes

CHUNK = 50_000


class SortedDigest:
    """Add (key, value) pairs in input order; ``hexdigest()`` is SHA-256 of the JSON array
    of the values stably sorted by key, as ``digest_list`` would compute it."""

    def __init__(self, chunk: int = CHUNK, spool: Path | None = None) -> None:
        """``spool``: a folder (and file-name stem) where chunks are spilled as named files,
        so another process can pick them up (``detach``/``attach``); default anonymous."""
        self.chunk, self.spool = chunk, spool
        self._buffer: list[tuple[str, bytes]] = []
        self._runs: list[IO[bytes]] = []
        self._known: str | None = None  # the digest, once asked for, until the next change

    def add(self, key: str, value: Any, plain: bool = False) -> None:
        """Add an item; ``plain``: the value is known to be plain JSON (an object), so its
        canonical bytes are the C encoder's (``canonical.plain_bytes``)."""
        data = plain_bytes(value) if plain else canonical(value)
        # a copy of exactly its size: orjson's bytes keep the allocation they were written
        # into (about 4 KiB), so 50,000 held rows of 150 bytes took 200 MB (issue 40)
        self._buffer.append((key, memoryview(data).tobytes()))
        self._known = None
        if len(self._buffer) >= self.chunk:
            self._spill()

    def merge(self, other: SortedDigest) -> None:
        """Append a later part of the same input (a later shard)."""
        self._spill()  # keeps every earlier item in an earlier run: ties stay stable
        self._runs += other._runs
        self._buffer = list(other._buffer)
        other._runs, other._buffer = [], []
        self._known = other._known = None

    def _spill(self) -> None:
        if not self._buffer:
            return
        self._buffer.sort(key=itemgetter(0))
        handle = tempfile.TemporaryFile() if self.spool is None else \
            Path(f"{self.spool}-{len(self._runs):04d}.bin").open("x+b")
        for item in self._buffer:
            pickle.dump(item, handle, protocol=pickle.HIGHEST_PROTOCOL)
        handle.seek(0)
        self._runs.append(handle)
        self._buffer = []

    def detach(self) -> list[str]:
        """Spill what is left and close the named chunk files; returns their paths in order
        (a spooled digest only). The digest is empty afterwards."""
        assert self.spool is not None, "only a spooled digest can be detached"
        self._spill()
        paths = [r.name for r in self._runs]
        self.close()
        return [str(p) for p in paths]

    @classmethod
    def attach(cls, paths: list[str]) -> SortedDigest:
        """A digest over chunk files another process detached (opened now, so the files may
        be unlinked afterwards)."""
        out = cls()
        out._runs = [Path(p).open("rb") for p in paths]
        return out

    @staticmethod
    def _read(handle: IO[bytes]) -> Iterator[tuple[str, bytes]]:
        handle.seek(0)
        while True:
            try:
                yield pickle.load(handle)  # noqa: S301 - our own anonymous temporary file
            except EOFError:
                return

    def hexdigest(self) -> str:
        """The digest of the values sorted by key (worked out once until the next change:
        the decision, the comparison and the scorecard each ask for it)."""
        if self._known is None:
            self._known = self._hexdigest()
        return self._known

    def _hexdigest(self) -> str:
        if self._runs:
            self._spill()
            merged: Any = heapq.merge(*(self._read(r) for r in self._runs), key=itemgetter(0))
        else:
            merged = sorted(self._buffer, key=itemgetter(0))
        return digest_joined(data for _, data in merged)

    def __eq__(self, other: object) -> bool:
        """Two digests are equal when they digest the same sorted values (so tallies of a
        split and an unsplit run compare equal)."""
        if not isinstance(other, SortedDigest):
            return NotImplemented
        return self.hexdigest() == other.hexdigest()

    __hash__ = None  # type: ignore[assignment]

    def close(self) -> None:
        for handle in self._runs:
            handle.close()
        self._runs, self._buffer, self._known = [], [], None
