"""pydantic-ai's own OpenTelemetry instrumentation: the scripted refund agent as a
pydantic-ai ``Agent`` on ``OpenAIChatModel`` (its OpenAI provider pointed at the loopback
server), instrumented with ``InstrumentationSettings(tracer_provider=...)``.

Modes: ``content`` (the default, ``include_content=True``) and ``no_content``
(``include_content=False``). The case goes in as ``conversation_id=case`` and as
``metadata={"specgate.case_id": case, "specgate.trial": trial}`` (run arguments; no span
of ours).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.field import otel_loopback as script
from bench.field.otel_export import Batches, provider

MODES = {"content": {"include_content": True}, "no_content": {"include_content": False}}


def make(out: Path, modes: list[str] | None = None) -> list[dict[str, Any]]:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    made = []
    for mode in modes or list(MODES):
        tracer_provider, exporter = provider()
        batches = Batches(exporter)
        with script.serve() as (base_url, log):
            model = OpenAIChatModel(script.MODEL, provider=OpenAIProvider(
                base_url=base_url, api_key="loopback"))
            settings = InstrumentationSettings(tracer_provider=tracer_provider, **MODES[mode])
            agent = Agent(model, name="refund-agent", instructions=script.INSTRUCTIONS,
                          capabilities=[Instrumentation(settings=settings)])
            agent.tool_plain(script.lookup_order)
            agent.tool_plain(script.issue_refund)
            agent.tool_plain(script.escalate)
            outputs = []
            for case, trial in script.runs():
                result = agent.run_sync(
                    script.PROMPT.format(case=case, trial=trial), conversation_id=case,
                    run_id=f"{case}-{trial}",
                    metadata={"specgate.case_id": case, "specgate.trial": trial})
                outputs.append(result.output)
                batches.take()
        tracer_provider.shutdown()
        forms = ["jsonl"]
        paths = batches.write(out / mode, forms)
        setting = ", ".join(f"{k}={v}" for k, v in MODES[mode].items())
        made.append({"mode": mode, "paths": paths, "outputs": outputs, "requests": log,
                     "settings": {"Agent": "capabilities=[Instrumentation(settings="
                                           f"InstrumentationSettings(tracer_provider=..., "
                                           f"{setting}))]",
                                  "run_sync": "conversation_id=case, run_id=f'{case}-{trial}', "
                                              "metadata={'specgate.case_id': case, "
                                              "'specgate.trial': trial}"},
                     "env": {}})
    return made


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in (
        "pydantic-ai-slim", "openai", "opentelemetry-sdk", "opentelemetry-api",
        "opentelemetry-exporter-otlp-proto-common", "opentelemetry-proto", "protobuf")}

_COMMON = {
    "agent_run_span": "root span 'invoke_agent refund-agent', gen_ai.operation.name "
                      "invoke_agent, kind INTERNAL, status UNSET; also model_name, agent_name, "
                      "gen_ai.agent.name, gen_ai.agent.call.id (the run_id), logfire.msg",
    "inference_spans": "'chat scripted-refund-model' (gen_ai.operation.name chat, kind CLIENT) "
                       "children of the run span, one per model request",
    "tool_spans": "'execute_tool {tool}' (gen_ai.operation.name execute_tool), gen_ai.tool.name, "
                  "gen_ai.tool.call.id, children of the run span",
    "tokens": "gen_ai.usage.input_tokens / output_tokens on each chat span; the run span has "
              "only gen_ai.aggregated_usage.input_tokens / output_tokens (330+3*case_index / "
              "24, pydantic-ai's own namespace, no gen_ai.usage.* there)",
    "case_trial": "conversation_id=case -> gen_ai.conversation.id on every span (run, chat, "
                  "tool); metadata={...} -> one JSON-text attribute 'metadata' on the run span "
                  "only ({\"specgate.case_id\": ..., \"specgate.trial\": n}); no "
                  "specgate.* attribute of its own",
}
NOTES: dict[str, dict[str, Any]] = {
    "content": {**_COMMON,
                "tool_arguments": "present: gen_ai.tool.call.arguments on the tool span, JSON "
                                  "text re-serialized by pydantic-ai (compact, its own key "
                                  "order); gen_ai.tool.call.result JSON text of the return",
                "messages": "span attributes: gen_ai.input.messages / gen_ai.output.messages "
                            "/ gen_ai.system_instructions on each chat span (parts format, the "
                            "tool_call part's arguments a JSON *string* as the model sent it); "
                            "the run span has no gen_ai.input/output.messages but "
                            "pydantic_ai.all_messages (the whole conversation) and "
                            "final_result (the final text); no span events",
                "content": "on"},
    "no_content": {**_COMMON,
                   "tool_arguments": "absent (no gen_ai.tool.call.arguments / result)",
                   "messages": "gen_ai.input.messages / gen_ai.output.messages still on the "
                               "chat spans, and pydantic_ai.all_messages on the run span, but "
                               "with every text part stripped to {\"type\": \"text\"} and "
                               "tool_call parts without arguments; no final_result, no "
                               "gen_ai.system_instructions",
                   "content": "off"},
}
