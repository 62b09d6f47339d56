"""The ``records`` fuzz target: mutated evidence through a whole ``engine run``.

Each case starts from a dataset that FAILs (the example spec with three runs that miss
their expected actions and facts; the release gate on the refund fixture before its fix),
keeps every failing record byte-identical except, sometimes, its ``tags`` (which the
evaluated party writes and which may never change a verdict), and mutates everything else:
bytes flipped, values replaced by hostile ones (huge and overflowing numbers, deep nesting,
long strings, odd types), lines duplicated, runs added beyond the suite's trials, lines
reordered, records relabelled (``negative-example``, a tag a governance waiver names).
Oracle: no crash (anything but a result or an ``EngineError``), and never PASS.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WAIVER_TAG = "fuzz-waived"  # the copies' policies get a governance waiver scoped to it
HOSTILE = ["1e999", "-1E400", "1" * 5000, "9007199254740993", "[" * 5000 + "]" * 5000,
           "[" * 70 + "]" * 70, '{"a":' * 63 + "1" + "}" * 63, '"' + "x" * 200_000 + '"',
           '"\\ud800"', "NaN", "null", "true", "[]", "{}", '""', '"negative-example"',
           '["negative-example"]', f'["{WAIVER_TAG}"]', "-0.0", "1e308", '"run-001"']
KINDS = ("bytes", "value", "raw", "duplicate", "extra_runs", "reorder", "tag", "relabel",
         "truncate")


class Base:
    """A spec copy whose dataset FAILs, and which of its lines fail."""

    def __init__(self, name: str, folder: Path, data: Path, lines: list[bytes],
                 failing: set[int]) -> None:
        self.name, self.folder, self.data, self.lines, self.failing = \
            name, folder, data, lines, failing


def _example_lines() -> list[bytes]:
    lines = (ROOT / "specs/example/data/runs.jsonl").read_bytes().splitlines()
    for i in range(3):  # the refund runs miss the refund: resolution 0.875 < 0.9
        record = json.loads(lines[i])
        record["output"]["actions"] = ["lookup_order"]
        record["output"]["reply"] = "Sorry about that."
        lines[i] = json.dumps(record).encode()
    return lines


def _gate_lines() -> list[bytes]:
    import sys
    sys.path.insert(0, str(ROOT))
    from tests import refund

    return [json.dumps(r).encode() for r in refund.rows(fixed=False)]


def _waiver(policy: Path) -> None:
    import yaml

    doc = yaml.safe_load(policy.read_text())
    doc["spec"]["waivers"] = [{"id": "fuzz", "scope": {"tags": [WAIVER_TAG]},
                               "justification": "fuzzing: no record may opt into this",
                               "approver": "fuzz", "expires": "2999-12-31"}]
    policy.write_text(yaml.safe_dump(doc, sort_keys=False))


def bases(work: Path) -> list[Base]:
    """Copies of the two failing datasets, each checked to FAIL, with its failing lines."""
    out = []
    for name, spec, rel, lines in (
            ("example", "example", "data/runs.jsonl", _example_lines()),
            ("gate", "agent-release-gate", "data/refund-after.jsonl", _gate_lines())):
        folder = work / name / spec
        shutil.copytree(ROOT / "specs" / spec, folder)
        _waiver(folder / "policy.yaml")
        data = folder / rel
        data.write_bytes(b"\n".join(lines) + b"\n")
        decision, rows = run_once(folder, work / name / "first")
        if decision != "FAIL":
            raise RuntimeError(f"the {name} base must FAIL, not {decision}")
        failing = {r["line"] for r in rows if r.get("status") == "FAIL"}
        out.append(Base(name, folder, data, lines, failing))
    return out


def run_once(folder: Path, out: Path) -> tuple[str, list[dict[str, Any]]]:
    """Load and run a spec folder; (decision, rows). EngineError passes through."""
    from engine.run.execute import execute
    from engine.spec import evaluation as spec

    (evaluation,) = spec.load([folder])
    result = execute(evaluation, out)
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_bytes().splitlines()]
    shutil.rmtree(out, ignore_errors=True)
    return result.decision, rows


def mutate(base: Base, rng: random.Random) -> tuple[list[bytes], list[str]]:
    """The base's lines after one to four mutations, and their names."""
    lines = list(base.lines)
    fixed = [lines[i - 1] for i in sorted(base.failing)]  # failing records, by content
    done = []
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(KINDS)
        free = [i for i, line in enumerate(lines) if line not in fixed]
        done.append(kind)
        if kind == "duplicate":
            i = rng.randrange(len(lines))
            lines[i:i] = [lines[i]] * rng.choice([1, 2, 50, 300])
        elif kind == "extra_runs":
            lines += _extra_runs(lines, fixed, rng)
        elif kind == "reorder":
            rng.shuffle(lines)
        elif kind == "tag":  # tags only: the evaluated party's label never changes a verdict
            i = rng.randrange(len(lines))
            lines[i] = _set(lines[i], "tags", rng.choice(
                [["negative-example"], [WAIVER_TAG], ["negative-example", WAIVER_TAG]]))
        elif not free:
            continue
        elif kind == "bytes":
            i = rng.choice(free)
            data = bytearray(lines[i] or b" ")  # an earlier mutation may have emptied it
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            lines[i] = bytes(data)
        elif kind == "value":
            lines[rng.choice(free)] = _mutated_value(lines[rng.choice(free)], rng)
        elif kind == "raw":
            i = rng.choice(free)
            if lines[i].endswith(b"}"):
                key = rng.choice(["unread", "metrics", "output", "tags", "dimension", "id",
                                  "case_id", "trial", "agent_output", "tool_calls"])
                lines[i] = lines[i][:-1] + f', "{key}": {rng.choice(HOSTILE)}}}'.encode()
        elif kind == "relabel":
            i = rng.choice(free)
            lines[i] = _set(lines[i], rng.choice(["dimension", "case_id", "id"]),
                            rng.choice(["pii", "safety", "grounding", "", 7, None,
                                        "refund-late-delivery", "eligible"]))
        elif kind == "truncate":
            i = rng.choice(free)
            lines[i] = lines[i][:rng.randrange(len(lines[i]) + 1)]
    return lines, done


def _load(line: bytes) -> Any:
    """The line's JSON value, or None (the fuzzer's own reading must not crash)."""
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _set(line: bytes, key: str, value: Any) -> bytes:
    record = _load(line)
    if not isinstance(record, dict):
        return line
    record[key] = value
    return json.dumps(record).encode()


def _mutated_value(line: bytes, rng: random.Random) -> bytes:
    from .fuzz import _mutate_value

    record = _load(line)
    if record is None:
        return line
    _mutate_value(record, rng)
    return json.dumps(record).encode()


def _extra_runs(lines: list[bytes], fixed: list[bytes], rng: random.Random) -> list[bytes]:
    """Copies of passing runs under new ids and trial numbers, beyond the suite's trials."""
    passing = [line for line in lines if line not in fixed]
    if not passing:
        return []
    out = []
    for n in range(rng.choice([1, 5, 40, 200])):
        record = _load(rng.choice(passing))
        if isinstance(record, dict):
            record["id"] = f"extra-{n}-{record.get('id')}"
            record["trial"], record["trial_id"] = 100 + n, str(100 + n)
            out.append(json.dumps(record).encode())
    return out


def fuzz_records(rng: random.Random, work: Path, state: dict[str, Any]) -> str:
    """One mutated dataset through a whole run: its decision, or WrongPass on a PASS (a
    crash is any other exception)."""
    from engine.errors import EngineError

    from ._oracle import WrongPass

    if "bases" not in state:
        state["bases"] = bases(work)
    base: Base = rng.choice(state["bases"])
    lines, kinds = mutate(base, rng)
    base.data.write_bytes(b"\n".join(lines) + b"\n")
    try:
        decision, _ = run_once(base.folder, work / f"out-{rng.randrange(10**9)}")
    except EngineError as exc:
        return f"refused {exc.code}"
    finally:
        base.data.write_bytes(b"\n".join(base.lines) + b"\n")
    if decision == "PASS":
        raise WrongPass(f"{base.name}: {'+'.join(sorted(set(kinds)))}")
    return decision
