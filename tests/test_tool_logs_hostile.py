"""Hostile logs found by the issue 17 review (tests/data/rev17), each through engine run:
a coded problem that leaves the run INCOMPLETE, never INTERNAL_ERROR."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main

from .conftest import ROOT, keep_full_rows

DATA = ROOT / "tests" / "data" / "rev17"
CASES = [  # (file, example spec, input name, the code it must give)
    ("inspect_hugeint.json", "inspect-example", "samples", "NUMBER_OUT_OF_RANGE"),
    ("promptfoo_hugeint.json", "promptfoo-example", "results", "NUMBER_OUT_OF_RANGE"),
    ("status_list.jsonl", "otel-example", "traces", "OTEL_BAD_SPAN"),
    ("time_sup.jsonl", "otel-example", "traces", "OTEL_BAD_SPAN"),
    ("time_huge.jsonl", "otel-example", "traces", "OTEL_BAD_SPAN"),
]


@pytest.mark.parametrize("name, spec, input_name, code", CASES, ids=[c[0] for c in CASES])
def test_a_hostile_tool_log_is_a_coded_problem(tmp_path: Path, capsys: Any, name: str,
                                               spec: str, input_name: str, code: str) -> None:
    out = tmp_path / "out"
    status = main(["run", str(ROOT / "specs" / spec), "--input",
                   f"{input_name}={DATA / name}", "--out", str(out)])
    printed = capsys.readouterr()
    assert "INTERNAL_ERROR" not in printed.out + printed.err
    card = json.loads((out / "scorecard.json").read_bytes())
    assert status == 3 and card["decision"] == "INCOMPLETE"
    assert code in card["coverage"]["record_problems"], card["coverage"]["record_problems"]


def test_inspect_tool_calls_that_are_not_a_list_are_no_calls(tmp_path: Path,
                                                            capsys: Any) -> None:
    out = tmp_path / "out"
    main(["run", str(ROOT / "specs" / "inspect-example"), "--input",
          f"samples={DATA / 'wrongtypes.json'}", "--out", str(out)])
    printed = capsys.readouterr()
    assert "INTERNAL_ERROR" not in printed.out + printed.err and (out / "scorecard.json").exists()


# --- found by the second issue 17 review: each gave a wrong PASS or INTERNAL_ERROR ---------

EXAMPLES = ROOT / "specs"
INSPECT = EXAMPLES / "inspect-example" / "data" / "inspect-example.json"
PROMPTFOO = EXAMPLES / "promptfoo-example" / "data" / "results.json"
OTEL = EXAMPLES / "otel-example" / "data" / "traces.jsonl"


def _gate(tmp_path: Path, spec: str, input_name: str, data: bytes, suffix: str
          ) -> tuple[int, dict[str, Any], list[dict[str, Any]]]:
    tmp_path.mkdir(exist_ok=True)
    log = tmp_path / f"log{suffix}"
    log.write_bytes(data)
    out, copy = tmp_path / "out", tmp_path / "spec"
    shutil.copytree(EXAMPLES / spec, copy)
    keep_full_rows(copy / "policy.yaml")  # these tests read what PASS rows observed
    status = main(["run", str(copy), "--input", f"{input_name}={log}", "--out", str(out)])
    card = json.loads((out / "scorecard.json").read_bytes())
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    return status, card, rows


def _inspect(change: Any) -> bytes:
    doc = json.loads(INSPECT.read_bytes())
    change(doc["samples"])
    return json.dumps(doc).encode()


def _epoch_two_as_a_copy_of_one(samples: list[dict[str, Any]]) -> None:
    first = next(s for s in samples if s["epoch"] == 1)
    at = next(i for i, s in enumerate(samples) if s["id"] == first["id"] and s["epoch"] == 2)
    samples[at] = first


def _set(path: tuple[str, ...], value: Any) -> Any:
    def change(samples: list[dict[str, Any]]) -> None:
        target = samples[0]
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = value
    return change


INSPECT_REFUSED = [  # (what, change to the samples, the code it must give)
    # tenth review: a model's total below its parts read as the total
    ("a model's total_tokens below its parts", _set(("model_usage",), {
        "mockllm/model": {"input_tokens": 9000, "output_tokens": 1000, "total_tokens": 10}}),
     "BAD_VALUE"),
    ("total_time 1e308 (x 1000 overflowed)", _set(("total_time",), 1e308), "NON_FINITE_NUMBER"),
    ("token sums that overflow", _set(("model_usage",), {"a": {"total_tokens": 1e308},
                                                         "b": {"total_tokens": 1e308}}),
     "NON_FINITE_NUMBER"),
    ("a negative token count cancelling another", _set(
        ("model_usage",), {"a": {"total_tokens": 5000}, "b": {"total_tokens": -4990}}),
     "BAD_VALUE"),
    ("a negative total_time", _set(("total_time",), -5), "BAD_VALUE"),
    ("a sample copied into another epoch's place", _epoch_two_as_a_copy_of_one, "DUPLICATE_ID"),
]


@pytest.mark.parametrize("what, change, code", INSPECT_REFUSED,
                         ids=[c[0] for c in INSPECT_REFUSED])
def test_an_inspect_sample_a_budget_cannot_read_is_refused(tmp_path: Path, what: str,
                                                           change: Any, code: str) -> None:
    status, card, _ = _gate(tmp_path, "inspect-example", "samples", _inspect(change), ".json")
    assert status == 3 and card["decision"] == "INCOMPLETE"
    assert code in card["coverage"]["record_problems"], card["coverage"]["record_problems"]


def test_an_inspect_error_without_a_message_is_still_an_error(tmp_path: Path) -> None:
    status, card, rows = _gate(tmp_path, "inspect-example", "samples",
                               _inspect(_set(("error",), {"msg": "boom"})), ".json")
    failed = [r for r in rows if r["inspection"] == "no-sample-error" and r["status"] == "FAIL"]
    assert len(failed) == 1 and status == 1 and card["decision"] == "FAIL"


def _eval_entries() -> list[tuple[str, bytes, int, int]]:
    from .test_inspect_log import _zstd_entries
    return _zstd_entries()


def _with_sample(entries: list[tuple[str, bytes, int, int]], name: str,
                 sample: dict[str, Any]) -> list[tuple[str, bytes, int, int]]:
    """The entries with ``name`` holding ``sample`` (zstd, as inspect_ai writes)."""
    import zstandard
    data = json.dumps(sample).encode()
    packed = zstandard.ZstdCompressor().compress(data)
    return [(n, packed, 93, len(data)) if n == name else (n, p, m, s)
            for n, p, m, s in entries]


def _sample_of(name: str) -> dict[str, Any]:
    from .test_inspect_log import _entries
    return json.loads(dict(_entries())[name])


def test_an_eval_entry_holding_another_sample_is_refused(tmp_path: Path) -> None:
    from .test_inspect_log import _raw_zip
    entries = _eval_entries()
    one = _sample_of("samples/add-carry_epoch_1.json")
    # epoch 2's entry holds epoch 1's passing sample, under a uuid of its own
    swapped = _with_sample(entries, "samples/add-carry_epoch_2.json",
                           {**one, "uuid": "new", "total_time": one["total_time"] + 0.25})
    status, card, _ = _gate(tmp_path, "inspect-example", "samples", _raw_zip(swapped), ".eval")
    assert status == 3 and "INSPECT_LOG_MALFORMED" in card["coverage"]["record_problems"]
    # the same copy keeping its uuid, as the third review made it
    copied = _with_sample(entries, "samples/add-carry_epoch_2.json", {**one, "epoch": 2})
    status, card, _ = _gate(tmp_path / "1", "inspect-example", "samples", _raw_zip(copied),
                            ".eval")
    assert status == 3 and "DUPLICATE_ID" in card["coverage"]["record_problems"]
    first = next(e for e in entries if e[0] == "samples/add-carry_epoch_1.json")
    named_twice = [first if n == "samples/add-carry_epoch_2.json" else (n, p, m, s)
                   for n, p, m, s in entries]  # and the same entry name twice
    status, card, _ = _gate(tmp_path / "2", "inspect-example", "samples", _raw_zip(named_twice),
                            ".eval")  # a name twice: the whole log is refused (issue 37)
    assert status == 3 and card["coverage"]["record_problems"] == {"DUPLICATE_KEY": 1}


def test_an_eval_log_rewritten_while_it_is_read_yields_the_bytes_hashed(tmp_path: Path) -> None:
    import hashlib

    from engine.records.formats import Record
    from engine.records.inspect_log import read

    from .test_inspect_log import _raw_zip
    original = (EXAMPLES / "inspect-example" / "data" / "inspect-example.eval").read_bytes()
    log = tmp_path / "log.eval"
    log.write_bytes(original)
    want = [r.data for r in read(log) if isinstance(r, Record)]
    digest = hashlib.sha256()
    items = read(log, digest)
    first = next(items)  # hashing is done: the reader now reads samples
    other = _raw_zip([(n, p, m, s) for n, p, m, s in _eval_entries()
                      if not n.endswith("_epoch_2.json")])
    with log.open("r+b") as handle:  # the same file, rewritten in place
        handle.write(other)
        handle.truncate()
    got = [first.data, *(r.data for r in items if isinstance(r, Record))]
    assert got == want and digest.hexdigest() == hashlib.sha256(original).hexdigest()


def _promptfoo(change: Any) -> bytes:
    doc = json.loads(PROMPTFOO.read_bytes())
    change(doc["results"]["results"])
    return json.dumps(doc).encode()


def _copy_under_a_new_test_index(results: list[dict[str, Any]]) -> None:
    failing = next(i for i, r in enumerate(results) if not r["success"])
    passing = next(r for r in results if r["success"])
    results[failing] = {**passing, "testIdx": results[failing]["testIdx"]}


PROMPTFOO_REFUSED = [
    ("a passing result copied over a failing one", _copy_under_a_new_test_index,
     "DUPLICATE_ID"),
    ("a negative latency", lambda r: r[0].update(latencyMs=-1), "PROMPTFOO_FIELD"),
    ("a negative token count", lambda r: r[0]["tokenUsage"].update(total=-5),
     "PROMPTFOO_FIELD"),
    ("an id that is a list (was INTERNAL_ERROR)", lambda r: r[1].update(id=["x"]),
     "PROMPTFOO_FIELD"),
    ("an id that is an object", lambda r: r[1].update(id={"x": 1}), "PROMPTFOO_FIELD"),
    # eighth review: a copy with its id deleted passed the id check
    ("a result without its id", lambda r: r[1].pop("id"), "PROMPTFOO_FIELD"),
    ("a failure marked a success", lambda r: next(x for x in r if not x["success"]).update(
        success=True), "PROMPTFOO_FIELD"),
    ("a result of another column's provider", lambda r: r[0].update(
        provider={"id": "openai:gpt-4o", "label": ""}), "PROMPTFOO_FIELD"),
    ("a failing result dropped (promptfoo's stats count it)", lambda r: r.remove(
        next(x for x in r if not x["success"])), "PROMPTFOO_STATS"),
    # tenth review
    ("a token total below its parts", lambda r: r[0]["tokenUsage"].update(
        prompt=9000, completion=1000, total=10), "PROMPTFOO_FIELD"),
]


@pytest.mark.parametrize("what, change, code", PROMPTFOO_REFUSED,
                         ids=[c[0] for c in PROMPTFOO_REFUSED])
def test_a_promptfoo_result_a_gate_cannot_trust_is_refused(tmp_path: Path, what: str,
                                                           change: Any, code: str) -> None:
    status, card, _ = _gate(tmp_path, "promptfoo-example", "results", _promptfoo(change),
                            ".json")
    assert status == 3 and card["decision"] == "INCOMPLETE"
    assert code in card["coverage"]["record_problems"], card["coverage"]["record_problems"]


def _otel(change: Any) -> bytes:
    docs = [json.loads(line) for line in OTEL.read_text().splitlines()]
    change([s for d in docs for r in d["resourceSpans"] for c in r["scopeSpans"]
            for s in c["spans"]])
    return "".join(json.dumps(d) + "\n" for d in docs).encode()


def _of(spans: list[dict[str, Any]], operation: str, trace_end: str = "01") -> dict[str, Any]:
    return next(s for s in spans if s["traceId"].endswith(trace_end) and {
        "key": "gen_ai.operation.name", "value": {"stringValue": operation}} in s["attributes"])


def _add(span: dict[str, Any], key: str, value: dict[str, Any]) -> None:
    span["attributes"].append({"key": key, "value": value})


def _row(rows: list[dict[str, Any]], inspection: str) -> dict[str, Any]:
    return next(r for r in rows if r["inspection"] == inspection
                and r["unit"].startswith("007a0000000000000000000000000001"))


@pytest.mark.parametrize(("operation", "key", "tokens"), [
    # tokens reported on a tool span count toward the run's budget
    ("execute_tool", "gen_ai.usage.output_tokens", 5000),
    # a run span's own total counts when it is larger than the sum below it
    ("invoke_agent", "gen_ai.usage.input_tokens", 9000),
])
def test_otel_tokens_anywhere_in_the_run_count(
        tmp_path: Path, operation: str, key: str, tokens: int) -> None:
    data = _otel(lambda spans: _add(_of(spans, operation), key, {"intValue": str(tokens)}))
    _, _, rows = _gate(tmp_path, "otel-example", "traces", data, ".jsonl")
    row = _row(rows, "token-budget")
    assert row["status"] == "FAIL" and row["observed"] > tokens


def test_otel_an_attribute_given_twice_is_refused(tmp_path: Path) -> None:
    # a second gen_ai.operation.name turned a forbidden tool call into an internal span
    data = _otel(lambda spans: _add(_of(spans, "execute_tool"), "gen_ai.operation.name",
                                    {"stringValue": "internal"}))
    status, card, _ = _gate(tmp_path, "otel-example", "traces", data, ".jsonl")
    assert status == 3 and "OTEL_BAD_SPAN" in card["coverage"]["record_problems"]


def test_otel_error_type_marks_a_failed_run_and_a_failed_call(tmp_path: Path) -> None:
    def change(spans: list[dict[str, Any]]) -> None:
        _add(_of(spans, "invoke_agent"), "error.type", {"stringValue": "timeout"})
        _add(_of(spans, "execute_tool"), "error.type", {"stringValue": "timeout"})
    status, _, rows = _gate(tmp_path, "otel-example", "traces", _otel(change), ".jsonl")
    assert _row(rows, "run-succeeded")["status"] == "FAIL"
    assert _row(rows, "no-failed-tool-calls")["status"] == "FAIL" and status == 1


# --- found by the third issue 17 review: each gave a wrong PASS (or read without bound) ----

def _inspect_log(change: Any) -> bytes:
    doc = json.loads(INSPECT.read_bytes())
    change(doc)
    return json.dumps(doc).encode()


def _sample(doc: dict[str, Any], sample_id: str, epoch: int) -> dict[str, Any]:
    return next(s for s in doc["samples"] if s["id"] == sample_id and s["epoch"] == epoch)


def _renumbered(epoch: int, uuid: str | None, epochs: int | None = None,
                edited: bool = False) -> Any:
    """multiply's failing epoch 2 replaced by its passing epoch 1 as ``epoch`` (its uuid
    kept when ``uuid`` is None); ``epochs``: the header's count made that many; ``edited``:
    its times changed too, as a rerun's would be (so its content is no exact copy)."""
    def change(doc: dict[str, Any]) -> None:
        passing, failing = _sample(doc, "multiply", 1), _sample(doc, "multiply", 2)
        assert passing["scores"]["match"]["value"] == "C"
        assert failing["scores"]["match"]["value"] == "I"
        copy = {**passing, "epoch": epoch, "uuid": uuid or passing["uuid"]}
        if edited:
            copy["total_time"] = passing["total_time"] + 0.25
        if uuid == "DELETE":  # eighth review: the uuid check was skipped without one
            del copy["uuid"]
        doc["samples"][doc["samples"].index(failing)] = copy
        if epochs is not None:
            doc["eval"]["config"]["epochs"] = epochs
    return change


def _header_model_twice(doc: dict[str, Any]) -> None:
    doc["eval"] = {"model": "openai/gpt-4o", **doc["eval"]}


INSPECT_SUBSTITUTED = [  # (what, change to the log, text or None, the code it must give)
    ("a passing epoch copied over a failing one, its uuid kept",
     _renumbered(2, None), None, "DUPLICATE_ID"),
    ("epoch 3 standing in for a failing epoch 2 (the header says 2 epochs)",
     _renumbered(3, "fresh-uuid", edited=True), None, "BAD_VALUE"),
    ("the same with the header raised to 3 epochs (the suite still says 2 trials)",
     _renumbered(3, "fresh-uuid", epochs=3, edited=True), None, "EXTRA_RUN"),
    ("a passing epoch copied over a failing one, its uuid deleted",
     _renumbered(2, "DELETE"), None, "DUPLICATE_ID"),
    ("a passing epoch copied over a failing one under a fresh uuid (issue 25: its content)",
     _renumbered(2, "fresh-uuid"), None, "DUPLICATE_ID"),
    ("a header naming its model twice",  # read leniently, it named nothing
     _header_model_twice, ('"eval": {', '"eval": {"model": "x", '), "DUPLICATE_KEY"),
]


@pytest.mark.parametrize("what, change, text, code", INSPECT_SUBSTITUTED,
                         ids=[c[0] for c in INSPECT_SUBSTITUTED])
def test_an_inspect_log_standing_one_sample_in_for_another_is_refused(
        tmp_path: Path, what: str, change: Any, text: tuple[str, str] | None,
        code: str) -> None:
    data = _inspect_log(change)
    if text is not None:  # a key given twice: json.dumps cannot write it
        data = data.replace(text[0].encode(), text[1].encode(), 1)
    status, card, _ = _gate(tmp_path, "inspect-example", "samples", data, ".json")
    assert status == 3 and card["decision"] == "INCOMPLETE"
    assert code in card["coverage"]["record_problems"], card["coverage"]["record_problems"]


def _trials(**by_span: int) -> Any:
    def change(spans: list[dict[str, Any]]) -> None:
        for span in spans:
            if span["spanId"] in by_span:
                for pair in span["attributes"]:
                    if pair["key"] == "specgate.trial":
                        pair["value"] = {"intValue": str(by_span[span["spanId"]])}
    return change


def _tool_named(name: str, tool: str | None, operation: str = "execute_tool") -> Any:
    """The issue_refund span of trace ...0001 renamed ``name``, its gen_ai.tool.name
    ``tool`` (none when None) and its operation ``operation``."""
    def change(spans: list[dict[str, Any]]) -> None:
        span = next(s for s in spans if s["spanId"] == "5b00000000000007")
        span["name"] = name
        span["attributes"] = [p for p in span["attributes"] if p["key"] not in (
            "gen_ai.tool.name", "gen_ai.operation.name")]
        _add(span, "gen_ai.operation.name", {"stringValue": operation})
        if tool is not None:
            _add(span, "gen_ai.tool.name", {"stringValue": tool})
    return change


def _two_kinds(spans: list[dict[str, Any]]) -> None:
    span = next(s for s in spans if s["spanId"] == "5b00000000000007")
    for pair in span["attributes"]:
        if pair["key"] == "gen_ai.tool.name":  # a reader taking the first saw another tool
            pair["value"] = {"stringValue": "lookup_order",
                             "arrayValue": {"values": [{"stringValue": "issue_refund"}]}}


OTEL_REFUSED = [  # (what, change to the spans, the code it must give)
    ("a third trial standing in for a second", _trials(**{"5b0000000000001a": 3}),
     "EXTRA_RUN"),
    ("one trial number given to two runs of a case", _trials(**{"5b0000000000001a": 1}),
     "DUPLICATE_ID"),
    ("a tool span naming another tool than its name says",
     _tool_named("execute_tool issue_refund", "lookup_order"), "OTEL_BAD_SPAN"),
    ("a tool span naming no tool", _tool_named("refund", None), "OTEL_BAD_SPAN"),
    ("a span named as a tool call that says it is not one",
     _tool_named("execute_tool issue_refund", None, "internal"), "OTEL_BAD_SPAN"),
    ("an attribute value of two kinds", _two_kinds, "OTEL_BAD_SPAN"),
]


@pytest.mark.parametrize("what, change, code", OTEL_REFUSED, ids=[c[0] for c in OTEL_REFUSED])
def test_an_otel_run_the_reader_would_have_to_guess_is_refused(
        tmp_path: Path, what: str, change: Any, code: str) -> None:
    status, card, _ = _gate(tmp_path, "otel-example", "traces", _otel(change), ".jsonl")
    assert status == 3 and card["decision"] == "INCOMPLETE"
    assert code in card["coverage"]["record_problems"], card["coverage"]["record_problems"]


def test_otel_a_tool_span_named_by_the_conventions_is_that_tool(tmp_path: Path) -> None:
    # without gen_ai.tool.name, a reader took the whole span name: 'execute_tool
    # issue_refund' was no forbidden issue_refund
    data = _otel(_tool_named("execute_tool issue_refund", None))
    status, _, rows = _gate(tmp_path, "otel-example", "traces", data, ".jsonl")
    row = _row(rows, "took-expected-actions")
    assert row["observed"]["actions"] == ["lookup_order", "issue_refund"]
    assert row["status"] == "PASS" and status == 0


def test_otel_a_root_span_that_is_a_tool_call_keeps_its_call(tmp_path: Path) -> None:
    # a trace with no invoke_agent span is one run at its root; when the root was itself
    # an execute_tool span, its own call was left out of the run's calls
    from engine.records.formats import Record
    from engine.records.otel import read
    span = {"traceId": "cd" * 16, "spanId": "02" * 8, "name": "execute_tool issue_refund",
            "startTimeUnixNano": "1000", "endTimeUnixNano": "2000", "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                {"key": "gen_ai.tool.call.arguments",
                 "value": {"stringValue": '{"amount": 9999}'}}]}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    (record,) = list(read(path))
    assert isinstance(record, Record)
    assert [(c["name"], c["arguments"]) for c in record.data["tool_calls"]] == [
        ("issue_refund", {"amount": 9999})]


def test_an_otel_line_over_the_value_cap_is_refused_unread(tmp_path: Path,
                                                            monkeypatch: Any) -> None:
    from engine.records import otel
    from engine.records.formats import Record
    from engine.records.otel import otlp
    monkeypatch.setattr(otlp, "MAX_VALUE", 1 << 16)
    lines = OTEL.read_bytes().splitlines(keepends=True)
    big = json.dumps({"resourceSpans": [], "padding": "x" * (1 << 17)}).encode() + b"\n"
    path = tmp_path / "t.jsonl"
    path.write_bytes(lines[0] + big + b"".join(lines[1:]))
    import hashlib
    digest = hashlib.sha256()
    found = list(otel.read(path, digest))
    bad = [r for r in found if not isinstance(r, Record)]
    assert [(b.line, b.code) for b in bad] == [(2, "VALUE_TOO_LARGE")]
    assert len(found) == 9  # the other lines' runs are still read
    assert digest.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()


# --- found by the fourth issue 17 review ----------------------------------------------------

def _no_trials(spans: list[dict[str, Any]]) -> None:
    for span in spans:
        span["attributes"] = [p for p in span["attributes"] if p["key"] != "specgate.trial"]


def test_otel_runs_naming_no_trial_are_counted_not_refused(tmp_path: Path) -> None:
    # a standard GenAI export names no specgate.trial: each run was trial 1, so a case's
    # second run was DUPLICATE_ID and such an export could never pass a suite of 2 trials
    status, card, _ = _gate(tmp_path, "otel-example", "traces", _otel(_no_trials), ".jsonl")
    assert (status, card["decision"]) == (0, "PASS")


def test_otel_a_trial_missing_below_a_higher_one_is_refused(tmp_path: Path) -> None:
    # whatever the spec's case grouping: the reader checks the numbers of each case_id
    from engine.records.formats import BadRecord
    from engine.records.otel import read
    path = tmp_path / "t.jsonl"  # refund-late-delivery: trials 1 and 3
    path.write_bytes(_otel(_trials(**{"5b0000000000001a": 3})))
    bad = [(r.code, r.message) for r in read(path) if isinstance(r, BadRecord)]
    assert len(bad) == 1 and bad[0][0] == "RUN_MISSING" and "not trial 2" in bad[0][1]


def test_otel_blank_lines_before_the_export_keep_lines_and_digest(tmp_path: Path) -> None:
    import hashlib

    from engine.records.formats import BadRecord
    from engine.records.otel import read
    lines = OTEL.read_bytes().splitlines(keepends=True)
    data = b"\n" * 5000 + lines[0] + b"{not json\n" + b"".join(lines[1:])
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    digest = hashlib.sha256()
    bad = [(r.line, r.code) for r in read(path, digest) if isinstance(r, BadRecord)]
    assert bad == [(5002, "INVALID_JSON")]
    assert digest.hexdigest() == hashlib.sha256(data).hexdigest()
    pretty = tmp_path / "p.json"  # a pretty-printed document after blank lines
    doc = json.dumps(json.loads(lines[0]), indent=1).replace('"spanId"', '"spanId": 1, "x"', 1)
    pretty.write_bytes(doc.encode())
    plain = [(r.line, r.code) for r in read(pretty) if isinstance(r, BadRecord)]
    pretty.write_bytes(b"\n" * 3 + doc.encode())
    found = [(r.line, r.code) for r in read(pretty) if isinstance(r, BadRecord)]
    assert plain and found == [(line + 3, code) for line, code in plain]


# --- found by the fifth issue 17 review ------------------------------------------------------

def _legacy_tokens(also_current: bool) -> Any:
    """Trace ...0001's first chat span reports 5000 input tokens under the conventions'
    earlier name (and, with ``also_current``, 200 under the current one)."""
    def change(spans: list[dict[str, Any]]) -> None:
        span = _of(spans, "chat")
        kept = [p for p in span["attributes"] if p["key"] != "gen_ai.usage.input_tokens"]
        span["attributes"] = kept + [{"key": "gen_ai.usage.prompt_tokens",
                                      "value": {"intValue": "5000"}}]
        if also_current:
            _add(span, "gen_ai.usage.input_tokens", {"intValue": "200"})
    return change


def test_otel_tokens_under_their_earlier_name_count(tmp_path: Path) -> None:
    # gen_ai.usage.prompt_tokens was neither counted nor refused: 5000 tokens vanished
    _, _, rows = _gate(tmp_path, "otel-example", "traces", _otel(_legacy_tokens(False)),
                            ".jsonl")
    row = _row(rows, "token-budget")
    assert row["status"] == "FAIL" and row["observed"] > 5000
    status, card, _ = _gate(tmp_path / "2", "otel-example", "traces",
                            _otel(_legacy_tokens(True)), ".jsonl")
    assert status == 3 and "OTEL_BAD_SPAN" in card["coverage"]["record_problems"]


# --- found by the eighth issue 17 review ----------------------------------------------------

def _unnumbered_run() -> bytes:
    """A run of refund-outside-window in a trace of its own, naming the case but no trial,
    beside the case's trials 1 and 2: which trial it stands for is unknown."""
    lines = OTEL.read_text().splitlines()
    spans = [json.loads(json.dumps(s).replace("007a0000000000000000000000000008",
                                              "007a00000000000000000000000000f8"))
             for line in lines for r in json.loads(line)["resourceSpans"]
             for c in r["scopeSpans"] for s in c["spans"]
             if s["traceId"] == "007a0000000000000000000000000008"]
    for span in spans:
        span["attributes"] = [p for p in span["attributes"] if p["key"] != "specgate.trial"]
    extra = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    return ("\n".join(lines) + "\n" + json.dumps(extra) + "\n").encode()


def test_otel_a_run_naming_no_trial_beside_numbered_ones_is_refused(tmp_path: Path) -> None:
    status, card, _ = _gate(tmp_path, "otel-example", "traces", _unnumbered_run(), ".jsonl")
    assert status == 3 and "RUN_UNNUMBERED" in card["coverage"]["record_problems"]


def test_promptfoo_maps_an_assertions_weight(tmp_path: Path) -> None:
    # promptfoo writes pass: true for a weight-0 assertion whatever it found; its weight
    # lets a policy tell (docs/promptfoo.md)
    from engine.records.formats import Record
    from engine.records.promptfoo import read
    doc = json.loads(PROMPTFOO.read_bytes())
    first = doc["results"]["results"][0]["gradingResult"]["componentResults"][0]
    first["assertion"]["weight"] = 0
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    records = [r for r in read(path) if isinstance(r, Record)]
    assert [a["weight"] for a in records[0].data["assertions"]][0] == 0
    assert all(a["weight"] == 1 for r in records[1:] for a in r.data["assertions"])


# --- found by the ninth issue 17 review ------------------------------------------------------

def test_promptfoo_an_empty_output_is_a_failure_not_a_problem(tmp_path: Path) -> None:
    # promptfoo marks a provider's empty output success false, failureReason 0, error
    # "No output", and counts it in stats.failures: it was refused as PROMPTFOO_FIELD
    def empty(results: list[dict[str, Any]]) -> None:
        result = next(r for r in results if r["success"])
        result.update(success=False, failureReason=0, error="No output", gradingResult=None)
    doc = json.loads(_promptfoo(empty))
    doc["results"]["stats"]["successes"] -= 1
    doc["results"]["stats"]["failures"] += 1
    status, card, _ = _gate(tmp_path, "promptfoo-example", "results",
                            json.dumps(doc).encode(), ".json")
    assert card["coverage"]["record_problems"] == {}


def _helper_agent_refund() -> bytes:
    """In password-reset trial 1 (trace ...0014), the agent calls a helper agent, which
    issues a refund: a call the case forbids, made inside the run."""
    docs = [json.loads(line) for line in OTEL.read_text().splitlines()]
    for doc in docs:
        for scope in (c for r in doc["resourceSpans"] for c in r["scopeSpans"]):
            agent = next((s for s in scope["spans"] if s["spanId"] == "5b00000000000015"),
                         None)
            tool = next((s for s in scope["spans"] if s["traceId"] == agent["traceId"]
                         and s["name"].startswith("execute_tool")), None) if agent else None
            if agent is not None and tool is not None:
                helper = {**json.loads(json.dumps(agent)), "spanId": "5b000000000000a1",
                          "parentSpanId": agent["spanId"], "name": "invoke_agent helper"}
                helper["attributes"] = [p for p in helper["attributes"]
                                        if not p["key"].startswith("specgate.")]
                refund = {**json.loads(json.dumps(tool)), "spanId": "5b000000000000a2",
                          "parentSpanId": "5b000000000000a1",
                          "name": "execute_tool issue_refund"}
                refund["attributes"] = [p for p in refund["attributes"]
                                        if p["key"] != "gen_ai.tool.name"]
                scope["spans"] += [helper, refund]
    return "".join(json.dumps(d) + "\n" for d in docs).encode()


def test_otel_a_sub_agents_calls_are_its_runs(tmp_path: Path) -> None:
    # ninth review: a nested invoke_agent span was a run of its own, so the refund it made
    # escaped the enclosing run's forbidden actions (or the run was UNKNOWN_CASE)
    status, card, rows = _gate(tmp_path, "otel-example", "traces", _helper_agent_refund(),
                               ".jsonl")
    row = next(r for r in rows if r.get("inspection") == "took-expected-actions"
               and r["unit"].startswith("007a0000000000000000000000000014"))
    assert row["status"] == "FAIL" and "issue_refund" in row["observed"]["actions"]
    assert card["coverage"]["record_problems"] == {}
    assert len({r["unit"] for r in rows if "unit" in r}) == 8  # no run for the helper


# --- found by the tenth issue 17 review ------------------------------------------------------

def _failed_helper() -> bytes:
    """Inside refund-late-delivery trial 2's run (trace ...0019), a sub-agent that crashed."""
    docs = [json.loads(line) for line in OTEL.read_text().splitlines()]
    for doc in docs:
        for scope in (c for r in doc["resourceSpans"] for c in r["scopeSpans"]):
            run = next((s for s in scope["spans"] if s["spanId"] == "5b0000000000001a"), None)
            if run is not None:
                helper = {**json.loads(json.dumps(run)), "spanId": "5b000000000000f1",
                          "parentSpanId": run["spanId"], "name": "invoke_agent helper",
                          "status": {"code": 2, "message": "sub-agent crashed"}}
                helper["attributes"] = [p for p in helper["attributes"]
                                        if not p["key"].startswith("specgate.")]
                _add(helper, "error.type", {"stringValue": "RuntimeError"})
                scope["spans"].append(helper)
    return "".join(json.dumps(d) + "\n" for d in docs).encode()


def test_otel_a_sub_agent_that_failed_fails_its_run(tmp_path: Path) -> None:
    _, _, rows = _gate(tmp_path, "otel-example", "traces", _failed_helper(), ".jsonl")
    row = next(r for r in rows if r.get("inspection") == "run-succeeded"
               and r["unit"].startswith("007a0000000000000000000000000019"))
    assert row["status"] == "FAIL"


def test_otel_output_tokens_counted_nowhere_leave_the_total_unknown(tmp_path: Path) -> None:
    # every chat span of trace ...0001 without its output tokens: the total was the input
    # tokens alone, under the budget
    def change(spans: list[dict[str, Any]]) -> None:
        for span in spans:
            if span["traceId"].endswith("0001"):
                span["attributes"] = [p for p in span["attributes"]
                                      if p["key"] != "gen_ai.usage.output_tokens"]
    status, _, rows = _gate(tmp_path, "otel-example", "traces", _otel(change), ".jsonl")
    row = _row(rows, "token-budget")
    assert row["status"] == "ERROR" and status == 3


# --- found by the eleventh issue 17 review: false refusals of real logs ---------------------

def test_an_inspect_total_not_reported_is_unknown_not_refused(tmp_path: Path) -> None:
    # inspect_ai's ModelUsage.total_tokens defaults to 0 (a provider that reports no total):
    # every sample was refused; the total is now unknown, the other counts still read
    from engine.records.formats import Record
    from engine.records.inspect_log import read
    doc = json.loads(INSPECT.read_bytes())
    for sample in doc["samples"]:
        sample["model_usage"] = {"mockllm/model": {"input_tokens": 40, "output_tokens": 10,
                                                   "total_tokens": 0}}
    path = tmp_path / "log.json"
    path.write_text(json.dumps(doc))
    records = list(read(path))
    assert all(isinstance(r, Record) for r in records) and len(records) == 12
    assert records[0].data["usage"] == {"input_tokens": 40, "output_tokens": 10}


def test_promptfoo_results_without_their_columns_are_refused(tmp_path: Path) -> None:
    # results.prompts taken out skipped the check that a result ran its column's provider
    doc = json.loads(PROMPTFOO.read_bytes())
    del doc["results"]["prompts"]
    doc["results"]["results"][0]["provider"] = {"id": "openai:gpt-4o", "label": ""}
    status, card, _ = _gate(tmp_path, "promptfoo-example", "results",
                            json.dumps(doc).encode(), ".json")
    assert status == 3 and card["coverage"]["record_problems"] == {"PROMPTFOO_FIELD": 12}
