"""``otel-genai``: OTLP/JSON trace exports whose spans follow the OpenTelemetry GenAI
semantic conventions, or a producer convention the reader reads as them (OpenInference's,
OpenLLMetry's), as one record per agent run (docs/otel.md).

- ``values``: OTLP values and the ``Span`` summary;
- ``otlp``: the file framed into spans (JSON Lines, protobuf's JSON mapping, one
  pretty-printed request);
- ``registry``: the conventions, each a module (``genai``, ``openinference``,
  ``traceloop``) reading a span's attributes and events as the GenAI names;
- ``runs``: spans into agent runs (the records).
"""

from engine.records.otel.runs import read

__all__ = ["read"]
