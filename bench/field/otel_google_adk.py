"""Google ADK's built-in OpenTelemetry telemetry: the scripted refund agent as an ADK
``Agent`` (``LlmAgent``) with the three tools as plain functions, its model
``LiteLlm(model="openai/" + MODEL, api_base=<loopback>, api_key="loopback")``, run by an
``InMemoryRunner`` (its ``InMemorySessionService``) with ``run_async``.

ADK takes its tracer from the global tracer provider (``trace.get_tracer`` at import; the
proxy binds to whatever provider is set globally first), so each process installs ours
(``otel_export.provider(install=True)``) before the first run and ADK's spans reach the
InMemorySpanExporter; no ADK setup call (``google.adk.telemetry.setup``) is made.

Case and trial are named without code a user would not write anyway: the session a run
is in is created with ``session_id=case`` (ADK records it as ``gen_ai.conversation.id``),
and each trial runs in a process of its own with ``OTEL_RESOURCE_ATTRIBUTES=
specgate.trial=N`` (the resource; an OpenTelemetry provider reads it once per process,
so the maker starts one child process per trial, sharing the parent's loopback server,
and gives each child's span ids a range of their own so the two trials' ids do not clash).

Modes (environment only):

- ``default``: nothing set (ADK's schema 2, ``otel_semconv_1_44``: no content on spans);
- ``span_content``: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``;
- ``legacy``: ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1`` (the schema 1 spans, ``call_llm``,
  whose ``gcp.vertex.agent.*`` content ``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS`` gates,
  on by default);
- ``legacy_no_content``: the same with ``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false``.

LiteLLM is kept offline with ``LITELLM_OFFLINE_MODE=true`` and
``LITELLM_LOCAL_MODEL_COST_MAP=True`` (else it fetches its model cost map from GitHub on
import); ADK itself phones nowhere without Google Cloud settings.

The venv:

    python3.11 -m venv /tmp/field-otel/google_adk
    /tmp/field-otel/google_adk/bin/pip install google-adk==2.13.0 litellm==1.110.2 \\
        protobuf==7.36.2 opentelemetry-api==1.44.0 opentelemetry-sdk==1.44.0 \\
        opentelemetry-exporter-otlp-proto-common==1.44.0 opentelemetry-proto==1.44.0
    # (google-adk 2.13.0 requires opentelemetry-api/-sdk <=1.44, so not 1.45.x; pip
    # brings openai 3.63.0 and google-genai 2.34.0 with them)
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.field import otel_loopback as script

ROOT = Path(__file__).resolve().parents[2]
APP = "refund-app"
USER = "customer"
OFFLINE = {"LITELLM_OFFLINE_MODE": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
MODES: dict[str, dict[str, str]] = {
    "default": {},
    "span_content": {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"},
    "legacy": {"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"},
    "legacy_no_content": {"ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1",
                          "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "false"},
}
# every setting a mode might make, cleared from the child's environment first
KNOBS = ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "OTEL_SEMCONV_STABILITY_OPT_IN",
         "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN", "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS",
         "ADK_EXPERIMENTAL_TELEMETRY", "ADK_EXPERIMENTAL_TELEMETRY_FEATURES",
         "ADK_TELEMETRY_IGNORE_RUN_CONFIG", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_SERVICE_NAME",
         "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
IDS_PER_TRIAL = 100_000  # each trial's process counts its ids from (trial - 1) * this


def _child(base_url: str, trial: int, out: Path) -> None:
    """One trial, in a process of its own: the three cases' runs, written to ``out``
    (``out.jsonl``, and ``out.outputs.json``, the final texts)."""
    from bench.field.otel_export import Batches, provider

    tracer_provider, exporter = provider(install=True)
    tracer_provider.id_generator.n = (trial - 1) * IDS_PER_TRIAL
    batches = Batches(exporter)

    from google.adk.agents import Agent
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    agent = Agent(name="refund_agent",
                  model=LiteLlm(model="openai/" + script.MODEL, api_base=base_url,
                                api_key="loopback"),
                  instruction=script.INSTRUCTIONS,
                  tools=[script.lookup_order, script.issue_refund, script.escalate])
    runner = InMemoryRunner(agent=agent, app_name=APP)

    async def run(case: str) -> str | None:
        await runner.session_service.create_session(app_name=APP, user_id=USER,
                                                    session_id=case)
        message = types.Content(role="user", parts=[
            types.Part(text=script.PROMPT.format(case=case, trial=trial))])
        final = None
        async for event in runner.run_async(user_id=USER, session_id=case,
                                            new_message=message):
            if event.is_final_response() and event.content and event.content.parts:
                final = "".join(part.text or "" for part in event.content.parts)
        return final

    outputs = []
    for case in script.CASES:
        outputs.append(asyncio.run(run(case)))
        batches.take()
    tracer_provider.shutdown()
    batches.write(out, ["jsonl"])
    out.with_name(out.name + ".outputs.json").write_text(json.dumps(outputs))


def make(out: Path, modes: list[str] | None = None) -> list[dict[str, Any]]:
    made = []
    for mode in modes or list(MODES):
        outputs: list[Any] = []
        lines: list[str] = []
        with script.serve() as (base_url, log), tempfile.TemporaryDirectory() as tmp:
            for trial in script.TRIALS:
                env = {k: v for k, v in os.environ.items() if k not in KNOBS}
                env.update(OFFLINE, **MODES[mode],
                           OTEL_RESOURCE_ATTRIBUTES=f"specgate.trial={trial}")
                part = Path(tmp) / f"trial{trial}"
                done = subprocess.run([sys.executable, "-m", "bench.field.otel_google_adk",
                                       base_url, str(trial), str(part)], env=env, cwd=ROOT,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True, check=False)
                if done.returncode:
                    raise RuntimeError(f"{mode} trial {trial}: {done.stderr[-3000:]}")
                outputs += json.loads(part.with_name(part.name + ".outputs.json").read_text())
                lines += part.with_name(part.name + ".jsonl").read_text().splitlines()
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{mode}.jsonl"
        path.write_text("".join(line + "\n" for line in lines))
        made.append({"mode": mode, "paths": [path], "outputs": outputs, "requests": log,
                     "settings": {
                         "tracer provider": "ours made the global one before ADK's first "
                                            "span (otel_export.provider(install=True)); "
                                            "ADK's tracer is trace.get_tracer(...)",
                         "Agent": "Agent(name='refund_agent', model=LiteLlm(model='openai/"
                                  f"{script.MODEL}', api_base=..., api_key='loopback'), "
                                  "instruction=..., tools=[lookup_order, issue_refund, "
                                  "escalate])",
                         "runner": f"InMemoryRunner(agent=..., app_name={APP!r}); "
                                   f"session_service.create_session(app_name={APP!r}, "
                                   f"user_id={USER!r}, session_id=case); runner.run_async("
                                   f"user_id={USER!r}, session_id=case, new_message=...)",
                         "trial": "one process per trial, OTEL_RESOURCE_ATTRIBUTES="
                                  "specgate.trial=N in its environment",
                         "case": "session_id=case (recorded as gen_ai.conversation.id)",
                         "phone-home": "LITELLM_OFFLINE_MODE=true, "
                                       "LITELLM_LOCAL_MODEL_COST_MAP=True"},
                     "env": {**OFFLINE, **MODES[mode],
                             "OTEL_RESOURCE_ATTRIBUTES": "specgate.trial=<trial>"}})
    return made


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in (
        "google-adk", "litellm", "openai", "google-genai", "opentelemetry-sdk",
        "opentelemetry-api", "opentelemetry-exporter-otlp-proto-common",
        "opentelemetry-proto", "protobuf")}


_V2 = {
    "convention": "ADK schema 2 (ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN unset = "
                  "otel_semconv_1_44), experimental GenAI semconv; one scope "
                  "'gcp.vertex.agent' (version 2.13.0); every span kind INTERNAL, status UNSET",
    "agent_run_span": "root 'invoke_workflow refund_agent' (gen_ai.operation.name "
                      "invoke_workflow, gen_ai.workflow.name, gen_ai.conversation.id); its one "
                      "child 'invoke_agent refund_agent' (gen_ai.operation.name invoke_agent, "
                      "gen_ai.agent.name, gen_ai.agent.description '', gen_ai.conversation.id) "
                      "holds every other span; no create_agent span; 7 spans per run",
    "inference_spans": "'generate_content openai/scripted-refund-model' (gen_ai.operation.name "
                       "generate_content, not chat), one per model call, children of "
                       "invoke_agent; gen_ai.request.model 'openai/scripted-refund-model' (the "
                       "LiteLLM route, provider prefix kept), gen_ai.provider.name openai, "
                       "gen_ai.agent.name, gen_ai.conversation.id, "
                       "gen_ai.response.finish_reasons ['stop'] even on tool-call turns, "
                       "gen_ai.tool.definitions (JSON text), gcp.vertex.agent.event_id / "
                       "invocation_id",
    "tool_spans": "'execute_tool {tool}' (gen_ai.operation.name execute_tool), children of "
                  "invoke_agent (siblings of the inference spans), gen_ai.tool.name, "
                  "gen_ai.tool.call.id (the model's call id), gen_ai.tool.type FunctionTool, "
                  "gen_ai.tool.description, gen_ai.agent.name; no gen_ai.conversation.id",
    "tokens": "gen_ai.usage.input_tokens / output_tokens (and cache_read.input_tokens 0) on "
              "each generate_content span only; none on invoke_agent / invoke_workflow",
    "case_trial": "session_id=case -> gen_ai.conversation.id on invoke_workflow, invoke_agent "
                  "and generate_content spans (not on tool spans); user_id is not on any "
                  "span (ADK puts it on log records only); trial: resource attribute "
                  "specgate.trial ('1' / '2', text) from OTEL_RESOURCE_ATTRIBUTES",
    "events": "none (content events would be log records, not span events)",
}
_V1 = {
    "convention": "ADK schema 1 (ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1, legacy, supported "
                  "until 2027-03-31): stable semconv plus gcp.vertex.agent.* attributes; scope "
                  "'gcp.vertex.agent'; every span INTERNAL, status UNSET",
    "agent_run_span": "root 'invocation' (no attributes at all); child 'invoke_agent "
                      "refund_agent' (as in schema 2) holds the rest; no create_agent span; "
                      "10 spans per run",
    "inference_spans": "TWO spans per model call: 'call_llm' (NO gen_ai.operation.name; "
                       "gen_ai.system 'gcp.vertex.agent', gen_ai.request.model, "
                       "gcp.vertex.agent.session_id, gcp.vertex.agent.llm_request / "
                       "llm_response, gen_ai.usage.*), child of invoke_agent, and inside it "
                       "'generate_content openai/scripted-refund-model' (gen_ai.operation.name "
                       "generate_content, gen_ai.system openai, gen_ai.usage.*) with the SAME "
                       "token counts",
    "tool_spans": "'execute_tool {tool}' children of invoke_agent: gen_ai.tool.name, "
                  "gen_ai.tool.call.id, gen_ai.tool.type, plus gcp.vertex.agent.llm_request "
                  "'{}' / llm_response '{}' and gcp.vertex.agent.tool_call_args / "
                  "tool_response; never gen_ai.tool.call.arguments",
    "tokens": "gen_ai.usage.input_tokens / output_tokens on BOTH call_llm and its "
              "generate_content child (each model call counted twice if both are summed)",
    "case_trial": "session_id=case -> gen_ai.conversation.id on invoke_agent and "
                  "generate_content, gcp.vertex.agent.session_id on call_llm; trial: resource "
                  "attribute specgate.trial from OTEL_RESOURCE_ATTRIBUTES",
    "events": "none",
}
NOTES: dict[str, dict[str, Any]] = {
    "default": {**_V2,
                "tool_arguments": "absent (no gen_ai.tool.call.arguments / result)",
                "messages": "none: no gen_ai.input.messages / output.messages / "
                            "system_instructions; gen_ai.tool.definitions keeps names and "
                            "descriptions but 'parameters': null",
                "content": "off (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT unset = "
                           "NO_CONTENT; ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS, default true, "
                           "does not apply to schema 2 spans)"},
    "span_content": {**_V2,
                     "tool_arguments": "present: gen_ai.tool.call.arguments on the tool span, "
                                       "JSON text ADK re-serialized ('{\"order_id\": "
                                       "\"small\", \"amount\": 25}'); "
                                       "gen_ai.tool.call.result JSON text of the return",
                     "messages": "on each generate_content span: gen_ai.input.messages (parts "
                                 "format; tool_call parts' arguments a JSON *object*; tool "
                                 "results as role 'user' parts of type tool_call_response "
                                 "with a 'response' object), gen_ai.output.messages (the final "
                                 "text in the last one: [{\"role\":\"assistant\",\"parts\":"
                                 "[{\"content\": ..., \"type\":\"text\"}],"
                                 "\"finish_reason\":\"stop\"}]), gen_ai.system_instructions; "
                                 "nothing on invoke_agent",
                     "content": "on (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="
                                "SPAN_ONLY; 'true' would mean EVENT_ONLY: log records, "
                                "nothing on spans)"},
    "legacy": {**_V1,
               "tool_arguments": "present only as gcp.vertex.agent.tool_call_args (JSON text "
                                 "'{\"order_id\": \"small\", \"amount\": 25}'); result in "
                                 "gcp.vertex.agent.tool_response",
               "messages": "gcp.vertex.agent.llm_request (JSON text: ADK's LlmRequest, "
                           "contents in google-genai form) and gcp.vertex.agent.llm_response "
                           "(JSON text of the LlmResponse: content.parts[].text or "
                           "function_call {id, args, name}) on call_llm; the final text in "
                           "the last call_llm's llm_response content.parts[0].text; no "
                           "gen_ai.input/output.messages anywhere",
               "content": "on (ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS default true)"},
    "legacy_no_content": {**_V1,
                          "tool_arguments": "hidden as an EMPTY OBJECT: "
                                            "gcp.vertex.agent.tool_call_args '{}' and "
                                            "tool_response '{}' (a value, not an absence)",
                          "messages": "gcp.vertex.agent.llm_request / llm_response '{}' on "
                                      "call_llm (and on tool spans)",
                          "content": "off (ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false)"},
}


if __name__ == "__main__":
    _child(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]))
