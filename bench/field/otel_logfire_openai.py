"""Pydantic Logfire's OpenAI instrumentation (``logfire.instrument_openai``) around a
hand-written tool loop on the ``openai`` client (pointed at the loopback server): the loop
calls ``chat.completions.create``, runs the tool functions itself and appends the tool
messages, as a user without an agent framework writes it. Logfire makes one span per model
call; the only other span is the user's own ``logfire.span("refund run ...")`` around each
run, which names the case and trial as its attributes ``case_id`` and ``trial``. Nothing
makes an ``execute_tool`` span: each tool call is only a ``tool_call`` part of the chat
span's ``gen_ai.output.messages`` (and of the next call's ``gen_ai.input.messages``).

Logfire is configured not to send anything (``send_to_logfire=False``, no console, no
metrics); its spans reach the field exporter through ``additional_span_processors``, with
the field ids (``AdvancedOptions(id_generator=...)``).

Modes (``instrument_openai(client, version=...)``, logfire 5.4's only setting of what the
spans record; there is no content switch):

- ``default``: ``version=2``, the default: GenAI convention attributes
  (``gen_ai.input.messages``, ``gen_ai.output.messages``, ...). ``version='latest'`` is
  normalised to 2 by logfire 5.4 ("currently identical to version 2"), so it is no mode
  of its own;
- ``legacy``: ``version=1``: logfire's earlier ``request_data`` / ``response_data`` JSON
  attributes, no ``gen_ai.input/output.messages`` (``[1, 2]`` writes both).

The venv (Python 3.11):

    python3.11 -m venv /tmp/field-otel/logfire_openai
    /tmp/field-otel/logfire_openai/bin/pip install logfire==5.4.0 openai==3.57.0 \\
        protobuf==7.36.2 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 \\
        opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-proto==1.45.2
    # (logfire 5.4 brings logfire-sdk 5.4.0, opentelemetry-instrumentation 0.66b2)

    /tmp/field-otel/logfire_openai/bin/python -m bench.field.make_otel logfire_openai \\
        tests/data/field/otel
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.field import otel_loopback as script
from bench.field.otel_export import SERVICE, Batches, provider

MODES: dict[str, Any] = {"default": 2, "legacy": 1}
# logfire's resource names the host, its id, the pid and the git commit; pinned here
RESOURCE = {"service.instance.id": "field-0", "host.name": "field", "host.id": "field-host",
            "process.pid": 1}
TOOLS, SCHEMAS = script.TOOLS, script.SCHEMAS


def run_agent(client: Any, case: str, trial: int) -> str:
    """One run of the hand-written loop inside the user's own logfire span; its final
    text."""
    import logfire

    prompt = script.PROMPT.format(case=case, trial=trial)
    with logfire.span("refund run {case_id} trial {trial}", case_id=case, trial=trial):
        messages: list[dict[str, Any]] = [{"role": "system", "content": script.INSTRUCTIONS},
                                          {"role": "user", "content": prompt}]
        while True:
            response = client.chat.completions.create(model=script.MODEL, messages=messages,
                                                      tools=SCHEMAS)
            message = response.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages.append({"role": "assistant", "content": message.content,
                             "tool_calls": [c.model_dump() for c in message.tool_calls]})
            for call in message.tool_calls:
                result = TOOLS[call.function.name](**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id,
                                 "content": json.dumps(result)})


def make(out: Path, modes: list[str] | None = None) -> list[dict[str, Any]]:
    import logfire
    from openai import OpenAI
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    made = []
    for mode in modes or list(MODES):
        tracer_provider, exporter = provider()  # its ids and exporter; logfire's provider
        logfire.configure(                      # sends the spans there
            send_to_logfire=False, console=False, metrics=False, inspect_arguments=False,
            service_name=SERVICE, service_version="1.0.0", resource_attributes=RESOURCE,
            additional_span_processors=[SimpleSpanProcessor(exporter)],
            advanced=logfire.AdvancedOptions(id_generator=tracer_provider.id_generator))
        batches = Batches(exporter)
        with script.serve() as (base_url, log):
            client = OpenAI(base_url=base_url, api_key="loopback")
            with logfire.instrument_openai(client, version=MODES[mode]):
                outputs = []
                for case, trial in script.runs():
                    outputs.append(run_agent(client, case, trial))
                    logfire.force_flush()
                    batches.take()
        logfire.shutdown()
        paths = batches.write(out / mode, ["jsonl"])
        made.append({"mode": mode, "paths": paths, "outputs": outputs, "requests": log,
                     "settings": {
                         "logfire.configure": "send_to_logfire=False, console=False, "
                         "metrics=False, inspect_arguments=False, service_name=..., "
                         "additional_span_processors=[SimpleSpanProcessor(exporter)], "
                         "advanced=AdvancedOptions(id_generator=...)",
                         "logfire.instrument_openai": f"client, version={MODES[mode]!r}",
                         "run span": "the user's own logfire.span('refund run {case_id} "
                                     "trial {trial}', case_id=case, trial=trial) around "
                                     "each run (no execute_tool spans: the loop runs the "
                                     "tools itself)"},
                     "env": {}})
    return made


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in (
        "logfire", "logfire-sdk", "openai", "opentelemetry-sdk", "opentelemetry-api",
        "opentelemetry-instrumentation", "opentelemetry-exporter-otlp-proto-common",
        "opentelemetry-proto", "protobuf")}


_COMMON = {
    "agent_run_span": "none of logfire's: the run is the user's own root span 'refund run "
                      "{case_id} trial {trial}' (the span NAME is logfire's msg_template; "
                      "logfire.msg holds the formatted 'refund run big trial 1'), scope "
                      "logfire, kind INTERNAL, status UNSET, no gen_ai.* attribute and no "
                      "gen_ai.operation.name (no invoke_agent anywhere)",
    "inference_spans": "one per model call, child of the run span: name 'Chat Completion "
                       "with {request_data[model]!r}' (the template, not 'chat {model}'), "
                       "scope logfire.openai, kind CLIENT, gen_ai.operation.name chat, "
                       "gen_ai.system / gen_ai.provider.name openai, gen_ai.request.model, "
                       "gen_ai.response.model, gen_ai.response.id, "
                       "gen_ai.response.finish_reasons (JSON text '[\"tool_calls\"]'), "
                       "gen_ai.tool.definitions (JSON text), logfire.* and code.* attributes",
    "tool_spans": "none: the loop runs the tools itself and nothing makes an execute_tool "
                  "span; each call exists only as a tool_call part of the chat span's "
                  "gen_ai.output.messages (and again in the next chat span's "
                  "gen_ai.input.messages)",
    "tokens": "gen_ai.usage.input_tokens / output_tokens (int) on each chat span, plus "
              "gen_ai.usage.raw (JSON text of the response's usage); nothing on the run span",
    "case_trial": "attributes of the user's run span: case_id (string), trial (int); "
                  "input options case: case_id, trial: trial",
    "resource": "logfire's own resource: service.name, service.version, process.*, "
                "host.*, os.*, logfire.version (host.name, host.id pinned by the maker; "
                "process.pid is the maker's, as a string)",
    "events": "none (logfire writes no span events here; no pending spans reach the "
              "exporter)",
}
NOTES: dict[str, dict[str, Any]] = {
    "default": {**_COMMON,
                "tool_arguments": "only inside gen_ai.output.messages (JSON text) of the "
                                  "chat span that asked for the call, as a JSON OBJECT: "
                                  "[{\"role\":\"assistant\",\"parts\":[{\"type\":"
                                  "\"tool_call\",\"id\":\"call_big_1_1\",\"name\":"
                                  "\"issue_refund\",\"arguments\":{\"order_id\":\"big\","
                                  "\"amount\":80}}],\"finish_reason\":\"tool_calls\"}]; "
                                  "no gen_ai.tool.call.arguments anywhere",
                "messages": "gen_ai.input.messages (JSON text, parts form; system prompt as "
                            "a role system message; tool results as tool_call_response "
                            "parts) and gen_ai.output.messages on every chat span; "
                            "request_data is only {\"model\": ...}; the final answer is the "
                            "text part of the LAST chat span's gen_ai.output.messages",
                "content": "on (always: logfire 5.4 has no switch for it; scrubbing only "
                           "redacts values matching its secret patterns)"},
    "legacy": {**_COMMON,
               "tool_arguments": "only inside logfire's own response_data (JSON text): "
                                 "{\"message\":{...,\"tool_calls\":[{\"id\":...,"
                                 "\"function\":{\"arguments\":\"{\\\"order_id\\\": "
                                 "\\\"big\\\", \\\"amount\\\": 80}\",\"name\":"
                                 "\"issue_refund\"},\"type\":\"function\"}]},\"usage\":"
                                 "{...}} (arguments a JSON string, OpenAI's own shape)",
               "messages": "no gen_ai.input/output.messages: the request is request_data "
                           "(the whole OpenAI request body as JSON text) and the answer "
                           "response_data.message.content of the last chat span",
               "content": "on, in logfire's pre-GenAI attributes (version=1)"},
}
