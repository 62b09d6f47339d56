"""opentelemetry-instrumentation-openai-v2 with opentelemetry-util-genai: a hand-written
agent loop on the ``openai`` client (pointed at the loopback server); the instrumentation
makes the ``chat`` spans, util-genai's ``TelemetryHandler`` the ``invoke_agent`` span
(``invoke_local_agent``) and the ``execute_tool`` spans (``tool``).

The harness gives util-genai what its docs ask of an instrumentation: the agent's input
and output messages, system instructions and tool arguments/results (only when
``handler.should_capture_content()``), its summed token usage, and case and trial as
extra attributes (``invocation.attributes["specgate.case_id"]``, ``["specgate.trial"]``).

Modes (environment, read when the handler is made):

- ``no_content``: nothing set (util-genai's default, NO_CONTENT);
- ``span_only``: ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` and
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only`` (content as span
  attributes). ``...CAPTURE_MESSAGE_CONTENT=true`` is no mode of util-genai 1.3b0 (it
  warns and falls back to NO_CONTENT); ``event_only`` sends content to the *logs* signal
  (``gen_ai.client.inference.operation.details`` log records), not to the trace.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bench.field import otel_loopback as script
from bench.field.otel_export import Batches, provider

MODES: dict[str, dict[str, str]] = {
    "no_content": {},
    "span_only": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
                  "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"},
}
ENV_KEYS = ("OTEL_SEMCONV_STABILITY_OPT_IN", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
TOOLS, SCHEMAS = script.TOOLS, script.SCHEMAS


def run_agent(client: Any, handler: Any, case: str, trial: int) -> str:
    """One run of the hand-written agent loop; its final text."""
    from opentelemetry.util.genai.types import InputMessage, OutputMessage, Text

    prompt = script.PROMPT.format(case=case, trial=trial)
    content = handler.should_capture_content()
    with handler.invoke_local_agent(agent_name="refund-agent",
                                    request_model=script.MODEL) as agent:
        agent.attributes["specgate.case_id"] = case
        agent.attributes["specgate.trial"] = trial
        if content:
            agent.system_instruction = [Text(content=script.INSTRUCTIONS)]
            agent.input_messages = [InputMessage(role="user", parts=[Text(content=prompt)])]
        messages: list[dict[str, Any]] = [{"role": "system", "content": script.INSTRUCTIONS},
                                          {"role": "user", "content": prompt}]
        input_tokens = output_tokens = 0
        while True:
            response = client.chat.completions.create(model=script.MODEL, messages=messages,
                                                      tools=SCHEMAS)
            input_tokens += response.usage.prompt_tokens
            output_tokens += response.usage.completion_tokens
            message = response.choices[0].message
            if not message.tool_calls:
                text = message.content or ""
                break
            messages.append({"role": "assistant", "content": message.content,
                             "tool_calls": [c.model_dump() for c in message.tool_calls]})
            for call in message.tool_calls:
                with handler.tool(call.function.name, tool_type="function") as tool:
                    tool.tool_call_id = call.id
                    arguments = json.loads(call.function.arguments)
                    result = TOOLS[call.function.name](**arguments)
                    if content:
                        tool.arguments = arguments
                        tool.tool_result = result
                messages.append({"role": "tool", "tool_call_id": call.id,
                                 "content": json.dumps(result)})
        agent.input_tokens = input_tokens
        agent.output_tokens = output_tokens
        if content:
            agent.output_messages = [OutputMessage(role="assistant", parts=[Text(content=text)],
                                                   finish_reason="stop")]
    return text


def make(out: Path, modes: list[str] | None = None) -> list[dict[str, Any]]:
    from openai import OpenAI
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.util.genai.handler import TelemetryHandler

    made = []
    for mode in modes or list(MODES):
        for key in ENV_KEYS:
            os.environ.pop(key, None)
        os.environ.update(MODES[mode])
        tracer_provider, exporter = provider()
        instrumentor = OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=tracer_provider)
        handler = TelemetryHandler(tracer_provider=tracer_provider)
        batches = Batches(exporter)
        with script.serve() as (base_url, log):
            client = OpenAI(base_url=base_url, api_key="loopback")
            outputs = []
            for case, trial in script.runs():
                outputs.append(run_agent(client, handler, case, trial))
                batches.take()
        instrumentor.uninstrument()
        tracer_provider.shutdown()
        forms = ["jsonl", "pb.jsonl", "json"]
        paths = batches.write(out / mode, forms)
        made.append({"mode": mode, "paths": paths, "outputs": outputs, "requests": log,
                     "settings": {"OpenAIInstrumentor().instrument": "tracer_provider=...",
                                  "TelemetryHandler": "tracer_provider=...; "
                                  "invoke_local_agent(agent_name='refund-agent', "
                                  "request_model=...), tool(name, tool_type='function')"},
                     "env": MODES[mode]})
    return made


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in (
        "opentelemetry-instrumentation-openai-v2", "opentelemetry-util-genai", "openai",
        "opentelemetry-sdk", "opentelemetry-api", "opentelemetry-instrumentation",
        "opentelemetry-semantic-conventions", "opentelemetry-exporter-otlp-proto-common",
        "opentelemetry-proto", "protobuf")}


_COMMON = {
    "agent_run_span": "root span 'invoke_agent refund-agent' made by util-genai "
                      "invoke_local_agent: gen_ai.operation.name invoke_agent, kind INTERNAL, "
                      "status UNSET; gen_ai.agent.name, gen_ai.request.model",
    "inference_spans": "'chat scripted-refund-model' (gen_ai.operation.name chat, kind CLIENT) "
                       "made by openai-v2 through util-genai (scope "
                       "opentelemetry.util.genai.handler, like every span here), children of "
                       "the run span; gen_ai.provider.name openai, gen_ai.response.id, "
                       "gen_ai.response.finish_reasons, openai.response.system_fingerprint",
    "tool_spans": "'execute_tool {tool}' from util-genai tool(): gen_ai.tool.name, "
                  "gen_ai.tool.type function, gen_ai.tool.call.id",
    "tokens": "gen_ai.usage.input_tokens / output_tokens on each chat span; the harness sets "
              "the run's sums on the invoke_agent span too (agent.input_tokens / "
              "output_tokens)",
    "case_trial": "invocation.attributes -> specgate.case_id (string), specgate.trial (int) "
                  "on the invoke_agent span only; no gen_ai.conversation.id (none given)",
    "pairing": "opentelemetry-instrumentation-openai-v2 2.4b0 (latest) imports "
               "opentelemetry.util.genai.instruments, which util-genai 1.2b0 and 1.3b0 "
               "(latest) no longer have: the newest working pair is 2.4b0 + util-genai "
               "1.1b0; util-genai's is_experimental_mode() is always true, so "
               "OTEL_SEMCONV_STABILITY_OPT_IN changes nothing here",
}
NOTES: dict[str, dict[str, Any]] = {
    "no_content": {**_COMMON,
                   "tool_arguments": "absent",
                   "messages": "none: no gen_ai.input/output.messages, no system "
                               "instructions, no events",
                   "content": "off (NO_CONTENT, util-genai's default; "
                              "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true is "
                              "no valid mode either and gives the same)"},
    "span_only": {**_COMMON,
                  "tool_arguments": "present: gen_ai.tool.call.arguments and "
                                    "gen_ai.tool.call.result span attributes (compact JSON "
                                    "text)",
                  "messages": "span attributes: gen_ai.input.messages (with the system "
                              "message as role system) / gen_ai.output.messages on chat "
                              "spans (tool_call parts' arguments as JSON objects); "
                              "gen_ai.input.messages / gen_ai.output.messages / "
                              "gen_ai.system_instructions on the invoke_agent span; no events",
                  "content": "on"},
}
