"""The fused lanes against the usual path, on the same records, in the same tree.

``python -m bench.lanes [--rows 20000] [--repeat 5] [--whole 100000]`` generates release-gate
rows (``bench.assevra_data``, full and compact contracts) and prints, for each form:

- per record, the CPU microseconds of ``rows._Runner.record`` over records already read,
  with the lanes and without (``rows.LANES``), alternated run by run: best and median;
- with ``--whole N``, the CPU seconds (user + system) of the whole command, ``engine run
  specs/agent-release-gate --input runs=FILE --workers 1``, on N rows, with and without the
  lanes, alternated: median of ``--repeat``.

The baseline named in every ratio is the usual path (``rows.LANES = False``): usual / lanes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from . import assevra_data
from .parity import GATE
from .scale import measure

_WHOLE = """
import sys
from engine import cli
from engine.run import rows
rows.LANES = sys.argv[1] == "lanes"
sys.exit(cli.main(sys.argv[2:]))
"""


def per_record(data: Path, repeat: int) -> dict[bool, list[float]]:
    """CPU microseconds per record of ``_Runner.record``, by whether the lanes ran."""
    from engine.records.formats import read_jsonl
    from engine.run import rows
    from engine.spec import evaluation as spec

    evaluation = spec.load([GATE], {"runs": data})[0]
    items = list(read_jsonl(data))
    got: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(repeat):
        for lanes in (True, False):
            rows.LANES = lanes
            runner = rows._Runner(evaluation, lambda row: None)
            start = time.process_time()
            for item in items:
                runner.record(item)
            got[lanes].append((time.process_time() - start) / len(items) * 1e6)
    rows.LANES = True
    return got


def whole(data: Path, work: Path, repeat: int) -> dict[bool, list[float]]:
    """CPU seconds of the whole command in one process, by whether the lanes ran."""
    got: dict[bool, list[float]] = {True: [], False: []}
    for i in range(repeat):
        for lanes in (True, False):
            out = work / f"out-{data.stem}-{lanes}-{i}"
            _, _, cpu = measure([sys.executable, "-c", _WHOLE, "lanes" if lanes else "usual",
                                 "run", str(GATE), "--input", f"runs={data}", "--out",
                                 str(out), "--workers", "1"], work, out)
            got[lanes].append(cpu)
    return got


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lanes", description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--whole", type=int, default=0, help="rows of the whole-command runs")
    args = parser.parse_args(argv)
    print(f"baseline: the usual path (rows.LANES = False); {os.cpu_count()} CPUs, load "
          f"average {os.getloadavg()[0]:.2f} at the start")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for form in ("full", "compact"):
            data = assevra_data.write(work / f"{form}.jsonl", args.rows,
                                      compact=form == "compact")
            got = per_record(data, args.repeat)
            lanes, usual = statistics.median(got[True]), statistics.median(got[False])
            print(f"{form}: record() {args.rows:,} rows, us/record median (best): lanes "
                  f"{lanes:.1f} ({min(got[True]):.1f}), usual {usual:.1f} "
                  f"({min(got[False]):.1f}); usual / lanes {usual / lanes:.2f}x", flush=True)
            if args.whole:
                big = assevra_data.write(work / f"{form}-whole.jsonl", args.whole,
                                         compact=form == "compact")
                cpu = whole(big, work, args.repeat)
                lanes, usual = statistics.median(cpu[True]), statistics.median(cpu[False])
                print(f"{form}: whole command, {args.whole:,} rows, --workers 1, CPU s median: "
                      f"lanes {lanes:.2f}, usual {usual:.2f}; usual / lanes "
                      f"{usual / lanes:.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
