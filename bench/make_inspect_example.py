"""Write an inspect_ai eval log with inspect_ai itself, offline and deterministic.

A Task of six arithmetic questions, two epochs, answered by inspect's mock model
(``mockllm/model``) from a script, scored by inspect's own ``match()`` scorer. Each
question's answer for epoch 1 and epoch 2 is in ``SCRIPT``; 8 of the 12 answers are right.
Every output carries its ``usage``, so no tokenizer is downloaded; nothing touches the
network.

    python -m bench.make_inspect_example specs/inspect-example/data

writes ``inspect-example.eval`` and ``inspect-example.json`` (the same run, both of
inspect's log forms) into the folder. Needs ``pip install inspect-ai==0.3.285``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

# (sample id, question, target, answer in epoch 1, answer in epoch 2)
SCRIPT = [
    ("add-small", "What is 2 + 3?", "5", "5", "5"),
    ("add-carry", "What is 17 + 25?", "42", "42", "42"),
    ("multiply", "What is 6 * 7?", "42", "42", "48"),
    ("subtract", "What is 100 - 37?", "63", "73", "63"),
    ("divide", "What is 81 / 9?", "9", "9", "9"),
    ("square", "What is 12 squared?", "144", "124", "154"),
]
EPOCHS = 2
CORRECT = sum((a == t) + (b == t) for _, _, t, a, b in SCRIPT)  # 8 of 12


def offline() -> None:
    """No network: no telemetry, no model downloads, no tokenizer fetch."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("INSPECT_DISPLAY", "none")
    os.environ.setdefault("INSPECT_LOG_LEVEL", "warning")


def run(folder: Path, script: list[tuple[str, str, str, str, str]] = SCRIPT,
        epochs: int = EPOCHS, name: str = "inspect-example") -> tuple[Path, Path]:
    """Run the task; write ``<name>.eval`` and ``<name>.json`` into ``folder``."""
    offline()
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.log import read_eval_log, write_eval_log
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    answers = {question: [a, b][:epochs] + [b] * max(0, epochs - 2)
               for _, question, _, a, b in script}
    calls: Counter[str] = Counter()

    def reply(messages: list[Any], *_: Any) -> ModelOutput:
        question = messages[-1].text
        answer = answers[question][calls[question]]  # epoch k's answer on the k-th call
        calls[question] += 1
        out = ModelOutput.from_content(model="mockllm/model",
                                       content=f"The answer is {answer}")
        prompt = len(question.split())
        out.usage = ModelUsage(input_tokens=10 + prompt, output_tokens=4,
                               total_tokens=14 + prompt)
        return out

    task = Task(dataset=[Sample(id=sid, input=q, target=t) for sid, q, t, _, _ in script],
                solver=generate(), scorer=match(), epochs=epochs, name=name)
    model = get_model("mockllm/model", custom_outputs=reply, memoize=False)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        # one sample at a time: each question's k-th call is its epoch k
        logs = eval(task, model=model, log_dir=scratch, max_samples=1, max_tasks=1,
                    display="none", log_format="eval", score_display=False)
        log = logs[0]
        assert log.status == "success", log.error
        source = Path(log.location)
        eval_path = folder / f"{name}.eval"
        shutil.copyfile(source, eval_path)
        json_path = folder / f"{name}.json"
        write_eval_log(read_eval_log(str(source)), str(json_path), format="json")
    return eval_path, json_path


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else Path("specs/inspect-example/data")
    for path in run(folder):
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    print(f"{len(SCRIPT)} samples x {EPOCHS} epochs, {CORRECT} answers right")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
