"""The scripted refund agent's model: a loopback OpenAI-compatible server, and the expected
values that follow from its script (never from specgate).

The server answers ``POST /v1/chat/completions`` on 127.0.0.1 (a free port), plain JSON or
SSE (``"stream": true``, usage in the last chunk when ``stream_options.include_usage``). It
reads the case and trial from the conversation's first user message (``PROMPT``) and the
step from how many tool results the conversation already holds:

    step 0: lookup_order({"order_id": case})
    step 1: issue_refund({"order_id": case, "amount": A}) or escalate({"reason": ...})
    step 2: the final assistant text

Each completion reports ``prompt_tokens = 100 + 10 * step + CASE_INDEX[case]`` and
``completion_tokens = 7 + step``, so a run's totals are known from the script.

Two optional settings of ``serve`` (their defaults are the above) suit frameworks that end
a run with a tool call and that replay tool calls and results as plain messages
(smolagents): ``final_tool="final_answer"`` makes step 2 a call of that tool with
``{"answer": <the final text>}`` (same tokens; the run's expected values are unchanged),
and ``step_role="assistant"`` counts the steps taken by the conversation's assistant
messages instead of its tool messages.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "scripted-refund-model"
CASES = ("small", "big", "escalate")
TRIALS = (1, 2)
CASE_INDEX = {case: index for index, case in enumerate(CASES)}
PROMPT = "Order {case}, trial {trial}: the customer asks for a refund."
PROMPT_RE = re.compile(r"Order (\w+), trial (\d+):")
INSTRUCTIONS = ("You are a refund agent. Look the order up, then refund it or escalate it, "
                "then tell the customer what you did.")
CREATED = 1_767_225_600  # 2026-01-01T00:00:00Z


@dataclass(frozen=True)
class Step:
    """What the model answers at one step of a run."""

    tool: str | None  # None: the final text
    arguments: dict[str, Any] | None
    text: str | None
    prompt_tokens: int
    completion_tokens: int


def amount(case: str, trial: int) -> float | int | None:
    """The refund the script issues (None: the case escalates)."""
    if case == "small":
        return 25
    if case == "big":
        return 80 if trial == 1 else 42.5
    return None


def final_text(case: str, trial: int) -> str:
    if case == "escalate":
        return "I could not settle order escalate myself, so I escalated it to a human."
    if case == "big":
        return f"Order big: full refund approved, {amount(case, trial)} refunded."
    return f"Order small: refunded {amount(case, trial)}."


def script(case: str, trial: int) -> list[Step]:
    """The three model answers of one run."""
    refund = amount(case, trial)
    second: tuple[str, dict[str, Any]] = (
        ("issue_refund", {"order_id": case, "amount": refund}) if refund is not None
        else ("escalate", {"reason": "needs a human"}))
    calls: list[tuple[str, dict[str, Any]]] = [("lookup_order", {"order_id": case}), second]
    steps = [Step(name, arguments, None, 100 + 10 * index + CASE_INDEX[case], 7 + index)
             for index, (name, arguments) in enumerate(calls)]
    steps.append(Step(None, None, final_text(case, trial), 120 + CASE_INDEX[case], 9))
    return steps


def runs() -> list[tuple[str, int]]:
    """The 6 runs of an export, in the order they are made: trial-major."""
    return [(case, trial) for trial in TRIALS for case in CASES]


def expected_runs() -> list[dict[str, Any]]:
    """The expected values of each run, from the script alone."""
    out = []
    for case, trial in runs():
        steps = script(case, trial)
        out.append({
            "case": case, "trial": trial,
            "prompt": PROMPT.format(case=case, trial=trial),
            "tool_calls": [{"name": s.tool, "arguments": s.arguments}
                           for s in steps if s.tool is not None],
            "model_calls": len(steps),
            "input_tokens": sum(s.prompt_tokens for s in steps),
            "output_tokens": sum(s.completion_tokens for s in steps),
            "final_text": final_text(case, trial),
        })
    return out


# --- the tools the agents run (their results are the agents', not the model's) -----------

def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up by its id."""
    return {"order_id": order_id, "status": "delivered", "total": 80}


def issue_refund(order_id: str, amount: float) -> dict[str, Any]:
    """Refund an order by the given amount."""
    return {"order_id": order_id, "refunded": amount}


def escalate(reason: str) -> dict[str, Any]:
    """Hand the conversation to a human."""
    return {"escalated": True, "reason": reason}


# the tools and their OpenAI function schemas, for a loop written by hand around the client
TOOLS: dict[str, Callable[..., Any]] = {
    "lookup_order": lookup_order, "issue_refund": issue_refund, "escalate": escalate}
SCHEMAS = [
    {"type": "function", "function": {
        "name": "lookup_order", "description": "Look an order up by its id.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                       "required": ["order_id"]}}},
    {"type": "function", "function": {
        "name": "issue_refund", "description": "Refund an order by the given amount.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"},
                                                        "amount": {"type": "number"}},
                       "required": ["order_id", "amount"]}}},
    {"type": "function", "function": {
        "name": "escalate", "description": "Hand the conversation to a human.",
        "parameters": {"type": "object", "properties": {"reason": {"type": "string"}},
                       "required": ["reason"]}}},
]


# --- the server ------------------------------------------------------------------------

def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def answer(body: dict[str, Any], final_tool: str | None = None,
           step_role: str = "tool") -> tuple[str, int, int, Step]:
    """The case, trial, step and scripted answer for one request body (``serve`` says what
    ``final_tool`` and ``step_role`` do)."""
    messages = body.get("messages") or []
    case, trial = "", 0
    for message in messages:
        if message.get("role") == "user":
            found = PROMPT_RE.search(_text_of(message.get("content")))
            if found:
                case, trial = found.group(1), int(found.group(2))
                break
    if case not in CASE_INDEX:
        raise ValueError(f"no scripted case in {json.dumps(messages)[:300]}")
    step = sum(1 for m in messages if m.get("role") == step_role)
    steps = script(case, trial)
    scripted = steps[min(step, len(steps) - 1)]
    if final_tool is not None and scripted.tool is None:
        scripted = replace(scripted, tool=final_tool, arguments={"answer": scripted.text},
                           text=None)
    return case, trial, step, scripted


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send_error(404, f"only /v1/chat/completions here, not {self.path}")
            return
        try:
            case, trial, step, scripted = answer(body, self.server.final_tool,
                                                 self.server.step_role)
        except ValueError as exc:
            self.send_error(400, str(exc))
            return
        self.server.log.append({"case": case, "trial": trial, "step": step,
                                "stream": bool(body.get("stream")),
                                "tools": [t.get("function", {}).get("name")
                                          for t in body.get("tools") or []]})
        ident = f"chatcmpl-{case}-{trial}-{step}"
        model = body.get("model") or MODEL
        usage = {"prompt_tokens": scripted.prompt_tokens,
                 "completion_tokens": scripted.completion_tokens,
                 "total_tokens": scripted.prompt_tokens + scripted.completion_tokens}
        call = None
        if scripted.tool is not None:
            call = {"id": f"call_{case}_{trial}_{step}", "type": "function",
                    "function": {"name": self._offered(scripted.tool, body),
                                 "arguments": json.dumps(scripted.arguments)}}
        finish = "tool_calls" if call else "stop"
        if body.get("stream"):
            self._stream(ident, model, call, scripted.text, finish, usage,
                         bool((body.get("stream_options") or {}).get("include_usage")))
            return
        message: dict[str, Any] = {"role": "assistant", "content": scripted.text}
        if call:
            message["tool_calls"] = [call]
        self._json({"id": ident, "object": "chat.completion", "created": CREATED,
                    "model": model, "system_fingerprint": "fp_scripted",
                    "choices": [{"index": 0, "message": message, "finish_reason": finish,
                                 "logprobs": None}],
                    "usage": usage})

    def _offered(self, tool: str, body: dict[str, Any]) -> str:
        """The scripted tool's name; with ``serve(qualified=True)``, as the request offers
        it under a prefix (``Refunds-lookup_order``: semantic-kernel's plugin-qualified
        names), which a real model calls."""
        if not self.server.qualified:
            return tool
        names = [t.get("function", {}).get("name", "") for t in body.get("tools") or []]
        return next((n for n in names if n.endswith(f"-{tool}")), tool)

    def _json(self, data: dict[str, Any]) -> None:
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _stream(self, ident: str, model: str, call: dict[str, Any] | None, text: str | None,
                finish: str, usage: dict[str, int], include_usage: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

        def chunk(delta: dict[str, Any] | None, reason: str | None = None,
                  with_usage: bool = False) -> None:
            data: dict[str, Any] = {"id": ident, "object": "chat.completion.chunk",
                                    "created": CREATED, "model": model,
                                    "system_fingerprint": "fp_scripted",
                                    "choices": [] if delta is None else [
                                        {"index": 0, "delta": delta, "finish_reason": reason,
                                         "logprobs": None}]}
            if with_usage:
                data["usage"] = usage
            self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")

        if call:
            chunk({"role": "assistant", "content": None, "tool_calls": [
                {"index": 0, "id": call["id"], "type": "function",
                 "function": {"name": call["function"]["name"], "arguments": ""}}]})
            chunk({"tool_calls": [{"index": 0, "function": {
                "arguments": call["function"]["arguments"]}}]})
        else:
            chunk({"role": "assistant", "content": ""})
            chunk({"content": text})
        chunk({}, finish)
        if include_usage:
            chunk(None, with_usage=True)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    log: list[dict[str, Any]]
    final_tool: str | None = None
    step_role: str = "tool"
    qualified: bool = False


PORT = 47_811  # taken when free, so the exports name the same URL on every run


@contextmanager
def serve(final_tool: str | None = None, step_role: str = "tool", qualified: bool = False) \
        -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A running server: its base URL (``http://127.0.0.1:PORT/v1``; another free port when
    PORT is taken) and its request log. ``final_tool``: the tool step 2 calls with
    ``{"answer": <final text>}`` instead of answering the text (None: the text);
    ``step_role``: the role of the messages that count the steps already taken;
    ``qualified``: call each tool by the name the request offers it under a ``PREFIX-``
    (``_Handler._offered``)."""
    try:
        server = _Server(("127.0.0.1", PORT), _Handler)
    except OSError:
        server = _Server(("127.0.0.1", 0), _Handler)
    server.log = []
    server.final_tool = final_tool
    server.step_role = step_role
    server.qualified = qualified
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", server.log
    finally:
        server.shutdown()
        server.server_close()
