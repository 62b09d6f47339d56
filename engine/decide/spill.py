"""State that grows with the records, in memory while small and on disk beyond that.

Strict validation remembers every row id to find duplicates, and pass^k needs every case's
trial counts until the end. Held in Python objects that is about 0.2 KB per record; past
``LIMIT`` entries both move into a private temporary SQLite database (standard library;
the file is deleted when the connection closes, or by the OS if the process dies), whose
page cache is bounded, so memory stays flat however many records there are. Results do
not depend on where the state lives: consumers read it in sorted order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded when the state first moves to disk (a small run never does)
    import sqlite3

LIMIT = 100_000  # entries kept in memory before moving to disk


def _database() -> sqlite3.Connection:
    import sqlite3

    db = sqlite3.connect("")  # "": a private temporary on-disk database
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    return db


class IdSet:
    """A set of strings (``in``, ``add``, iteration) that moves to disk past ``limit``."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit, self._memory = LIMIT if limit is None else limit, set[str]()
        self._db: sqlite3.Connection | None = None

    def __contains__(self, item: object) -> bool:
        if self._db is None:
            return item in self._memory
        return self._db.execute("SELECT 1 FROM ids WHERE id = ?", (item,)).fetchone() is not None

    def add(self, item: str) -> None:
        if self._db is not None:
            self._db.execute("INSERT OR IGNORE INTO ids VALUES (?)", (item,))
            return
        self._memory.add(item)
        if len(self._memory) > self.limit:
            db = _database()
            db.execute("CREATE TABLE ids (id TEXT PRIMARY KEY) WITHOUT ROWID")
            db.executemany("INSERT INTO ids VALUES (?)", ((i,) for i in self._memory))
            self._db, self._memory = db, set()

    def __iter__(self) -> Iterator[str]:
        if self._db is None:
            return iter(sorted(self._memory))
        return (row[0] for row in self._db.execute("SELECT id FROM ids ORDER BY id"))

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        self._memory = set()


class CaseTrials:
    """(category, case) -> [scored trials, passes], summed; moves to disk past ``limit``.

    Read back per category in case order, so results do not depend on record order or on
    where the counts lived."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = LIMIT if limit is None else limit
        self._memory: dict[tuple[str, str], list[int]] = {}
        self._db: sqlite3.Connection | None = None

    def add(self, category: str, case: str, trials: int, passes: int) -> None:
        """Add ``trials`` scored trials with ``passes`` passes to a case."""
        if self._db is not None:
            self._db.execute(
                "INSERT INTO trials VALUES (?, ?, ?, ?) ON CONFLICT (category, name) DO "
                "UPDATE SET n = n + excluded.n, c = c + excluded.c",
                (category, case, trials, passes))
            return
        counts = self._memory.get((category, case))
        if counts is None:
            self._memory[category, case] = [trials, passes]
            if len(self._memory) > self.limit:
                self._to_disk()
        else:
            counts[0] += trials
            counts[1] += passes

    def _to_disk(self) -> None:
        db = _database()
        db.execute("CREATE TABLE trials (category TEXT, name TEXT, n INTEGER, c INTEGER, "
                   "PRIMARY KEY (category, name)) WITHOUT ROWID")
        db.executemany("INSERT INTO trials VALUES (?, ?, ?, ?)",
                       ((k[0], k[1], v[0], v[1]) for k, v in self._memory.items()))
        self._db, self._memory = db, {}

    def cases(self, category: str) -> Iterator[tuple[str, int, int]]:
        """(case, trials, passes) of one category, by case."""
        if self._db is None:
            return iter(sorted((case, n, c) for (cat, case), (n, c) in self._memory.items()
                               if cat == category))
        return iter(self._db.execute(
            "SELECT name, n, c FROM trials WHERE category = ? ORDER BY name", (category,)))

    def count(self, category: str) -> int:
        """How many cases of the category have a scored trial."""
        if self._db is None:
            return sum(1 for cat, _ in self._memory if cat == category)
        return int(self._db.execute("SELECT count(*) FROM trials WHERE category = ?",
                                    (category,)).fetchone()[0])

    def entries(self) -> Iterator[tuple[str, str, int, int]]:
        """Every (category, case, trials, passes), sorted."""
        if self._db is None:
            return iter(sorted((cat, case, n, c)
                               for (cat, case), (n, c) in self._memory.items()))
        return iter(self._db.execute("SELECT category, name, n, c FROM trials "
                                     "ORDER BY category, name"))

    def merge(self, other: CaseTrials) -> None:
        """Add another part's counts."""
        for category, case, n, c in other.entries():
            self.add(category, case, n, c)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CaseTrials):
            return NotImplemented
        return list(self.entries()) == list(other.entries())

    __hash__ = None  # type: ignore[assignment]

    def __getstate__(self) -> dict[str, Any]:  # a shard's counts travel as a list
        return {"limit": self.limit, "entries": list(self.entries())}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["limit"])  # type: ignore[misc]
        for category, case, n, c in state["entries"]:
            self.add(category, case, n, c)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        self._memory = {}

