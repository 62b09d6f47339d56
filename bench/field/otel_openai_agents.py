"""The OpenAI Agents SDK instrumented by OpenInference: the scripted refund agent as an
``agents.Agent`` on ``OpenAIChatCompletionsModel`` (an ``AsyncOpenAI`` client pointed at
the loopback server), run by ``Runner.run_sync``; ``OpenAIAgentsInstrumentor().instrument(
tracer_provider=...)`` (openinference-instrumentation-openai-agents; its processor replaces
the SDK's own trace exporter) writes the spans to a plain OTel TracerProvider.

Case and trial go in twice: as the SDK's ``RunConfig(group_id=case, trace_metadata=
{"specgate.case_id": case, "specgate.trial": str(trial)})`` and as OpenInference's context
attributes ``using_attributes(session_id=case, metadata={"specgate.case_id": case,
"specgate.trial": trial})``.

Modes: ``default`` (``trace_include_sensitive_data`` left at its default, true) and
``no_sensitive_data`` (``RunConfig(trace_include_sensitive_data=False)``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.field import otel_loopback as script
from bench.field.otel_export import Batches, provider

MODES: dict[str, dict[str, Any]] = {"default": {},
                                    "no_sensitive_data": {"trace_include_sensitive_data": False}}


def make(out: Path, modes: list[str] | None = None) -> list[dict[str, Any]]:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
    from openai import AsyncOpenAI
    from openinference.instrumentation import using_attributes
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    made = []
    for mode in modes or list(MODES):
        tracer_provider, exporter = provider()
        instrumentor = OpenAIAgentsInstrumentor()
        instrumentor.instrument(tracer_provider=tracer_provider)
        batches = Batches(exporter)
        with script.serve() as (base_url, log):
            model = OpenAIChatCompletionsModel(
                model=script.MODEL,
                openai_client=AsyncOpenAI(base_url=base_url, api_key="loopback"))
            agent = Agent(name="refund-agent", instructions=script.INSTRUCTIONS, model=model,
                          tools=[function_tool(script.lookup_order),
                                 function_tool(script.issue_refund),
                                 function_tool(script.escalate)])
            outputs = []
            for case, trial in script.runs():
                config = RunConfig(workflow_name="refund-workflow", group_id=case,
                                   trace_metadata={"specgate.case_id": case,
                                                   "specgate.trial": str(trial)},
                                   **MODES[mode])
                with using_attributes(session_id=case, metadata={"specgate.case_id": case,
                                                                 "specgate.trial": trial}):
                    result = Runner.run_sync(agent, script.PROMPT.format(case=case, trial=trial),
                                             run_config=config)
                outputs.append(result.final_output)
                batches.take()
        instrumentor.uninstrument()
        tracer_provider.shutdown()
        forms = ["jsonl"]
        paths = batches.write(out / mode, forms)
        made.append({"mode": mode, "paths": paths, "outputs": outputs, "requests": log,
                     "settings": {
                         "RunConfig": "workflow_name='refund-workflow', group_id=case, "
                                      "trace_metadata={'specgate.case_id': case, "
                                      "'specgate.trial': str(trial)}"
                                      + "".join(f", {k}={v!r}" for k, v in MODES[mode].items()),
                         "openinference.instrumentation.using_attributes":
                             "session_id=case, metadata={'specgate.case_id': case, "
                             "'specgate.trial': trial}",
                         "OpenAIAgentsInstrumentor().instrument": "tracer_provider=..."},
                     "env": {}})
    return made


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in (
        "openai-agents", "openai", "openinference-instrumentation-openai-agents",
        "openinference-instrumentation", "openinference-semantic-conventions",
        "opentelemetry-sdk", "opentelemetry-api", "opentelemetry-exporter-otlp-proto-common",
        "opentelemetry-proto", "protobuf")}


_COMMON = {
    "convention": "OpenInference, not GenAI: no gen_ai.* attribute at all; "
                  "openinference.span.kind on every span",
    "agent_run_span": "root span named by RunConfig.workflow_name ('refund-workflow'), "
                      "openinference.span.kind AGENT, status OK (the SDK trace); below it a "
                      "CHAIN span also named 'refund-workflow', then the agent span "
                      "'refund-agent' (AGENT, agent.name, graph.node.id), then one CHAIN span "
                      "'turn' per model turn holding its LLM span and that turn's TOOL spans",
    "inference_spans": "'generation' spans, openinference.span.kind LLM, llm.system openai, "
                       "llm.model_name, llm.invocation_parameters ({\"base_url\": ...})",
    "tool_spans": "spans named by the tool ('lookup_order', ...), openinference.span.kind TOOL, "
                  "tool.name, tool.description, tool.parameters (JSON schema); no tool call "
                  "id on the tool span",
    "tokens": "llm.token_count.prompt / llm.token_count.completion on LLM spans only",
    "case_trial": "RunConfig(group_id=..., trace_metadata=...) is NOT recorded by "
                  "OpenInference 2.6.0 (no attribute carries it); "
                  "using_attributes(session_id=case, metadata={...}) gives session.id=case "
                  "and metadata=<JSON text {\"specgate.case_id\": ..., \"specgate.trial\": "
                  "n}> on EVERY span",
}
NOTES: dict[str, dict[str, Any]] = {
    "default": {**_COMMON,
                "tool_arguments": "present: input.value (JSON text of the arguments as the "
                                  "model sent them, input.mime_type application/json); result "
                                  "in output.value (JSON text)",
                "messages": "LLM span attributes: input.value / output.value (the raw Chat "
                            "Completions messages / choices as JSON text) and the flattened "
                            "llm.input_messages.{i}.message.role|content|tool_call_id|"
                            "tool_calls.{j}.tool_call.id|function.name|function.arguments "
                            "and llm.output_messages.{i}.message...; tool results in input "
                            "messages are Python reprs ({'order_id': 'small', ...}); an "
                            "earlier assistant turn's single tool call is indexed "
                            "tool_calls.1 (not 0) in later input messages; the AGENT spans "
                            "carry no input/output; final text only in the last LLM span's "
                            "llm.output_messages.0.message.content; no events",
                "content": "on (trace_include_sensitive_data default true)"},
    "no_sensitive_data": {**_COMMON,
                          "tool_arguments": "absent (no input.value / output.value on tool "
                                            "spans)",
                          "messages": "none: LLM spans keep model, token counts and "
                                      "invocation parameters only",
                          "content": "off (RunConfig(trace_include_sensitive_data=False))"},
}
