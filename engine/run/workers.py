"""``engine run --workers N``: the shards of a line-based input scored in N processes of
this machine, through the same driver as the Ray executor (``shards.run_shards``).

On Linux the workers are forked, so each inherits the driver's compiled Evaluation instead
of loading the spec again (about 0.4 s a worker); it still checks that what it holds has
the digests the driver sends with each job, and that the bytes it reads have the digest the
driver computed when it cut the file. Elsewhere workers are spawned and reload the spec as
Ray tasks do. A worker leaves its scored part in the spool folder and returns only its
file's name and the id keys the driver compares, so the driver holds one shard's tally at a
time while it merges. Progress: each worker writes its shard's records and bytes read into
its slot of a shared array, which the driver sums while it waits.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.decide.aggregate import Tally
from engine.judge import Runtime
from engine.records import formats
from engine.run import shards
from engine.spec import evaluation as spec

if TYPE_CHECKING:  # the pool's modules load when a pool starts (a small run never does)
    from concurrent.futures import Future

MIN_BYTES = 1 << 20  # a smaller input scores in one process (measured: docs/performance.md)
POLL = 0.2  # seconds between two progress reports while the driver waits


def cpu_count() -> int:
    """``--workers auto`` (the default): the processors this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class PoolExecutor:
    """Score the shards of a line-based input of at least MIN_BYTES in ``workers``
    processes; anything else in this process."""

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def __call__(self, evaluation: spec.Evaluation, runtime: Runtime | None, rows: Path,
                 progress: shards.Progress | None = None) -> tuple[Tally, str, str]:
        source = evaluation.inputs[evaluation.unit_input]
        size = source.path.stat().st_size
        if self.workers < 2 or size < MIN_BYTES or \
                not formats.named(source.format).line_based:
            return shards.local(evaluation, runtime, rows, progress)
        spans, unit_sha = shards.split(source.path, self.workers)
        with shards.spool(rows) as folder, _Pool(evaluation, runtime, len(spans), size,
                                                 progress) as pool:
            return shards.run_shards(evaluation, runtime, rows, spans, unit_sha, folder,
                                     pool)


class _Worker:
    """What a worker process holds from its start: the inherited Evaluation (None when
    spawned), the judge's answers and the shared progress counters."""

    evaluation: spec.Evaluation | None = None
    answers: dict[str, Any] | None = None
    counts: Any = None


def _start(evaluation: spec.Evaluation | None, answers: dict[str, Any] | None,
           counts: Any, driver: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver stops its workers itself
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _Worker.evaluation, _Worker.answers, _Worker.counts = evaluation, answers, counts
    threading.Thread(target=_orphaned, args=(driver,), daemon=True).start()


def _orphaned(driver: int) -> None:
    """End this worker once its driver is gone. A driver killed outright (SIGKILL, the
    out-of-memory killer) stops nobody; a worker writing its answer into a full pipe that no
    one reads would otherwise wait for ever (found by review)."""
    while os.getppid() == driver:
        time.sleep(0.5)
    os._exit(1)


def _score(job: shards.Job) -> tuple[str, shards.Seen]:
    """Worker side: score one shard into the spool; return the part's file and the keys."""
    counts, slot = _Worker.counts, 2 * job.index
    report = None
    if counts is not None:
        counts[slot] = counts[slot + 1] = 0  # a shard scored again counts from nought

        def report(records: int, read: int) -> None:
            counts[slot], counts[slot + 1] = records, read

    part, seen = shards.score_part(job, _Worker.answers, _Worker.evaluation, report)
    path = Path(job.spool) / f"part-{job.index:05d}-{job.attempt}.pickle"
    path.write_bytes(pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL))
    return str(path), seen


class _Pool:
    """The process-pool backend of ``shards.run_shards``."""

    def __init__(self, evaluation: spec.Evaluation, runtime: Runtime | None, count: int,
                 size: int, progress: shards.Progress | None) -> None:
        fork = sys.platform == "linux"
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context("fork" if fork else "spawn")
        self.counts = context.RawArray("q", 2 * count) if progress is not None else None
        answers = runtime.answers if runtime is not None else None
        self.pool = ProcessPoolExecutor(count, context, initializer=_start, initargs=(
            evaluation if fork else None, answers, self.counts, os.getpid()))
        self.progress, self.size = progress, size

    def submit(self, job: shards.Job) -> Future[tuple[str, shards.Seen]]:
        return self.pool.submit(_score, job)

    def seen(self, handle: Future[tuple[str, shards.Seen]]) -> shards.Seen:
        return self._wait(handle)[1]

    def part(self, handle: Future[tuple[str, shards.Seen]]) -> shards.Part:
        path = Path(self._wait(handle)[0])
        part: shards.Part = pickle.loads(path.read_bytes())  # written by our own worker
        path.unlink()
        return part

    def _wait(self, handle: Future[tuple[str, shards.Seen]]) -> tuple[str, shards.Seen]:
        from concurrent import futures

        while not handle.done():
            futures.wait([handle], timeout=POLL)
            if self.progress is not None and self.counts is not None:
                counts = self.counts[:]
                self.progress(sum(counts[0::2]), sum(counts[1::2]), self.size)
        return handle.result()  # raises what the worker raised, coded errors as themselves

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, kind: object, *rest: object) -> None:
        if kind is not None:  # a shard failed, or the run was stopped: end the others now
            for process in list((getattr(self.pool, "_processes", None) or {}).values()):
                process.terminate()
        self.pool.shutdown(wait=True, cancel_futures=True)
