"""LangChain 1.x / LangGraph instrumented by Traceloop's OpenLLMetry: the scripted refund
agent of ``bench/field/langgraph_agent.py`` (``langchain.agents.create_agent(ChatOpenAI(...),
tools=[...], system_prompt=..., name="refund-agent")``) traced by
``LangchainInstrumentor().instrument(tracer_provider=...)``
(opentelemetry-instrumentation-langchain, without the traceloop-sdk) into a plain OTel
TracerProvider.

Case and trial go in as LangChain run metadata, ``agent.invoke(..., config={"metadata":
{"specgate.case_id": case, "specgate.trial": trial}})``: the instrumentation turns run
metadata into Traceloop association properties (``traceloop.association.properties.<key>``
on every span of the run) without the SDK.

Modes: ``default`` (``TRACELOOP_TRACE_CONTENT=true``, also its default) and ``no_content``
(``TRACELOOP_TRACE_CONTENT=false``).

LangSmith's own tracing stays off (``LANGSMITH_TRACING`` / ``LANGCHAIN_TRACING_V2`` set to
false); the instrumentation alone (no traceloop-sdk) sends no telemetry of its own.

The venv:

    python3.11 -m venv /tmp/field-otel/langgraph_traceloop
    /tmp/field-otel/langgraph_traceloop/bin/pip install langchain==1.5.0 \\
        langchain-core==1.8.1 langgraph==1.2.22 langgraph-prebuilt==1.1.3 \\
        langchain-openai==1.7.4 openai==3.63.0 \\
        opentelemetry-instrumentation-langchain==0.62.4 \\
        opentelemetry-semantic-conventions-ai==0.5.1 opentelemetry-instrumentation==0.66b2 \\
        opentelemetry-semantic-conventions==0.66b2 \\
        protobuf==7.36.2 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 \\
        opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-proto==1.45.2

    /tmp/field-otel/langgraph_traceloop/bin/python -m bench.field.make_otel \\
        langgraph_traceloop tests/data/field/otel
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from bench.field import langgraph_agent
from bench.field import otel_loopback as script
from bench.field.otel_export import Batches, environment, provider

QUIET = {"LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false"}
MODES: dict[str, dict[str, str]] = {"default": {"TRACELOOP_TRACE_CONTENT": "true"},
                                    "no_content": {"TRACELOOP_TRACE_CONTENT": "false"}}


def make(out: Path, modes: list[str] | None = None) -> list[dict[str, Any]]:
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    # one provider and one instrumentation for every mode: the instrumentation keeps the
    # tracer of its first instrument() (a second provider after uninstrument() gets only
    # the create_agent span), so the modes share them; the counting ids restart per mode
    tracer_provider, exporter = provider()
    instrumentor = LangchainInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider)
    made = []
    for mode in modes or list(MODES):
        env = {**QUIET, **MODES[mode]}
        tracer_provider.id_generator.n = 0
        exporter.clear()
        with environment(env):
            batches = Batches(exporter)
            with script.serve() as (base_url, log):
                agent = langgraph_agent.build(base_url)
                outputs = langgraph_agent.run_all(
                    agent, lambda case, trial: contextlib.nullcontext(),
                    lambda case, trial: {"metadata": {"specgate.case_id": case,
                                                      "specgate.trial": trial}},
                    batches.take)
        paths = batches.write(out / mode, ["jsonl"])
        made.append({"mode": mode, "paths": paths, "outputs": outputs, "requests": log,
                     "settings": {
                         "agent": "langchain.agents.create_agent(ChatOpenAI(model=..., "
                                  "base_url=loopback, api_key='loopback', max_retries=0), "
                                  "tools=[tool(lookup_order), tool(issue_refund), "
                                  "tool(escalate)], system_prompt=INSTRUCTIONS, "
                                  "name='refund-agent'); agent.invoke({'messages': "
                                  "[{'role': 'user', 'content': PROMPT}]}, config=...)",
                         "langchain run config": "config={'metadata': {'specgate.case_id': "
                                                 "case, 'specgate.trial': trial}}",
                         "LangchainInstrumentor().instrument": "tracer_provider=... "
                                                               "(no traceloop-sdk)",
                         "telemetry": "LangSmith tracing off (LANGSMITH_TRACING=false, "
                                      "LANGCHAIN_TRACING_V2=false)"},
                     "env": env})
    instrumentor.uninstrument()
    tracer_provider.shutdown()
    return made


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in (
        "langchain", "langchain-core", "langgraph", "langgraph-prebuilt", "langchain-openai",
        "openai", "opentelemetry-instrumentation-langchain",
        "opentelemetry-semantic-conventions-ai", "opentelemetry-instrumentation",
        "opentelemetry-semantic-conventions", "opentelemetry-sdk", "opentelemetry-api",
        "opentelemetry-exporter-otlp-proto-common", "opentelemetry-proto", "protobuf")}


_COMMON = {
    "convention": "GenAI (gen_ai.operation.name on every span) plus OpenLLMetry's own "
                  "traceloop.* attributes; status UNSET everywhere",
    "agent_run_span": "root span 'invoke_agent refund-agent' (gen_ai.operation.name "
                      "invoke_agent, gen_ai.provider.name langgraph, gen_ai.agent.name, "
                      "gen_ai.workflow.nodes / .edges; NO association properties, no "
                      "content); its only child 'refund-agent.workflow' is a second "
                      "invoke_agent span (traceloop.span.kind workflow, gen_ai.agent.id, "
                      "traceloop.entity.name, the association properties)",
    "per_model_call": "2 spans: 'execute_task model' (gen_ai.operation.name execute_task, "
                      "traceloop.span.kind task, gen_ai.task.name model) under the workflow "
                      "span, and below it 'ChatOpenAI.chat' (gen_ai.operation.name chat, "
                      "kind CLIENT); per tool call 'execute_task tools' (task) with "
                      "'execute_tool lookup_order' (gen_ai.operation.name execute_tool, "
                      "traceloop.span.kind tool, gen_ai.tool.name / .type / .description; "
                      "no gen_ai.tool.call.id); 12 spans per run, one trace per run",
    "create_agent_span": "'create_agent refund-agent' (gen_ai.operation.name create_agent, "
                         "gen_ai.provider.name langchain, gen_ai.agent.name, "
                         "gen_ai.system_instructions as plain text, gen_ai.tool.definitions) "
                         "written when create_agent() is called, a root in a trace of its "
                         "own: once per agent built, so only in the first run's request "
                         "(13 spans there); written in no_content too, system prompt and all",
    "inference_spans": "'ChatOpenAI.chat': gen_ai.request.model, gen_ai.response.model, "
                       "gen_ai.response.id, gen_ai.response.finish_reasons, "
                       "gen_ai.tool.definitions, gen_ai.provider.name openai",
    "tokens": "gen_ai.usage.input_tokens / output_tokens / total_tokens on the chat spans "
              "only",
    "events": "none (attributes mode, the default use_attributes=True)",
    "case_trial": "LangChain run metadata config={'metadata': {'specgate.case_id': case, "
                  "'specgate.trial': trial}} becomes traceloop.association.properties."
                  "specgate.case_id (string) / .specgate.trial (int) on every span of the "
                  "run EXCEPT the root invoke_agent span (and the create_agent span), with "
                  "LangGraph's own metadata as more association properties "
                  "(.langgraph_step, .langgraph_node, .ls_provider, ...); it is recorded in "
                  "no_content too",
}
NOTES: dict[str, dict[str, Any]] = {
    "default": {**_COMMON,
                "tool_arguments": "execute_tool span gen_ai.tool.call.arguments (and the "
                                  "same text in traceloop.entity.input) holds LangChain's "
                                  "on_tool_start callback ENVELOPE, not the arguments: "
                                  "{\"input_str\": \"{'order_id': 'big', 'amount': 80}\" "
                                  "(a Python repr), \"tags\": [...], \"metadata\": {...}, "
                                  "\"inputs\": {\"order_id\": \"big\", \"amount\": 80}, "
                                  "\"kwargs\": {\"color\": \"green\", \"name\": null, "
                                  "\"tool_call_id\": \"call_big_1_1\"}}; the arguments are "
                                  "its 'inputs'; gen_ai.tool.call.result (= traceloop.entity."
                                  "output) {\"output\": <ToolMessage dump>, \"kwargs\": ...}; "
                                  "the calls as the model sent them are in the chat span's "
                                  "gen_ai.output.messages tool_call parts (arguments an "
                                  "OBJECT: {\"type\": \"tool_call\", \"id\": ..., "
                                  "\"name\": \"issue_refund\", \"arguments\": {\"order_id\": "
                                  "\"big\", \"amount\": 80}})",
                "messages": "chat spans: gen_ai.input.messages / gen_ai.output.messages "
                            "(parts format, JSON text; tool results as tool_call_response "
                            "parts) and gen_ai.system_instructions; execute_task and the "
                            "workflow span: traceloop.entity.input / .output duplicated as "
                            "gen_ai.task.input / .output (LangChain callback envelopes with "
                            "message dumps)",
                "final_answer": "the last chat span's gen_ai.output.messages text part; also "
                                "the last message of the workflow span's traceloop.entity."
                                "output / gen_ai.task.output; nothing on the root span",
                "content": "on (TRACELOOP_TRACE_CONTENT=true, also the default)",
                "size": "~409 KB for 6 runs (content recorded twice over: traceloop.entity.* "
                        "and gen_ai.task.* / gen_ai.tool.call.*)"},
    "no_content": {**_COMMON,
                   "tool_arguments": "absent (no gen_ai.tool.call.arguments / result, no "
                                     "traceloop.entity.* / gen_ai.task.input / output)",
                   "messages": "none on the chat spans (no gen_ai.input/output.messages, no "
                               "gen_ai.system_instructions there); gen_ai.tool.definitions "
                               "stays; the create_agent span still records "
                               "gen_ai.system_instructions",
                   "final_answer": "absent",
                   "content": "off (TRACELOOP_TRACE_CONTENT=false)"},
}
