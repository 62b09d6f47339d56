"""CrewAI instrumented by OpenInference: the scripted refund agent as one CrewAI ``Agent``
holding the three tools (``crewai.tools.tool`` decorators), one ``Task`` whose description
is the scripted prompt, and a ``Crew(name="refund-crew", verbose=False)``; the agent's
``LLM(model="openai/" + MODEL, base_url=..., api_key="loopback")`` is CrewAI 1.x's native
OpenAI provider (the ``openai`` SDK, no litellm), so the LLM spans come from
``OpenAIInstrumentor`` (openinference-instrumentation-openai) beside
``CrewAIInstrumentor`` (openinference-instrumentation-crewai, its default wrapper mode), both
``.instrument(tracer_provider=...)`` on a plain OTel TracerProvider (never the global one).

CrewAI's own telemetry and tracing are off: ``CREWAI_DISABLE_TELEMETRY=true``,
``CREWAI_DISABLE_TRACKING=true``, ``CREWAI_TRACING_ENABLED=false`` and
``Crew(tracing=False)``; ``OTEL_SDK_DISABLED`` stays unset. CrewAI 1.15 installs no global
TracerProvider (its telemetry keeps a private one; ``Telemetry.set_tracer`` says so).
``CREWAI_STORAGE_DIR=specgate-field`` names the folder CrewAI writes its task-output
database to (under ~/.local/share).

Case and trial are named with OpenInference's context attributes:
``using_attributes(session_id=case, metadata={"specgate.trial": trial})`` around
``crew.kickoff()``.

Modes: ``default`` (content recorded) and ``hidden`` (``OPENINFERENCE_HIDE_INPUTS=true``
and ``OPENINFERENCE_HIDE_OUTPUTS=true`` in the environment when the instrumentors are
made; OpenInference's TraceConfig reads them), both with the two instrumentors; and two
setups with ``CrewAIInstrumentor`` alone (content recorded): ``crewai_only`` (its default
wrapper mode, as its README's quickstart sets it up: no LLM spans at all) and
``event_listener`` (``instrument(..., use_event_listener=True)``: spans made from CrewAI's
event bus, LLM spans included).

The venv:

    python3.11 -m venv /tmp/field-otel/crewai
    /tmp/field-otel/crewai/bin/pip install crewai==1.15.30 \\
        openinference-instrumentation-crewai==1.1.21 \\
        openinference-instrumentation-openai==0.1.66 \\
        openinference-instrumentation==0.1.72 openinference-semantic-conventions==0.1.42 \\
        protobuf==7.36.2 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 \\
        opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-proto==1.45.2
    # (crewai 1.15.30 brings openai 2.54.0 and no litellm)

Then, from the repository root:

    /tmp/field-otel/crewai/bin/python -m bench.field.make_otel crewai tests/data/field/otel
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bench.field import otel_loopback as script
from bench.field.otel_export import Batches, environment, provider

ENV = {"CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_DISABLE_TRACKING": "true",
       "CREWAI_TRACING_ENABLED": "false", "CREWAI_STORAGE_DIR": "specgate-field"}
# per mode: the environment OpenInference's TraceConfig reads, CrewAIInstrumentor's
# instrument() keywords, and whether OpenAIInstrumentor runs beside it
MODES: dict[str, dict[str, Any]] = {
    "default": {"env": {}, "crewai": {}, "openai": True},
    "hidden": {"env": {"OPENINFERENCE_HIDE_INPUTS": "true",
                       "OPENINFERENCE_HIDE_OUTPUTS": "true"}, "crewai": {}, "openai": True},
    "crewai_only": {"env": {}, "crewai": {}, "openai": False},
    "event_listener": {"env": {}, "crewai": {"use_event_listener": True}, "openai": False}}
EXPECTED_OUTPUT = "What you did, in one sentence to the customer."


def make(out: Path, modes: list[str] | None = None) -> list[dict[str, Any]]:
    os.environ.pop("OTEL_SDK_DISABLED", None)
    os.environ.update(ENV)
    from crewai import LLM, Agent, Crew, Task
    from crewai.tools import tool
    from openinference.instrumentation import using_attributes
    from openinference.instrumentation.crewai import CrewAIInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry import trace

    global_before = trace.get_tracer_provider()
    made = []
    for mode in modes or list(MODES):
        spec = MODES[mode]
        with environment(spec["env"]), script.serve() as (base_url, log):
            tracer_provider, exporter = provider()
            crewai_instrumentor = CrewAIInstrumentor()
            crewai_instrumentor.instrument(tracer_provider=tracer_provider, **spec["crewai"])
            instrumentors = [crewai_instrumentor]
            if spec["openai"]:
                instrumentors.append(OpenAIInstrumentor())
                instrumentors[-1].instrument(tracer_provider=tracer_provider)
            batches = Batches(exporter)
            tools = [tool(f.__name__)(f) for f in (script.lookup_order, script.issue_refund,
                                                  script.escalate)]
            outputs = []
            for case, trial in script.runs():
                # one LLM per run: CrewOutput.token_usage is the LLM object's running total
                llm = LLM(model="openai/" + script.MODEL, base_url=base_url,
                          api_key="loopback")
                agent = Agent(role="refund agent", goal=script.INSTRUCTIONS,
                              backstory="You settle customers' refund requests.", llm=llm,
                              tools=tools, verbose=False)
                task = Task(description=script.PROMPT.format(case=case, trial=trial),
                            expected_output=EXPECTED_OUTPUT, agent=agent)
                crew = Crew(name="refund-crew", agents=[agent], tasks=[task], verbose=False,
                            tracing=False)
                with using_attributes(session_id=case, metadata={"specgate.trial": trial}):
                    result = crew.kickoff()
                outputs.append(result.raw)
                batches.take()
            for instrumentor in instrumentors:
                instrumentor.uninstrument()
            tracer_provider.shutdown()
        if trace.get_tracer_provider() is not global_before:
            raise RuntimeError("CrewAI replaced the global tracer provider")
        paths = batches.write(out / mode, ["jsonl"])
        made.append({"mode": mode, "paths": paths, "outputs": outputs, "requests": log,
                     "settings": {
                         "LLM": "model='openai/scripted-refund-model', base_url=loopback, "
                                "api_key='loopback' (CrewAI's native OpenAI provider)",
                         "Agent": "role='refund agent', tools=[lookup_order, issue_refund, "
                                  "escalate] (crewai.tools.tool), verbose=False",
                         "Task": f"description=PROMPT, expected_output={EXPECTED_OUTPUT!r}",
                         "Crew": "name='refund-crew', verbose=False, tracing=False; "
                                 "crew.kickoff()",
                         "openinference.instrumentation.using_attributes":
                             "session_id=case, metadata={'specgate.trial': trial}",
                         "CrewAIInstrumentor().instrument": "tracer_provider=..." + "".join(
                             f", {k}={v!r}" for k, v in spec["crewai"].items()),
                         "OpenAIInstrumentor().instrument": "tracer_provider=..."
                         if spec["openai"] else "not used (no LLM instrumentation)",
                         "crewai_telemetry": "off (CREWAI_DISABLE_TELEMETRY, "
                                             "CREWAI_DISABLE_TRACKING, CREWAI_TRACING_ENABLED="
                                             "false, Crew(tracing=False)); OTEL_SDK_DISABLED "
                                             "unset; the global tracer provider untouched"},
                     "env": {**ENV, **spec["env"]}})
    return made


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in (
        "crewai", "openai", "openinference-instrumentation-crewai",
        "openinference-instrumentation-openai", "openinference-instrumentation",
        "openinference-semantic-conventions", "opentelemetry-sdk", "opentelemetry-api",
        "opentelemetry-exporter-otlp-proto-common", "opentelemetry-proto", "protobuf")}


_WRAPPERS = {
    "convention": "OpenInference, not GenAI: no gen_ai.* attribute at all; "
                  "openinference.span.kind on every span; all spans status OK, no events",
    "agent_run_span": "root span '{crew name}.kickoff' ('refund-crew.kickoff'; unnamed crews "
                      "give 'Crew_<uuid>.kickoff'), openinference.span.kind CHAIN, with "
                      "crew_key, crew_id, crew_inputs '' and crew_agents / crew_tasks (JSON "
                      "text: role, goal, backstory; the task description = the prompt, "
                      "expected_output); below it ONE span per task named "
                      "'{agent role}._execute_core' ('refund agent._execute_core'), "
                      "openinference.span.kind AGENT, graph.node.id = the role, task_key, "
                      "task_id, crew_key, crew_id; no agent.name attribute. The AGENT span is "
                      "CrewAI's Task._execute_core (a task run by its agent), the only AGENT "
                      "span; every LLM and TOOL span is its direct child (no turn spans)",
    "tool_spans": "'{tool}.run' ('lookup_order.run'), openinference.span.kind TOOL, tool.name, "
                  "tool.description (CrewAI's 'Tool Name: ...\\nTool Arguments: {schema}\\n"
                  "Tool Description: ...' text), tool.parameters (JSON schema), "
                  "tool.description_updated, tool.cache_function, tool.result_as_answer, "
                  "tool.current_usage_count; no tool call id",
    "case_trial": "using_attributes(session_id=case, metadata={'specgate.trial': trial}) "
                  "gives session.id=case and metadata='{\"specgate.trial\": n}' (JSON text) "
                  "on EVERY span",
    "crew_output_tokens": "the CHAIN span's output.value (CrewOutput as JSON) holds "
                          "token_usage {prompt_tokens: 330+3*case_index, completion_tokens: "
                          "24, successful_requests: 3, ...}: the LLM object's running total "
                          "(this maker makes one LLM per run; one LLM shared by several "
                          "kickoffs accumulates over them)",
}
_WITH_OPENAI = {
    "inference_spans": "'ChatCompletion' spans (scope openinference.instrumentation.openai), "
                       "openinference.span.kind LLM, llm.system openai, llm.model_name, "
                       "llm.invocation_parameters, llm.finish_reason; one span per model "
                       "call (3 per run), children of the AGENT span",
    "tokens": "llm.token_count.prompt / .completion / .total (ints) on the LLM spans only; "
              "none on AGENT/CHAIN (but see crew_output_tokens)",
}
NOTES: dict[str, dict[str, Any]] = {
    "default": {**_WRAPPERS, **_WITH_OPENAI,
                "tool_arguments": "present: TOOL span input.value = the arguments as a "
                                  "plain JSON object text ('{\"order_id\": \"big\", "
                                  "\"amount\": 42.5}', input.mime_type application/json, "
                                  "no wrapper); output.value the tool's return as JSON text",
                "messages": "LLM spans: input.value (the request JSON: messages, model, "
                            "tools), output.value (the raw ChatCompletion JSON), "
                            "llm.input_messages.{i}.message.role|content|tool_call_id|"
                            "tool_calls.{j}.tool_call.id|function.name|function.arguments, "
                            "llm.output_messages.0.message..., llm.tools.{i}.tool.json_schema. "
                            "The first user message is CrewAI's '\\nCurrent Task: <task "
                            "description>\\n\\nThis is the expected criteria for your final "
                            "answer: <expected_output>\\nyou MUST return the actual complete "
                            "content as the final answer, not a summary.'; tool results in "
                            "later input messages are Python reprs ({'order_id': ...})",
                "final_answer": "in three places: the last LLM span's "
                                "llm.output_messages.0.message.content (plain text); the AGENT "
                                "span's output.value = TaskOutput as JSON text (key 'raw' the "
                                "final text, also description, expected_output, summary, "
                                "agent, messages = the whole conversation, tool_failures); the "
                                "CHAIN root's output.value = CrewOutput as JSON text (key "
                                "'raw', tasks_output, token_usage)",
                "agent_input": "AGENT span input.value = JSON text {agent: {...}, context, "
                               "tools: [Python reprs of the tool objects with memory "
                               "addresses]}: not reproducible byte for byte",
                "content": "on (OpenInference's default)"},
    "hidden": {**_WRAPPERS, **_WITH_OPENAI,
               "tool_arguments": "absent: TOOL span input.value and output.value are the "
                                 "literal '__REDACTED__' (the keys stay; no mime types)",
               "messages": "LLM spans: input.value / output.value '__REDACTED__'; no "
                           "llm.input_messages / llm.output_messages / llm.tools",
               "final_answer": "nowhere: AGENT and CHAIN output.value '__REDACTED__' "
                               "(AGENT input.value too)",
               "leaks": "content the hide settings do not reach: the CHAIN span's crew_tasks "
                        "(the task description = the prompt with the case and trial, and "
                        "expected_output) and crew_agents (goal, backstory); tool.description",
               "content": "off (OPENINFERENCE_HIDE_INPUTS=true, OPENINFERENCE_HIDE_OUTPUTS="
                          "true)"},
    "crewai_only": {**_WRAPPERS,
                    "inference_spans": "none: CrewAIInstrumentor alone (its README's "
                                       "quickstart) makes no LLM span; 4 spans per run "
                                       "(CHAIN, AGENT, 2 TOOL)",
                    "tokens": "no token attribute on any span; only the CHAIN output.value "
                              "JSON's token_usage (crew_output_tokens)",
                    "tool_arguments": "as in default: TOOL input.value plain JSON object "
                                      "text",
                    "final_answer": "only inside JSON text: the AGENT span's output.value "
                                    "(TaskOutput, key 'raw') and the CHAIN root's output.value "
                                    "(CrewOutput, key 'raw'); no message attribute anywhere",
                    "content": "on"},
    "event_listener": {
        "convention": "OpenInference; spans from CrewAI's event bus (scope "
                      "openinference.instrumentation.crewai._event_listener); status OK, no "
                      "events",
        "agent_run_span": "root 'refund-crew.kickoff' CHAIN (crew_key, crew_id, crew_agents, "
                          "crew_tasks, llm.token_count.total = the run total 354/357/360, no "
                          "prompt/completion split); below it one AGENT span named '{role}."
                          "{task description}.execute' ('refund agent.Order big, trial 1: the "
                          "customer asks for a refund..execute': the prompt in the span "
                          "name), graph.node.id, agent_id, agent_key, agent.goal, "
                          "agent.backstory, agent.tools, task_id, task_description, "
                          "task_expected_output; LLM and TOOL spans its direct children",
        "inference_spans": "'{model}.llm_call' ('scripted-refund-model.llm_call'), "
                           "openinference.span.kind LLM, llm.model_name, llm.tools (one JSON "
                           "text), one per model call (3 per run)",
        "tokens": "llm.token_count.prompt / .completion / .total on the LLM spans; the CHAIN "
                  "root also has llm.token_count.total (the run's sum)",
        "tool_spans": "'{tool}.run', openinference.span.kind TOOL, tool.name, "
                      "tool.agent_role, tool.task_name (the prompt), tool.run_attempts",
        "tool_arguments": "present: TOOL input.value plain JSON object text "
                          "(application/json); output.value a Python repr, text/plain "
                          "(\"{'order_id': 'big', 'refunded': 80.0}\": CrewAI's coerced "
                          "float)",
        "messages": "LLM input.value = the messages list as JSON text (system/user/assistant/"
                    "tool, 'cache_breakpoint': true on the system message); output.value = "
                    "the tool_calls list as JSON text on tool-calling turns, the plain text "
                    "on the last; llm.output_messages.0.message.role|content only on the "
                    "last (text) turn; no llm.input_messages",
        "final_answer": "the AGENT span's output.value as plain text (text/plain); the last "
                        "LLM span's output.value and llm.output_messages.0.message.content; "
                        "the CHAIN root's output.value = TaskOutput as JSON text",
        "case_trial": _WRAPPERS["case_trial"],
        "content": "on"},
}
