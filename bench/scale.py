"""Side by side with Assevra 0.6 on the same generated files: time, throughput, memory.

``python -m bench.scale [--sizes 1000,10000,100000] [--repeat 3] [--work DIR]`` generates
Assevra-format datasets (full JSON Schema contracts and compact contracts) of each size,
runs ``engine run specs/agent-release-gate --input runs=FILE`` and ``assevra run`` on
each (Assevra from a throwaway environment, never imported here), and prints, per size,
contract form and engine, the median wall time and CPU time (user + system) of ``--repeat``
runs (the engines alternated run by run), rows per second, the largest peak RSS of those
runs, the scorecard size, and the ratios specgate / Assevra in throughput and in CPU time
(Assevra's CPU seconds over ours: a loaded machine hides what workers gain in wall time,
not in CPU). Baseline named in every ratio: Assevra 0.6.0.post1 on the same file.

Peak RSS is the child's own ``ru_maxrss`` from ``wait4``, so one process is measured, not
this harness. ``--ray`` adds ``engine run --executor ray`` (a fresh local Ray instance per
run, its start-up timed; RSS is then the driver's only). ``specgate`` is
the default command (``--workers auto``: inputs of 1 MiB or more are scored by one process
per CPU; peak RSS is then the largest single process, from ``wait4``), ``specgate
--workers 1`` one process. The engine's modules are byte-compiled first, as ``pip
install`` leaves them (an editable install under PYTHONDONTWRITEBYTECODE would otherwise
time the compiler). Pass
``--sizes 1000,10000,100000,1000000`` for the 1M row (Assevra at 1M takes minutes and
gigabytes; ``--skip-assevra-above N`` skips it beyond N rows).
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import assevra_data
from .parity import GATE, assevra_command, assevra_env

ENGINE = [sys.executable, "-m", "engine"]


def measure(command: list[str], cwd: Path, out: Path) -> tuple[float, int, float]:
    """Wall seconds, peak RSS (bytes) and CPU seconds (user + system, its waited-for
    worker processes included) of one child process; raises unless it wrote a scorecard
    into ``out``."""
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    child.returncode = code
    err = ""
    if child.stderr is not None:
        with child.stderr:
            err = child.stderr.read().decode(errors="replace")
    if code not in (0, 1, 3) or not (out / "scorecard.json").exists():
        # a decision is fine; a crash, usage error or internal error is not
        raise RuntimeError(f"{' '.join(command[:4])} exited {code}: {err[-2000:]}")
    return wall, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime


def run_both(dataset: Path, rows: int, work: Path, repeat: int, env: Path | None,
             ray: bool = False) -> dict[str, dict[str, float]]:
    """Median wall time, max RSS and scorecard bytes per engine on one dataset."""
    def ours(*extra: str) -> Any:
        return lambda out: [*ENGINE, "run", str(GATE), "--input", f"runs={dataset}", "--out",
                            str(out), *extra]

    # the default uses every core of the machine for inputs of 1 MiB or more
    commands = {"specgate": ours(), "specgate --workers 1": ours("--workers", "1")}
    if ray:  # a fresh local Ray instance per run: its start-up is part of the time
        commands["specgate --executor ray"] = ours("--executor", "ray")
    if env is not None:
        commands["assevra"] = lambda out: assevra_command(env, dataset, out)
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    peaks: dict[str, list[int]] = {name: [] for name in commands}
    sizes: dict[str, int] = {}
    for i in range(repeat):  # the engines alternated, run by run: the machine drifts alike
        for name, command in commands.items():
            out = work / f"{name}-{dataset.stem}-{i}"
            shutil.rmtree(out, ignore_errors=True)
            wall, peak, cpu = measure(command(out), work, out)
            walls[name].append(wall)
            cpus[name].append(cpu)
            peaks[name].append(peak)
            sizes[name] = (out / "scorecard.json").stat().st_size
            shutil.rmtree(out)
    return {name: {"wall": statistics.median(walls[name]),
                   "rows_per_s": rows / statistics.median(walls[name]),
                   "cpu": statistics.median(cpus[name]), "rss_mb": max(peaks[name]) / 2**20,
                   "scorecard_kb": sizes[name] / 1024} for name in commands}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/specgate-bench"))
    parser.add_argument("--skip-assevra-above", type=int, default=None)
    parser.add_argument("--forms", default="full,compact")
    parser.add_argument("--ray", action="store_true",
                        help="also time --executor ray (peak RSS: the driver process only)")
    args = parser.parse_args(argv)
    compileall.compile_dir(Path(__file__).resolve().parents[1] / "engine", quiet=1)
    args.work = args.work.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    env = assevra_env(args.work)
    print(f"baseline: assevra 0.6.0.post1 (throwaway env {env}); median of {args.repeat}; "
          f"peak RSS is the max over runs; {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f} at the start", flush=True)
    print("| rows | contracts | engine | wall s | CPU s | rows/s | peak RSS MB | scorecard KB "
          "| throughput vs Assevra | CPU vs Assevra |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for rows in (int(s) for s in args.sizes.split(",")):
        for form in args.forms.split(","):
            dataset = args.work / f"g{rows}-{form}.jsonl"
            if not dataset.exists():
                assevra_data.write(dataset, rows, compact=form == "compact")
            skip = args.skip_assevra_above is not None and rows > args.skip_assevra_above
            got = run_both(dataset, rows, args.work, args.repeat, None if skip else env,
                           args.ray)
            for name, r in got.items():
                theirs = got.get("assevra") if name != "assevra" else None
                ratio = f"{r['rows_per_s'] / theirs['rows_per_s']:.2f}x" if theirs else ""
                cpu = f"{theirs['cpu'] / r['cpu']:.2f}x" if theirs else ""
                print(f"| {rows:,} | {form} | {name} | {r['wall']:.2f} | {r['cpu']:.2f} | "
                      f"{r['rows_per_s']:,.0f} | {r['rss_mb']:.0f} | {r['scorecard_kb']:.1f} "
                      f"| {ratio} | {cpu} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
