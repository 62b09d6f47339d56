"""``engine run --workers N``: real worker processes give the one-process evidence byte for
byte (every file, frozen clock, fixed key); coded errors from a worker reach the command
as themselves; and the scoring progress line shows on a terminal and nowhere else."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from bench import assevra_data
from bench.evidence_digests import _write_key
from engine.cli import main
from engine.run import shards

from .conftest import ROOT, keep_full_rows
from .test_shards import hostile_dataset

# The command in a child process, as a user runs it, with the clock frozen as
# bench/evidence_digests.py freezes it (the DSSE statement's generated_at is then the same
# in every run) and the setup given as argv[1] run first (e.g. a smaller MIN_BYTES, so
# small test inputs are sharded too).
RUNNER = """
import datetime, sys
from bench import evidence_digests
datetime.datetime = evidence_digests._Frozen
from engine import cli
from engine.run import shards, workers
exec(sys.argv[1])
sys.exit(cli.main(sys.argv[2:]))
"""
SHARD_ALL = "workers.MIN_BYTES = 0"
# and says on stderr each time an evaluation is cut into shards, and into how many
SHARD_AND_SAY = SHARD_ALL + """
def said(*args):
    print('sharded into', len(args[3]), file=sys.stderr)
    return run_shards(*args)
run_shards, shards.run_shards = shards.run_shards, said
"""


def engine(cwd: Path, setup: str, *argv: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", RUNNER, setup, *argv], cwd=cwd, env=env,
                          text=True, timeout=300, **kwargs)


def folder(out: Path) -> dict[str, bytes]:
    """Every file under ``out`` by its relative path."""
    return {p.relative_to(out).as_posix(): p.read_bytes()
            for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A scratch folder with the shipped specs and a fixed signing key, run from inside."""
    shutil.copytree(ROOT / "specs", tmp_path / "specs")
    _write_key(tmp_path / "key.pem")
    (tmp_path / "data").mkdir()
    return tmp_path


def same_in_every_process_count(work: Path, *argv: str, want: int,
                                sharded: int = 1) -> dict[str, bytes]:
    """The run with --workers 1, 2 and 3 (every line-based input sharded, ``sharded`` of
    them): the same exit code and the same files; returns the one-process folder."""
    outs = {}
    for count in ("1", "2", "3"):
        done = engine(work, SHARD_AND_SAY, "run", *argv, "--out", f"out-{count}", "--key",
                      "key.pem", "--workers", count, "--run-id", "same-run",
                      capture_output=True)
        assert done.returncode == want, done.stderr
        cuts = [f"sharded into {count}"] * sharded if count != "1" else []
        assert done.stderr.splitlines() == cuts
        outs[count] = folder(work / f"out-{count}")
    assert outs["2"] == outs["1"] and outs["3"] == outs["1"]
    assert not [p for p in work.iterdir() if p.name.startswith(".")]  # no staging left
    return outs["1"]


def test_the_shipped_specs_give_the_same_evidence_in_any_number_of_processes(
        work: Path) -> None:
    # the gate and the example read JSONL (sharded); the discovery tasks are not lines
    files = same_in_every_process_count(work, "specs/", want=0, sharded=2)
    assert "summary.json" in files and "agent-release-gate/scorecard.json.sig" in files
    assert "support-agent/scorecard.intoto.jsonl" in files


@pytest.mark.parametrize("passing_rows", ["compact", "full"])
def test_a_generated_release_gate_dataset_gives_the_same_evidence(work: Path,
                                                                  passing_rows: str) -> None:
    gate = work / "specs" / "agent-release-gate"
    if passing_rows == "full":
        keep_full_rows(gate / "policy.yaml")
    text = (gate / "evaluation.yaml").read_text()  # unpinned: the data reaches a decision
    (gate / "evaluation.yaml").write_text(
        "\n".join(x for x in text.splitlines() if not x.startswith("  suite_sha256:")) + "\n")
    assevra_data.write(work / "data" / "full.jsonl", 2000, seed=1)
    files = same_in_every_process_count(work, "specs/agent-release-gate", "--input",
                                        "runs=data/full.jsonl", want=1)
    card = json.loads(files["scorecard.json"])
    assert card["decision"] == "FAIL" and card["inputs"]["runs"]["records"] == 2000
    assert card["findings_count"] > 0 and files["validation.json"]
    passes = [json.loads(line) for line in files["rows.jsonl"].splitlines()
              if b'"status":"PASS"' in line]
    assert passes and all(("observed" in r) == (passing_rows == "full" or
                                                r["category"] in ("cost", "latency"))
                          for r in passes if not r.get("control"))


def span_of(path: Path, parts: int, line: int) -> int:
    """Which of the ``parts`` shards holds 1-based ``line``."""
    spans, _ = shards.split(path, parts)
    return max(i for i, s in enumerate(spans) if s.first_line <= line)


def test_duplicates_and_bad_lines_across_shard_boundaries(work: Path) -> None:
    data = work / "data" / "hostile.jsonl"
    hostile_dataset(data)  # the duplicate of line 12 on line 2902; bad JSON on 1502
    for parts in (2, 3):
        assert span_of(data, parts, 12) == 0 and span_of(data, parts, 2902) == parts - 1
    assert span_of(data, 2, 1502) == 0 and span_of(data, 3, 1502) == 1
    files = same_in_every_process_count(work, "specs/agent-release-gate", "--input",
                                        "runs=data/hostile.jsonl", want=3)
    problems = {r["line"]: r["code"] for r in map(json.loads, files["rows.jsonl"].splitlines())
                if "category" not in r}
    assert problems[2902] == "DUPLICATE_ID" and problems[1502] == "INVALID_JSON"


def test_extra_runs_of_a_case_across_shard_boundaries(work: Path) -> None:
    example = work / "specs" / "example"
    runs = [json.loads(x) for x in (example / "data/runs.jsonl").read_text().splitlines()]
    extra = [{**runs[0], "id": f"again-{i}"} for i in range(3)]  # case 1 declares 2 trials
    rows = runs + [runs[5]] + extra + runs[:2] + [{**runs[3], "id": "again-x"}]
    (example / "data/runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for parts in (2, 3):  # the first runs in the first shard, the extra ones in the last
        assert span_of(example / "data/runs.jsonl", parts, 1) == 0
        assert span_of(example / "data/runs.jsonl", parts, 23) == parts - 1
    files = same_in_every_process_count(work, "specs/example", want=3)
    problems = [json.loads(x) for x in files["rows.jsonl"].splitlines()
                if b'"category"' not in x]
    assert [(r["line"], r["code"]) for r in problems] == [
        (17, "DUPLICATE_ID"), (18, "EXTRA_RUN"), (19, "EXTRA_RUN"), (20, "EXTRA_RUN"),
        (21, "DUPLICATE_ID"), (22, "DUPLICATE_ID"), (23, "EXTRA_RUN")]


@pytest.mark.parametrize("argv", [["--workers", "0"], ["--workers", "two"],
                                  ["--workers", "-1"], ["--workers", "2", "--executor", "ray"],
                                  ["--workers", "auto", "--executor", "ray", "--shards", "2"]])
def test_workers_is_a_positive_number_or_auto_and_not_for_ray(
        tmp_path: Path, capsys: Any, argv: list[str]) -> None:
    assert main(["run", str(ROOT / "specs" / "example"), "--out", str(tmp_path / "o"),
                 *argv]) == 2
    assert "BAD_WORKERS" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


# A worker fails on its second shard: with a coded error, with a bug, or killed outright.
FAILING = SHARD_ALL + """
from engine.errors import UsageError
real = shards.score_part
def failing(job, *rest):
    if job.index == 1 and os.getpid() != DRIVER:
        {}
    return real(job, *rest)
import os
DRIVER = os.getpid()
shards.score_part = failing
"""


@pytest.mark.parametrize(("failure", "code", "said"), [
    ("raise UsageError('data/full.jsonl changed', 'INPUT_CHANGED')", 2,
     "engine: INPUT_CHANGED: data/full.jsonl changed"),
    ("raise RuntimeError('a bug')", 3, "engine: INTERNAL_ERROR: RuntimeError: a bug"),
    ("os._exit(9)", 3, "engine: INTERNAL_ERROR: BrokenProcessPool")])
def test_a_failing_worker_fails_the_run_with_nothing_written(
        work: Path, failure: str, code: int, said: str) -> None:
    assevra_data.write(work / "data" / "full.jsonl", 600, seed=1)
    done = engine(work, FAILING.format(failure), "run", "specs/agent-release-gate",
                  "--input", "runs=data/full.jsonl", "--out", "out", "--workers", "3",
                  capture_output=True)
    assert done.returncode == code and said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in work.iterdir()) == ["data", "key.pem", "specs"]


def on_a_terminal(work: Path, setup: str, *argv: str) -> tuple[int, str, str]:
    """Run with stderr on a pseudo-terminal: (exit code, what the terminal showed, stdout)."""
    master, slave = os.openpty()
    shown = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the terminal closed (EIO on Linux)
                return
            if not chunk:
                return
            shown.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        done = engine(work, setup, *argv, stdout=subprocess.PIPE, stderr=slave)
    finally:
        os.close(slave)
        reader.join(timeout=30)
        os.close(master)
    return done.returncode, shown.decode(), done.stdout


@pytest.mark.parametrize("count", ["1", "2"])
def test_progress_shows_on_a_terminal_and_is_cleared(work: Path, count: str) -> None:
    assevra_data.write(work / "data" / "full.jsonl", 3000, seed=1)
    # every report drawn (a fast machine may score 3,000 records in under the 0.25 s
    # a real run waits before the first drawing); with --workers 2, sharded
    setup = SHARD_ALL + "\ncli.run._Scoring.INTERVAL = 0.0"
    code, shown, stdout = on_a_terminal(work, setup, "run", "specs/agent-release-gate",
                                        "--input", "runs=data/full.jsonl", "--out", "out",
                                        "--workers", count)
    assert code == 3
    drawings = [x for x in shown.split("\r\x1b[K") if x]
    assert drawings and all(x.startswith("  scoring: ") for x in drawings), shown
    last = drawings[-1]  # the sums of the workers' counts reach the whole input
    assert last.startswith("  scoring: 3,000 records, ") and "100% of the input" in last
    assert shown.endswith("\r\x1b[K")  # cleared at the end
    assert "scoring" not in stdout and "agent-release-gate: INCOMPLETE" in stdout


def test_no_progress_when_stderr_is_not_a_terminal(work: Path) -> None:
    assevra_data.write(work / "data" / "full.jsonl", 3000, seed=1)
    done = engine(work, SHARD_ALL + "\ncli.run._Scoring.INTERVAL = 0.0", "run",
                  "specs/agent-release-gate", "--input", "runs=data/full.jsonl",
                  "--out", "out", "--workers", "2", capture_output=True)
    assert done.returncode == 3
    assert done.stderr == "" and "scoring" not in done.stdout


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_workers_end_when_their_driver_is_killed_outright(work: Path) -> None:
    # found by review: after SIGKILL of the driver, workers blocked on a full pipe for ever
    import signal
    import time
    data = work / "data" / "big.jsonl"
    assevra_data.write(data, 40_000, compact=False)  # ~10 MB: the pool runs
    driver = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", "specs/agent-release-gate", "--input",
         f"runs={data}", "--out", str(work / "out"), "--workers", "2"], cwd=work,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    workers_seen: set[int] = set()
    for _ in range(600):  # until both workers are up (at most a minute)
        workers_seen = _children(driver.pid)
        if len(workers_seen) >= 2 or driver.poll() is not None:
            break
        time.sleep(0.1)
    assert len(workers_seen) >= 2, "the pool never started"
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    for _ in range(300):  # each worker checks for its driver twice a second
        if not any(_alive(pid) for pid in workers_seen):
            break
        time.sleep(0.1)
    left = [pid for pid in workers_seen if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, "workers outlived their driver"
