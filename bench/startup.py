"""What a small run pays before and after it scores: start-up, spec loading, reports.

``python -m bench.startup [--runs 9] [--rows FILE] [--against TREE]`` prints the median
wall time (and the spread) of ``--runs`` runs of

- ``import engine.cli`` in a fresh interpreter,
- ``engine run specs/agent-release-gate --input runs=FILE`` (FILE defaults to a generated
  1,000-row Assevra dataset, full JSON Schema contracts),
- ``engine run specs/`` (the shipped specs with their own inputs),

each a fresh ``python -m engine`` process, timed from outside (so interpreter start-up
counts), in wall and in CPU seconds (user + system: steadier on a shared machine).
``--against TREE`` times a second source tree (say an unpacked ``git archive`` of an
earlier commit, its ``engine`` compiled with ``python -m compileall``) in the same loop,
alternating run by run, so both are measured on the same minute of a busy machine.
Run ``python -m compileall -q engine`` first when .pyc files are not written.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import assevra_data

ROOT = Path(__file__).resolve().parent.parent


def wall(command: list[str], tree: Path, work: Path) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one child, run from ``work`` with ``tree``'s
    engine first on its path."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=work, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, check=False)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1, 3):  # PASS, FAIL, INCOMPLETE all ran to the end
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: "
                         f"{done.stderr.decode(errors='replace')[-2000:]}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def commands(tree: Path, rows: Path, out: Path) -> dict[str, list[str]]:
    """The timed commands for one source tree, each writing into a fresh ``out``."""
    engine = [sys.executable, "-m", "engine", "run"]
    return {
        "import engine.cli": [sys.executable, "-c", "import engine.cli"],
        f"1k-row release gate ({rows.name})": [
            *engine, str(tree / "specs" / "agent-release-gate"), "--input", f"runs={rows}",
            "--out", str(out)],
        "engine run specs/": [*engine, str(tree / "specs"), "--out", str(out)],
    }


def main(argv: list[str] | None = None) -> int:
    """Time the start-up commands and print one line each (with ``--against``, two)."""
    ask = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__)
    ask.add_argument("--runs", type=int, default=9)
    ask.add_argument("--rows", type=Path, help="an Assevra JSONL file (default: 1k rows)")
    ask.add_argument("--against", type=Path, help="another source tree to time alongside")
    args = ask.parse_args(argv)
    trees = {"this tree": ROOT}
    if args.against:
        trees["against"] = args.against.resolve()
    with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        work = Path(tmp)
        rows = args.rows.resolve() if args.rows else work / "g1000-full.jsonl"
        if not args.rows:
            assevra_data.write(rows, 1000, compact=False)
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.runs):
            for name, tree in trees.items():
                for what, command in commands(tree, rows, work / "out").items():
                    shutil.rmtree(work / "out", ignore_errors=True)
                    times.setdefault((what, name), []).append(wall(command, tree, work))
    for (what, name), found in times.items():
        seconds, cpu = [w for w, _ in found], [c for _, c in found]
        print(f"{what:<40} {name:<9} wall median {statistics.median(seconds):.3f} s "
              f"(min {min(seconds):.3f}), cpu median {statistics.median(cpu):.3f} s "
              f"({len(found)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
