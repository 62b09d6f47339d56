"""Genuine OTLP trace exports of a scripted refund agent, written by real agent frameworks
and instrumentations running offline against a loopback OpenAI-compatible model
(``bench/field/otel_loopback.py``), for ``tests/data/field/otel/``.

    python -m bench.field.make_otel FRAMEWORK OUTDIR [MODE ...]

FRAMEWORK is the NAME of a module ``bench/field/otel_NAME.py``; run it
in that framework's own venv (their dependencies clash), from the repository root. It
writes ``OUTDIR/FRAMEWORK/MODE.jsonl`` (Collector-style OTLP/JSON lines, hex ids; some
modes also ``MODE.pb.jsonl``, protobuf's JSON mapping with base64 ids, and ``MODE.json``,
one pretty-printed request) and merges the files' entries into ``OUTDIR/MADE.json``
(versions, settings, the expected values from the script, and a survey of what the file
records). Every export holds 6 runs: cases small, big, escalate x trials 1, 2.

The venvs (Python 3.11; one each, their dependencies clash; the pins are those the shipped
files were made with). The frameworks added from issue 37 on give theirs in their own
module's docstring; the first four:

    python3.11 -m venv /tmp/field-otel/pydantic_ai
    /tmp/field-otel/pydantic_ai/bin/pip install "pydantic-ai-slim[openai]==2.68.0" \\
        openai==3.57.0 protobuf==7.36.2 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 \\
        opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-proto==1.45.2

    python3.11 -m venv /tmp/field-otel/strands
    /tmp/field-otel/strands/bin/pip install "strands-agents[openai,otel]==1.62.0" \\
        openai==1.109.1 protobuf==7.36.2 opentelemetry-api==1.45.1 opentelemetry-sdk==1.45.1 \\
        opentelemetry-exporter-otlp-proto-common==1.45.1 opentelemetry-proto==1.45.1 \\
        opentelemetry-instrumentation-threading==0.66b1
    # (without the ==1.62.0 pin pip's resolver backtracks to strands-agents 0.2.1)

    python3.11 -m venv /tmp/field-otel/openai_v2
    /tmp/field-otel/openai_v2/bin/pip install openai==3.57.0 httpx==0.28.1 \\
        opentelemetry-instrumentation-openai-v2==2.4b0 opentelemetry-util-genai==1.1b0 \\
        opentelemetry-instrumentation==0.66b2 opentelemetry-semantic-conventions==0.66b2 \\
        protobuf==7.36.2 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 \\
        opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-proto==1.45.2
    # (openai-v2 2.4b0 imports opentelemetry.util.genai.instruments, gone from util-genai
    # 1.2b0 and 1.3b0; and it imports httpx, which openai 3.x no longer brings)

    python3.11 -m venv /tmp/field-otel/openai_agents
    /tmp/field-otel/openai_agents/bin/pip install openai-agents==0.24.0 openai==3.57.0 \\
        openinference-instrumentation-openai-agents==2.6.0 \\
        openinference-instrumentation==0.1.72 openinference-semantic-conventions==0.1.42 \\
        protobuf==7.36.2 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 \\
        opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-proto==1.45.2

Then, from the repository root, e.g.:

    /tmp/field-otel/strands/bin/python -m bench.field.make_otel strands tests/data/field/otel
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import re
import sys
from pathlib import Path
from typing import Any

from bench.field import otel_loopback as script

ROOT = Path(__file__).resolve().parents[2]
# every bench/field/otel_NAME.py but the shared loopback model and writer is a framework
FRAMEWORKS = tuple(sorted(p.stem[len("otel_"):] for p in Path(__file__).parent.glob("otel_*.py")
                          if p.stem not in ("otel_loopback", "otel_export")))
FORMS = {"jsonl": "OTLP/JSON lines as the Collector file exporter writes them (hex ids, "
                  "enums as integers), one ExportTraceServiceRequest per agent run",
         "pb.jsonl": "protobuf json_format.MessageToDict, one request per line (base64 ids, "
                     "enum names), one request per agent run",
         "json": "one request of every span, json_format.MessageToJson(indent=2) (base64 ids, "
                 "enum names)"}


def _attrs(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for pair in pairs or []:
        value = pair.get("value", {})
        out[pair["key"]] = next(iter(value.values()), None) if value else None
    return out


def _key(key: str) -> str:
    """An attribute key with its list indexes folded (``llm.input_messages.3.x`` ->
    ``llm.input_messages.*.x``)."""
    return re.sub(r"\.\d+(?=\.|$)", ".*", key)


def survey(path: Path) -> dict[str, Any]:
    """What an export (Collector-style JSON lines) records, per kind of span: its scope, name,
    operation, attribute keys (indexes folded) and events (their attribute keys, and how many
    of that name one span has at most). Read here with plain json, never with specgate."""
    kinds: dict[tuple[str, str, str], dict[str, Any]] = {}
    spans = 0
    for line in path.read_text().splitlines():
        for resource in json.loads(line).get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                scope_name = scope.get("scope", {}).get("name", "")
                for span in scope.get("spans", []):
                    spans += 1
                    attrs = _attrs(span.get("attributes", []))
                    operation = str(attrs.get("gen_ai.operation.name")
                                    or attrs.get("openinference.span.kind") or "")
                    name = span.get("name", "")
                    kind = kinds.setdefault((scope_name, name, operation), {
                        "scope": scope_name, "name": name, "operation": operation,
                        "count": 0, "root": False, "attributes": set(), "events": {}})
                    kind["count"] += 1
                    kind["root"] = kind["root"] or not span.get("parentSpanId")
                    kind["attributes"].update(_key(k) for k in attrs)
                    per_span: dict[str, int] = {}
                    for event in span.get("events", []):
                        event_name = event.get("name", "")
                        per_span[event_name] = per_span.get(event_name, 0) + 1
                        seen = kind["events"].setdefault(event_name, {"keys": set(),
                                                                      "max_per_span": 0})
                        seen["keys"].update(_key(k) for k in _attrs(event.get("attributes",
                                                                               [])))
                    for event_name, count in per_span.items():
                        seen = kind["events"][event_name]
                        seen["max_per_span"] = max(seen["max_per_span"], count)
    return {"spans": spans, "span_kinds": [
        {**kind, "attributes": sorted(kind["attributes"]),
         "events": {name: {"keys": sorted(seen["keys"]), "max_per_span": seen["max_per_span"]}
                    for name, seen in sorted(kind["events"].items())}}
        for kind in kinds.values()]}


def _check(made: dict[str, Any]) -> list[str]:
    """What the framework did that the script did not say (empty when all is as scripted)."""
    problems = []
    wanted = [(case, trial, step) for case, trial in script.runs() for step in range(3)]
    got = [(r["case"], r["trial"], r["step"]) for r in made["requests"]]
    if got != wanted:
        problems.append(f"the server saw requests {got}, not {wanted}")
    for (case, trial), output in zip(script.runs(), made["outputs"], strict=True):
        if output != script.final_text(case, trial):
            problems.append(f"run {case}/{trial} answered {output!r}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("framework", choices=FRAMEWORKS)
    parser.add_argument("outdir", type=Path)
    parser.add_argument("modes", nargs="*")
    args = parser.parse_args(argv)
    module = importlib.import_module(f"bench.field.otel_{args.framework}")
    made = module.make(args.outdir / args.framework, args.modes or None)
    versions = {"python": platform.python_version(), **module.versions()}
    manifest_path = args.outdir / "MADE.json"
    manifest: dict[str, Any] = json.loads(manifest_path.read_text()) \
        if manifest_path.exists() else {
        "about": "Genuine OTLP trace exports of a scripted refund agent (bench/field/"
                 "make_otel.py). `expected` follows from the loopback model's script "
                 "(bench/field/otel_loopback.py), never from specgate; `survey` is what each "
                 "file records, read with plain json; `notes` are the maker's reading of it.",
        "files": []}
    expected = script.expected_runs()
    entries = []
    failed = False
    for item in made:
        problems = _check(item)
        failed = failed or bool(problems)
        for problem in problems:
            print(f"{args.framework}/{item['mode']}: {problem}", file=sys.stderr)
        jsonl = next(p for p in item["paths"] if p.name.endswith(".jsonl")
                     and not p.name.endswith(".pb.jsonl"))
        recorded = survey(jsonl)
        for path in item["paths"]:
            form = path.name[len(item["mode"]) + 1:]
            try:
                shown = str(path.resolve().relative_to(ROOT))
            except ValueError:
                shown = str(path)
            entries.append({
                "path": shown, "framework": args.framework, "mode": item["mode"],
                "form": form, "form_is": FORMS[form], "versions": versions,
                "settings": item["settings"], "env": item["env"],
                "command": f"python -m bench.field.make_otel {args.framework} "
                           f"{args.outdir} {item['mode']}",
                "server_saw_what_the_script_says": not problems,
                "expected": {"runs": expected, "ordered_as": "trial-major: the file holds "
                             "the runs in this order"},
                "notes": module.NOTES.get(item["mode"], {}),
                "survey": recorded if path == jsonl else {"same_spans_as": str(jsonl.name)},
            })
            print(f"wrote {shown} ({path.stat().st_size} bytes)")
    written = {e["path"] for e in entries}
    manifest["files"] = sorted([e for e in manifest["files"] if e["path"] not in written]
                               + entries, key=lambda e: e["path"])
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
