"""LlamaIndex instrumented by OpenInference: the scripted refund agent as a LlamaIndex agent
workflow ``FunctionAgent`` (``llama_index.core.agent.workflow``) on ``OpenAILike`` (from
llama-index-llms-openai-like, pointed at the loopback server; the plain ``OpenAI`` class
refuses a model name it does not know), its three tools ``FunctionTool.from_defaults``;
``LlamaIndexInstrumentor().instrument(tracer_provider=...)``
(openinference-instrumentation-llama-index) writes the spans to a plain OTel TracerProvider.

Case and trial go in as OpenInference's context attributes, wrapped around each run:
``using_attributes(session_id=case, metadata={"specgate.trial": trial})``.

The LLM is given ``additional_kwargs={"stream_options": {"include_usage": True}}``:
``FunctionAgent`` streams by default, and without that option the server sends no usage
and no span has a token count (tried: not one ``llm.token_count.*`` in 6 runs).

Modes: ``default`` (OpenInference's TraceConfig defaults: everything recorded) and
``hidden`` (the environment OpenInference reads when ``instrument()`` builds its
TraceConfig: ``OPENINFERENCE_HIDE_INPUTS``, ``_OUTPUTS``, ``_INPUT_MESSAGES``,
``_OUTPUT_MESSAGES``, ``_PROMPTS``, ``_CHOICES`` all ``true``).

LlamaIndex itself sends no telemetry (no phone-home code in llama-index-core 0.14.25 or
llama-index-workflows 2.26.1), so nothing needs turning off.

The venv (Python 3.11):

    python3.11 -m venv /tmp/field-otel/llama_index
    /tmp/field-otel/llama_index/bin/pip install llama-index-core==0.14.25 \\
        llama-index-workflows==2.26.1 llama-index-instrumentation==0.6.0 \\
        llama-index-llms-openai==0.8.3 llama-index-llms-openai-like==0.8.1 openai==2.54.0 \\
        openinference-instrumentation-llama-index==4.6.1 \\
        openinference-instrumentation==0.1.72 openinference-semantic-conventions==0.1.42 \\
        protobuf==7.36.2 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 \\
        opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-proto==1.45.2
    # (llama-index-llms-openai 0.8.3 requires openai<3: pip takes 2.54.0)
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bench.field import otel_loopback as script
from bench.field.otel_export import Batches, environment, provider

HIDE = ("OPENINFERENCE_HIDE_INPUTS", "OPENINFERENCE_HIDE_OUTPUTS",
        "OPENINFERENCE_HIDE_INPUT_MESSAGES", "OPENINFERENCE_HIDE_OUTPUT_MESSAGES",
        "OPENINFERENCE_HIDE_PROMPTS", "OPENINFERENCE_HIDE_CHOICES")
USAGE = {"additional_kwargs": {"stream_options": {"include_usage": True}}}
MODES: dict[str, dict[str, Any]] = {
    "default": {"env": {}, "llm": USAGE},
    "hidden": {"env": {name: "true" for name in HIDE}, "llm": USAGE},
}


async def _run(agent: Any, prompt: str) -> str:
    handler = agent.run(user_msg=prompt)
    result = await handler
    return str(result.response.content)


def make(out: Path, modes: list[str] | None = None) -> list[dict[str, Any]]:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai_like import OpenAILike
    from openinference.instrumentation import using_attributes
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    made = []
    for mode in modes or list(MODES):
        env = MODES[mode]["env"]
        tracer_provider, exporter = provider()
        instrumentor = LlamaIndexInstrumentor()
        with environment({**dict.fromkeys(HIDE), **env}):
            instrumentor.instrument(tracer_provider=tracer_provider)
        batches = Batches(exporter)
        with script.serve() as (base_url, log):
            llm = OpenAILike(model=script.MODEL, api_base=base_url, api_key="loopback",
                             is_chat_model=True, is_function_calling_model=True,
                             context_window=8192, **MODES[mode]["llm"])
            agent = FunctionAgent(
                name="refund-agent", description="Refunds or escalates an order.",
                system_prompt=script.INSTRUCTIONS, llm=llm,
                tools=[FunctionTool.from_defaults(script.lookup_order),
                       FunctionTool.from_defaults(script.issue_refund),
                       FunctionTool.from_defaults(script.escalate)])
            outputs = []
            for case, trial in script.runs():
                with using_attributes(session_id=case, metadata={"specgate.trial": trial}):
                    outputs.append(asyncio.run(_run(
                        agent, script.PROMPT.format(case=case, trial=trial))))
                batches.take()
        instrumentor.uninstrument()
        tracer_provider.shutdown()
        paths = batches.write(out / mode, ["jsonl"])
        made.append({"mode": mode, "paths": paths, "outputs": outputs, "requests": log,
                     "settings": {
                         "FunctionAgent": "name='refund-agent', system_prompt=..., "
                                          "llm=OpenAILike(model=..., api_base=<loopback>, "
                                          "is_chat_model=True, is_function_calling_model=True, "
                                          "additional_kwargs={'stream_options': "
                                          "{'include_usage': True}}), "
                                          "tools=[FunctionTool.from_defaults(f) x3]; "
                                          "await agent.run(user_msg=prompt)",
                         "openinference.instrumentation.using_attributes":
                             "session_id=case, metadata={'specgate.trial': trial}",
                         "LlamaIndexInstrumentor().instrument": "tracer_provider=...",
                         "telemetry": "none to disable (LlamaIndex sends none)"},
                     "env": dict(env)})
    return made


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in (
        "llama-index-core", "llama-index-workflows", "llama-index-instrumentation",
        "llama-index-llms-openai", "llama-index-llms-openai-like", "openai",
        "openinference-instrumentation-llama-index", "openinference-instrumentation",
        "openinference-semantic-conventions", "opentelemetry-sdk", "opentelemetry-api",
        "opentelemetry-exporter-otlp-proto-common", "opentelemetry-proto", "protobuf")}


_COMMON = {
    "convention": "OpenInference, not GenAI: no gen_ai.* attribute; openinference.span.kind "
                  "on every span; one scope openinference.instrumentation.llama_index; one "
                  "trace per run (one request line), 26 spans",
    "agent_run_span": "NO AGENT span at all: the root span 'FunctionAgent.run' is "
                      "openinference.span.kind CHAIN (OpenInference 4.6.1 gives AGENT only to "
                      "the legacy BaseAgent / BaseAgentWorker classes, not to workflow "
                      "agents), status OK; its children are the workflow steps as CHAIN "
                      "spans 'BaseWorkflowAgent.init_run|setup_agent|run_agent_step|"
                      "parse_agent_output|call_tool|aggregate_tool_results' (all direct "
                      "children of the root: flat, no nesting); so a run is one unit only "
                      "as the trace's root",
    "inference_spans": "THREE LLM spans per model call, under 'BaseWorkflowAgent."
                       "run_agent_step': 'OpenAILike._prepare_chat_with_tools' (no model "
                       "call: input.value / output.value only), 'OpenAILike.astream_chat' "
                       "(input.value, llm.tools.*) and, nested in it, a second "
                       "'OpenAILike.astream_chat' that alone has llm.input_messages / "
                       "llm.output_messages / llm.finish_reason / token counts and the "
                       "'First Token Stream Event' event; all three carry llm.model_name, "
                       "llm.provider/llm.system openai, llm.invocation_parameters",
    "tool_spans": "'FunctionTool.acall', openinference.span.kind TOOL, tool.name, "
                  "tool.description, tool.parameters (JSON schema), under a CHAIN span "
                  "'BaseWorkflowAgent.call_tool' (a sibling of run_agent_step, not under the "
                  "LLM span); no tool_call.id (the call id is only in the LLM span's "
                  "tool_calls)",
    "tokens": "llm.token_count.prompt / completion / total on the nested astream_chat span "
              "only (once per model call: summing the run's spans gives 330+3*i / 24); "
              "only with stream_options include_usage (FunctionAgent streams by default; "
              "without it no span has a token count)",
    "case_trial": "using_attributes(session_id=case, metadata={'specgate.trial': trial}) "
                  "gives session.id=case and metadata=<JSON text {\"specgate.trial\": n}> "
                  "on EVERY span",
    "events": "'First Token Stream Event' (no attributes) on each nested astream_chat span; "
              "no deprecated GenAI events",
}
NOTES: dict[str, dict[str, Any]] = {
    "default": {**_COMMON,
                "tool_arguments": "input.value on the TOOL span is a WRAPPER, not the "
                                  "arguments: '{\"kwargs\": {\"order_id\": \"big\", "
                                  "\"amount\": 80}}' (input.mime_type application/json); "
                                  "output.value is the ToolOutput as JSON ({\"blocks\": "
                                  "[...], \"tool_name\": ..., \"raw_input\": {\"args\": [], "
                                  "\"kwargs\": {...}}, \"raw_output\": {...}, "
                                  "\"is_error\": false}); the bare arguments are also in the "
                                  "nested LLM span's llm.output_messages.0.message."
                                  "tool_calls.0.tool_call.function.arguments (JSON text as "
                                  "the model sent it, with tool_call.id and function.name), "
                                  "agreeing with the TOOL spans' kwargs in every run",
                "messages": "nested astream_chat span: llm.input_messages.N.message.role|"
                            "content (tool results as Python reprs), assistant turns as "
                            "message.contents.0.message_content.text='' plus "
                            "message.tool_calls.J.tool_call.*; llm.output_messages.0.message"
                            ".content = the final text on the run's last nested span (a "
                            "tool-call turn has contents.0.message_content.text '' instead); "
                            "output.value 'assistant: Order small: refunded 25.' there; the "
                            "root CHAIN span's output.value is a Python repr "
                            "'StopEvent(result=AgentOutput(response=ChatMessage(... "
                            "text=...' (text/plain), its input.value a JSON dump of the "
                            "workflow's config; CHAIN step spans hold reprs of workflow "
                            "events with object addresses",
                "content": "on (TraceConfig defaults)"},
    "hidden": {**_COMMON,
               "tool_arguments": "absent: input.value and output.value are the string "
                                 "'__REDACTED__' on every span (TOOL, LLM, CHAIN; no "
                                 "mime_type); tool.name / tool.parameters still recorded",
               "messages": "none: no llm.input_messages / llm.output_messages (so no "
                           "tool_calls there either); token counts, finish_reason, model, "
                           "llm.tools.* kept",
               "content": "off (OPENINFERENCE_HIDE_INPUTS, _OUTPUTS, _INPUT_MESSAGES, "
                          "_OUTPUT_MESSAGES, _PROMPTS, _CHOICES = true when instrument() "
                          "runs)"},
}
