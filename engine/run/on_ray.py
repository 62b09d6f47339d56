"""``engine run --executor ray``: the shards of a line-based input scored as Ray tasks, on a
local instance or the cluster at ``RAY_ADDRESS``, through the shared driver
(``shards.run_shards``). Each task reloads the spec from the same files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.decide.aggregate import Tally
from engine.errors import SpecErrors, UsageError
from engine.judge import Runtime
from engine.records import formats
from engine.run import shards
from engine.spec import evaluation as spec


class RayExecutor:
    """Score shards on Ray workers: a local instance, or the cluster at ``address``."""

    def __init__(self, count: int | None = None, address: str | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise UsageError("--executor ray needs Ray: pip install 'ray>=2.9' (or, in a "
                             "checkout of specgate, pip install '.[ray]')",
                             "RAY_NOT_INSTALLED") from None
        self.ray, self.count, self.address = ray, count, address
        self._remote: Any = None

    def _start(self) -> Any:
        ray = self.ray
        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
        if self._remote is None:
            self._remote = ray.remote(num_cpus=1, max_retries=0,
                                      num_returns=2)(shards.score_part)
        return ray

    def __call__(self, evaluation: spec.Evaluation, runtime: Runtime | None, rows: Path,
                 progress: shards.Progress | None = None) -> tuple[Tally, str, str]:
        source = evaluation.inputs[evaluation.unit_input]
        if not formats.named(source.format).line_based:
            return shards.local(evaluation, runtime, rows, progress)
        ray = self._start()
        count = self.count or max(1, int(ray.cluster_resources().get("CPU", 1)))
        spans, unit_sha = shards.split(source.path, count)
        with shards.spool(rows) as folder:
            answers = ray.put(runtime.answers if runtime is not None else None)
            return shards.run_shards(evaluation, runtime, rows, spans, unit_sha, folder,
                                     _Tasks(self, answers))

    def get(self, refs: Any) -> Any:
        """Ray's answer; an error the worker meant (coded) is raised as itself."""
        try:
            return self.ray.get(refs)
        except self.ray.exceptions.RayTaskError as exc:
            cause = exc.cause
            if isinstance(cause, UsageError | SpecErrors):
                raise cause from None
            raise


class _Tasks:
    """The Ray backend: a job is a task with two returns, (part, seen)."""

    def __init__(self, executor: RayExecutor, answers: Any) -> None:
        self.executor, self.answers = executor, answers

    def submit(self, job: shards.Job) -> Any:
        return self.executor._remote.remote(job, self.answers)

    def seen(self, handle: Any) -> shards.Seen:
        return self.executor.get(handle[1])  # type: ignore[no-any-return]

    def part(self, handle: Any) -> shards.Part:
        return self.executor.get(handle[0])  # type: ignore[no-any-return]
