"""The otel-genai format: OTLP/JSON traces written by the OpenTelemetry Python SDK itself,
gated end to end by the shipped spec (specs/otel-example, docs/otel.md)."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.records.formats import BadRecord, Record
from engine.records.otel import read

from .conftest import ROOT, need_module

EXAMPLE = ROOT / "specs" / "otel-example"
INSTALL = "opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-common==1.45.2"


def sdk() -> Any:
    """The SDK's modules (skipped without them, failed under SPECGATE_REQUIRE_TOOLS=1)."""
    need_module("opentelemetry.sdk.trace", INSTALL)
    need_module("opentelemetry.exporter.otlp.proto.common.trace_encoder", INSTALL)
    from bench import make_otel_example
    return make_otel_example


def copy(tmp_path: Path) -> Path:
    spec = tmp_path / "otel-example"
    shutil.copytree(EXAMPLE, spec)
    return spec


def run(spec: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any], list[dict[str, Any]]]:
    code = main(["run", str(spec), "--out", str(out), *extra])
    card = json.loads((out / "scorecard.json").read_text())
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    return code, card, rows


def scenario(m: Any) -> list[Any]:
    """4 cases x 2 trials, asked of the SDK: two runs misbehave on purpose."""
    Run, Call = m.Run, m.Call
    runs = []
    for trial in (1, 2):
        outside = [Call("lookup_order", {"order_id": "S-1"})]
        if trial == 2:  # refunds outside the window: not allowed, a forbidden action
            outside.append(Call("issue_refund", {"order_id": "S-1", "amount": 80}))
        reset = Call("send_reset_link", {"email": "a@example.com"},
                     error="smtp_timeout" if trial == 1 else None)
        runs += [
            Run("refund-late-delivery", trial, "late order A-1042",
                [Call("lookup_order", {"order_id": "A-1042"}),
                 Call("issue_refund", {"order_id": "A-1042", "amount": 10})],
                "Refund issued for A-1042."),
            Run("refund-outside-window", trial, "old shoes", outside,
                "Returns are accepted within 30 days."),
            Run("address-change", trial, "move B-2210",
                [Call("lookup_order", {"order_id": "B-2210"}),
                 Call("update_address", {"order_id": "B-2210", "address": "1 Main St"})],
                "Order B-2210 goes to the new address."),
            Run("password-reset", trial, "cannot log in", [reset], "A reset link is on its way."),
        ]
    return runs


def test_a_fresh_sdk_export_is_gated_with_one_row_set_per_agent_run(tmp_path: Path) -> None:
    m = sdk()
    spec = copy(tmp_path)
    runs = scenario(m)
    lines = m.write(spec / "data" / "traces.jsonl", runs, batch=3)
    spans = sum(1 + 2 * len(r.calls) + 1 for r in runs)  # agent + (chat, tool) per call + chat
    assert lines == -(-spans // 3)  # traces spread over lines: the reader groups by trace
    code, card, rows = run(spec, tmp_path / "out")
    assert card["inputs"]["traces"]["records"] == 8
    assert len({r["unit"] for r in rows}) == 8 and len(rows) == 8 * 7
    assert {r["case"] for r in rows} == {r.case for r in runs}
    failed = sorted((r["case"], r["inspection"]) for r in rows if r["status"] == "FAIL")
    assert failed == [("password-reset", "no-failed-tool-calls"),
                      ("refund-outside-window", "took-expected-actions"),
                      ("refund-outside-window", "tool-calls-within-contract")]
    tools = card["categories"]["tools"]
    assert (tools["n"], tools["passed"]) == (24, 21)
    assert code == 1 and card["decision"] == "FAIL"


def test_the_units_carry_what_the_sdk_recorded(tmp_path: Path) -> None:
    m = sdk()
    runs = scenario(m)
    path = tmp_path / "traces.jsonl"
    m.write(path, runs, batch=4)
    digest = hashlib.sha256()
    units = [r.data for r in read(path, digest) if isinstance(r, Record)]
    assert digest.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
    assert [(u["case_id"], u["trial"]) for u in units] == [(r.case, r.trial) for r in runs]
    for unit, asked in zip(units, runs, strict=True):
        assert [c["name"] for c in unit["tool_calls"]] == [c.name for c in asked.calls]
        assert [c["arguments"] for c in unit["tool_calls"]] == [c.arguments for c in asked.calls]
        assert [c["status"] for c in unit["tool_calls"]] == \
            ["ERROR" if c.error else "UNSET" for c in asked.calls]
        chats = 1 + len(asked.calls)  # the scripted agent asks the model before each call
        want_in = 200 + 260 * (chats - 1)
        want_out = 40 + 60 * (chats - 1)
        assert unit["usage"] == {"input_tokens": want_in, "output_tokens": want_out,
                                 "total_tokens": want_in + want_out}
        assert unit["inference_calls"] == chats
        assert unit["latency_ms"] == 200 + chats * 550 + len(asked.calls) * 130
        assert (unit["input"], unit["output"]) == (asked.prompt, asked.answer)
        assert unit["model"] == "scripted-model-1" and unit["error"] is False
        assert unit["id"] == f"{unit['trace_id']}-{unit['span_id']}"


def test_a_pretty_printed_document_with_base64_ids_reads_the_same(tmp_path: Path) -> None:
    m = sdk()
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans = m.record(scenario(m))
    pretty = tmp_path / "traces.json"  # protobuf's own JSON mapping: ids in base64
    pretty.write_text(MessageToJson(encode_spans(spans), indent=2))
    assert base64.b64decode(json.loads(pretty.read_text())["resourceSpans"][0]["scopeSpans"][0]
                            ["spans"][0]["traceId"])
    lines = tmp_path / "traces.jsonl"
    lines.write_text("\n".join(m.otlp_json(spans, batch=5)) + "\n")
    digest = hashlib.sha256()
    one = [r.data for r in read(pretty, digest)]
    assert digest.hexdigest() == hashlib.sha256(pretty.read_bytes()).hexdigest()
    other = [r.data for r in read(lines)]
    assert len(one) == 8 and all(isinstance(r, dict) for r in one)
    assert one == other


def test_the_shipped_example_passes_and_is_what_the_generator_writes(tmp_path: Path) -> None:
    code, card, rows = run(EXAMPLE, tmp_path / "out")
    assert code == 0 and card["decision"] == "PASS"
    assert card["inputs"]["traces"]["records"] == 8 and len(rows) == 8 * 7
    m = sdk()
    m.write(tmp_path / "again.jsonl", m.example_runs())
    assert (tmp_path / "again.jsonl").read_bytes() == \
        (EXAMPLE / "data" / "traces.jsonl").read_bytes()


def _lines() -> list[dict[str, Any]]:
    text = (EXAMPLE / "data" / "traces.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def _first_span(doc: dict[str, Any], child: bool = True) -> dict[str, Any]:
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return next(s for s in spans if bool(s.get("parentSpanId")) == child)


def _mutate(change: Any) -> bytes:
    docs = _lines()
    change(docs)
    return "".join(json.dumps(d) + "\n" if not isinstance(d, str) else d for d in docs).encode()


def _truncate(docs: list[Any]) -> None:
    docs[1] = json.dumps(docs[1])[:300] + "\n"


def _pretty_truncated() -> bytes:
    text = json.dumps(_lines()[0], indent=2)
    return text[:len(text) // 2].encode()


MALFORMED = [
    ("truncated line", lambda: _mutate(_truncate), "INVALID_JSON"),
    ("bad hex id", lambda: _mutate(lambda d: _first_span(d[0]).update(spanId="zz" * 8)),
     "OTEL_BAD_ID"),
    ("short trace id", lambda: _mutate(lambda d: _first_span(d[2]).update(traceId="abcd")),
     "OTEL_BAD_ID"),
    ("parent missing", lambda: _mutate(
        lambda d: _first_span(d[0]).update(parentSpanId="00000000000000ff")),
     "OTEL_ORPHAN_SPAN"),
    ("non-object line", lambda: _mutate(lambda d: d.insert(2, "[1, 2]\n")), "NOT_AN_OBJECT"),
    ("non-object span", lambda: _mutate(
        lambda d: d[0]["resourceSpans"][0]["scopeSpans"][0]["spans"].append(7)),
     "NOT_AN_OBJECT"),
    ("not OTLP", lambda: _mutate(lambda d: d.append({"resourceLogs": []})), "OTEL_NOT_OTLP"),
    ("bad attribute", lambda: _mutate(lambda d: _first_span(d[0]).update(attributes=[5])),
     "OTEL_BAD_SPAN"),
    ("bad status", lambda: _mutate(lambda d: _first_span(d[0]).update(status={"code": 9})),
     "OTEL_BAD_SPAN"),
    ("span twice", lambda: _mutate(lambda d: d[0]["resourceSpans"][0]["scopeSpans"][0]
                                   ["spans"].append(_first_span(d[0]))), "DUPLICATE_ID"),
    ("NaN", lambda: _mutate(lambda d: d.insert(1, '{"resourceSpans": NaN}\n')),
     "NON_FINITE_NUMBER"),
    ("truncated document", _pretty_truncated, "INVALID_JSON"),
    # (a duplicate key in a member mapped to nothing, such as a scope, is only framed)
    ("duplicate key in a pretty span", lambda: json.dumps(_lines()[0], indent=1).replace(
        '"spanId":', '"spanId": "x", "spanId":', 1).encode(), "DUPLICATE_KEY"),
    # a tool call outside every agent run would escape the tool inspections: a wrong PASS
    ("tool call with no parent", lambda: _mutate(lambda d: _spans(d[0]).append(
        _moved(_op(d[0], "execute_tool"), "5b000000000000f1", ""))), "OTEL_UNOWNED_SPAN"),
    ("tool call under a plain root", lambda: _mutate(lambda d: _spans(d[0]).extend([
        _moved(_op(d[0], "invoke_agent"), "5b000000000000f2", "", operation="http"),
        _moved(_op(d[0], "execute_tool"), "5b000000000000f3", "5b000000000000f2")])),
     "OTEL_UNOWNED_SPAN"),
    ("tokens outside the run", lambda: _mutate(lambda d: _spans(d[0]).append(
        _moved(_op(d[0], "chat"), "5b000000000000f4", ""))), "OTEL_UNOWNED_SPAN"),
    # a latency that is no duration would pass any budget
    ("no end time", lambda: _mutate(lambda d: _op(d[0], "invoke_agent").pop(
        "endTimeUnixNano")), "OTEL_BAD_SPAN"),
    ("ends before it starts", lambda: _mutate(lambda d: _op(d[0], "invoke_agent").update(
        endTimeUnixNano="1767225600000000000", startTimeUnixNano="1767225609000000000")),
     "OTEL_BAD_SPAN"),
    ("starts at zero", lambda: _mutate(lambda d: _op(d[0], "execute_tool").update(
        startTimeUnixNano="0")), "OTEL_BAD_SPAN"),
    # tokens a sum would skip, or subtract, would pass a token budget
    ("tokens as text", lambda: _mutate(lambda d: _attr(
        _op(d[0], "chat"), "gen_ai.usage.input_tokens", {"stringValue": "200"})),
     "OTEL_BAD_SPAN"),
    ("negative tokens", lambda: _mutate(lambda d: _attr(
        _op(d[0], "chat"), "gen_ai.usage.output_tokens", {"intValue": "-5000"})),
     "OTEL_BAD_SPAN"),
    ("trial not a number", lambda: _mutate(lambda d: _attr(
        _op(d[0], "invoke_agent"), "specgate.trial", {"boolValue": True})), "OTEL_BAD_SPAN"),
]


def _spans(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return spans


def _op(doc: dict[str, Any], operation: str) -> dict[str, Any]:
    """The first span of ``doc`` whose gen_ai.operation.name is ``operation``."""
    return next(s for s in _spans(doc) if {"key": "gen_ai.operation.name", "value": {
        "stringValue": operation}} in s["attributes"])


def _attr(span: dict[str, Any], key: str, value: dict[str, Any]) -> None:
    span["attributes"] = [a for a in span["attributes"] if a["key"] != key] + \
        [{"key": key, "value": value}]


def _moved(span: dict[str, Any], ident: str, parent: str, operation: str = "") -> dict[str, Any]:
    """A copy of ``span`` with another id and parent (and operation, if given)."""
    copied = json.loads(json.dumps(span))
    copied.update(spanId=ident, parentSpanId=parent)
    if operation:
        _attr(copied, "gen_ai.operation.name", {"stringValue": operation})
    return copied


@pytest.mark.parametrize("what, make, code", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_export_is_incomplete_with_its_code(tmp_path: Path, what: str, make: Any,
                                                        code: str) -> None:
    spec = copy(tmp_path)
    data = make()
    (spec / "data" / "traces.jsonl").write_bytes(data)
    problems = [r for r in read(spec / "data" / "traces.jsonl") if isinstance(r, BadRecord)]
    assert code in {p.code for p in problems}, problems
    exit_code, card, _ = run(spec, tmp_path / "out")
    assert exit_code == 3 and card["decision"] == "INCOMPLETE"
    assert code in card["coverage"]["record_problems"]
    assert "INTERNAL_ERROR" not in json.dumps(card)
    assert card["inputs"]["traces"]["sha256"] == hashlib.sha256(data).hexdigest()


def test_a_trace_without_an_agent_span_is_one_run_at_its_root(tmp_path: Path) -> None:
    def span(ident: str, parent: str, op: str, name: str = "", **attrs: Any) -> dict[str, Any]:
        return {"traceId": "ab" * 16, "spanId": ident * 8, "parentSpanId": parent,
                "name": name or op, "startTimeUnixNano": "1000000",
                "endTimeUnixNano": "3000000",
                "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": op}},
                               *({"key": k, "value": {"intValue": str(v)}}
                                 for k, v in attrs.items())]}
    request = {"resourceSpans": [{"scopeSpans": [{"spans": [
        span("01", "", "POST /ask"),
        span("02", "01" * 8, "chat", **{"gen_ai.usage.input_tokens": 5}),
        span("03", "01" * 8, "execute_tool", "execute_tool lookup")]}]}]}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(request) + "\n")
    (unit,) = [r.data for r in read(path)]
    assert unit["id"] == f"{'ab' * 16}-{'01' * 8}" and unit["case_id"] == unit["id"]
    assert unit["trial"] is None and unit["latency_ms"] == 2.0  # no specgate.trial given
    # no output tokens counted anywhere: the total is unknown, never the input alone
    assert unit["usage"] == {"input_tokens": 5}
    # no gen_ai.tool.name: the tool its span name names, as the conventions name it
    assert [c["name"] for c in unit["tool_calls"]] == ["lookup"]


@pytest.mark.parametrize("arguments", ['{"order_id": "A-1042", "amount": 1e999}',
                                       '{"order_id": "A-1042", "amount": NaN}',
                                       '{"order_id": "A-1042", "amount": 10, "amount": 1e9}'])
def test_tool_arguments_the_strict_reader_refuses_fail_the_contract_never_crash(
        tmp_path: Path, arguments: str) -> None:
    # the tool_call inspection read an arguments string leniently: 1e999 became inf, which
    # the canonical scorecard cannot hold (INTERNAL_ERROR), and of a name given twice the
    # last value counted; now such arguments are not JSON to it, and the call fails
    spec = copy(tmp_path)
    docs = _lines()
    _attr(_op(docs[0], "execute_tool"), "gen_ai.tool.call.arguments", {"stringValue": arguments})
    (spec / "data" / "traces.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    code, card, rows = run(spec, tmp_path / "out")
    assert code == 1 and card["decision"] == "FAIL"
    failed = [r for r in rows if r["status"] == "FAIL"]
    assert [r["inspection"] for r in failed] == ["tool-calls-within-contract"]
    assert "arguments are not a JSON object" in failed[0]["message"]


def test_a_pretty_span_larger_than_the_window_is_framed_whole_and_a_huge_one_refused(
        tmp_path: Path, monkeypatch: Any) -> None:
    from engine.records import json_stream
    doc = _lines()[0]
    agent = _op(doc, "invoke_agent")  # its trace alone: the line holds the next one's start
    _spans(doc)[:] = [s for s in _spans(doc) if s["traceId"] == agent["traceId"]]
    _attr(agent, "note", {"stringValue": "x" * 300_000})
    path = tmp_path / "traces.json"
    path.write_text(json.dumps(doc, indent=2))
    digest = hashlib.sha256()
    units = [r for r in read(path, digest)]
    assert all(isinstance(u, Record) for u in units) and len(units) == 1
    assert units[0].data["attributes"]["note"] == "x" * 300_000
    assert digest.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
    monkeypatch.setattr(json_stream, "MAX_VALUE", 200_000)  # the 64 MiB limit, scaled down
    digest = hashlib.sha256()
    problems = [(r.code, r.line) for r in read(path, digest) if isinstance(r, BadRecord)]
    assert problems and problems[0][0] == "VALUE_TOO_LARGE"
    assert digest.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
