"""A scripted judge endpoint on loopback for the judge runtime tests (real HTTP, real sockets).

Each reply is scripted per model (or "*"): a list of steps consumed in order, the last one
repeating, or a function of the request body giving the step. A step is a dict:
``verdict`` (text the model answers), ``status``, ``headers``, ``delay`` (seconds before
answering), ``truncate`` (send fewer bytes than announced), ``usage`` (the provider's usage
object instead of the usual counts; Python's json writes NaN and Infinity as such) or
``raw`` (a body that is not the provider's JSON) or ``body`` (bytes sent as they are, e.g.
compressed, with the ``headers`` that say so).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Judge:
    """The server, its script, and what it received."""

    def __init__(self) -> None:
        self.script: dict[str, Any] = {}  # model -> steps, or body -> step
        self.responder: Any = None  # body -> reply text, for answers that depend on the request
        self.received: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.active = self.peak = 0  # requests being answered now, and the most at once
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                return

            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length))
                with judge.lock:
                    judge.received.append({"path": self.path, "body": body,
                                           "headers": dict(self.headers)})
                    steps = judge.script.get(body["model"]) or judge.script.get("*") or [{}]
                    step = steps(body) if callable(steps) else \
                        steps.pop(0) if len(steps) > 1 else steps[0]
                    judge.active += 1
                    judge.peak = max(judge.peak, judge.active)
                answering = [True]

                def done() -> None:  # before the body's bytes leave: once the client can
                    # read its whole answer it may send the next request, which must not
                    # find this one still counted (a race that reported a peak of 3 for 2)
                    if answering.pop() if answering else False:
                        with judge.lock:
                            judge.active -= 1
                try:
                    judge.answer(self, step, body, done)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (a deadline): that is the point of a delay
                finally:
                    done()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, handler: BaseHTTPRequestHandler, step: dict[str, Any],
               body: dict[str, Any], done: Any) -> None:
        time.sleep(step.get("delay", 0))
        status = step.get("status", 200)
        text = step.get("verdict", '{"score": 5, "reason": "supported"}')
        if self.responder is not None and "verdict" not in step and "raw" not in step:
            text = self.responder(body)
        if "body" in step:  # bytes as they are (a compressed body, with its headers)
            payload = step["body"]
        elif "raw" in step:
            payload = step["raw"].encode()
        elif handler.path.endswith("/v1/messages"):
            payload = json.dumps({"content": [{"type": "text", "text": text}],
                                  "usage": step.get("usage", {"input_tokens": 11,
                                                              "output_tokens": 7})}).encode()
        else:
            payload = json.dumps({"choices": [{"message": {"content": text},
                                               "finish_reason": "stop"}], "id": "r-1",
                                  "usage": step.get("usage", {"prompt_tokens": 11,
                                                              "completion_tokens": 7})}).encode()
        handler.send_response(status)
        for name, value in step.get("headers", {}).items():
            handler.send_header(name, value)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(payload)))
        handler.end_headers()
        done()
        if step.get("truncate"):
            handler.wfile.write(payload[: len(payload) // 2])
            handler.wfile.flush()
            handler.close_connection = True
            return
        handler.wfile.write(payload)

    def calls(self) -> int:
        with self.lock:
            return len(self.received)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
