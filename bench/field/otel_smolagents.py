"""smolagents traced by OpenInference: the scripted refund agent as a smolagents
``ToolCallingAgent`` (the three tools as ``@tool`` functions, planning off,
``max_steps=3``) on ``OpenAIServerModel(model_id=MODEL, api_base=<loopback>,
api_key="loopback")``, run by ``agent.run(prompt)``;
``SmolagentsInstrumentor().instrument(tracer_provider=...)``
(openinference-instrumentation-smolagents) writes its spans to a plain OTel TracerProvider.

smolagents ends a run only by a call of its built-in ``final_answer`` tool, and replays
earlier tool calls and results to the model as plain assistant / user text (no ``tool``
messages), so the loopback server runs with ``serve(final_tool="final_answer",
step_role="assistant")``: step 2 is ``final_answer({"answer": <the scripted final
text>})`` with the scripted tokens; the run's expected values stay the script's (the tool
calls are lookup_order and issue_refund / escalate).

Case and trial: OpenInference's context attributes, ``using_attributes(session_id=case,
metadata={"specgate.case_id": case, "specgate.trial": trial})`` around ``agent.run``.

Modes: ``default`` (content recorded, OpenInference's default) and ``hidden``
(``OPENINFERENCE_HIDE_INPUTS=true`` and ``OPENINFERENCE_HIDE_OUTPUTS=true`` in the
environment when the instrumentor is made: its TraceConfig reads them).

smolagents sends no telemetry of its own; ``HF_HUB_DISABLE_TELEMETRY=1`` is set anyway
(huggingface_hub comes with it; nothing is fetched from the hub here).

The venv (Python 3.11):

    python3.11 -m venv /tmp/field-otel/smolagents
    /tmp/field-otel/smolagents/bin/pip install "smolagents[openai]==1.26.0" openai==3.57.0 \\
        openinference-instrumentation-smolagents==0.1.43 \\
        openinference-instrumentation==0.1.72 openinference-semantic-conventions==0.1.42 \\
        protobuf==7.36.2 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 \\
        opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-proto==1.45.2

    /tmp/field-otel/smolagents/bin/python -m bench.field.make_otel smolagents \\
        tests/data/field/otel
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bench.field import otel_loopback as script
from bench.field.otel_export import Batches, environment, provider

MODES: dict[str, dict[str, str]] = {
    "default": {},
    "hidden": {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"},
}
ENV = {"HF_HUB_DISABLE_TELEMETRY": "1"}
MAX_STEPS = 3  # the script's three model calls; a fourth step would be an unscripted request


def _tools() -> list[Any]:
    """The script's tools as smolagents tools (``@tool`` reads the Args of the docstring)."""
    from smolagents import tool

    @tool
    def lookup_order(order_id: str) -> dict:
        """Look an order up by its id.

        Args:
            order_id: The id of the order.
        """
        return script.lookup_order(order_id)

    @tool
    def issue_refund(order_id: str, amount: float) -> dict:
        """Refund an order by the given amount.

        Args:
            order_id: The id of the order.
            amount: How much to refund.
        """
        return script.issue_refund(order_id, amount)

    @tool
    def escalate(reason: str) -> dict:
        """Hand the conversation to a human.

        Args:
            reason: Why a human is needed.
        """
        return script.escalate(reason)

    return [lookup_order, issue_refund, escalate]


def make(out: Path, modes: list[str] | None = None) -> list[dict[str, Any]]:
    from openinference.instrumentation import using_attributes
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import OpenAIServerModel, ToolCallingAgent

    os.environ.update(ENV)
    made = []
    for mode in modes or list(MODES):
        with environment(MODES[mode]):
            tracer_provider, exporter = provider()
            instrumentor = SmolagentsInstrumentor()
            instrumentor.instrument(tracer_provider=tracer_provider)
        batches = Batches(exporter)
        with script.serve(final_tool="final_answer", step_role="assistant") as (base_url, log):
            model = OpenAIServerModel(model_id=script.MODEL, api_base=base_url,
                                      api_key="loopback")
            agent = ToolCallingAgent(tools=_tools(), model=model, name="refund_agent",
                                     instructions=script.INSTRUCTIONS, max_steps=MAX_STEPS,
                                     planning_interval=None, verbosity_level=0)
            outputs = []
            for case, trial in script.runs():
                with using_attributes(session_id=case, metadata={"specgate.case_id": case,
                                                                 "specgate.trial": trial}):
                    output = agent.run(script.PROMPT.format(case=case, trial=trial),
                                       reset=True)
                outputs.append(output)
                batches.take()
        instrumentor.uninstrument()
        tracer_provider.shutdown()
        paths = batches.write(out / mode, ["jsonl"])
        made.append({"mode": mode, "paths": paths, "outputs": outputs, "requests": log,
                     "settings": {
                         "ToolCallingAgent": f"tools=[@tool lookup_order, issue_refund, "
                                             f"escalate], model=OpenAIServerModel(model_id="
                                             f"{script.MODEL!r}, api_base=<loopback>, "
                                             f"api_key='loopback'), name='refund_agent', "
                                             f"instructions=INSTRUCTIONS, "
                                             f"max_steps={MAX_STEPS}, planning_interval=None"
                                             f", verbosity_level=0",
                         "run": "agent.run(prompt, reset=True)",
                         "openinference.instrumentation.using_attributes":
                             "session_id=case, metadata={'specgate.case_id': case, "
                             "'specgate.trial': trial}",
                         "SmolagentsInstrumentor().instrument": "tracer_provider=...",
                         "loopback": "serve(final_tool='final_answer', "
                                     "step_role='assistant'): the last scripted step is a "
                                     "final_answer call carrying the final text"},
                     "env": {**ENV, **MODES[mode]}})
    return made


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in (
        "smolagents", "openai", "openinference-instrumentation-smolagents",
        "openinference-instrumentation", "openinference-semantic-conventions",
        "opentelemetry-sdk", "opentelemetry-api", "opentelemetry-exporter-otlp-proto-common",
        "opentelemetry-proto", "protobuf")}


_COMMON = {
    "convention": "OpenInference, not GenAI: no gen_ai.* attribute at all; "
                  "openinference.span.kind on every span; every span kind INTERNAL, status "
                  "OK; scope openinference.instrumentation.smolagents; no span events",
    "agent_run_span": "root span '{agent name}.run' ('refund_agent.run'), openinference.span."
                      "kind AGENT, no agent.name attribute; input.value = JSON of run()'s "
                      "bound arguments ({\"task\": ..., \"stream\": false, \"reset\": true, "
                      "...}); smolagents.task, smolagents.max_steps, smolagents.tools_names "
                      "(a string array, final_answer included). smolagents.task is read "
                      "before run() sets it: absent on an agent's first run, and the PREVIOUS "
                      "run's task on a reused agent (the 'big' run says 'Order small, ...')",
    "step_spans": "one CHAIN span 'Step N' (N = 1..3) per model call, child of the run span, "
                  "holding that step's LLM span and TOOL span; input.value = JSON "
                  "{\"memory_step\": \"ActionStep(...)\"} (a Python repr with wall-clock "
                  "times); output.value = the step's observation as a Python repr "
                  "(\"{'order_id': 'big', 'refunded': 80}\"), the last step's the final "
                  "text",
    "inference_spans": "'OpenAIModel.generate' (OpenAIServerModel is an alias of OpenAIModel), "
                       "openinference.span.kind LLM, one per model call (3 per run), child of "
                       "its Step span; llm.model_name, llm.provider openai, "
                       "llm.invocation_parameters '{}', llm.tools.{i}.tool.json_schema (4: the "
                       "three tools and final_answer); no llm.system",
    "tool_spans": "spans named by the TOOL CLASS: 'SimpleTool' for every @tool function, "
                  "'FinalAnswerTool' for final_answer; openinference.span.kind TOOL, tool.name "
                  "(lookup_order / issue_refund / escalate / final_answer), tool.description, "
                  "tool.parameters (smolagents' inputs dict, JSON text); no tool call id on "
                  "the tool span; 3 per run: the two scripted calls AND final_answer",
    "final_answer": "a tool call like any other: the model's 3rd answer is a final_answer "
                    "tool call (llm.output_messages.0.message.tool_calls.0.tool_call."
                    "function.name = final_answer, arguments {\"answer\": <text>}), then a "
                    "TOOL span 'FinalAnswerTool' (tool.name final_answer) in Step 3",
    "tokens": "llm.token_count.prompt / completion / total on each LLM span (the script's "
              "per-call counts), and the run's totals again on the AGENT span "
              "(llm.token_count.prompt 330+3*case_index, completion 24, total)",
    "case_trial": "using_attributes(session_id=case, metadata={...}) gives session.id=case "
                  "and metadata=<JSON text {\"specgate.case_id\": ..., \"specgate.trial\": "
                  "n}> on EVERY span (run, step, LLM, tool)",
}
NOTES: dict[str, dict[str, Any]] = {
    "default": {**_COMMON,
                "tool_arguments": "input.value on the TOOL span is NOT the arguments but "
                                  "JSON of Tool.__call__'s bound parameters: {\"args\": [], "
                                  "\"sanitize_inputs_outputs\": true, \"kwargs\": "
                                  "{\"order_id\": \"big\", \"amount\": 80}} (the "
                                  "arguments under 'kwargs'); no input.mime_type; the "
                                  "arguments as the model sent them are on the LLM span: "
                                  "llm.output_messages.0.message.tool_calls.0.tool_call."
                                  "function.arguments ('{\"order_id\": \"big\", "
                                  "\"amount\": 80}') with tool_call.id; result in output."
                                  "value (JSON text, output.mime_type application/json; "
                                  "final_answer's: the plain text, text/plain)",
                "messages": "LLM spans: input.value (JSON {\"messages\": [<ChatMessage "
                            "reprs>], ...}), llm.input_messages.{i}.message.role + "
                            "contents.0.message_content.type|text (always the contents "
                            "list, never message.content); earlier tool calls and results "
                            "replayed as roles 'tool-call' ('Calling tools:\\n[{...}]' "
                            "repr) and 'tool-response' ('Observation:\\n...'), smolagents' "
                            "own role names (the request sends them as assistant / user); "
                            "user message 'New task:\\n<prompt>'; output: "
                            "llm.output_messages.0.message.role assistant + tool_calls "
                            "(no content: every answer is a tool call) and output.value "
                            "(JSON of the ChatMessage with a 'raw' ChatCompletion repr); "
                            "the FINAL TEXT only on the AGENT span's output.value (plain "
                            "text, no output.mime_type), the last Step's output.value, the "
                            "final_answer TOOL span's input.value kwargs.answer / "
                            "output.value, and the last LLM span's final_answer tool-call "
                            "arguments; never as an assistant message's text",
                "content": "on (OpenInference's default)"},
    "hidden": {**_COMMON,
               "tool_arguments": "absent: input.value and output.value on TOOL spans are "
                                 "'__REDACTED__' (no mime types); no llm.output_messages, "
                                 "so no tool-call arguments on the LLM spans either",
               "messages": "none: llm.input_messages.*, llm.output_messages.* and llm.tools.* "
                           "dropped; input.value / output.value '__REDACTED__' on every "
                           "span (AGENT, CHAIN, LLM, TOOL). NOT hidden: smolagents.task on "
                           "the AGENT span (the user's prompt, one run late), and "
                           "tool.parameters / tool.description",
               "content": "off (OPENINFERENCE_HIDE_INPUTS=true, "
                          "OPENINFERENCE_HIDE_OUTPUTS=true)"},
}
