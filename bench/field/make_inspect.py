"""Write genuine inspect_ai eval logs with whichever inspect-ai version is installed.

The same scenario for every version, offline and deterministic: a Task ``refund`` of 4
samples (``eligible``, ``over-limit``, ``unauthorized``, ``boundary``), 2 epochs, run one
sample at a time. The solver is ``use_tools([lookup_order, refund, escalate])`` then
``generate()``; inspect's mock model (``mockllm/model``) answers from ``SCRIPT``: a call
to ``lookup_order``, then ``refund`` or ``escalate``, then the text ``DONE <action>``.
``includes()`` scores it against the sample's target; epoch 2 of ``boundary`` escalates
where it should refund, so 7 of the 8 sample-epochs are ``"C"``. Every model output
carries a fixed ``ModelUsage`` (20 in, 5 out, 25 total: three calls, 60/15/75 a
sample-epoch), so no tokenizer is downloaded and nothing touches the network.

The script picks each reply from the sample being run (inspect's ``sample_state()``) and
how many assistant turns it already has, so the order inspect runs the samples in does
not matter. Old versions take ``custom_outputs`` only as an iterable, so it is one.
Where versions differ the script asks the signature, not the version number: 0.3.25's
``Task`` takes the solvers as ``plan`` (it silently ignores ``solver=``, running a bare
``generate()`` whose tool calls then fail "not found"), and its ``eval`` has no
``log_format``, ``display`` or ``score_display``; ``get_model`` has no ``memoize``.

    python -m bench.field.make_inspect tests/data/field/inspect

writes ``refund.eval`` (where the version writes ``.eval``) and ``refund.json`` (the same
run, converted by inspect's own ``write_eval_log``; 0.3.25 writes ``.json`` only) into
``tests/data/field/inspect/<version>/``, and that version's entries of ``MADE.json`` (the
expectations come from ``SCRIPT``, never from reading the log). To regenerate all:

    for v in 0.3.25 0.3.58 0.3.95 0.3.285; do
        python3.11 -m venv /tmp/field-inspect/v$v
        /tmp/field-inspect/v$v/bin/pip install "inspect-ai==$v"
    done
    /tmp/field-inspect/v0.3.58/bin/pip install "textual==1.0.0"  # see PINS
    for v in 0.3.25 0.3.58 0.3.95 0.3.285; do
        /tmp/field-inspect/v$v/bin/python -m bench.field.make_inspect tests/data/field/inspect
    done
"""

from __future__ import annotations

import inspect
import json
import os
import platform
import shutil
import sys
import tempfile
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed
from pathlib import Path
from typing import Any

TASK = "refund"
EPOCHS = 2
MODEL = "mockllm/model"
USAGE = {"input_tokens": 20, "output_tokens": 5, "total_tokens": 25}  # every model call
ESCALATE_REASON = "needs a human"
# lookup_order's answer: over 100 characters, so inspect (0.3.46 on) writes it in the
# sample's events as an ``attachment://`` reference into the sample's ``attachments``
ORDER = ("order {order_id}: paid on 2024-05-01, one kettle, delivered on 2024-05-03; "
         "the customer's account is in good standing and has no other open cases")

# (sample id, input, target, refund amount, action in epoch 1, action in epoch 2)
SCRIPT = [
    ("eligible", "Order eligible: the customer wants a refund.", "refund", 40,
     "refund", "refund"),
    ("over-limit", "Order over-limit: the customer wants a refund.", "escalate", 900,
     "escalate", "escalate"),
    ("unauthorized", "Order unauthorized: someone else wants a refund.", "escalate", 60,
     "escalate", "escalate"),
    ("boundary", "Order boundary: the customer wants a refund.", "refund", 100,
     "refund", "escalate"),
]

# Transitive packages pinned, per inspect-ai version, where the newest ones break it.
PINS: dict[str, list[str]] = {
    # 0.3.58 imports textual.widgets.option_list.Separator, gone from textual 2 on
    "0.3.58": ["textual==1.0.0"],
}
# Packages whose installed version is recorded with each log.
RECORDED = ["inspect-ai", "pydantic", "textual", "rich", "openai", "httpx", "zipp"]


def offline() -> None:
    """No network: no telemetry, no model downloads, no tokenizer fetch."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("INSPECT_DISPLAY", "none")
    os.environ.setdefault("INSPECT_LOG_LEVEL", "warning")


def action(sample_id: str, epoch: int) -> str:
    row = next(row for row in SCRIPT if row[0] == sample_id)
    return row[4] if epoch == 1 else row[5]


def tool_calls(sample_id: str, epoch: int) -> list[dict[str, Any]]:
    """The calls the script makes for one sample-epoch, in order."""
    amount = next(row[3] for row in SCRIPT if row[0] == sample_id)
    second: dict[str, Any] = ({"name": "refund", "arguments": {"amount": amount}}
                              if action(sample_id, epoch) == "refund" else
                              {"name": "escalate", "arguments": {"reason": ESCALATE_REASON}})
    return [{"name": "lookup_order", "arguments": {"order_id": sample_id}}, second]


def call_id(sample_id: str, epoch: int, turn: int) -> str:
    return f"call-{sample_id}-e{epoch}-{turn}"


def schema(fields: Any) -> dict[str, Any]:
    """Which of the sample fields a reader maps this version's ``EvalSample`` declares."""
    return {"uuid": "uuid" in fields, "model_usage": "model_usage" in fields,
            "total_time": "total_time" in fields, "working_time": "working_time" in fields,
            "events": "sample.events" if "events" in fields else
            "sample.transcript.events" if "transcript" in fields else None,
            "attachments": "attachments" in fields, "invalidation": "invalidation" in fields}


def expected(has_uuid: bool) -> dict[str, Any]:
    """What the log must hold, from the scenario alone."""
    calls = len(tool_calls(SCRIPT[0][0], 1)) + 1  # model calls a sample-epoch
    units = []
    for sample_id, _, target, _, _, _ in SCRIPT:
        for epoch in range(1, EPOCHS + 1):
            answer = f"DONE {action(sample_id, epoch)}"
            units.append({
                "id": sample_id, "epoch": epoch, "target": target, "output": answer,
                "score": "C" if target in answer else "I",
                "tool_calls": tool_calls(sample_id, epoch),
                "tool_call_ids": [call_id(sample_id, epoch, turn) for turn in (1, 2)],
                "model_calls": calls,
                "tokens": {key: value * calls for key, value in USAGE.items()},
                "final_output_usage": dict(USAGE),
            })
    return {
        "task": TASK, "model": MODEL, "samples": len(units), "sample_ids":
        [row[0] for row in SCRIPT], "epochs": EPOCHS, "scorer": "includes",
        "scores_correct": sum(unit["score"] == "C" for unit in units),
        "sample_uuid": has_uuid, "units": units,
    }


class Replies:
    """The mock model's ``custom_outputs``: an iterator reading the running sample."""

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        from inspect_ai.model import ModelOutput, ModelUsage
        from inspect_ai.solver._task_state import sample_state

        state = sample_state()
        assert state is not None, "the mock model was called outside a sample"
        sample_id, epoch = str(state.sample_id), int(state.epoch)
        turn = 1 + sum(message.role == "assistant" for message in state.messages)
        calls = tool_calls(sample_id, epoch)
        if turn <= len(calls):
            out = ModelOutput.for_tool_call(MODEL, calls[turn - 1]["name"],
                                            calls[turn - 1]["arguments"])
            # for_tool_call makes a random id (0.3.25 takes none): fix it
            message = out.choices[0].message
            assert message.tool_calls, "for_tool_call made no tool call"
            message.tool_calls[0].id = call_id(sample_id, epoch, turn)
        else:
            out = ModelOutput.from_content(model=MODEL, content=f"DONE {action(sample_id, epoch)}")
        out.usage = ModelUsage(**USAGE)
        return out


def task() -> Any:
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool

    @tool
    def lookup_order() -> Any:
        async def execute(order_id: str) -> str:
            """Look up an order.

            Args:
              order_id: The order's id.
            """
            return ORDER.format(order_id=order_id)

        return execute

    @tool
    def refund() -> Any:
        async def execute(amount: int) -> str:
            """Refund the customer.

            Args:
              amount: The amount to refund.
            """
            return f"refunded {amount}"

        return execute

    @tool
    def escalate() -> Any:
        async def execute(reason: str) -> str:
            """Hand the case to a human.

            Args:
              reason: Why.
            """
            return f"escalated: {reason}"

        return execute

    dataset = [Sample(id=sid, input=text, target=target) for sid, text, target, *_ in SCRIPT]
    solver = [use_tools([lookup_order(), refund(), escalate()]), generate()]
    # 0.3.25's Task takes the solvers as ``plan`` (it ignores an unknown ``solver``)
    takes_solver = "solver" in inspect.signature(Task).parameters
    chain: dict[str, Any] = {"solver" if takes_solver else "plan": solver}
    return Task(dataset=dataset, scorer=includes(), epochs=EPOCHS, name=TASK, **chain)


def accepted(function: Any, **options: Any) -> dict[str, Any]:
    """The options this version's ``function`` takes."""
    parameters = inspect.signature(function).parameters
    return {key: value for key, value in options.items() if key in parameters}


def versions() -> dict[str, str]:
    found = {}
    for package in RECORDED:
        try:
            found[package] = installed(package)
        except PackageNotFoundError:
            pass
    return found


def setup(version: str) -> list[str]:
    """The commands that make this version's venv."""
    venv = f"/tmp/field-inspect/v{version}"
    commands = [f"python3.11 -m venv {venv}", f"{venv}/bin/pip install 'inspect-ai=={version}'"]
    if PINS.get(version):
        commands.append(f"{venv}/bin/pip install " + " ".join(f"'{pin}'" for pin in PINS[version]))
    return commands


def run(root: Path) -> list[dict[str, Any]]:
    """Run the scenario; write this version's logs into ``root/<version>/``."""
    offline()
    from inspect_ai import eval
    from inspect_ai.log import EvalSample, read_eval_log, write_eval_log
    from inspect_ai.model import get_model

    version = installed("inspect-ai")
    folder = root / version
    folder.mkdir(parents=True, exist_ok=True)
    writes_eval = "log_format" in inspect.signature(eval).parameters
    model = get_model(MODEL, custom_outputs=Replies(),
                      **accepted(get_model, memoize=False))
    made = []
    with tempfile.TemporaryDirectory() as scratch:
        options = accepted(eval, display="none", score_display=False,
                           log_format="eval" if writes_eval else None)
        logs = eval(task(), model=model, log_dir=scratch, max_samples=1, max_tasks=1,
                    **options)
        log = logs[0]
        assert log.status == "success", log.error
        (source,) = Path(scratch).glob("*.eval" if writes_eval else "*.json")
        forms = []
        if writes_eval:
            shutil.copyfile(source, folder / f"{TASK}.eval")
            forms.append(("eval", folder / f"{TASK}.eval"))
            json_path = folder / f"{TASK}.json"
            write_eval_log(read_eval_log(str(source)), str(json_path), format="json")
            forms.append(("json", json_path))
        else:
            shutil.copyfile(source, folder / f"{TASK}.json")
            forms.append(("json", folder / f"{TASK}.json"))
    has_uuid = "uuid" in EvalSample.model_fields
    for form, path in forms:
        made.append({
            "path": path.relative_to(root).as_posix(), "inspect_ai": version, "form": form,
            "python": platform.python_version(), "pins": PINS.get(version, []),
            "installed": versions(),
            "setup": setup(version),
            "command": f"{sys.executable} -m bench.field.make_inspect {root.as_posix()}",
            "written_by": "eval(log_format='eval')" if form == "eval" and writes_eval else
            ("write_eval_log(read_eval_log(<the .eval>), format='json')" if writes_eval
             else "eval() (this version writes .json only)"),
            "expected": expected(has_uuid),
            "sample_schema": schema(EvalSample.model_fields),
        })
    return made


def record(root: Path, made: list[dict[str, Any]]) -> Path:
    """Put this version's entries into ``root/MADE.json``, keeping the other versions'."""
    manifest = root / "MADE.json"
    entries = json.loads(manifest.read_text()) if manifest.exists() else []
    paths = {entry["path"] for entry in made}
    entries = [entry for entry in entries if entry["path"] not in paths] + made
    entries.sort(key=lambda entry: ([int(part) for part in entry["inspect_ai"].split(".")],
                                    entry["path"]))
    manifest.write_text(json.dumps(entries, indent=2) + "\n")
    return manifest


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path("tests/data/field/inspect")
    made = run(root)
    for entry in made:
        path = root / entry["path"]
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    print(f"recorded in {record(root, made)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
