"""The fused lanes (engine/run/compiled.py) and the release gate's fused checks
(engine/protocols/release_gate/fused.py) against what they stand in for.

Two claims are held. A fused check that answers for a row is right: ``classify`` makes the
row LABELED with no message and the primitive PASSes it, keeping the numbers the check
kept. And a run with the lanes writes every evidence file byte for byte as the run without
them, on generated, hostile and hypothesis-drawn records. The lanes must also be taken:
a check that never answered would pass both claims and gain nothing."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import assevra_data
from engine.cli import main
from engine.protocols.release_gate import assevra, fused
from engine.records.formats import LABELED, Record
from engine.run import compiled, rows
from engine.spec import evaluation as spec_loader

from .conftest import GATE, unpinned_gate
from .test_compiled import evidence
from .test_shards import hostile_dataset


@pytest.fixture(scope="module")
def runner() -> rows._Runner:
    """A runner of the shipped release gate (its lanes, its context and its policy)."""
    evaluation = spec_loader.load([GATE])[0]
    return rows._Runner(evaluation, lambda row: None)


def _claim(runner: rows._Runner, row: dict[str, Any]) -> bool:
    """Whether the row's lane answered; when it did, the answer must be right."""
    dimension = row.get("dimension")
    lane = runner.lanes.get(dimension) if isinstance(dimension, str) else None
    if lane is None:
        return False
    inspection = runner.plan.table[dimension][0].inspection
    effective, judged = compiled._effective(runner, inspection)
    check = runner.format.fused(dimension, effective, runner.policy.budgets)
    kept = check(copy.deepcopy(row), runner.ctx)
    if kept is None:
        return False
    verdict = assevra.classify(row, set(), runner.policy.budgets)
    assert (verdict.klass, verdict.messages) == (LABELED, []), row
    outcome = rows.inspect(inspection, row, runner.ctx, runner.policy.inspections)
    assert outcome.status == "PASS" and not outcome.code and not outcome.message, row
    assert outcome.record is None
    primitive = inspection.primitive  # what the step's function counts as the judge's
    assert judged == (primitive.asks_judge and primitive.judge_decides(outcome.expected))
    for value, full in zip(kept, (outcome.expected, outcome.observed), strict=True):
        number = isinstance(full, int | float) and not isinstance(full, bool)
        assert (value is not None) == number and (value is None or value == full and
                                                  type(value) is type(full)), row
    return True


def test_the_lanes_of_the_shipped_gate(runner: rows._Runner) -> None:
    # grounding is the judge's alone; safety without a judge is its refusal fallback
    assert sorted(runner.lanes) == ["action_correctness", "cost", "injection", "latency",
                                    "pii", "safety", "task_completion", "tool_call"]


@pytest.mark.parametrize("compact", [False, True])
def test_generated_rows_take_the_lanes_and_every_answer_is_right(
        runner: rows._Runner, compact: bool) -> None:
    taken, passing = 0, 0
    for row in assevra_data.rows(3000, seed=11, compact=compact):
        if row["dimension"] not in runner.lanes:
            continue
        outcome = rows.inspect(runner.plan.table[row["dimension"]][0].inspection, row,
                               runner.ctx, runner.policy.inspections)
        passing += outcome.status == "PASS"
        taken += _claim(runner, row)
    # every passing row of a lane's dimension takes it (a control row still passes its
    # inspection here, and is taken by the check: the lane itself sends it the usual way)
    assert passing > 1500 and taken == passing


# Values a gated party might put in any field: each type, blanks, the edges of each check.
ODD = [None, "", " ", "x", "short", "a fine text of words", 0, -1, 7, 1.5, -0.5, 1.0, True,
       False, [], [""], ["x"], ["ok", 3], [1], {}, {"a": 1}, {"input_tokens": -1},
       {"input_tokens": 1.0}, {"output_tokens": True}, {"name": 3}, [{"name": 3}],
       [{"tool": "refund"}], "ordered", "EXACT", "Set", [{"name": "x", "arguments": "[1]"}],
       {"refund": {"json_schema": {"type": "nonsense"}}},
       {"refund": {"types": {"amount": "float"}}}, {"refund": "a contract"}]
KEYS = sorted({*fused.KEYS, "id", "dimension", "tool_schemas", "expected_state",
               "_suggested", "_capture_error", "sanctioned_field", "an_unknown_key"})


def _mutants() -> Iterator[dict[str, Any]]:
    rng = random.Random(5)
    base = [r for r in assevra_data.rows(400, seed=4) if r["dimension"] != "grounding"]
    for row in base[:160]:
        for key in KEYS:
            for value in rng.sample(ODD, 4):
                yield {**row, key: value}
        yield {k: v for k, v in row.items() if k != rng.choice(sorted(row))}


def test_every_answer_on_mutated_rows_is_right(runner: rows._Runner) -> None:
    answered = sum(_claim(runner, row) for row in _mutants())
    assert answered > 1000  # many mutants still pass: the claims above were tested on them


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.5, 1.0, 250.0]) |
    st.sampled_from(["", "x", "refund", "A-17", "done", "4111 1111 1111 1111", "ordered"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["name", "arguments", "amount", "type", "input_tokens"]), inner,
        max_size=3), max_leaves=6)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(base=st.integers(0, 399), changes=st.dictionaries(st.sampled_from(KEYS), _VALUES,
                                                         max_size=4))
def test_every_answer_on_drawn_rows_is_right(runner: rows._Runner, base: int,
                                             changes: dict[str, Any]) -> None:
    row = list(assevra_data.rows(400, seed=4, compact=base % 2 == 0))[base]
    _claim(runner, {**row, **changes})


# End to end: every evidence file with the lanes and without them.

@pytest.fixture
def gate(tmp_path: Path) -> Path:
    """An unpinned copy of the release gate (generated data reaches a decision)."""
    return unpinned_gate(tmp_path)


def both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *argv: str) -> dict[str, bytes]:
    """``engine run ARGV`` with the lanes and without: the same exit and every file."""
    outs, codes, taken = {}, {}, {}
    for way in (True, False):
        monkeypatch.setattr(rows, "LANES", way)
        out = tmp_path / f"lanes-{way}"
        counted: list[int] = []
        real = rows._Runner.__init__

        def init(self: rows._Runner, *a: Any, real: Any = real, counted: list[int] = counted,
                 **k: Any) -> None:
            real(self, *a, **k)
            for value, lane in list((self.lanes or {}).items()):
                def counting(runner: Any, item: Any, lane: Any = lane) -> bool:
                    done = lane(runner, item)
                    counted.append(int(done))
                    return done
                self.lanes[value] = counting
        monkeypatch.setattr(rows._Runner, "__init__", init)
        codes[way] = main(["run", *argv, "--out", str(out), "--run-id", "same-run",
                           "--as-of", "2026-11-29", "--workers", "1"])
        monkeypatch.setattr(rows._Runner, "__init__", real)
        outs[way], taken[way] = evidence(out), sum(counted)
    assert codes[True] == codes[False] and codes[True] in (0, 1, 3, 4) and taken[False] == 0
    assert outs[True].keys() == outs[False].keys()
    for name, data in outs[True].items():
        assert data == outs[False][name], name
    return {**outs[True], "taken": str(taken[True]).encode()}


@pytest.mark.parametrize("compact", [False, True])
def test_a_generated_dataset(gate: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             compact: bool) -> None:
    data = assevra_data.write(tmp_path / "runs.jsonl", 2000, seed=8, compact=compact)
    files = both(tmp_path, monkeypatch, str(gate), "--input", f"runs={data}")
    assert int(files["taken"]) > 1000


def test_a_hostile_dataset(gate: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "runs.jsonl"
    hostile_dataset(data)
    files = both(tmp_path, monkeypatch, str(gate), "--input", f"runs={data}")
    assert int(files["taken"]) > 1000


def test_mutated_rows_controls_duplicates_and_a_waiver(
        gate: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [json.dumps({**r, "id": f"{r['id']}-{n}"} if isinstance(r.get("id"), str) and
                        r["id"].startswith("c") else r) for n, r in enumerate(_mutants())][:4000]
    lines += lines[:50]  # ids given twice: the second is refused, lane or not
    lines.append(json.dumps({"id": "ctl", "dimension": "pii", "case_id": "ctl",
                             "agent_output": "fine words", "tags": ["negative-example"]}))
    (tmp_path / "runs.jsonl").write_text("\n".join(lines) + "\n")
    policy = gate / "policy.yaml"
    policy.write_text(policy.read_text().replace("  reason_codes:", (
        "  waivers:\n    - id: W-1\n      scope: {categories: [cost]}\n"
        "      justification: a known budget overrun\n      approver: governance\n"
        "      expires: 2027-01-01\n  reason_codes:"), 1))
    files = both(tmp_path, monkeypatch, str(gate), "--input",
                 f"runs={tmp_path / 'runs.jsonl'}")
    assert int(files["taken"]) > 500
    assert b'"DUPLICATE_ID"' in files["rows.jsonl"] and b'"waived_by":"W-1"' in \
        files["rows.jsonl"]


def test_other_selectors_and_budgets(gate: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The lanes read what the policy's parameters select, not Assevra's default fields."""
    policy = gate / "policy.yaml"
    text = policy.read_text()
    text = text.replace("      type: must_include\n      when: \"dimension == 'task_completion'\"",
                        "      type: must_include\n      when: \"dimension == 'task_completion'\""
                        "\n      output: input\n      items: tags", 1)
    text = text.replace("  statistics:", "  budgets:\n    latency_ms: 900\n    cost_usd: 0.002\n"
                        "  statistics:", 1)
    policy.write_text(text)
    rows_in = list(assevra_data.rows(1200, seed=6))
    for n, row in enumerate(rows_in):
        if row["dimension"] == "task_completion":
            row.update(input=f"please refund A-{n % 5}", tags=["refund"] if n % 3 else ["x"])
        if row["dimension"] in ("cost", "latency") and n % 2:
            row.pop("cost_budget_usd", None)
            row.pop("latency_budget_ms", None)
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows_in))
    files = both(tmp_path, monkeypatch, str(gate), "--input", f"runs={data}")
    assert int(files["taken"]) > 300


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(changes=st.lists(st.tuples(st.integers(0, 299), st.sampled_from(KEYS), _VALUES),
                        max_size=40))
def test_drawn_datasets(gate: Path, tmp_path_factory: pytest.TempPathFactory,
                        monkeypatch: pytest.MonkeyPatch,
                        changes: list[tuple[int, str, Any]]) -> None:
    rows_in = list(assevra_data.rows(300, seed=12))
    for n, key, value in changes:
        rows_in[n][key] = value
    work = tmp_path_factory.mktemp("drawn")
    data = work / "runs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows_in))
    both(work, monkeypatch, str(gate), "--input", f"runs={data}")


def test_no_lanes_with_full_rows_or_without_validation(gate: Path) -> None:
    from .conftest import keep_full_rows

    keep_full_rows(gate / "policy.yaml")
    evaluation = spec_loader.load([gate])[0]
    assert rows._Runner(evaluation, lambda row: None).lanes is None
    assert rows._Runner(evaluation, lambda row: None, compiled=False).lanes is None


def test_a_lane_changes_nothing_when_it_declines(runner: rows._Runner) -> None:
    row = next(r for r in assevra_data.rows(50, seed=3) if r["dimension"] == "cost")
    fresh = rows._Runner(runner.evaluation, lambda row: None)
    before = (fresh.tally.records, dict(fresh.tally.validation), fresh.tally.rows)
    assert fresh.lanes["cost"](fresh, Record(1, {**row, "_suggested": ["cost_budget_usd"]})) \
        is False
    assert (fresh.tally.records, dict(fresh.tally.validation), fresh.tally.rows) == before
    assert row["id"] not in fresh.seen


def test_with_a_judge(gate: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a judge, safety rows are the judge's (no lane) and injection rows with canaries
    still take theirs."""
    data = assevra_data.write(tmp_path / "runs.jsonl", 600, seed=2)
    files = both(tmp_path, monkeypatch, str(gate), "--input", f"runs={data}",
                 "--judge-provider", "mock")
    assert int(files["taken"]) > 300


def test_lanes_in_worker_processes_give_the_evidence_of_one_process_without_them(
        gate: Path, tmp_path: Path) -> None:
    """Sharded over 2 and 3 processes with the lanes (ids recurring across shards, bad
    lines, controls), against one process without them: every file the same."""
    from .test_workers import SHARD_ALL, engine, folder

    data = tmp_path / "runs.jsonl"
    hostile_dataset(data)
    outs = {}
    for name, setup, count in (("usual", "from engine.run import rows; rows.LANES = False",
                                "1"), ("two", SHARD_ALL, "2"), ("three", SHARD_ALL, "3")):
        done = engine(tmp_path, setup, "run", str(gate), "--input", f"runs={data}", "--out",
                      f"out-{name}", "--workers", count, "--run-id", "same-run",
                      capture_output=True)
        assert done.returncode == 3, done.stderr
        outs[name] = folder(tmp_path / f"out-{name}")
    assert outs["two"] == outs["usual"] and outs["three"] == outs["usual"]


def test_the_lanes_bench_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import lanes

    assert lanes.main(["--rows", "300", "--repeat", "1", "--whole", "300"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("baseline: the usual path")
    assert [line.split(":")[0] for line in lines[1:]] == ["full", "full", "compact", "compact"]
    assert all("usual / lanes" in line for line in lines[1:])
