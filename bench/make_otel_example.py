"""Write specs/otel-example/data/traces.jsonl with the OpenTelemetry Python SDK itself.

A scripted refund agent (no model is called) is traced with the SDK's tracer, following
the OpenTelemetry GenAI semantic conventions: one ``invoke_agent`` span per run, a
``chat`` span per model call (model, token usage) and an ``execute_tool`` span per tool
call (name, call id, arguments, result). The SDK records the spans into an
InMemorySpanExporter; ``encode_spans`` (opentelemetry-exporter-otlp-proto-common) turns
each batch of finished spans into an ExportTraceServiceRequest, written as one line of
OTLP/JSON (protobuf's JSON mapping with enums as integers and int64 as decimal strings;
trace and span ids turned from protobuf's base64 into hex, as OTLP/JSON requires).

Deterministic: ids come from a counting IdGenerator, times are given to every span.

    python -m bench.make_otel_example            # rewrites the shipped example
    python -m bench.make_otel_example --out x.jsonl
"""

from __future__ import annotations

import argparse
import base64
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "specs" / "otel-example" / "data" / "traces.jsonl"
T0 = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z in nanoseconds
MS = 1_000_000


@dataclass
class Call:
    """One tool call the agent makes."""

    name: str
    arguments: dict[str, Any]
    result: Any = "ok"
    error: str | None = None  # error.type, and the span's status ERROR


@dataclass
class Run:
    """One agent run: its case, trial, prompt, tool calls and answer."""

    case: str
    trial: int
    prompt: str
    calls: list[Call] = field(default_factory=list)
    answer: str = ""
    tokens: Sequence[tuple[int, int]] = ((200, 40), (260, 60))  # per chat span
    error: str | None = None  # the run itself fails (status ERROR, error.type)


def record(runs: Iterable[Run], agent: str = "refund-agent",
           model: str = "scripted-model-1") -> list[Any]:
    """Trace ``runs`` with the SDK; the finished ReadableSpans, in the order they ended."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.id_generator import IdGenerator
    from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

    class Counting(IdGenerator):
        def __init__(self) -> None:
            self.n = 0

        def generate_span_id(self) -> int:
            self.n += 1
            return 0x5B00_0000_0000_0000 + self.n

        def generate_trace_id(self) -> int:
            self.n += 1
            return (0x7A_0000_0000_0000_0000_0000_0000_0000 << 0) + self.n

    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "refund-service",
                                  "service.instance.id": "example-0"}),
        id_generator=Counting())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("refund-agent.tracing", "1.0.0")
    clock = T0
    for number, run in enumerate(runs):
        clock = T0 + number * 10_000 * MS
        root = tracer.start_span(f"invoke_agent {agent}", kind=SpanKind.INTERNAL,
                                 start_time=clock, attributes={
                                     "gen_ai.operation.name": "invoke_agent",
                                     "gen_ai.agent.name": agent,
                                     "gen_ai.agent.id": f"{agent}-v3",
                                     "gen_ai.provider.name": "scripted",
                                     "gen_ai.request.model": model,
                                     "gen_ai.conversation.id": f"conv-{number + 1:03d}",
                                     "specgate.case_id": run.case,
                                     "specgate.trial": run.trial,
                                     "gen_ai.input.messages": json.dumps(
                                         [{"role": "user", "parts": [
                                             {"type": "text", "content": run.prompt}]}]),
                                 })
        context = set_span_in_context(root)
        steps: list[Call | None] = [None, *run.calls]  # a chat span before each tool call
        for index, step in enumerate(steps):
            clock += 150 * MS
            tokens = run.tokens[min(index, len(run.tokens) - 1)]
            chat = tracer.start_span(f"chat {model}", context=context, kind=SpanKind.CLIENT,
                                     start_time=clock, attributes={
                                         "gen_ai.operation.name": "chat",
                                         "gen_ai.provider.name": "scripted",
                                         "gen_ai.request.model": model,
                                         "gen_ai.response.model": model,
                                         "gen_ai.usage.input_tokens": tokens[0],
                                         "gen_ai.usage.output_tokens": tokens[1]})
            clock += 400 * MS
            chat.end(end_time=clock)
            if step is None:
                continue
            clock += 10 * MS
            tool = tracer.start_span(f"execute_tool {step.name}", context=context,
                                     kind=SpanKind.INTERNAL, start_time=clock, attributes={
                                         "gen_ai.operation.name": "execute_tool",
                                         "gen_ai.tool.name": step.name,
                                         "gen_ai.tool.type": "function",
                                         "gen_ai.tool.call.id": f"call_{number + 1}_{index}",
                                         "gen_ai.tool.call.arguments": json.dumps(step.arguments),
                                         "gen_ai.tool.call.result": json.dumps(step.result)})
            if step.error:
                tool.set_attribute("error.type", step.error)
                tool.set_status(Status(StatusCode.ERROR, step.error))
            clock += 120 * MS
            tool.end(end_time=clock)
        clock += 200 * MS
        if run.answer:
            root.set_attribute("gen_ai.output.messages", json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": run.answer}],
                  "finish_reason": "stop"}]))
        if run.error:
            root.set_attribute("error.type", run.error)
            root.set_status(Status(StatusCode.ERROR, run.error))
        root.end(end_time=clock)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def hex_ids(request: dict[str, Any]) -> dict[str, Any]:
    """protobuf's JSON mapping writes bytes as base64; OTLP/JSON wants trace and span ids
    (and parentSpanId, links' ids) as hex."""
    def fix(node: Any) -> None:
        if isinstance(node, dict):
            for key in ("traceId", "spanId", "parentSpanId"):
                if isinstance(node.get(key), str) and node[key]:
                    node[key] = base64.b64decode(node[key]).hex()
            for value in node.values():
                fix(value)
        elif isinstance(node, list):
            for value in node:
                fix(value)
    fix(request)
    return request


def otlp_json(spans: Sequence[Any], batch: int = 7) -> list[str]:
    """Each batch of ``batch`` spans as one OTLP/JSON ExportTraceServiceRequest line (so a
    trace's spans spread over several lines, as an exporter's batches do)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    lines = []
    for start in range(0, len(spans), batch):
        message = encode_spans(spans[start:start + batch])
        request = MessageToDict(message, use_integers_for_enums=True)
        lines.append(json.dumps(hex_ids(request), separators=(",", ":"), sort_keys=False))
    return lines


def write(path: Path, runs: Iterable[Run], batch: int = 7) -> int:
    """Trace ``runs`` and write the export to ``path``; the number of lines written."""
    lines = otlp_json(record(runs), batch)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    return len(lines)


def example_runs() -> list[Run]:
    """The shipped example: 4 cases x 2 trials of a refund agent, all within policy."""
    runs = []
    for trial in (1, 2):
        runs += [
            Run("refund-late-delivery", trial, "Order A-1042 arrived 9 days late, refund me.",
                [Call("lookup_order", {"order_id": "A-1042"},
                      {"status": "delivered", "days_late": 9}),
                 Call("issue_refund", {"order_id": "A-1042", "amount": 42.5})],
                "Order A-1042 was late, so I issued a refund of 42.50."),
            Run("refund-outside-window", trial, "Can I return shoes from 4 months ago?",
                [Call("lookup_order", {"order_id": "S-0904"},
                      {"status": "delivered", "days_since": 120})],
                "Returns are accepted within 30 days, so this order cannot be refunded."),
            Run("address-change", trial, "Ship order B-2210 to my new address.",
                [Call("lookup_order", {"order_id": "B-2210"}, {"status": "packed"}),
                 Call("update_address", {"order_id": "B-2210", "address": "4 Elm St"})],
                "Done: order B-2210 will ship to your new address."),
            Run("password-reset", trial, "I can't log in.",
                [Call("send_reset_link", {"email": "user@example.com"})],
                "I sent you a reset link."),
        ]
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    lines = write(args.out, example_runs())
    print(f"wrote {args.out} ({lines} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
