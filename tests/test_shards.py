"""Sharded runs: the byte-range splitter, and ``--executor ray`` on a real local Ray instance
giving the single-process evidence byte for byte."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.assevra_data import rows as generated_rows
from engine.cli import main
from engine.errors import UsageError
from engine.evidence import signing
from engine.records.formats import read_jsonl, read_jsonl_part
from engine.run import shards
from engine.spec import evaluation as spec

from .conftest import EXAMPLE, GATE, keep_full_rows, suite_sha256
from .judge_server import Judge
from .test_judge import configure, grounding


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.sampled_from([b"", b" ", b"{}", b'{"a":1}', b"x" * 70, b"[1,2]",
                                       b"\xff\xfe", b'{"id":"q"}']), max_size=40),
       trailing=st.booleans(), parts=st.integers(1, 9))
def test_split_cuts_at_line_starts_and_reads_back_the_whole_file(
        tmp_path_factory: Any, lines: list[bytes], trailing: bool, parts: int) -> None:
    data = b"\n".join(lines) + (b"\n" if trailing and lines else b"")
    path = tmp_path_factory.mktemp("split") / "f.jsonl"
    path.write_bytes(data)
    spans, whole = shards.split(path, parts)
    assert whole == hashlib.sha256(data).hexdigest()
    assert 1 <= len(spans) <= parts
    assert spans[0].start == 0 and spans[-1].end == len(data)
    for before, after in zip(spans, spans[1:], strict=False):
        assert before.end == after.start and data[after.start - 1:after.start] == b"\n"
    for span in spans:  # line numbers and digests, counted here independently
        assert span.first_line == data[:span.start].count(b"\n") + 1
        assert span.sha256 == hashlib.sha256(data[span.start:span.end]).hexdigest()
    pieces = [r for s in spans for r in read_jsonl_part(path, None, s.start, s.end,
                                                        s.first_line)]
    assert pieces == list(read_jsonl(path))


@pytest.fixture(scope="module")
def ray_local() -> Iterator[Any]:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    yield ray
    ray.shutdown()


def evidence_files(out: Path) -> dict[str, Any]:
    """Every file's bytes; for the DSSE envelope, its statement without the signing time
    (the one thing in the evidence that depends on the clock)."""
    files: dict[str, Any] = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    if "scorecard.intoto.jsonl" in files:
        envelope = json.loads(files.pop("scorecard.intoto.jsonl"))
        statement = json.loads(base64.b64decode(envelope["payload"]))
        assert statement["predicate"].pop("generated_at")
        files["statement"] = statement
    return files


def run_both(root: Path, spec_dir: Path, data: Path | None, *extra: str,
             shards_n: int = 4) -> tuple[dict[str, bytes], dict[str, bytes], int]:
    given_input = ["--input", f"runs={data}"] if data is not None else []
    codes = []
    for name, executor in (("local", []), ("ray", ["--executor", "ray", "--shards",
                                                    str(shards_n)])):
        codes.append(main(["run", str(spec_dir), *given_input, "--out", str(root / name),
                           "--as-of", "2026-11-29", "--run-id", "one-run", *extra,
                           *executor]))
    assert codes[0] == codes[1]
    return evidence_files(root / "local"), evidence_files(root / "ray"), codes[0]


def hostile_dataset(path: Path) -> list[str]:
    """3,000 generated rows with a duplicate id far from its first use, a bad JSON line, a
    non-object, blank lines and no newline at the end."""
    lines = [json.dumps(r) for r in generated_rows(3000, seed=7)]
    lines[2900] = lines[10]  # the same id again, several shards later
    lines[1500] = '{"id": "broken", '
    lines[2200] = "[1, 2]"
    lines.insert(700, "")
    path.write_text("\n".join(lines))
    return lines


def test_ray_shards_give_the_single_process_evidence_byte_for_byte(
        ray_local: Any, tmp_path: Path) -> None:
    data = tmp_path / "runs.jsonl"
    hostile_dataset(data)
    (tmp_path / "keys").mkdir()
    assert main(["keygen", "--out-dir", str(tmp_path / "keys")]) == 0
    local, sharded, code = run_both(tmp_path, GATE, data, "--key",
                                    str(tmp_path / "keys" / "private.pem"), shards_n=5)
    assert code == 3  # strict validation: INVALID rows leave the gate INCOMPLETE
    assert set(local) >= {"scorecard.json", "scorecard.json.sig", "rows.jsonl",
                          "findings.jsonl", "validation.json", "junit.xml"}
    assert sharded == local
    rows = [json.loads(line) for line in local["rows.jsonl"].splitlines()]
    by_line = {r["line"]: r for r in rows if "category" not in r}  # record problems
    # line numbers count the blank line: the duplicate sits on line 2902 (0-based 2900 + 1
    # for the inserted blank + 1), the broken JSON on 1502, the array on 2202
    assert by_line[2902]["code"] == "DUPLICATE_ID"
    assert by_line[1502]["code"] == "INVALID_JSON" and by_line[2202]["code"] == "NOT_AN_OBJECT"
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())  # no staging left


@pytest.mark.parametrize("passing_rows", ["compact", "full"])
def test_ray_shards_of_a_clean_dataset_reach_the_same_failing_decision(
        ray_local: Any, tmp_path: Path, gate: Any, passing_rows: str) -> None:
    if passing_rows == "full":
        keep_full_rows(gate.dir / "policy.yaml")
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in generated_rows(4000, seed=3)))
    gate.pin(suite_sha256(generated_rows(4000, seed=3)))
    local, sharded, code = run_both(tmp_path, gate.dir, data, shards_n=3)
    assert code == 1  # the generated failures fail the gate
    card = json.loads(local["scorecard.json"])
    assert card["inputs"]["runs"]["records"] == 4000 and card["findings_count"] > 0
    assert sharded == local


def test_ray_shards_of_a_suite_with_cases(ray_local: Any, tmp_path: Path) -> None:
    local, sharded, code = run_both(tmp_path, EXAMPLE, None, shards_n=4)
    assert code == 0 and sharded == local


def test_ray_shards_refuse_extra_runs_and_repeated_ids_as_one_process_does(
        ray_local: Any, tmp_path: Path, spec: Any) -> None:
    runs = spec.runs()
    extra = [{**runs[0], "id": f"again-{i}"} for i in range(3)]  # case 1 declares 2 trials
    spec.write_runs(runs + [runs[5]] + extra + runs[:2] + [{**runs[3], "id": "again-x"}])
    local, sharded, code = run_both(tmp_path, spec.dir, None, shards_n=4)
    assert code == 3 and sharded == local
    problems = [json.loads(x) for x in local["rows.jsonl"].splitlines() if b'"category"' not in x]
    assert [(r["line"], r["code"]) for r in problems] == [
        (17, "DUPLICATE_ID"), (18, "EXTRA_RUN"), (19, "EXTRA_RUN"), (20, "EXTRA_RUN"),
        (21, "DUPLICATE_ID"), (22, "DUPLICATE_ID"), (23, "EXTRA_RUN")]


def test_workers_never_call_the_judge_and_the_driver_keeps_its_bound(
        ray_local: Any, tmp_path: Path, gate: Any) -> None:
    signing.keygen(tmp_path / "keys")  # a replay needs a signed source it trusts
    signed = ["--key", str(tmp_path / "keys" / "private.pem"),
              "--trusted-key", str(tmp_path / "keys" / "public.pem")]
    judge = Judge()
    try:
        configure(gate, judge, concurrency=2)
        judge.script["*"] = [{"delay": 0.05}]
        data = tmp_path / "judged.jsonl"
        data.write_text("".join(json.dumps(grounding(i)) + "\n" for i in range(12)))
        live = run_both(tmp_path / "live", gate.dir, data, "--no-judge-cache", *signed,
                        shards_n=3)
        assert judge.calls() == 24  # 12 prompts, asked once by each run's driver
        assert judge.peak == 2  # the bound was reached and never passed
    finally:
        judge.close()
    assert live[0]["rows.jsonl"] == live[1]["rows.jsonl"]  # latencies differ, verdicts not
    # answers replayed from the first (signed) run: the whole evidence is the same
    recorded = tmp_path / "live" / "local"
    local, sharded, _ = run_both(tmp_path / "replay", gate.dir, data, "--no-judge-cache",
                                 "--judge-replay", str(recorded), *signed, shards_n=3)
    assert sharded == local
    assert local["judgements.jsonl"] == (recorded / "judgements.jsonl").read_bytes()


def job_for(tmp_path: Path) -> tuple[shards.Job, spec.Evaluation]:
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in generated_rows(30)))
    evaluation = spec.load([GATE], {"runs": data})[0]
    spans, _ = shards.split(data, 1)
    (tmp_path / "spool").mkdir()
    job = shards.Job(0, 0, str(Path.cwd()), str(evaluation.root), str(evaluation.file),
                     {"runs": str(data)}, "2026-11-29",
                     shards._digests(evaluation), spans[0], str(tmp_path / "spool"), None,
                     frozenset())
    return job, evaluation


def test_a_worker_refuses_an_input_or_spec_that_changed(tmp_path: Path) -> None:
    job, _ = job_for(tmp_path)
    part, (keys, _) = shards.score_part(job, None)  # in this process: the worker function
    assert part.tally.records == 30 and len(keys) == 30 * shards.KEY
    assert keys == b"".join(sorted(shards.id_key(r["id"]) for r in generated_rows(30)))
    # told that an earlier shard validated one of its ids, the worker flags it here
    first = json.loads((tmp_path / "runs.jsonl").read_text().splitlines()[0])["id"]
    part, _ = shards.score_part(replace(job, attempt=3, earlier=frozenset(
        {shards.id_key(first)})), None)
    assert part.tally.validation_rows[0]["messages"][0]["code"] == "DUPLICATE_ID"
    with pytest.raises(UsageError) as err:
        shards.score_part(replace(job, attempt=1, span=replace(job.span, sha256="0" * 64)),
                          None)
    assert err.value.code == "INPUT_CHANGED"
    with pytest.raises(UsageError) as err:
        shards.score_part(replace(job, attempt=2, digests=("x", "y", "z", "w")), None)
    assert err.value.code == "SPEC_CHANGED"
    with pytest.raises(UsageError) as err:  # the same documents, another spec file's bytes
        shards.score_part(replace(job, attempt=4, digests=(*job.digests[:3], "0" * 64)),
                          None)
    assert err.value.code == "SPEC_CHANGED"


def test_common_keys_of_two_sorted_key_strings() -> None:
    a = sorted(shards.id_key(f"id{i}") for i in range(0, 300, 2))
    b = sorted(shards.id_key(f"id{i}") for i in range(0, 300, 3))
    want = {shards.id_key(f"id{i}") for i in range(0, 300, 6)}
    assert shards._common(b"".join(a), b"".join(b)) == want
    keys = [b"".join(a), b"".join(b), b"".join(sorted(want))]
    assert shards._recurring(keys) == {1: frozenset(want), 2: frozenset(want)}


def test_runs_before_a_shard_are_counted_as_one_process_would() -> None:
    trials = {"a": 2, "b": 3}
    found = [(b"", {"a": 1}), (b"", {"a": 2, "b": 1}), (b"", {"b": 2}), (b"", {"a": 1})]
    # shard 1: 'a' had 1 earlier, 1 + 2 > 2; shard 2: 'b' had 1, 1 + 2 = 3 fits; shard 3:
    # 'a' already has its 2 (1, then 1 of shard 1's 2)
    assert shards._runs_before(trials, found) == {1: (("a", 1),), 3: (("a", 2), ("b", 3))}


def test_shards_need_the_ray_executor(tmp_path: Path, capsys: Any) -> None:
    assert main(["run", str(EXAMPLE), "--out", str(tmp_path / "o"), "--shards", "2"]) == 2
    assert "BAD_SHARDS" in capsys.readouterr().err
    assert main(["run", str(EXAMPLE), "--out", str(tmp_path / "o"), "--executor", "ray",
                 "--shards", "0"]) == 2
    assert not (tmp_path / "o").exists()


def test_the_command_starts_its_own_ray_instance(tmp_path: Path) -> None:
    """As a user runs it: a fresh process starts a local Ray instance, shards, and exits."""
    import subprocess
    import sys

    local, sharded = tmp_path / "local", tmp_path / "ray"
    base = [sys.executable, "-m", "engine", "run", str(EXAMPLE), "--as-of", "2026-11-29"]
    assert subprocess.run([*base, "--out", str(local)], capture_output=True).returncode == 0
    run = subprocess.run([*base, "--out", str(sharded), "--executor", "ray", "--shards", "3"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "support-agent: PASS" in run.stdout
    assert evidence_files(sharded) == evidence_files(local)
