"""LangChain 1.x / LangGraph instrumented by OpenInference: the scripted refund agent of
``bench/field/langgraph_agent.py`` (``langchain.agents.create_agent(ChatOpenAI(...),
tools=[...], system_prompt=..., name="refund-agent")``, a LangGraph graph with a ``model``
and a ``tools`` node) traced by ``LangChainInstrumentor().instrument(tracer_provider=...)``
(openinference-instrumentation-langchain) into a plain OTel TracerProvider.

Case and trial go in without code of ours in the spans: OpenInference's context attributes
``using_attributes(session_id=case, metadata={"specgate.trial": trial})`` around each
``agent.invoke``.

Modes: ``default`` (content recorded) and ``hidden`` (OpenInference's own no-content
settings, read from the environment when the instrumentor builds its TraceConfig:
``OPENINFERENCE_HIDE_INPUTS=true``, ``OPENINFERENCE_HIDE_OUTPUTS=true``).

LangSmith's own tracing stays off (``LANGSMITH_TRACING`` / ``LANGCHAIN_TRACING_V2`` unset,
set to false here to be sure); nothing phones home.

The venv:

    python3.11 -m venv /tmp/field-otel/langgraph_openinference
    /tmp/field-otel/langgraph_openinference/bin/pip install langchain==1.5.0 \\
        langchain-core==1.8.1 langgraph==1.2.22 langgraph-prebuilt==1.1.3 \\
        langchain-openai==1.7.4 openai==3.63.0 \\
        openinference-instrumentation-langchain==0.1.80 openinference-instrumentation==0.1.72 \\
        openinference-semantic-conventions==0.1.42 \\
        protobuf==7.36.2 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 \\
        opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-proto==1.45.2

    /tmp/field-otel/langgraph_openinference/bin/python -m bench.field.make_otel \\
        langgraph_openinference tests/data/field/otel
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.field import langgraph_agent
from bench.field import otel_loopback as script
from bench.field.otel_export import Batches, environment, provider

QUIET = {"LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false"}
MODES: dict[str, dict[str, str]] = {
    "default": {},
    "hidden": {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"}}


def make(out: Path, modes: list[str] | None = None) -> list[dict[str, Any]]:
    from openinference.instrumentation import using_attributes
    from openinference.instrumentation.langchain import LangChainInstrumentor

    made = []
    for mode in modes or list(MODES):
        env = {**QUIET, **MODES[mode]}
        with environment(env):
            tracer_provider, exporter = provider()
            instrumentor = LangChainInstrumentor()
            instrumentor.instrument(tracer_provider=tracer_provider)
            batches = Batches(exporter)
            with script.serve() as (base_url, log):
                agent = langgraph_agent.build(base_url)
                outputs = langgraph_agent.run_all(
                    agent,
                    lambda case, trial: using_attributes(
                        session_id=case, metadata={"specgate.trial": trial}),
                    lambda case, trial: {}, batches.take)
            instrumentor.uninstrument()
            tracer_provider.shutdown()
        paths = batches.write(out / mode, ["jsonl"])
        made.append({"mode": mode, "paths": paths, "outputs": outputs, "requests": log,
                     "settings": {
                         "agent": "langchain.agents.create_agent(ChatOpenAI(model=..., "
                                  "base_url=loopback, api_key='loopback', max_retries=0), "
                                  "tools=[tool(lookup_order), tool(issue_refund), "
                                  "tool(escalate)], system_prompt=INSTRUCTIONS, "
                                  "name='refund-agent'); agent.invoke({'messages': "
                                  "[{'role': 'user', 'content': PROMPT}]})",
                         "openinference.instrumentation.using_attributes":
                             "session_id=case, metadata={'specgate.trial': trial}",
                         "LangChainInstrumentor().instrument": "tracer_provider=...",
                         "telemetry": "LangSmith tracing off (LANGSMITH_TRACING=false, "
                                      "LANGCHAIN_TRACING_V2=false)"},
                     "env": env})
    return made


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in (
        "langchain", "langchain-core", "langgraph", "langgraph-prebuilt", "langchain-openai",
        "openai", "openinference-instrumentation-langchain", "openinference-instrumentation",
        "openinference-semantic-conventions", "opentelemetry-sdk", "opentelemetry-api",
        "opentelemetry-exporter-otlp-proto-common", "opentelemetry-proto", "protobuf")}


_COMMON = {
    "convention": "OpenInference, not GenAI: no gen_ai.* attribute at all; "
                  "openinference.span.kind on every span; every span status OK, kind INTERNAL",
    "agent_run_span": "root span named by the graph ('refund-agent', create_agent(name=...)), "
                      "openinference.span.kind AGENT only because OpenInference makes any run "
                      "whose name contains 'agent' an AGENT (unnamed, create_agent's graph is "
                      "'LangGraph', a CHAIN, and no span is AGENT); input.value is the invoke "
                      "input, output.value the whole final graph state (LangChain message "
                      "dumps); no agent.name attribute",
    "per_model_call": "2 spans: the LangGraph node span 'model' (CHAIN, a child of the root; "
                      "not AGENT: create_agent's node is 'model', and only langgraph.prebuilt."
                      "create_react_agent's node 'agent' is made AGENT) and below it the LLM "
                      "span 'ChatOpenAI'; per tool call 2 spans: the node span 'tools' (CHAIN) "
                      "and below it the TOOL span; 11 spans per run, one trace per run",
    "inference_spans": "'ChatOpenAI', openinference.span.kind LLM, llm.provider / llm.system "
                       "openai, llm.model_name, llm.invocation_parameters, "
                       "llm.finish_reason, llm.tools.{i}.tool.json_schema (default only)",
    "tool_spans": "named by the tool ('lookup_order', ...), openinference.span.kind TOOL, "
                  "tool.name, tool.description; no tool call id attribute (the id is only "
                  "inside output.value's ToolMessage)",
    "tokens": "llm.token_count.prompt / .completion / .total on the LLM spans only (none on "
              "the AGENT or CHAIN spans)",
    "create_agent_span": "none",
    "events": "none",
    "case_trial": "using_attributes(session_id=case, metadata={'specgate.trial': trial}) "
                  "gives session.id=case on every span and metadata=<JSON text> on every "
                  "span, the context metadata merged with LangChain's run metadata "
                  "({\"specgate.trial\": 1, \"ls_integration\": \"langchain_create_agent\", "
                  "\"lc_agent_name\": \"refund-agent\", \"langgraph_step\": 1, ...}); "
                  "recipe options: case: session.id, trial: {attribute: metadata, key: "
                  "specgate.trial}",
}
NOTES: dict[str, dict[str, Any]] = {
    "default": {**_COMMON,
                "tool_arguments": "TOOL span input.value, in LangChain's tool-input form: a "
                                  "ONE-argument tool's input is the bare value (lookup_order: "
                                  "input.value \"small\", escalate: \"needs a human\", no "
                                  "input.mime_type), a two-argument tool's a JSON object "
                                  "(issue_refund: {\"order_id\": \"big\", \"amount\": 80}, "
                                  "input.mime_type application/json); output.value the "
                                  "ToolMessage dump ({\"type\": \"tool\", \"data\": "
                                  "{\"content\": \"{...}\", \"tool_call_id\": ...}}); the "
                                  "calls as the model sent them are also in the LLM span's "
                                  "llm.output_messages.0.message.tool_calls.0.tool_call."
                                  "function.arguments (JSON text {\"order_id\": \"big\"}) "
                                  "and in the 'tools' CHAIN span's input.value "
                                  "([{\"name\": ..., \"args\": {...}, \"id\": ...}])",
                "messages": "LLM span: input.value / output.value (LangChain dumps as JSON "
                            "text) and flattened llm.input_messages.{i}.message.role|content|"
                            "name|tool_call_id|tool_calls.{j}.tool_call.id|function.name|"
                            "function.arguments and llm.output_messages.0.message...; the "
                            "system prompt is input message 0; the 'model' CHAIN spans also "
                            "carry llm.input_messages.0 (the user prompt only)",
                "final_answer": "the last LLM span's llm.output_messages.0.message.content "
                                "(and its output.value generations[0][0].text); also the "
                                "last message of the root AGENT span's output.value",
                "content": "on (the default)"},
    "hidden": {**_COMMON,
               "tool_arguments": "absent: input.value and output.value are the string "
                                 "'__REDACTED__' on every span (TOOL, LLM, CHAIN, AGENT)",
               "messages": "none: no llm.input_messages / llm.output_messages and no "
                           "llm.tools; LLM spans keep model, token counts, finish reason "
                           "and invocation parameters",
               "final_answer": "absent",
               "content": "off (OPENINFERENCE_HIDE_INPUTS=true, OPENINFERENCE_HIDE_OUTPUTS="
                          "true)"},
}
