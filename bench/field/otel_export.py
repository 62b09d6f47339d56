"""Tracing and writing of the field exports: a TracerProvider with a counting IdGenerator
whose finished spans go to an InMemorySpanExporter, and the three forms each batch is
written in:

- ``jsonl``: OTLP/JSON lines as the OpenTelemetry Collector's ``file`` exporter writes
  them (camelCase, enums as integers, int64 as decimal strings, trace/span ids as hex),
  one ExportTraceServiceRequest per line (one line per agent run);
- ``pb.jsonl``: protobuf's own JSON mapping (``MessageToDict``: base64 ids, enum names),
  one request per line;
- ``json``: one pretty-printed request of every span (``MessageToJson(indent=2)``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.make_otel_example import hex_ids

SERVICE = "refund-service"


def provider(service: str = SERVICE, install: bool = False) -> tuple[Any, Any]:
    """A TracerProvider with counting ids (made the global one when ``install``), and the
    InMemorySpanExporter its spans go to."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    class Counting(IdGenerator):
        def __init__(self) -> None:
            self.n = 0

        def generate_span_id(self) -> int:
            self.n += 1
            return 0x5F00_0000_0000_0000 + self.n

        def generate_trace_id(self) -> int:
            self.n += 1
            return 0x7F00_0000_0000_0000_0000_0000_0000_0000 + self.n

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider(
        resource=Resource.create({"service.name": service,
                                  "service.instance.id": "field-0"}),
        id_generator=Counting())
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    if install:
        trace.set_tracer_provider(tracer_provider)
    return tracer_provider, exporter


@contextmanager
def environment(values: Mapping[str, str | None]) -> Iterator[None]:
    """The process environment with ``values`` set (None: unset), as it was again
    afterwards (a framework reads its settings from it when it is instrumented)."""
    saved = {key: os.environ.get(key) for key in values}
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class Batches:
    """The finished spans, taken from the exporter one batch (one agent run) at a time."""

    def __init__(self, exporter: Any) -> None:
        self.exporter = exporter
        self.batches: list[list[Any]] = []

    def take(self) -> int:
        spans = list(self.exporter.get_finished_spans())
        self.exporter.clear()
        if spans:
            self.batches.append(spans)
        return len(spans)

    def write(self, out: Path, forms: Sequence[str] = ("jsonl",)) -> list[Path]:
        """Write the batches in ``forms``: ``out`` with the form's suffix (``x`` ->
        ``x.jsonl``, ``x.pb.jsonl``, ``x.json``); the paths written."""
        from google.protobuf.json_format import MessageToDict, MessageToJson
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        out.parent.mkdir(parents=True, exist_ok=True)
        written = []
        for form in forms:
            path = out.with_name(f"{out.name}.{form}")
            if form == "jsonl":
                lines = [json.dumps(hex_ids(MessageToDict(encode_spans(batch),
                                                          use_integers_for_enums=True)),
                                    separators=(",", ":")) for batch in self.batches]
                text = "".join(line + "\n" for line in lines)
            elif form == "pb.jsonl":
                lines = [json.dumps(MessageToDict(encode_spans(batch)), separators=(",", ":"))
                         for batch in self.batches]
                text = "".join(line + "\n" for line in lines)
            elif form == "json":
                every = [span for batch in self.batches for span in batch]
                text = MessageToJson(encode_spans(every), indent=2) + "\n"
            else:
                raise ValueError(f"unknown form {form!r}")
            path.write_text(text)
            written.append(path)
        return written
