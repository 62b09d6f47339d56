"""AutoGen's own OpenTelemetry tracing (autogen-core's ``trace_create_agent_span`` /
``trace_invoke_agent_span`` / ``trace_tool_span``): the scripted refund agent as an
autogen-agentchat ``AssistantAgent`` with the three tools, on autogen-ext's
``OpenAIChatCompletionClient`` pointed at the loopback server, run by ``agent.run(task=...)``.

AutoGen's agents and tools trace through ``opentelemetry.trace.get_tracer("autogen-core")``,
i.e. the GLOBAL tracer provider (a ``SingleThreadedAgentRuntime(tracer_provider=...)`` only
covers the runtime's own messaging spans, and ``AssistantAgent.run`` uses no runtime): the
maker installs its provider with ``trace.set_tracer_provider`` once per process, so one
process makes one mode (``make`` runs each further mode in a child process).

A fresh agent is made for every run (an ``AssistantAgent`` keeps its conversation between
``run`` calls, so reusing it would send run 1's messages to run 2).

AutoGen records no case, trial, task, message, tool argument, model call or token count
(autogen-ext's OpenAIChatCompletionClient writes no span; its LLMCallEvent / ToolCallEvent
go to Python logging only). Modes, all recording the same AutoGen spans and differing in
how the case and trial are named:

- ``default``: the least code: a span of the harness's own, ``refund-case``, around making
  and running the agent, with ``specgate.case_id`` and ``specgate.trial``;
- ``resource``: no code: each run in a process of its own started with
  ``OTEL_RESOURCE_ATTRIBUTES=specgate.case_id=CASE,specgate.trial=TRIAL`` (one process can
  name only one run this way);
- ``bare``: neither (what AutoGen alone writes).

AutoGen has no setting that records content, so there is no "no content" mode: every mode
records none.

The venv (Python 3.11.7):

    python3.11 -m venv /tmp/field-otel/autogen
    /tmp/field-otel/autogen/bin/pip install autogen-agentchat==0.7.5 \\
        "autogen-ext[openai]==0.7.5" autogen-core==0.7.5 openai==3.57.0 protobuf==5.29.6 \\
        opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 \\
        opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-proto==1.45.2
    # (autogen-core 0.7.5 requires protobuf~=5.29.3, so not the 7.x the other venvs pin)

Then, from the repository root:

    /tmp/field-otel/autogen/bin/python -m bench.field.make_otel autogen tests/data/field/otel
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from bench.field import otel_loopback as script
from bench.field.otel_export import Batches, provider

ROOT = Path(__file__).resolve().parents[2]

MODES: dict[str, str] = {
    "default": "a span of the harness's own, 'refund-case' (tracer 'refund-harness'), "
               "around making and running the agent, with specgate.case_id=case and "
               "specgate.trial=trial",
    "resource": "no span of ours; each run in a process of its own started with "
                "OTEL_RESOURCE_ATTRIBUTES='specgate.case_id=CASE,specgate.trial=TRIAL' "
                "(the resource names them for every span of the process)",
    "bare": "none: no span of ours, no resource attribute (nothing AutoGen records names "
            "them)"}
MODEL_INFO = {"vision": False, "function_calling": True, "json_output": False,
              "family": "unknown", "structured_output": False}


async def _runs(base_url: str, runs: list[tuple[str, int]], own_span: bool,
                batches: Batches) -> list[str]:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_ext.models.openai import OpenAIChatCompletionClient
    from opentelemetry import trace

    harness = trace.get_tracer("refund-harness")
    outputs = []
    for case, trial in runs:
        scope = harness.start_as_current_span(
            "refund-case", attributes={"specgate.case_id": case, "specgate.trial": trial}) \
            if own_span else nullcontext()
        with scope:
            client = OpenAIChatCompletionClient(model=script.MODEL, base_url=base_url,
                                                api_key="loopback", model_info=MODEL_INFO)
            agent = AssistantAgent(
                "refund_agent", model_client=client, system_message=script.INSTRUCTIONS,
                description="Refunds or escalates an order.",
                tools=[script.lookup_order, script.issue_refund, script.escalate],
                max_tool_iterations=3, reflect_on_tool_use=False)
            result = await agent.run(task=script.PROMPT.format(case=case, trial=trial))
            await client.close()
        final = result.messages[-1]
        outputs.append(final.content if isinstance(final.content, str) else repr(final.content))
        batches.take()
    return outputs


def _child(base_url: str, case: str, trial: int, first_id: int, out: str) -> None:
    """One run of mode ``resource``, in a process of its own (OTEL_RESOURCE_ATTRIBUTES is
    set by the parent): its spans are written to ``out``, its answer printed as JSON."""
    tracer_provider, exporter = provider(install=True)
    tracer_provider.id_generator.n = first_id  # ids unique across the processes
    batches = Batches(exporter)
    outputs = asyncio.run(_runs(base_url, [(case, trial)], False, batches))
    tracer_provider.shutdown()
    batches.write(Path(out), ["jsonl"])
    print(json.dumps(outputs))


def _settings(mode: str) -> dict[str, str]:
    return {
        "tracer provider": "opentelemetry.trace.set_tracer_provider(TracerProvider(...)) "
                           "(AutoGen's agents and tools trace through the global provider: "
                           "trace.get_tracer('autogen-core'))",
        "AssistantAgent": "AssistantAgent('refund_agent', model_client=OpenAIChatCompletion"
                          "Client(model=..., base_url=loopback, api_key='loopback', "
                          "model_info={...}), description=..., tools=[lookup_order, "
                          "issue_refund, escalate], max_tool_iterations=3, "
                          "reflect_on_tool_use=False), a new one per run; "
                          "await agent.run(task=prompt)",
        "case_trial": MODES[mode],
        "phone-home telemetry": "none in AutoGen 0.7.5 (nothing to disable)"}


def _resource(out: Path) -> dict[str, Any]:
    made = []
    lines = []
    with script.serve() as (base_url, log), tempfile.TemporaryDirectory() as tmp:
        for index, (case, trial) in enumerate(script.runs()):
            part = Path(tmp) / f"run{index}"
            env = {**os.environ, "OTEL_RESOURCE_ATTRIBUTES":
                   f"specgate.case_id={case},specgate.trial={trial}"}
            done = subprocess.run(
                [sys.executable, "-c", "import sys; from bench.field.otel_autogen import "
                 "_child; _child(sys.argv[1], sys.argv[2], int(sys.argv[3]), "
                 "int(sys.argv[4]), sys.argv[5])",
                 base_url, case, str(trial), str(1000 * index), str(part)],
                check=True, capture_output=True, text=True, env=env, cwd=ROOT)
            made += json.loads(done.stdout.strip().splitlines()[-1])
            lines.append(part.with_name(part.name + ".jsonl").read_text())
    path = out / "resource.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines))
    return {"mode": "resource", "paths": [path], "outputs": made, "requests": log,
            "settings": _settings("resource"),
            "env": {"OTEL_RESOURCE_ATTRIBUTES": "specgate.case_id=CASE,specgate.trial=TRIAL "
                                                "(per run: one process per run)"}}


def _one(out: Path, mode: str) -> dict[str, Any]:
    """Make mode ``default`` or ``bare`` in this process (its provider becomes the global
    one, which can be set once per process)."""
    tracer_provider, exporter = provider(install=True)
    batches = Batches(exporter)
    with script.serve() as (base_url, log):
        outputs = asyncio.run(_runs(base_url, script.runs(), mode == "default", batches))
    tracer_provider.shutdown()
    paths = batches.write(out / mode, ["jsonl"])
    return {"mode": mode, "paths": paths, "outputs": outputs, "requests": log,
            "settings": _settings(mode), "env": {}}


def make(out: Path, modes: list[str] | None = None) -> list[dict[str, Any]]:
    made = []
    for mode in modes or list(MODES):
        if mode == "resource":
            made.append(_resource(out))
            continue
        # the global provider is set once per process: each mode in a process of its own
        done = subprocess.run(
            [sys.executable, "-c", "import json, sys; from pathlib import Path; "
             "from bench.field.otel_autogen import _one; "
             "m = _one(Path(sys.argv[1]), sys.argv[2]); "
             "m['paths'] = [str(p) for p in m['paths']]; print(json.dumps(m))",
             str(out), mode], check=True, capture_output=True, text=True, cwd=ROOT)
        item = json.loads(done.stdout.strip().splitlines()[-1])
        item["paths"] = [Path(p) for p in item["paths"]]
        made.append(item)
    return made


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in (
        "autogen-agentchat", "autogen-core", "autogen-ext", "openai", "opentelemetry-sdk",
        "opentelemetry-api", "opentelemetry-exporter-otlp-proto-common",
        "opentelemetry-proto", "protobuf")}


_COMMON = {
    "tracer_provider": "AutoGen's agent and tool spans use trace.get_tracer('autogen-core') "
                       "on the GLOBAL provider (set_tracer_provider; no tracer_provider "
                       "argument on AssistantAgent); a runtime's tracer_provider covers only "
                       "the runtime's messaging spans; AUTOGEN_DISABLE_RUNTIME_TRACING=true "
                       "turns the runtime's off, not these",
    "agent_run_span": "'invoke_agent refund_agent', scope autogen-core, kind CLIENT, status "
                      "UNSET: gen_ai.operation.name invoke_agent, gen_ai.system autogen, "
                      "gen_ai.agent.name refund_agent, gen_ai.agent.description (no "
                      "gen_ai.agent.id outside a runtime); one per agent.run",
    "create_agent_span": "'create_agent refund_agent', scope autogen-core, kind CLIENT, "
                         "written by BaseChatAgent.__init__ (the AssistantAgent's "
                         "construction, not the run): gen_ai.operation.name create_agent, "
                         "gen_ai.system autogen, gen_ai.agent.name, gen_ai.agent.description; "
                         "no tool, usage or content attribute; ends before the run starts. "
                         "Its parent is whatever span is current at construction: with no "
                         "span of ours it is the ROOT of a trace of its own (one span), "
                         "separate from the run's trace",
    "inference_spans": "none: no chat span, no span per model call (0 spans per model call)",
    "tool_spans": "'execute_tool {tool}', scope autogen-core, kind INTERNAL, children of the "
                  "invoke_agent span: gen_ai.operation.name execute_tool, gen_ai.system "
                  "autogen, gen_ai.tool.name, gen_ai.tool.description (the function's "
                  "docstring), gen_ai.tool.call.id (the model's call id, 'call_small_1_0')",
    "tool_arguments": "absent: no gen_ai.tool.call.arguments / result anywhere",
    "messages": "none: no gen_ai.input.messages / output.messages, no system instructions, "
                "no events; the final answer is recorded nowhere",
    "tokens": "none: no gen_ai.usage.* on any span",
    "content": "none (AutoGen 0.7.5 has no content setting)",
    "events": "none",
}
NOTES: dict[str, dict[str, Any]] = {
    "default": {**_COMMON,
                "case_trial": "the harness's root span 'refund-case' (scope refund-harness, "
                              "kind INTERNAL) with specgate.case_id (string) and "
                              "specgate.trial (int); create_agent and invoke_agent are both "
                              "its children, in one trace per run (4 spans: refund-case, "
                              "create_agent, invoke_agent, 2 execute_tool)"},
    "resource": {**_COMMON,
                 "case_trial": "resource attributes specgate.case_id and specgate.trial "
                               "(string '1') from OTEL_RESOURCE_ATTRIBUTES, on every span of "
                               "the process; each line holds two traces: the create_agent "
                               "span alone (a root) and the run (invoke_agent root with its "
                               "2 execute_tool spans), both under the same resource"},
    "bare": {**_COMMON,
             "case_trial": "none: two traces per run (create_agent alone; invoke_agent with "
                           "its execute_tool spans), nothing naming a case or trial"},
}
