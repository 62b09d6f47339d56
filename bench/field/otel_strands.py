"""Strands Agents' own telemetry: the scripted refund agent as a strands ``Agent`` on its
OpenAI model provider (``OpenAIModel(client_args={"base_url": <loopback>})``, which
streams), traced by strands' tracer on the global TracerProvider (``StrandsTelemetry
(tracer_provider=...)`` with it set global: strands' tracer always takes the global one).

Case and trial go in as ``Agent(trace_attributes={"specgate.case_id": case,
"specgate.trial": trial})``, one agent per run.

Modes (``OTEL_SEMCONV_STABILITY_OPT_IN``, read when strands' tracer is made):

- ``default``: unset (messages on legacy span events ``gen_ai.user.message``,
  ``gen_ai.choice``, ``gen_ai.tool.message``...);
- ``latest``: ``gen_ai_latest_experimental`` (tool arguments and results as span
  attributes, messages on ``gen_ai.client.inference.operation.details`` events);
- ``latest_attributes``: ``gen_ai_latest_experimental,gen_ai_span_attributes_only``
  (those messages as span attributes instead of events).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bench.field import otel_loopback as script
from bench.field.otel_export import Batches, provider

MODES = {"default": "", "latest": "gen_ai_latest_experimental",
         "latest_attributes": "gen_ai_latest_experimental,gen_ai_span_attributes_only"}


def make(out: Path, modes: list[str] | None = None) -> list[dict[str, Any]]:
    import strands.telemetry.tracer as strands_tracer
    from strands import Agent, tool
    from strands.models.openai import OpenAIModel
    from strands.telemetry import StrandsTelemetry

    tracer_provider, exporter = provider(install=True)  # strands reads the global one
    StrandsTelemetry(tracer_provider=tracer_provider)
    tools = [tool(script.lookup_order), tool(script.issue_refund), tool(script.escalate)]
    made = []
    for mode in modes or list(MODES):
        if MODES[mode]:
            os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = MODES[mode]
        else:
            os.environ.pop("OTEL_SEMCONV_STABILITY_OPT_IN", None)
        strands_tracer._tracer_instance = None  # re-read the env var, as a new process would
        batches = Batches(exporter)
        with script.serve() as (base_url, log):
            outputs = []
            for case, trial in script.runs():
                model = OpenAIModel(client_args={"base_url": base_url, "api_key": "loopback"},
                                    model_id=script.MODEL)
                agent = Agent(model=model, tools=tools, system_prompt=script.INSTRUCTIONS,
                              name="refund-agent", callback_handler=None,
                              trace_attributes={"specgate.case_id": case,
                                                "specgate.trial": trial})
                result = agent(script.PROMPT.format(case=case, trial=trial))
                outputs.append(str(result).strip())
                batches.take()
        forms = ["jsonl", "json"] if mode == "latest" else ["jsonl"]
        paths = batches.write(out / mode, forms)
        env = {"OTEL_SEMCONV_STABILITY_OPT_IN": MODES[mode]} if MODES[mode] else {}
        made.append({"mode": mode, "paths": paths, "outputs": outputs, "requests": log,
                     "settings": {"Agent": "trace_attributes={'specgate.case_id': case, "
                                           "'specgate.trial': trial}",
                                  "StrandsTelemetry": "tracer_provider=<the global one>"},
                     "env": env})
    tracer_provider.shutdown()
    return made


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in (
        "strands-agents", "openai", "opentelemetry-sdk", "opentelemetry-api",
        "opentelemetry-exporter-otlp-proto-common", "opentelemetry-proto", "protobuf",
        "opentelemetry-instrumentation-threading")}


_COMMON = {
    "agent_run_span": "root span 'invoke_agent refund-agent', gen_ai.operation.name "
                      "invoke_agent, kind INTERNAL, status OK; gen_ai.agent.name, "
                      "gen_ai.request.model, gen_ai.agent.tools; every span also carries "
                      "gen_ai.event.start_time / end_time (ISO text)",
    "inference_spans": "'chat' (gen_ai.operation.name chat, kind INTERNAL), each under its own "
                       "'execute_event_loop_cycle' span (gen_ai.operation.name "
                       "execute_event_loop_cycle, event_loop.cycle_id), which is a child of "
                       "the run span: run > cycle > {chat, execute_tool}",
    "tool_spans": "'execute_tool {tool}' (execute_tool) under the cycle span; gen_ai.tool.name, "
                  "gen_ai.tool.call.id, gen_ai.tool.description, gen_ai.tool.json_schema, "
                  "gen_ai.tool.status ('success')",
    "tokens": "gen_ai.usage.input_tokens / output_tokens / total_tokens and the legacy "
              "gen_ai.usage.prompt_tokens / completion_tokens (same values) on each chat span "
              "AND on the run span (its accumulated total, = the sum of the chat spans)",
    "case_trial": "Agent(trace_attributes={...}) -> specgate.case_id (string) and "
                  "specgate.trial (int) on EVERY span strands makes: run, cycle, chat, tool",
}
NOTES: dict[str, dict[str, Any]] = {
    "default": {**_COMMON,
                "system_attribute": "gen_ai.system = strands-agents",
                "tool_arguments": "not as an attribute: only as span event 'gen_ai.tool.message' "
                                  "(attributes role='tool', content=<arguments JSON text>, "
                                  "id=<call id>) on the tool span; the result as event "
                                  "'gen_ai.choice' (message=<JSON list of content blocks>, id)",
                "messages": "span events only (legacy per-message conventions): "
                            "gen_ai.system.message, gen_ai.user.message, "
                            "gen_ai.assistant.message, gen_ai.tool.message (attribute "
                            "'content', strands' own content-block JSON) and gen_ai.choice "
                            "(attributes 'message', 'finish_reason'; on cycle spans also "
                            "'tool.result'); the run span's final text is gen_ai.choice "
                            "'message' (plain text, with a trailing newline); no "
                            "gen_ai.input/output.messages anywhere",
                "content": "on (strands has no content switch besides redaction)"},
    "latest": {**_COMMON,
               "system_attribute": "gen_ai.provider.name = strands-agents",
               "tool_arguments": "present: gen_ai.tool.call.arguments attribute on the tool "
                                 "span (JSON text); gen_ai.tool.call.result attribute = JSON "
                                 "list of strands content blocks [{\"text\": \"<tool's "
                                 "return as JSON text>\"}]",
               "messages": "span events named gen_ai.client.inference.operation.details, "
                           "ONE PER ATTRIBUTE (several events of that name per span): chat "
                           "spans have 3 (gen_ai.system_instructions, gen_ai.input.messages, "
                           "gen_ai.output.messages); tool spans 2 (gen_ai.input.messages role "
                           "tool with the tool_call part, gen_ai.output.messages role tool "
                           "with the tool_call_response); cycle spans 1-2, BOTH "
                           "gen_ai.input.messages with different values (the conversation so "
                           "far, then the tool results fed back); the run span 2 "
                           "(gen_ai.input.messages, gen_ai.output.messages with the final "
                           "text + '\\n'); gen_ai.system_instructions is also a span "
                           "attribute of the run span",
               "content": "on"},
    "latest_attributes": {**_COMMON,
                          "system_attribute": "gen_ai.provider.name = strands-agents",
                          "tool_arguments": "present: gen_ai.tool.call.arguments and "
                                            "gen_ai.tool.call.result span attributes, as in "
                                            "'latest'",
                          "messages": "span attributes instead of events: "
                                      "gen_ai.input.messages / gen_ai.output.messages / "
                                      "gen_ai.system_instructions on chat, tool and run spans; "
                                      "on a cycle span the second write of "
                                      "gen_ai.input.messages overwrites the first (only the "
                                      "tool results remain); no span events",
                          "content": "on"},
}
