"""A judge that answers from a fixed table, for recording the judged parity fixture.

An OpenAI-compatible ``POST .../chat/completions`` endpoint on loopback. Each entry of the
table is (marker, verdict text): the answer to a prompt is the verdict of the one marker the
prompt contains (a judged row's ``agent_output``, which both engines put in their prompts), so
Assevra and specgate are given the same verdict for the same row whatever their rubrics say.
A prompt with no marker, or more than one, gets text without a verdict.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class TableJudge:
    """The server; ``url`` is its ``/v1`` base, ``asked`` the markers it answered."""

    def __init__(self, table: list[tuple[str, str]]) -> None:
        self.asked: list[str] = []
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
                found = [(marker, verdict) for marker, verdict in table if marker in prompt]
                text = found[0][1] if len(found) == 1 else "no verdict"
                judge.asked.append(found[0][0] if len(found) == 1 else "")
                payload = json.dumps({"id": "parity", "choices": [
                    {"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
