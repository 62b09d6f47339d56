"""orjson's fast reader and writer against the strict reader and the C encoder (issue 40).

``python -m bench.fast_json [--rows 100000] [--repeat 5] [--work DIR] [--against TREE]``
reads every line of a generated Assevra dataset (``bench.assevra_data``, full contracts,
the file ``bench.scale`` uses; written by ``json.dumps``), and the same records written
compact by orjson, and prints the median seconds of ``--repeat`` passes of:
``json.loads`` and ``orjson.loads`` alone (for scale), the strict reader alone
(``strict_value``: the baseline, the reader before issue 40) and ``decode_value`` (orjson
where the line is written back exactly, else the strict reader). Then the canonical bytes
of the same records and of the rows of a 20,000-record run (``rows.jsonl``): the encoder
before issue 40 (the C encoder behind ``_plain``, else rfc8785; the baseline) against
``canonical`` now. Every ratio is baseline / now. ``--against TREE`` (an unpacked
``git archive`` of an earlier commit) also times ``engine run
specs/agent-release-gate --input runs=FILE --workers 1`` there and here, alternated,
in wall and CPU (user + system) seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import rfc8785

from engine.canonical import _PLAIN, _plain, canonical
from engine.records.strict_json import _fast, decode_value, strict_value

from . import assevra_data

ROOT = Path(__file__).resolve().parent.parent
GATE = ROOT / "specs" / "agent-release-gate"


def before_canonical(value: Any) -> bytes:
    """canonical() before issue 40: the C encoder where ``_plain`` holds, else rfc8785."""
    if _plain(value):
        return _PLAIN.encode(value).encode("utf-8")
    return rfc8785.dumps(value)


def median_time(work: Callable[[], object], repeat: int) -> float:
    """Median wall seconds of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def each(work: Callable[[Any], object], items: list[Any]) -> Callable[[], object]:
    """One pass of ``work`` over ``items``."""
    return lambda: [work(item) for item in items]


def table(title: str, rows: dict[str, float], baseline: str, count: int) -> None:
    """Print one Markdown table: seconds, microseconds per item, baseline / this."""
    print(f"\n{title} ({count:,} items; ratio: {baseline} / this)\n")
    print("| what | s | us each | ratio |")
    print("|---|---|---|---|")
    for name, seconds in rows.items():
        print(f"| {name} | {seconds:.3f} | {seconds / count * 1e6:.2f} | "
              f"{rows[baseline] / seconds:.2f}x |")


def run_engine(tree: Path, dataset: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one ``engine run --workers 1`` with ``tree`` first on the
    path."""
    with tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "PYTHONPATH": str(tree)}
        command = [sys.executable, "-m", "engine", "run", str(GATE), "--input",
                   f"runs={dataset}", "--out", out, "--workers", "1"]
        start = time.perf_counter()
        child = subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) not in (0, 1, 3):
            raise RuntimeError(f"{tree}: engine run exited {status}")
    return wall, usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fast_json", description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path("/tmp/specgate-bench"))
    parser.add_argument("--against", type=Path, default=None)
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    dataset = args.work / f"g{args.rows}-full.jsonl"
    if not dataset.exists():
        assevra_data.write(dataset, args.rows)
    lines = [raw for raw in dataset.read_bytes().splitlines(keepends=True) if raw.strip()]
    print(f"{dataset.name}: {len(lines):,} lines; {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f}; orjson {orjson.__version__}, Python "
          f"{sys.version.split()[0]}")
    compact = [orjson.dumps(json.loads(raw)) + b"\n" for raw in lines]
    for form, texts in (("as generated (json.dumps)", lines), ("written by orjson", compact)):
        taken = sum(_fast(raw) is not None for raw in texts)
        table(f"Reading lines {form}, {taken:,} taken by orjson", {
            "json.loads": median_time(each(json.loads, texts), args.repeat),
            "orjson.loads": median_time(each(orjson.loads, texts), args.repeat),
            "strict reader (before)": median_time(each(strict_value, texts), args.repeat),
            "decode_value (now)": median_time(each(decode_value, texts), args.repeat),
        }, "strict reader (before)", len(texts))

    records = [decode_value(raw)[0] for raw in lines]
    with tempfile.TemporaryDirectory() as out:
        part = Path(out) / "runs.jsonl"
        part.write_bytes(b"".join(lines[:20_000]))
        subprocess.run([sys.executable, "-m", "engine", "run", str(GATE), "--input",
                        f"runs={part}", "--out", f"{out}/run", "--workers", "1"],
                       cwd=ROOT, stdout=subprocess.DEVNULL, check=False)
        rows = [json.loads(r) for r in (Path(out) / "run/rows.jsonl").read_bytes().splitlines()]
    for name, values in (("Canonical bytes of the records", records),
                         ("Canonical bytes of a run's rows", rows)):
        assert all(canonical(v) == before_canonical(v) for v in values)
        table(name, {
            "C encoder (before)": median_time(each(before_canonical, values), args.repeat),
            "canonical (now)": median_time(each(canonical, values), args.repeat),
        }, "C encoder (before)", len(values))

    if args.against is not None:
        print(f"\nengine run --workers 1 on {dataset.name}, alternated, median of "
              f"{args.repeat} (wall / CPU s)\n")
        trees = {"before": args.against.resolve(), "now": ROOT}
        got: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for _ in range(args.repeat):
            for name, tree in trees.items():
                got[name].append(run_engine(tree, dataset))
        print("| tree | wall s | CPU s |")
        print("|---|---|---|")
        for name, runs in got.items():
            print(f"| {name} | {statistics.median(w for w, _ in runs):.2f} | "
                  f"{statistics.median(c for _, c in runs):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
