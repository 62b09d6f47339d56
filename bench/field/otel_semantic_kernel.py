"""semantic-kernel's built-in telemetry: the scripted refund agent as a
``ChatCompletionAgent`` on ``OpenAIChatCompletion`` (its ``AsyncOpenAI`` client pointed at
the loopback server), with a plugin ``Refunds`` of the three kernel functions and
``FunctionChoiceBehavior.Auto()``. semantic-kernel traces through the GLOBAL tracer
provider (``provider(install=True)``), and only when its experimental diagnostics are on.

semantic-kernel offers each tool to the model under its plugin-qualified name
(``Refunds-lookup_order``), so the loopback model calls them by that name
(``otel_loopback.serve(qualified=True)``), as a real model does; the spans name the tool
so either way (``gen_ai.tool.name`` is the function's fully qualified name).

Case and trial are named without code: each run is its own process (a child of the maker,
talking to the maker's loopback server) with
``OTEL_RESOURCE_ATTRIBUTES=specgate.case_id=CASE,specgate.trial=N``, which the SDK's
``Resource.create`` reads: semantic-kernel records no conversation id, metadata or run
attribute of the user's, and the global provider (hence its resource) is set once per
process.

Modes (environment, read when semantic-kernel is imported):

- ``default``: ``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS=true`` and
  ``..._ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true`` (content);
- ``no_content``: only ``..._ENABLE_OTEL_DIAGNOSTICS=true``.

With neither set semantic-kernel makes no span at all. ``AZURE_TELEMETRY_DISABLED=true``
keeps semantic-kernel's name out of the HTTP user agent (its only "telemetry" of its own;
nothing phones home).

The venv (Python 3.11):

    python3.11 -m venv /tmp/field-otel/semantic_kernel
    /tmp/field-otel/semantic_kernel/bin/pip install semantic-kernel==1.45.0 openai==3.57.0 \\
        protobuf==7.36.2 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 \\
        opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-proto==1.45.2

    /tmp/field-otel/semantic_kernel/bin/python -m bench.field.make_otel semantic_kernel \\
        tests/data/field/otel
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.field import otel_loopback as script

FLAG = "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS"
MODES: dict[str, dict[str, str]] = {
    "default": {FLAG: "true", f"{FLAG}_SENSITIVE": "true"},
    "no_content": {FLAG: "true"},
}
COMMON_ENV = {"AZURE_TELEMETRY_DISABLED": "true"}
ROOT = Path(__file__).resolve().parents[2]


def child(base_url: str, case: str, trial: int, index: int, out: Path) -> None:
    """Run ``index`` in this process (the environment names the mode, case and trial): its
    spans to ``out`` (one OTLP/JSON line), its final text to ``out`` + ``.txt``."""
    import asyncio

    from bench.field.otel_export import Batches, provider

    tracer_provider, exporter = provider(install=True)  # before semantic-kernel's tracers
    tracer_provider.id_generator.n = 1000 * index  # ids distinct across the runs' processes

    from openai import AsyncOpenAI
    from semantic_kernel.agents import ChatCompletionAgent
    from semantic_kernel.connectors.ai import FunctionChoiceBehavior
    from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion
    from semantic_kernel.functions import kernel_function

    class Refunds:
        @kernel_function(description="Look an order up by its id.")
        def lookup_order(self, order_id: str) -> str:
            return json.dumps(script.lookup_order(order_id))

        @kernel_function(description="Refund an order by the given amount.")
        def issue_refund(self, order_id: str, amount: float) -> str:
            return json.dumps(script.issue_refund(order_id, amount))

        @kernel_function(description="Hand the conversation to a human.")
        def escalate(self, reason: str) -> str:
            return json.dumps(script.escalate(reason))

    async def run() -> str:
        service = OpenAIChatCompletion(ai_model_id=script.MODEL, async_client=AsyncOpenAI(
            base_url=base_url, api_key="loopback"))
        agent = ChatCompletionAgent(
            id="refund-agent", service=service, name="refund-agent",
            instructions=script.INSTRUCTIONS, plugins=[Refunds()],
            function_choice_behavior=FunctionChoiceBehavior.Auto())
        response = await agent.get_response(messages=script.PROMPT.format(case=case,
                                                                         trial=trial))
        return str(response.message.content)

    text = asyncio.run(run())
    tracer_provider.force_flush()
    batches = Batches(exporter)
    batches.take()
    batches.write(out.with_suffix(""), ["jsonl"])  # out itself
    out.with_name(out.name + ".txt").write_text(text)


def make(out: Path, modes: list[str] | None = None) -> list[dict[str, Any]]:
    made = []
    for mode in modes or list(MODES):
        lines, outputs = [], []
        with script.serve(qualified=True) as (base_url, log), \
                tempfile.TemporaryDirectory() as tmp:
            for index, (case, trial) in enumerate(script.runs()):
                env = {k: v for k, v in os.environ.items()
                       if not k.startswith(FLAG) and k != "OTEL_RESOURCE_ATTRIBUTES"}
                env.update(COMMON_ENV)
                env.update(MODES[mode])
                env["OTEL_RESOURCE_ATTRIBUTES"] = \
                    f"specgate.case_id={case},specgate.trial={trial}"
                part = Path(tmp) / f"{case}-{trial}.jsonl"
                subprocess.run([sys.executable, "-m", "bench.field.otel_semantic_kernel",
                                base_url, case, str(trial), str(index), str(part)],
                               env=env, cwd=ROOT, check=True)
                lines.append(part.read_text())
                outputs.append(Path(str(part) + ".txt").read_text())
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{mode}.jsonl"
        path.write_text("".join(lines))
        made.append({"mode": mode, "paths": [path], "outputs": outputs, "requests": log,
                     "settings": {
                         "ChatCompletionAgent": "id='refund-agent', name='refund-agent', "
                         "service=OpenAIChatCompletion(ai_model_id=..., async_client="
                         "AsyncOpenAI(base_url=loopback)), instructions=..., "
                         "plugins=[Refunds()], function_choice_behavior="
                         "FunctionChoiceBehavior.Auto(); agent.get_response(messages=prompt)",
                         "tracer provider": "the global one (trace.set_tracer_provider), set "
                                            "before semantic-kernel is imported",
                         "process per run": "OTEL_RESOURCE_ATTRIBUTES=specgate.case_id=CASE,"
                                            "specgate.trial=N (resource attributes)",
                         "loopback": "serve(qualified=True): the model calls the tools by "
                                     "the plugin-qualified names offered"},
                     "env": dict(COMMON_ENV, **MODES[mode], OTEL_RESOURCE_ATTRIBUTES=(
                         "specgate.case_id=CASE,specgate.trial=N (per run)"))})
    return made


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in (
        "semantic-kernel", "openai", "opentelemetry-sdk", "opentelemetry-api",
        "opentelemetry-exporter-otlp-proto-common", "opentelemetry-proto", "protobuf")}


_COMMON = {
    "agent_run_span": "root span 'invoke_agent refund-agent' (scope semantic_kernel.utils."
                      "telemetry.agent_diagnostics.decorators), gen_ai.operation.name "
                      "invoke_agent, kind INTERNAL, status UNSET; gen_ai.agent.id (the "
                      "agent's id: a random uuid unless given, 'refund-agent' here), "
                      "gen_ai.agent.name, gen_ai.tool.definitions (JSON text, the "
                      "plugin-qualified names); no tokens, no gen_ai.request.model",
    "loop_span": "'AutoFunctionInvocationLoop' (scope semantic_kernel.connectors.ai."
                 "chat_completion_client_base), child of the run span and parent of every "
                 "chat and tool span; only sk.available_functions "
                 "('Refunds-escalate,Refunds-issue_refund,Refunds-lookup_order'), no gen_ai.*",
    "inference_spans": "'chat scripted-refund-model', one per model call, kind INTERNAL (not "
                       "CLIENT), gen_ai.operation.name chat, gen_ai.system openai (no "
                       "gen_ai.provider.name), gen_ai.request.model, gen_ai.response.id, "
                       "gen_ai.response.finish_reason (singular, the enum's str: "
                       "'FinishReason.TOOL_CALLS' / 'FinishReason.STOP'), server.address (the "
                       "whole base URL 'http://127.0.0.1:PORT/v1/'); no "
                       "gen_ai.input/output.messages and no span events in either mode",
    "tool_spans": "'execute_tool Refunds-issue_refund' (scope semantic_kernel.functions."
                  "kernel_function), gen_ai.operation.name execute_tool, gen_ai.tool.name "
                  "the PLUGIN-QUALIFIED name 'Refunds-issue_refund' (plugin '-' function), "
                  "gen_ai.tool.call.id, gen_ai.tool.description",
    "tokens": "gen_ai.usage.input_tokens / output_tokens on each chat span only",
    "case_trial": "resource attributes specgate.case_id / specgate.trial (the trial a "
                  "string '1') from OTEL_RESOURCE_ATTRIBUTES, one process per run; "
                  "semantic-kernel records no conversation id or user attribute of its own",
    "events": "no span events: with SENSITIVE on, the per-message content goes to Python "
              "logging (logger semantic_kernel.utils.telemetry.model_diagnostics."
              "decorators, records with extra event.name gen_ai.system.message / "
              "gen_ai.user.message / gen_ai.assistant.message / gen_ai.tool.message / "
              "gen_ai.choice), i.e. the LOGS signal, never the trace",
}
NOTES: dict[str, dict[str, Any]] = {
    "default": {**_COMMON,
                "tool_arguments": "gen_ai.tool.call.arguments on the tool span, JSON text as "
                                  "the model sent it ('{\"order_id\": \"big\", \"amount\": "
                                  "80}'); gen_ai.tool.call.result the function's return (a "
                                  "JSON string of ours here)",
                "messages": "on the run span only, in semantic-kernel's own message shape "
                            "(no parts): gen_ai.output.messages '[{\"role\": \"assistant\", "
                            "\"content\": \"Order big: full refund approved, 80 refunded.\", "
                            "\"name\": \"refund-agent\"}]'; gen_ai.input.messages '[]' "
                            "(get_response(messages=...) by keyword, as its samples call it: "
                            "the decorator reads only the positional argument)",
                "content": "on"},
    "no_content": {**_COMMON,
                   "tool_arguments": "absent (no gen_ai.tool.call.arguments / result)",
                   "messages": "none: no gen_ai.input/output.messages on the run span",
                   "content": "off"},
}


if __name__ == "__main__":
    child(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5]))
