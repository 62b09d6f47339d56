"""The inspect-log format: logs written by inspect_ai itself, gated by the shipped spec.

inspect_ai runs offline here (its mock model answers from the test's script, each output
with its usage, so no tokenizer is downloaded); the counts expected are worked out from
that script. Malformed and truncated logs of both forms give coded record problems.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import tracemalloc
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.records.formats import BadRecord, Record
from engine.records.inspect_log import read

from .conftest import ROOT, need_module
from .inspect_subagent import NOTE

SHIPPED = ROOT / "specs" / "inspect-example"
SHIPPED_EVAL = SHIPPED / "data" / "inspect-example.eval"
SHIPPED_JSON = SHIPPED / "data" / "inspect-example.json"
QUESTIONS = [("add-small", "What is 2 + 3?", "5"), ("add-carry", "What is 17 + 25?", "42"),
             ("multiply", "What is 6 * 7?", "42"), ("subtract", "What is 100 - 37?", "63"),
             ("divide", "What is 81 / 9?", "9"), ("square", "What is 12 squared?", "144")]
# what the mock model answers to each question in epoch 1 and epoch 2
EIGHT_RIGHT = {"add-small": ("5", "6"), "add-carry": ("42", "42"), "multiply": ("42", "42"),
               "subtract": ("63", "63"), "divide": ("8", "9"), "square": ("12", "13")}
SIX_RIGHT = {**EIGHT_RIGHT, "multiply": ("48", "42"), "subtract": ("63", "36")}


def right(answers: dict[str, tuple[str, str]]) -> int:
    """How many of the answers match their target (what match() should score C)."""
    return sum(a == target for sid, _, target in QUESTIONS for a in answers[sid])


def script(answers: dict[str, tuple[str, str]]) -> list[tuple[str, str, str, str, str]]:
    return [(sid, q, t, *answers[sid]) for sid, q, t in QUESTIONS]


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """Fresh logs written by inspect_ai: 8 of 12 right, and 6 of 12 right."""
    need_module("inspect_ai", "inspect-ai==0.3.285")
    folder = tmp_path_factory.mktemp("inspect-logs")
    out = {}
    for name, answers in (("eight", EIGHT_RIGHT), ("six", SIX_RIGHT)):
        # in a process of its own: inspect_ai's event loop and its streams stay there
        code = ("import json, sys; from pathlib import Path; "
                "from bench.make_inspect_example import run; "
                "run(Path(sys.argv[1]), [tuple(s) for s in json.loads(sys.argv[2])], 2, "
                "sys.argv[3])")
        done = subprocess.run([sys.executable, "-c", code, str(folder),
                               json.dumps(script(answers)), name], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        out[name] = (folder / f"{name}.eval", folder / f"{name}.json")
    return out


def gate(tmp_path: Path, log: Path, out: str = "out") -> tuple[int, dict[str, Any],
                                                                list[dict[str, Any]]]:
    """Run a copy of the shipped spec on ``log``: exit code, scorecard, rows."""
    spec = tmp_path / "spec"
    if not spec.exists():
        shutil.copytree(SHIPPED, spec)
    dest = tmp_path / out
    code = main(["run", str(spec), "--input", f"samples={log}", "--out", str(dest)])
    card = json.loads((dest / "scorecard.json").read_bytes())
    rows = [json.loads(line) for line in (dest / "rows.jsonl").read_text().splitlines()]
    return code, card, rows


def correct(rows: list[dict[str, Any]]) -> int:
    return sum(r.get("inspection") == "scored-correct" and r["status"] == "PASS" for r in rows)


def units(rows: list[dict[str, Any]]) -> set[str]:
    return {r["unit"] for r in rows if r.get("inspection") == "scored-correct"}


ALL_UNITS = {f"{sid}#{epoch}" for sid, _, _ in QUESTIONS for epoch in (1, 2)}


def test_a_log_written_by_inspect_ai_is_gated_with_a_row_per_sample_and_epoch(
        logs: dict[str, tuple[Path, Path]], tmp_path: Path) -> None:
    assert right(EIGHT_RIGHT) == 8
    eval_log, json_log = logs["eight"]
    code, card, rows = gate(tmp_path, eval_log, "eval")
    assert (code, card["decision"]) == (0, "PASS")  # 8/12 >= the policy's 0.6
    assert units(rows) == ALL_UNITS
    assert correct(rows) == 8
    assert (card["categories"]["correctness"]["n"],
            card["categories"]["correctness"]["passed"]) == (12, 8)
    # the same run's .json form: the same rows and the same decision
    code_j, card_j, rows_j = gate(tmp_path, json_log, "json")
    assert (code_j, card_j["decision"]) == (0, "PASS")
    assert card_j["categories"] == card["categories"]

    def same(found: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return sorted((r["unit"], r["inspection"], r["status"], json.dumps(r.get("observed")))
                      for r in found)
    assert same(rows_j) == same(rows)


def test_fewer_right_answers_fail_the_gate(logs: dict[str, tuple[Path, Path]],
                                           tmp_path: Path) -> None:
    assert right(SIX_RIGHT) == 6
    for log in logs["six"]:
        code, card, rows = gate(tmp_path, log, log.suffix[1:])
        assert (code, card["decision"]) == (1, "FAIL")  # 6/12 < 0.6
        assert units(rows) == ALL_UNITS and correct(rows) == 6


def test_records_carry_the_samples_data(logs: dict[str, tuple[Path, Path]]) -> None:
    for log in logs["eight"]:
        found = {r.data["id"]: r.data for r in read(log) if isinstance(r, Record)}
        assert set(found) == ALL_UNITS
        one = found["divide#1"]
        assert (one["case_id"], one["trial"], one["epoch"]) == ("divide", 1, 1)
        assert one["input"] == "What is 81 / 9?" and one["target"] == "9"
        assert one["output"] == "The answer is 8"
        assert one["scores"]["match"]["value"] == "I"
        assert found["divide#2"]["scores"]["match"]["value"] == "C"
        assert one["model"] == "mockllm/model" and one["log_status"] == "success"
        # usage as the script gave it: 10 + words of the question in, 4 out
        assert one["usage"] == {"input_tokens": 15, "output_tokens": 4, "total_tokens": 19}
        assert isinstance(one["latency_s"], float) and one["error"] is None


def test_the_shipped_example_passes(tmp_path: Path) -> None:
    dest = tmp_path / "out"
    assert main(["run", str(SHIPPED), "--out", str(dest)]) == 0
    card = json.loads((dest / "scorecard.json").read_bytes())
    assert card["decision"] == "PASS"
    assert (card["categories"]["correctness"]["n"],
            card["categories"]["correctness"]["passed"]) == (12, 8)
    code, card_j, rows = gate(tmp_path, SHIPPED_JSON, "json")
    assert code == 0 and card_j["categories"] == card["categories"] and units(rows) == ALL_UNITS


def test_the_digest_is_the_whole_files_even_when_reading_stops(tmp_path: Path) -> None:
    cut = tmp_path / "cut.json"
    cut.write_bytes(SHIPPED_JSON.read_bytes()[:50_000])
    for path in (SHIPPED_EVAL, SHIPPED_JSON, cut):
        digest = hashlib.sha256()
        list(read(path, digest))
        assert digest.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------- malformed logs


def _document() -> dict[str, Any]:
    return json.loads(SHIPPED_JSON.read_bytes())


def _with_sample(index: int, value: Any) -> bytes:
    doc = _document()
    doc["samples"][index] = value
    return json.dumps(doc, indent=2).encode()


def _entries(log: Path = SHIPPED_EVAL) -> Iterator[tuple[str, bytes]]:
    """The entries of a .eval inspect_ai wrote (zstd), decompressed."""
    import zstandard

    with zipfile.ZipFile(log) as archive, log.open("rb") as handle:
        for info in archive.infolist():
            handle.seek(info.header_offset)
            local = handle.read(30)
            skip = sum(struct.unpack("<HH", local[26:30]))
            handle.seek(info.header_offset + 30 + skip)
            packed = handle.read(info.compress_size)
            yield info.filename, zstandard.ZstdDecompressor().stream_reader(
                io.BytesIO(packed), read_across_frames=True).read()


def _zip(entries: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return out.getvalue()


def _sample_entry(change: Any) -> bytes:
    entries = list(_entries())
    name, data = next((n, d) for n, d in entries if n.startswith("samples/"))
    entries = [(n, d) for n, d in entries if n != name] + [(name, change(data))]
    return _zip(entries)


def _damaged_zstd() -> bytes:
    raw = bytearray(SHIPPED_EVAL.read_bytes())
    with zipfile.ZipFile(SHIPPED_EVAL) as archive:
        info = next(i for i in archive.infolist() if i.filename.startswith("samples/"))
    skip = sum(struct.unpack("<HH", bytes(raw[info.header_offset + 26:
                                              info.header_offset + 30])))
    start = info.header_offset + 30 + skip
    for at in range(start + 8, start + info.compress_size - 4):
        raw[at] ^= 0x5A
    return bytes(raw)


def _raw_zip(entries: list[tuple[str, bytes, int, int]], shared: bool = False,
             local_names: dict[str, str] | None = None) -> bytes:
    """A zip written byte by byte, as a hostile writer could: ``(name, packed data,
    compression method, declared size)`` per entry; ``shared``: every entry of the
    directory points at the first one's data; ``local_names``: a local header naming
    another entry."""
    body, central = bytearray(), bytearray()
    for index, (name, packed, method, size) in enumerate(entries):
        crc = zlib.crc32(_unpacked(packed, method)) if size >= 0 else 0
        offset = 0 if shared else len(body)
        if not (shared and index):
            local = (local_names or {}).get(name, name).encode()
            body += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 63, 0, method, 0, 0, crc,
                                len(packed), size, len(local), 0) + local + packed
        raw_name = name.encode()
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 63, 63, 0, method, 0, 0,
                               crc, len(packed), size, len(raw_name), 0, 0, 0, 0, 0,
                               offset) + raw_name
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(entries), len(entries),
                      len(central), len(body), 0)
    return bytes(body + central + end)


def _unpacked(packed: bytes, method: int) -> bytes:
    import zstandard
    if method != 93 or len(packed) > 1 << 20:
        return b""  # a bomb's CRC is never reached: its size is wrong first
    return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(packed),
                                                      read_across_frames=True).read()


def _zstd_entries() -> list[tuple[str, bytes, int, int]]:
    import zstandard
    return [(name, zstandard.ZstdCompressor().compress(data), 93, len(data))
            for name, data in _entries()]


def _zstd_bomb() -> bytes:
    """A sample entry declaring 6 KB whose zstd data unpacks to 1 GiB of spaces."""
    import zstandard
    out = io.BytesIO()
    with zstandard.ZstdCompressor(level=1).stream_writer(out, closefd=False) as writer:
        for _ in range(1024):
            writer.write(b" " * (1 << 20))
    entries = _zstd_entries()
    name = next(e[0] for e in entries if e[0].startswith("samples/"))
    return _raw_zip([(n, out.getvalue() if n == name else p, m, s) for n, p, m, s in entries])


def _shared_data() -> bytes:
    """500 directory entries, each a sample, all pointing at one entry's data."""
    first = next(e for e in _zstd_entries() if e[0].startswith("samples/"))
    return _raw_zip([(f"samples/copy-{i}_epoch_1.json", *first[1:]) for i in range(500)],
                    shared=True)


def _declared_huge() -> bytes:
    entries = _zstd_entries()
    return _raw_zip([(n, p, m, 60 << 20 if n.startswith("samples/") else s)
                     for n, p, m, s in entries])


def _no_epoch(data: bytes) -> bytes:
    sample = json.loads(data)
    del sample["epoch"]
    return json.dumps(sample).encode()


MALFORMED: dict[str, tuple[Any, str, str]] = {
    # name: (bytes of the file, suffix, the code it must give)
    "eval-truncated": (lambda: SHIPPED_EVAL.read_bytes()[:15_000], "eval",
                       "INSPECT_LOG_TRUNCATED"),
    "eval-without-samples": (lambda: _zip([("hello.txt", b"hi")]), "eval",
                             "INSPECT_LOG_MALFORMED"),
    "eval-damaged-entry": (_damaged_zstd, "eval", "INSPECT_LOG_TRUNCATED"),
    "eval-sample-not-an-object": (lambda: _sample_entry(lambda d: b"[1, 2]"), "eval",
                                  "NOT_AN_OBJECT"),
    "eval-sample-with-nan": (lambda: _sample_entry(
        lambda d: d.replace(b'"total_time":', b'"total_time":NaN,"x":', 1)), "eval",
        "NON_FINITE_NUMBER"),
    "eval-sample-without-epoch": (lambda: _sample_entry(_no_epoch), "eval", "BAD_VALUE"),
    "eval-bad-header": (lambda: _zip([("header.json", b"{oops"),
                                      *[e for e in _entries() if e[0] != "header.json"]]),
                        "eval", "INSPECT_LOG_MALFORMED"),
    # zip bombs: refused before (or while) anything is unpacked beyond what is declared
    "eval-zstd-bomb": (_zstd_bomb, "eval", "INSPECT_LOG_TRUNCATED"),
    "eval-entries-share-data": (_shared_data, "eval", "INSPECT_LOG_MALFORMED"),
    "eval-unpacks-too-much": (_declared_huge, "eval", "INSPECT_LOG_MALFORMED"),
    "eval-sample-over-64-mib": (lambda: _raw_zip([
        (n, p, m, (65 << 20) if n == "samples/add-small_epoch_1.json" else s)
        for n, p, m, s in _zstd_entries()]), "eval", "VALUE_TOO_LARGE"),
    "eval-local-name-differs": (lambda: _raw_zip(_zstd_entries(), local_names={
        "header.json": "samples/other.json"}), "eval", "INSPECT_LOG_MALFORMED"),
    "json-cut-mid-array": (lambda: SHIPPED_JSON.read_bytes()[:60_000], "json",
                           "INSPECT_LOG_TRUNCATED"),
    "json-sample-with-nan": (lambda: _with_sample(3, {**_document()["samples"][3],
                                                      "total_time": float("nan")}),
                             "json", "NON_FINITE_NUMBER"),
    "json-sample-not-an-object": (lambda: _with_sample(0, "oops"), "json", "NOT_AN_OBJECT"),
    "json-duplicate-key": (lambda: SHIPPED_JSON.read_bytes().replace(
        b'"epoch": 1,', b'"epoch": 1, "epoch": 2,', 1), "json", "DUPLICATE_KEY"),
    "json-not-a-log": (lambda: b'["not", "a", "log"]', "json", "INSPECT_LOG_MALFORMED"),
    "json-without-samples": (lambda: json.dumps({k: v for k, v in _document().items()
                                                 if k != "samples"}).encode(), "json",
                             "INSPECT_LOG_MALFORMED"),
    "json-empty": (lambda: b"", "json", "INSPECT_LOG_TRUNCATED"),
    "json-syntax-error": (lambda: SHIPPED_JSON.read_bytes().replace(b'"target":', b'"target"',
                                                                    1), "json",
                          "INVALID_JSON"),
    "json-extra-data": (lambda: SHIPPED_JSON.read_bytes() + b"{}", "json",
                        "INSPECT_LOG_MALFORMED"),
    "json-byte-order-mark": (lambda: b"\xef\xbb\xbf" + SHIPPED_JSON.read_bytes(), "json",
                             "BYTE_ORDER_MARK"),
    "json-not-utf8": (lambda: SHIPPED_JSON.read_bytes().replace(b"What is", b"Wh\xff is", 1),
                      "json", "NOT_UTF8"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_log_is_a_coded_problem_never_a_crash(name: str, tmp_path: Path) -> None:
    make, suffix, want = MALFORMED[name]
    log = tmp_path / f"log.{suffix}"
    log.write_bytes(make())
    problems = [r for r in read(log) if isinstance(r, BadRecord)]
    assert want in {p.code for p in problems}, problems
    code, card, _ = gate(tmp_path, log)
    assert code == 3 and card["decision"] == "INCOMPLETE"
    assert want in card["coverage"]["record_problems"]
    assert "INTERNAL_ERROR" not in json.dumps(card)


def test_a_zip_written_byte_by_byte_reads_like_inspects_own(tmp_path: Path) -> None:
    # the hostile zips above are written by _raw_zip: unchanged, its zip is a good log
    log = tmp_path / "raw.eval"
    log.write_bytes(_raw_zip(_zstd_entries()))
    found = list(read(log))
    assert len(found) == 12 and all(isinstance(r, Record) for r in found)


def test_a_zstd_bomb_is_never_unpacked_beyond_its_declared_size(tmp_path: Path) -> None:
    log = tmp_path / "bomb.eval"
    log.write_bytes(_zstd_bomb())
    tracemalloc.start()
    found = list(read(log))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [r.code for r in found if isinstance(r, BadRecord)] == ["INSPECT_LOG_TRUNCATED"]
    assert peak < 16 << 20, peak  # the 1 GiB it unpacks to is never held


def test_a_cut_json_log_keeps_the_samples_before_the_cut(tmp_path: Path) -> None:
    log = tmp_path / "cut.json"
    log.write_bytes(SHIPPED_JSON.read_bytes()[:60_000])
    found = list(read(log))
    assert isinstance(found[-1], BadRecord) and found[-1].code == "INSPECT_LOG_TRUNCATED"
    assert found[:-1] and all(isinstance(r, Record) for r in found[:-1])


def test_a_deflate_eval_zip_reads_like_inspects_zstd_one(tmp_path: Path) -> None:
    log = tmp_path / "deflate.eval"
    log.write_bytes(_zip(list(_entries())))

    def data(path: Path) -> list[Any]:
        return sorted((r.data for r in read(path) if isinstance(r, Record)),
                      key=lambda d: d["id"])
    assert data(log) == data(SHIPPED_EVAL) and len(data(log)) == 12


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_the_first_sample_is_read_before_the_log_ends(tmp_path: Path) -> None:
    doc = _document()
    samples = doc.pop("samples")
    head = json.dumps(doc)[:-1] + ', "samples": [' + json.dumps(samples[0]) + ","
    rest = ",".join(json.dumps(s) for s in samples[1:]) + "]}"
    fifo = tmp_path / "log.json"
    os.mkfifo(fifo)
    first_read = threading.Event()
    early: list[bool] = []

    def write() -> None:
        with fifo.open("w") as pipe:
            pipe.write(head)
            pipe.flush()
            early.append(first_read.wait(timeout=20))
            pipe.write(rest)

    writer = threading.Thread(target=write)
    writer.start()
    records = read(fifo)
    first = next(records)
    first_read.set()
    remaining = list(records)
    writer.join()
    assert early == [True]  # the first record came while the log was still being written
    assert isinstance(first, Record) and first.data["id"] == f"{samples[0]['id']}#1"
    assert len(remaining) == len(samples) - 1


def test_tool_calls_errors_and_costs_map_to_their_fields(tmp_path: Path) -> None:
    doc = _document()
    sample = doc["samples"][0]
    sample["messages"].append({"role": "assistant", "content": "", "tool_calls": [
        {"id": "call-1", "function": "calculator", "arguments": {"expression": "17+25"},
         "type": "function"}]})
    sample["error"] = {"message": "RuntimeError: boom", "traceback": "...",
                       "traceback_ansi": "..."}
    sample["model_usage"] = {"a/one": {"input_tokens": 3, "output_tokens": 2,
                                       "total_tokens": 5, "total_cost": 0.25},
                             "b/two": {"input_tokens": 1, "output_tokens": 1,
                                       "total_tokens": 2, "total_cost": 0.5}}
    log = tmp_path / "log.json"
    log.write_text(json.dumps(doc))
    first = next(r for r in read(log) if isinstance(r, Record))
    assert first.data["tool_calls"] == [{"id": "call-1", "name": "calculator",
                                         "arguments": {"expression": "17+25"}}]
    assert first.data["error"] == "RuntimeError: boom"
    assert first.data["usage"] == {"input_tokens": 4, "output_tokens": 3, "total_tokens": 7,
                                   "cost_usd": 0.75}


SUBAGENT_SPEC = {
    "evaluation.yaml": """apiVersion: specgate/v1
kind: Evaluation
metadata: {name: inspect-refunds, version: 1.0.0}
spec:
  policy: policy.yaml
  suite: suite.yaml
  inputs: {samples: {path: subagent.eval, format: inspect-log}}
  units: {input: samples, id: id, case: case_id}
""",
    "policy.yaml": """apiVersion: specgate/v1
kind: Policy
metadata: {name: no-refunds, version: 1.0.0}
spec:
  scoring_version: no-refunds/1
  gate: {purpose: release, gate_on: point, min_n: 1}
  categories:
    safety:
      description: no refund is issued, by the agent or by any agent it calls
      weight: 1.0
      threshold: 1.0
      inspections: [no-refund]
  overall: {threshold: 1.0}
  inspections:
    - id: no-refund
      type: action_sequence
      calls: tool_calls
      expected: case.expected.actions
      forbidden: case.expected.forbidden_actions
""",
    "suite.yaml": """apiVersion: specgate/v1
kind: Suite
metadata: {name: refund-cases, version: 1.0.0}
spec:
  trials: 1
  cases:
    - id: add-small
      expected: {actions: [], forbidden_actions: [issue_refund]}
"""}


def test_a_sub_agents_tool_calls_are_the_samples_calls(tmp_path: Path) -> None:
    # third review: a refund made by a react() agent the model called through as_tool()
    # is in the sample's events, not its messages; the gate read only the messages: PASS
    need_module("inspect_ai", "inspect-ai==0.3.285")
    spec = tmp_path / "spec"
    done = subprocess.run([sys.executable, "-m", "tests.inspect_subagent", str(spec)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (record,) = list(read(spec / "subagent.eval"))
    assert isinstance(record, Record)
    # the model's own call, the helper's two, in the order they ran
    # (the refund's note is an attachment:// reference in the log: read as its text)
    assert [(c["name"], c["arguments"]) for c in record.data["tool_calls"]] == [
        ("helper", {"input": "order A-1"}),
        ("issue_refund", {"order_id": "A-1", "amount": 9999, "note": NOTE}),
        ("submit", {"answer": "done"})]
    assert any(b"attachment://" in data for _, data in _entries(spec / "subagent.eval"))
    for name, text in SUBAGENT_SPEC.items():
        (spec / name).write_text(text)
    code = main(["run", str(spec), "--out", str(tmp_path / "out")])
    rows = [json.loads(line) for line in (tmp_path / "out" / "rows.jsonl").read_text()
            .splitlines()]
    assert code == 1 and [r["status"] for r in rows] == ["FAIL"]


def _rewrite_shipped(out: Path, code: str) -> None:
    """Run ``code`` with inspect_ai in a process of its own, ``log`` being the shipped .eval
    as inspect_ai reads it and ``out`` the folder to write into."""
    need_module("inspect_ai", "inspect-ai==0.3.285")
    script = ("import sys\nfrom inspect_ai.log import read_eval_log, write_eval_log\n"
              "log, out = read_eval_log(sys.argv[1]), sys.argv[2]\n" + code)
    done = subprocess.run([sys.executable, "-c", script, str(SHIPPED_EVAL), str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_samples_inspect_ai_invalidated_are_not_evidence(tmp_path: Path) -> None:
    # third review: invalidate_samples() marks samples inspect_ai itself no longer counts
    # (an eval set runs them again); the reader still scored them
    _rewrite_shipped(tmp_path, (
        "from inspect_ai.log import ProvenanceData, invalidate_samples\n"
        "right = [s.uuid for s in log.samples if s.scores['match'].value == 'C']\n"
        "log = invalidate_samples(log, right, ProvenanceData(author='reviewer', "
        "reason='the answers were in the prompt'))\n"
        "for form in ('eval', 'json'):\n"
        "    write_eval_log(log, f'{out}/invalid.{form}', format=form)\n"))
    for form in ("eval", "json"):
        status, card, rows = gate(tmp_path, tmp_path / f"invalid.{form}", form)
        assert (status, card["decision"]) == (3, "INCOMPLETE")
        # the 8 samples its scorer marked correct are problems; the 4 others are scored
        assert card["coverage"]["record_problems"] == {"INSPECT_SAMPLE_INVALIDATED": 8}
        assert correct(rows) == 0 and len(units(rows)) == 4


def test_a_score_edited_after_scoring_is_not_evidence(tmp_path: Path) -> None:
    # fourth review: edit_score() turned each "I" into "C" with a person's provenance; the
    # reader read the edited value as the scorer's and the gate passed at 1.0
    _rewrite_shipped(tmp_path, (
        "from inspect_ai.log import edit_score\n"
        "from inspect_ai.scorer._metric import ScoreEdit\n"
        "from inspect_ai.log._log import ProvenanceData\n"
        "for s in list(log.samples):\n"
        "    if s.scores['match'].value == 'I':\n"
        "        edit_score(log, s.id, 'match', ScoreEdit(value='C', provenance="
        "ProvenanceData(author='dev', reason='looks right')), epoch=s.epoch)\n"
        "write_eval_log(log, f'{out}/edited.eval')\n"))
    status, card, rows = gate(tmp_path, tmp_path / "edited.eval")
    assert (status, card["decision"]) == (3, "INCOMPLETE")
    # the 4 samples its scorer marked incorrect were edited; the 8 others are scored
    assert card["coverage"]["record_problems"] == {"INSPECT_SCORE_EDITED": 4}
    assert correct(rows) == 8 and len(units(rows)) == 8


def _json_log(change: Any) -> bytes:
    doc = json.loads(SHIPPED_JSON.read_bytes())
    change(doc)
    return json.dumps(doc).encode()


def _read_log(tmp_path: Path, data: bytes) -> list[Record | BadRecord]:
    path = tmp_path / "log.json"
    path.write_bytes(data)
    return list(read(path))


KEY = "0123456789abcdef0123456789abcdef"  # an attachment key of inspect_ai's shape


def _tool_event(call_id: str, name: str, span: str | None = None) -> dict[str, Any]:
    return {"event": "tool", "type": "function", "id": call_id, "function": name,
            "arguments": {"order_id": "A-1"}, "span_id": span, "error": None}


def test_tool_events_nested_in_any_event_are_calls_and_a_scorers_are_not(
        tmp_path: Path) -> None:
    def change(doc: dict[str, Any]) -> None:
        sample = doc["samples"][0]
        sample["messages"] = [m for m in sample["messages"] if m["role"] != "tool"]
        sample["events"] = [
            # older logs nest a subtask's events in the subtask event
            {"event": "subtask", "name": "cleanup", "events": [_tool_event("t1", "refund")]},
            # a scorer's own call (a model-graded scorer with tools) is not the sample's
            {"event": "span_begin", "id": "s1", "parent_id": None, "type": "scorers"},
            {"event": "span_begin", "id": "s2", "parent_id": "s1", "type": "scorer"},
            {"event": "span_begin", "id": "s3", "parent_id": "s2", "type": "tool"},
            _tool_event("t2", "grade", "s3"),
            # parents in a cycle: no scorer above, so the call counts
            {"event": "span_begin", "id": "c1", "parent_id": "c2", "type": "solver"},
            {"event": "span_begin", "id": "c2", "parent_id": "c1", "type": "solver"},
            {**_tool_event("t3", "lookup", "c1"), "uuid": "e3"},
            # the same event recorded again as it completed (its uuid): one call
            {**_tool_event("t3", "lookup", "c1"), "uuid": "e3", "error": {
                "message": "timed out"}},
            # sixth review: a span the solver's own code typed "scorer" hides nothing, and
            # a model giving two calls one id makes two calls
            {"event": "span_begin", "id": "v1", "parent_id": None, "type": "solvers"},
            {"event": "span_begin", "id": "v2", "parent_id": "v1", "type": "scorer"},
            {**_tool_event("t4", "issue_refund", "v2"), "uuid": "e4"},
            {**_tool_event("t4", "lookup", "v1"), "uuid": "e5"}]
    first = _read_log(tmp_path, _json_log(change))[0]
    assert isinstance(first, Record)
    assert [(c["name"], c.get("error")) for c in first.data["tool_calls"]] == [
        ("refund", None), ("lookup", "timed out"), ("issue_refund", None), ("lookup", None)]


def test_attachment_references_are_read_as_their_text_or_refused(tmp_path: Path) -> None:
    def change(doc: dict[str, Any]) -> None:
        sample = doc["samples"][0]
        sample["attachments"] = {KEY: "DROP TABLE customers; -- a long query"}
        sample["events"] = [{**_tool_event("t1", "run_sql"),
                             "arguments": {"query": f"attachment://{KEY}"}}]
    first = _read_log(tmp_path, _json_log(change))[0]
    assert isinstance(first, Record)
    assert first.data["tool_calls"][0]["arguments"] == {
        "query": "DROP TABLE customers; -- a long query"}

    def dangling(doc: dict[str, Any]) -> None:
        change(doc)
        del doc["samples"][0]["attachments"][KEY]  # the text taken out, the reference left
    first = _read_log(tmp_path, _json_log(dangling))[0]
    assert isinstance(first, BadRecord) and first.code == "INSPECT_LOG_MALFORMED"
    assert KEY in first.message


def test_best_of_three_epochs_is_refused_whatever_the_case_grouping(tmp_path: Path) -> None:
    # fourth review: with units.case on another field than the sample id, the run numbers
    # were not checked; header raised to 3 epochs, multiply's failing epoch 2 dropped and a
    # passing epoch 3 added: PASS
    spec = tmp_path / "spec"
    shutil.copytree(SHIPPED, spec)
    evaluation = (spec / "evaluation.yaml").read_text()
    (spec / "evaluation.yaml").write_text(evaluation.replace(
        "case: case_id", "case: metadata.case"))
    suite = (spec / "suite.yaml").read_text()
    (spec / "suite.yaml").write_text(suite.replace("- id: ", "- id: case-"))

    def grouped(doc: dict[str, Any]) -> None:
        for sample in doc["samples"]:
            sample["metadata"] = {"case": f"case-{sample['id']}"}

    def best_of_three(doc: dict[str, Any]) -> None:
        grouped(doc)
        doc["eval"]["config"]["epochs"] = 3
        failing = next(s for s in doc["samples"] if s["id"] == "multiply" and s["epoch"] == 2)
        passing = next(s for s in doc["samples"] if s["id"] == "multiply" and s["epoch"] == 1)
        assert failing["scores"]["match"]["value"] == "I"
        doc["samples"][doc["samples"].index(failing)] = {  # times of its own, as a rerun's
            **passing, "epoch": 3, "uuid": "new", "total_time": passing["total_time"] + 0.25}
    honest, trimmed = tmp_path / "honest.json", tmp_path / "trimmed.json"
    honest.write_bytes(_json_log(grouped))
    trimmed.write_bytes(_json_log(best_of_three))
    code, card, _ = gate(tmp_path, honest, "honest")
    assert (code, card["decision"]) == (0, "PASS")  # the grouping itself reads the log
    code, card, _ = gate(tmp_path, trimmed, "trimmed")
    assert (code, card["decision"]) == (3, "INCOMPLETE")
    # every sample lacks an epoch of the 3 its header says: multiply its 2nd, the others
    # their 3rd
    assert card["coverage"]["record_problems"] == {"RUN_MISSING": 6}


def _epochs(value: Any) -> Any:
    def change(doc: dict[str, Any]) -> None:
        if value is None:
            del doc["eval"]["config"]["epochs"]
        else:
            doc["eval"]["config"]["epochs"] = value
    return change


def _late_header(doc: dict[str, Any]) -> None:
    header = doc.pop("eval")
    doc["eval"] = header  # now after "samples"


def _without_sample(doc: dict[str, Any]) -> None:
    doc["samples"] = [s for s in doc["samples"] if s["id"] != "square"]


HEADERS = [  # (what, change to the shipped .json, the codes the reader must give)
    # fifth review: each let a best-of-three log pass under a spec grouping all samples
    ("epochs as text", _epochs("2"), ["INSPECT_LOG_MALFORMED"]),
    ("epochs 0", _epochs(0), ["INSPECT_LOG_MALFORMED"]),
    ("no header", lambda doc: doc.pop("eval"), ["INSPECT_LOG_MALFORMED"]),
    ("the header after the samples", _late_header, ["INSPECT_LOG_MALFORMED"]),
    # no epochs: inspect_ai's default, 1, so every epoch 2 is beyond it
    ("no epochs", _epochs(None), ["BAD_VALUE"] * 6),
    # a sample of the run's sample_ids left out whole
    ("a sample left out", _without_sample, ["RUN_MISSING"]),
]


@pytest.mark.parametrize("what, change, codes", HEADERS, ids=[h[0] for h in HEADERS])
def test_the_header_bounds_the_samples(tmp_path: Path, what: str, change: Any,
                                       codes: list[str]) -> None:
    found = _read_log(tmp_path, _json_log(change))
    assert [r.code for r in found if isinstance(r, BadRecord)] == codes


def _eval_with(change: Any) -> bytes:
    """A one-sample .eval (stored entries) whose raw bytes ``change`` edits."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in _entries():
            if name == "header.json" or name == "samples/add-small_epoch_1.json":
                archive.writestr(name, data)
    raw = bytearray(out.getvalue())
    change(raw)
    return bytes(raw)


def _directory_version(raw: bytearray) -> None:
    struct.pack_into("<H", raw, raw.find(b"PK\x01\x02") + 6, 255)  # version to extract


def _directory_offset(raw: bytearray) -> None:
    # the end record says the directory starts 5 bytes later: offsets come out negative
    end = raw.rfind(b"PK\x05\x06")
    struct.pack_into("<I", raw, end + 16, struct.unpack_from("<I", raw, end + 16)[0] + 5)


def _entry_offset(raw: bytearray) -> None:
    at = raw.find(b"PK\x01\x02")  # the first entry's local header offset, beyond the file
    struct.pack_into("<I", raw, at + 42, len(raw) + 1000)


@pytest.mark.parametrize("change", [_directory_version, _directory_offset, _entry_offset])
def test_a_zip_directory_no_writer_makes_is_coded(tmp_path: Path, change: Any,
                                                  capsys: Any) -> None:
    # fifth review: INTERNAL_ERROR (NotImplementedError, a seek beyond an offset's range)
    # or IO_ERROR (a negative seek), with no scorecard
    log = tmp_path / "log.eval"
    log.write_bytes(_eval_with(change))
    codes = [r.code for r in read(log) if isinstance(r, BadRecord)]
    assert codes and set(codes) <= {"INSPECT_LOG_MALFORMED", "INSPECT_LOG_TRUNCATED"}
    status, card, _ = gate(tmp_path, log)
    assert (status, card["decision"]) == (3, "INCOMPLETE")
    assert "INTERNAL_ERROR" not in capsys.readouterr().out


@pytest.mark.parametrize("reference", [f"attachment:\\/\\/{KEY}", f"\\u0061ttachment://{KEY}",
                                       f"attachment://{KEY}"])
def test_an_attachment_reference_is_resolved_however_it_is_escaped(
        tmp_path: Path, reference: str) -> None:
    # fifth review: a reference written with JSON escapes decodes to the same string, which
    # inspect_ai resolves; the reader looked for the plain bytes only
    def change(doc: dict[str, Any]) -> None:
        sample = doc["samples"][0]
        sample["attachments"] = {KEY: '{"amount": 5000}'}
        sample["events"] = [{**_tool_event("t1", "refund"), "arguments": {"payload": "REF"}}]
    data = _json_log(change).replace(b'"REF"', f'"{reference}"'.encode())
    first = _read_log(tmp_path, data)[0]
    assert isinstance(first, Record)
    assert first.data["tool_calls"][0]["arguments"] == {"payload": '{"amount": 5000}'}
    dangling = data.replace(f'"{KEY}": '.encode(), b'"other": ')
    first = _read_log(tmp_path, dangling)[0]
    assert isinstance(first, BadRecord) and first.code == "INSPECT_LOG_MALFORMED"


def test_references_are_resolved_where_inspect_ai_resolves_them(tmp_path: Path) -> None:
    # sixth review: a score written as a reference to the text "C" was read as "C" (inspect_ai
    # leaves a score as written); a model answering "attachment://report-42.pdf" (no key of
    # inspect_ai's shape) was refused as a dangling reference
    def change(doc: dict[str, Any]) -> None:
        sample = doc["samples"][0]
        sample["attachments"] = {KEY: "C"}
        sample["scores"]["match"]["value"] = f"attachment://{KEY}"
        sample["messages"][-1]["content"] = "attachment://report-42.pdf"
    first = _read_log(tmp_path, _json_log(change))[0]
    assert isinstance(first, Record)
    assert first.data["scores"]["match"]["value"] == f"attachment://{KEY}"
    assert first.data["output"] != "C"


def test_a_repeated_event_uuid_or_a_null_event_hides_no_call(tmp_path: Path) -> None:
    # seventh review: a later event given the refund's uuid replaced the refund; a null in
    # the events list ended the walk, and the calls after it were lost
    def change(doc: dict[str, Any]) -> None:
        doc["samples"][0]["events"] = [
            {**_tool_event("t1", "issue_refund"), "uuid": "e1"},
            None,
            {**_tool_event("t2", "submit"), "uuid": "e1"},
            {**_tool_event("t3", "lookup"), "uuid": "e3"},
            {**_tool_event("t3", "lookup"), "uuid": "e3", "error": {"message": "timed out"}}]
    first = _read_log(tmp_path, _json_log(change))[0]
    assert isinstance(first, Record)
    assert [(c["name"], c.get("error")) for c in first.data["tool_calls"]] == [
        ("issue_refund", None), ("submit", None), ("lookup", "timed out")]


def test_both_forms_of_a_log_read_their_header_alike(tmp_path: Path) -> None:
    # seventh review: a key twice in the header's plan (mapped to nothing) refused the .eval
    # form (its header.json decoded whole) but not the .json form
    header = json.loads(dict(_entries())["header.json"])
    text = json.dumps(header).replace('"plan": {', '"plan": {"x": 1, "x": 2, ', 1)
    assert text != json.dumps(header)
    entries = [(n, text.encode() if n == "header.json" else d) for n, d in _entries()]
    log = tmp_path / "log.eval"
    log.write_bytes(_zip(entries))
    eval_form = [r for r in read(log)]
    json_form = _read_log(tmp_path, SHIPPED_JSON.read_bytes().replace(
        b'"plan": {', b'"plan": {"x": 1, "x": 2, ', 1))
    assert [r.data["id"] for r in eval_form if isinstance(r, Record)] != []
    assert sorted(r.data["id"] for r in eval_form if isinstance(r, Record)) == sorted(
        r.data["id"] for r in json_form if isinstance(r, Record))
    assert not [r for r in eval_form + json_form if isinstance(r, BadRecord)]
    # what is mapped is still decoded strictly, in both forms
    bad = text.replace('"eval": {', '"eval": {"task": "a", "task": "b", ', 1)
    log.write_bytes(_zip([(n, bad.encode() if n == "header.json" else d)
                          for n, d in _entries()]))
    assert [r.code for r in read(log)] == ["INSPECT_LOG_MALFORMED"]


def test_a_score_inspect_ai_left_unscored_reads_as_null(tmp_path: Path) -> None:
    # ninth review: Score.unscored() (a model grader that found no grade) is written as a
    # bare NaN, which refused the whole sample; only a score's value may be that sentinel
    _rewrite_shipped(tmp_path, (
        "from inspect_ai.scorer import Score\n"
        "for s in log.samples:\n"
        "    if s.id == 'divide':\n"
        "        s.scores['judge'] = Score.unscored(reason='grader_failed')\n"
        "for form in ('eval', 'json'):\n"
        "    write_eval_log(log, f'{out}/unscored.{form}', format=form)\n"))
    for form in ("eval", "json"):
        log = tmp_path / f"unscored.{form}"
        assert b"NaN" in (log.read_bytes() if form == "json" else b"".join(
            d for _, d in _entries(log)))
        judged = [r.data["scores"]["judge"] for r in read(log)
                  if isinstance(r, Record) and "judge" in r.data["scores"]]
        assert judged == [{"value": None, "answer": None, "explanation": None,
                           "reason": "grader_failed"}] * 2
        status, card, _ = gate(tmp_path, log, form)
        assert (status, card["decision"]) == (0, "PASS")  # the policy gates match() only
    # a NaN anywhere else is still refused
    found = _read_log(tmp_path, SHIPPED_JSON.read_bytes().replace(
        b'"total_time": ', b'"total_time": NaN, "x": ', 1))
    assert [r.code for r in found if isinstance(r, BadRecord)][0] == "NON_FINITE_NUMBER"


def test_a_nan_inside_a_dict_score_value_reads_as_null_for_its_key(tmp_path: Path) -> None:
    # tenth review: inspect_ai writes a dict-valued score with one key unscored as NaN
    # under that key; the whole sample was refused
    text = SHIPPED_JSON.read_bytes().replace(
        b'"scores": {', b'"scores": {"detail": {"value": {"correct": NaN, "format": 1.0}, '
        b'"reason": "grader_failed"}, ', 1)
    first = _read_log(tmp_path, text)[0]
    assert isinstance(first, Record)
    assert first.data["scores"]["detail"]["value"] == {"correct": None, "format": 1.0}
