"""Scoring the unit records in one process, or in shards (on Ray, or in a process pool).

An executor takes an Evaluation (and the judge runtime, already answered) and returns the
tally, the SHA-256 of the unit input and the SHA-256 of ``rows.jsonl``, which it writes.

A sharded executor splits a line-based input at line starts into byte ranges. Each worker
scores its range (with the spec reloaded from the same files, or inherited from the driver
by a forked process, and checked to have the driver's digests) into a rows file and a
tally in a spool folder inside the run's staging folder; the driver merges the tallies in
shard order and concatenates the rows files. Everything the scorecard holds is either a
sum, a first-appearance order or a stable sort, so the merged result is the
single-process one byte for byte. Row ids must be unique across the whole file: a shard
whose ids recur in an earlier shard is scored again, told those ids (by their BLAKE2b-128
keys, so the driver never holds the ids themselves). ``run_shards`` is that driver, the
same for every executor; a ``Backend`` only submits jobs and fetches their answers.
Workers never call a judge: the driver answers every prompt first (bounded by the
configured concurrency) and ships the answers.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from engine import folders as walk
from engine.canonical import digest
from engine.decide.aggregate import Tally
from engine.decide.sorted_digest import SortedDigest
from engine.decide.spill import IdSet
from engine.errors import UsageError
from engine.evidence import scorecard as evidence
from engine.judge import JudgeConfig, Runtime
from engine.records.formats import read_jsonl_part
from engine.run import rows as runner
from engine.spec import evaluation as spec

Progress = Callable[[int, int, int], None]  # records read, bytes read, bytes of the input
Executor = Callable[[spec.Evaluation, Runtime | None, Path, Progress | None],
                    tuple[Tally, str, str]]
_BLOCK = 1 << 22
EVERY = 512  # records between two progress reports
T = TypeVar("T")


class Meter:
    """Counts the unit input's bytes as its reader hashes them (standing in for the
    digest) and the records it yields; tells ``report(records, bytes)`` every EVERY
    records and once at the end."""

    def __init__(self, digest: Any, report: Callable[[int, int], None]) -> None:
        self.digest, self.report, self.read = digest, report, 0

    def update(self, data: bytes) -> None:
        self.read += len(data)
        self.digest.update(data)

    def count(self, items: Iterable[T]) -> Iterator[T]:
        done = 0
        for done, item in enumerate(items, 1):
            yield item
            if done % EVERY == 0:
                self.report(done, self.read)
        self.report(done, self.read)


def local(evaluation: spec.Evaluation, runtime: Runtime | None, rows: Path,
          progress: Progress | None = None) -> tuple[Tally, str, str]:
    """Score every record in this process: (tally, input sha256, rows sha256)."""
    unit_digest = hashlib.sha256()
    if progress is None:
        items: Iterable[Any] = runner.records(evaluation, unit_digest)
    else:
        size = evaluation.inputs[evaluation.unit_input].path.stat().st_size
        meter = Meter(unit_digest, lambda done, read: progress(done, read, size))
        items = meter.count(runner.records(evaluation, meter))
    with rows.open("wb") as handle:
        writer = evidence.RowWriter(handle)
        tally = runner.run(evaluation, items, writer, runtime)
    return tally, unit_digest.hexdigest(), writer.hash.hexdigest()


def rubrics(evaluation: spec.Evaluation) -> dict[str, Any]:
    """The rubrics the policy's judged inspections use, by name."""
    return {i.params["rubric"].name: i.params["rubric"]
            for i in evaluation.policy.inspections.values()
            if i.params.get("rubric") is not None and hasattr(i.params["rubric"], "sha256")}


@dataclass(frozen=True)
class Span:
    """Bytes ``start``..``end`` of the input, beginning at line ``first_line``."""

    start: int
    end: int
    first_line: int
    sha256: str


def split(path: Path, parts: int) -> tuple[list[Span], str]:
    """Cut a file at line starts into at most ``parts`` byte ranges of similar size; returns
    the ranges (each with its own digest and first line number) and the file's digest."""
    size = path.stat().st_size
    cuts: list[int] = []
    with path.open("rb") as handle:
        for i in range(1, parts):  # the first line start at or after each target
            handle.seek(max(size * i // parts - 1, 0))
            handle.readline()
            at = handle.tell()
            if 0 < at < size and (not cuts or at > cuts[-1]):
                cuts.append(at)
        handle.seek(0)
        whole, spans, first_line = hashlib.sha256(), [], 1
        for start, end in zip([0, *cuts], [*cuts, size], strict=True):
            piece, left, lines = hashlib.sha256(), end - start, 0
            while left > 0 and (block := handle.read(min(_BLOCK, left))):
                piece.update(block)
                whole.update(block)
                lines += block.count(b"\n")
                left -= len(block)
            spans.append(Span(start, end, first_line, piece.hexdigest()))
            first_line += lines
    return spans, whole.hexdigest()


@dataclass(frozen=True)
class Job:
    """What a worker needs to score one shard."""

    index: int
    attempt: int
    cwd: str
    root: str
    file: str
    overrides: dict[str, str]
    as_of: str
    digests: tuple[str, str, str, str]  # evaluation, policy, suite, the spec files' bytes
    span: Span
    spool: str
    judge: JudgeConfig | None
    earlier: frozenset[bytes]  # keys of this shard's ids that an earlier shard validated
    runs_before: tuple[tuple[str, int], ...] = ()  # runs earlier shards admitted, by case


@dataclass
class Part:
    """A scored shard: its tally (suite rows detached into files) and rows file."""

    index: int
    tally: Tally
    rows: str
    suite_runs: list[str]


KEY = 16  # bytes of an id key: BLAKE2b-128, so two different ids never meet in practice


def id_key(row_id: str) -> bytes:
    """The key a row id is compared across shards by."""
    return hashlib.blake2b(row_id.encode("utf-8", "surrogatepass"), digest_size=KEY).digest()


class SeenIds(IdSet):
    """The ids this shard validated so far, plus (by key) those earlier shards validated
    that recur here: ``row_id in seen`` is then what one process would answer."""

    def __init__(self, earlier: frozenset[bytes]) -> None:
        super().__init__()
        self.earlier = earlier

    def __contains__(self, row_id: object) -> bool:
        return IdSet.__contains__(self, row_id) or (
            bool(self.earlier) and isinstance(row_id, str) and id_key(row_id) in self.earlier)


def _digests(evaluation: spec.Evaluation) -> tuple[str, str, str, str]:
    """What a worker must have loaded to score for the driver: the same Evaluation,
    Policy and Suite, from the same bytes of every spec file (a reloaded worker reads the
    spec folder again, and a file swapped meanwhile is another run's spec)."""
    return (evaluation.sha256, evaluation.policy.sha256, evaluation.suite.sha256,
            digest(sorted(evaluation.spec_sha256.items())))


Seen = tuple[bytes, dict[str, int]]  # sorted id keys, runs admitted by suite case


def _evaluation(job: Job, loaded: spec.Evaluation | None) -> spec.Evaluation:
    """The driver's Evaluation: inherited (a forked worker) or reloaded from its files, and
    in both cases holding the digests the driver ran with."""
    if loaded is None:
        found = [e for e in spec.load([Path(job.root)], {k: Path(v) for k, v in
                                                         job.overrides.items()})
                 if str(e.file) == job.file]
        loaded = found[0] if len(found) == 1 else None
    if loaded is None or _digests(loaded) != job.digests:
        raise UsageError(f"{job.file} changed while the run was going on; run again",
                         "SPEC_CHANGED")
    loaded.as_of = job.as_of
    return loaded


def score_part(job: Job, answers: dict[str, Any] | None, loaded: spec.Evaluation | None = None,
               report: Callable[[int, int], None] | None = None) -> tuple[Part, Seen]:
    """Worker side: the spec (``loaded``, or reloaded), checked to be the driver's; score
    the byte range, telling ``report`` (records, bytes) as it goes. Returns the part, and
    the sorted keys of the ids it admitted with its runs per case."""
    os.chdir(job.cwd)  # paths in rows are shown relative to the driver's folder
    evaluation = _evaluation(job, loaded)
    runtime = None
    if job.judge is not None:
        runtime = Runtime(job.judge, rubrics(evaluation), collecting=False,
                          answers=answers or {})
    stem = Path(job.spool) / f"part-{job.index:05d}-{job.attempt}"
    tally = Tally(suite_rows=SortedDigest(spool=Path(f"{stem}-suite")))
    seen = SeenIds(job.earlier)
    read = hashlib.sha256()
    meter = Meter(read, report) if report is not None else None
    source = evaluation.inputs[evaluation.unit_input]
    try:
        with Path(f"{stem}-rows.jsonl").open("xb") as handle:
            items = read_jsonl_part(source.path, meter or read, job.span.start,
                                    job.span.end, job.span.first_line)
            tally = runner.run(evaluation, meter.count(items) if meter else items,
                               evidence.RowWriter(handle), runtime, tally=tally, seen=seen,
                               runs_before=dict(job.runs_before))
        if read.hexdigest() != job.span.sha256:
            raise UsageError(f"{spec.display(source.path)} changed while the run was going "
                             "on; run again", "INPUT_CHANGED")
        suite_runs = tally.suite_rows.detach()
    finally:
        tally.suite_rows.close()
    tally.suite_rows = SortedDigest()
    keys = b"".join(sorted(id_key(i) for i in seen))
    seen.close()
    return Part(job.index, tally, f"{stem}-rows.jsonl", suite_runs), (keys, dict(tally.case_units))


class Backend(Protocol):
    """Where shards are scored: ``submit`` starts a job and returns a handle; ``seen`` and
    ``part`` wait for its two answers (raising what the worker raised)."""

    def submit(self, job: Job) -> Any: ...

    def seen(self, handle: Any) -> Seen: ...

    def part(self, handle: Any) -> Part: ...


@contextmanager
def spool(rows: Path) -> Iterator[Path]:
    """A folder for the shards' files beside ``rows``, removed at the end."""
    folder = Path(tempfile.mkdtemp(prefix="shards-", dir=rows.parent))
    try:
        yield folder
    finally:
        walk.remove(folder)  # the engine's own files: nothing deep, nothing to say


def run_shards(evaluation: spec.Evaluation, runtime: Runtime | None, rows: Path,
               spans: list[Span], unit_sha: str, folder: Path,
               backend: Backend) -> tuple[Tally, str, str]:
    """The driver, whatever scores the shards: every span once; again, told them, those
    whose ids or suite cases recur in earlier shards; then the merge in shard order."""
    jobs = [Job(i, 0, os.getcwd(), str(evaluation.root), str(evaluation.file),
                {k: str(v) for k, v in evaluation.overrides.items()}, evaluation.as_of,
                _digests(evaluation), span, str(folder),
                runtime.config if runtime is not None else None, frozenset())
            for i, span in enumerate(spans)]
    handles = [backend.submit(job) for job in jobs]
    found = [backend.seen(handle) for handle in handles]
    again = _recurring([keys for keys, _ in found])
    for i, earlier in again.items():  # ids met before: score the shard knowing them
        jobs[i] = replace(jobs[i], attempt=1, earlier=earlier)
        handles[i] = backend.submit(jobs[i])
    for i in again:
        found[i] = backend.seen(handles[i])
    for i, before in _runs_before(evaluation.suite.trials, found).items():
        # its cases already have runs in earlier shards: score it knowing how many
        handles[i] = backend.submit(replace(jobs[i], attempt=2, runs_before=before))
    del found, again  # every shard's id keys (16 bytes an id): not held through the merge
    return _combine(handles, backend.part, rows, unit_sha)


def _common(a: bytes, b: bytes) -> set[bytes]:
    """Keys in both sorted key strings (a merge join)."""
    out: set[bytes] = set()
    i = j = 0
    while i < len(a) and j < len(b):
        x, y = a[i:i + KEY], b[j:j + KEY]
        if x == y:
            out.add(x)
        i += KEY if x <= y else 0
        j += KEY if y <= x else 0
    return out


def _recurring(keys: list[bytes]) -> dict[int, frozenset[bytes]]:
    """For each shard, the keys of ids it validated that an earlier shard validated too."""
    out = {}
    for i, mine in enumerate(keys):
        found = set().union(*(_common(mine, keys[j]) for j in range(i)))
        if found:
            out[i] = frozenset(found)
    return out


def _runs_before(trials: dict[str, int],
                 found: list[Seen]) -> dict[int, tuple[tuple[str, int], ...]]:
    """Shards that admitted runs of a case whose trials earlier shards already (partly)
    used, each with the runs earlier shards admitted by case (what one process would have
    counted when it reached the shard). A shard's own count is capped at the trials."""
    admitted: dict[str, int] = {}
    out = {}
    for i, (_, counts) in enumerate(found):
        if any(admitted.get(c, 0) and admitted[c] + n > trials[c] for c, n in counts.items()):
            out[i] = tuple(sorted(admitted.items()))
        for case, n in counts.items():
            admitted[case] = min(trials[case], admitted.get(case, 0) + n)
    return out


def _combine(refs: list[Any], get: Callable[[Any], Part], rows: Path,
             unit_sha: str) -> tuple[Tally, str, str]:
    """Fetch the shards one at a time, merge their tallies in order into the first and
    append their rows files: memory holds the merged tally and one shard's."""
    tally: Tally | None = None
    rows_hash = hashlib.sha256()
    try:
        with rows.open("wb") as out:
            for i, ref in enumerate(refs):
                part = get(ref)
                refs[i] = None  # let the backend free the shard's answer
                part.tally.suite_rows = SortedDigest.attach(part.suite_runs)
                tally = part.tally if tally is None else tally.merge(part.tally)
                with Path(part.rows).open("rb") as handle:
                    while block := handle.read(_BLOCK):
                        rows_hash.update(block)
                        out.write(block)
                del part
    except BaseException:
        if tally is not None:
            tally.close()
        raise
    assert tally is not None, "a file always makes at least one shard"
    return tally, unit_sha, rows_hash.hexdigest()
