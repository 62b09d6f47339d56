"""``engine history`` over many signed runs: how long verifying them and drawing the page take.

``python -m bench.history [--runs 1000] [--work DIR]`` signs ``--runs`` runs of the shipped
release gate (in this process, one ``engine run`` each, alternating its own records and the
same records with one case's refunds raised, so the rates move; the second half under a
policy with another threshold, so there are two segments), then times ``engine history``
over them in a child process: wall and CPU seconds, peak RSS, the page's size. The runs
are kept in ``--work`` and reused by the next call with the same count. Baseline named:
the issue's "1,000 scorecards in seconds".
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .parity import GATE


def make(work: Path, runs: int) -> Path:
    """``runs`` signed runs under ``work/runs`` (made once per count)."""
    from engine.cli import main

    folder = work / f"runs-{runs}"
    if (folder / "done").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    assert main(["keygen", "--out-dir", str(folder / "keys")]) == 0
    lines = (GATE / "data" / "refund-after.jsonl").read_text().splitlines(True)
    (folder / "after.jsonl").write_text("".join(
        line.replace('"amount": 25}', '"amount": 500}') if '-tool_call"' in line else line
        for line in lines))
    lowered = folder / "gate"
    shutil.copytree(GATE, lowered)
    policy = lowered / "policy.yaml"
    policy.write_text(policy.read_text().replace("threshold: 0.95\n", "threshold: 0.70\n", 1))
    with open(os.devnull, "w") as quiet:
        stdout, sys.stdout = sys.stdout, quiet
        try:
            for i in range(runs):
                spec = GATE if i < runs // 2 else lowered
                data = ["--input", f"runs={folder / 'after.jsonl'}"] if i % 2 else []
                main(["run", str(spec), *data, "--key", str(folder / "keys" / "private.pem"),
                      "--out", str(folder / "runs" / f"{i:05d}")])
        finally:
            sys.stdout = stdout
    (folder / "done").write_text("")
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.history", description=__doc__)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/specgate-bench/history"))
    args = parser.parse_args(argv)
    start = time.perf_counter()
    folder = make(args.work, args.runs)
    print(f"{args.runs} signed runs ready in {time.perf_counter() - start:.1f} s; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    page = folder / "history.html"
    page.unlink(missing_ok=True)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "engine", "history", str(folder / "runs"),
                             "--trusted-key", str(folder / "keys" / "public.pem"), "--out",
                             str(page)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    print(f"engine history over {args.runs} runs: exit {proc.returncode}, {wall:.2f} s wall, "
          f"{usage.ru_utime + usage.ru_stime:.2f} s CPU, peak RSS "
          f"{usage.ru_maxrss / 1024:.0f} MB, page {page.stat().st_size / 1024:.0f} KB")
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
