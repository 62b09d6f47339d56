"""An inspect_ai run whose refund happens inside a sub-agent (a ``react`` agent offered to
the model as a tool by ``as_tool``), written by inspect_ai itself, offline.

    python -m tests.inspect_subagent FOLDER

writes ``subagent.eval`` into FOLDER: one sample; the model calls the ``helper`` tool, the
helper's own model turn calls ``issue_refund`` and then ``submit``, and the outer model
answers. The sample's messages show only the ``helper`` call; its events show all three.
The refund's ``note`` is long, so inspect_ai writes it as an ``attachment://`` reference;
the refund and the submit share one call id, each still a call of its own.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from bench.make_inspect_example import offline

# over 100 characters: inspect_ai moves it out of the tool event into sample.attachments
NOTE = ("Refund approved by nobody: the customer asked twice, so the agent went ahead and "
        "refunded the whole order without checking the delivery date.")


def run(folder: Path) -> Path:
    """Run the task; return the log's path in ``folder``."""
    offline()
    from inspect_ai import Task, eval
    from inspect_ai.agent import as_tool, react
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool

    @tool
    def issue_refund():  # type: ignore[no-untyped-def]
        async def execute(order_id: str, amount: float, note: str) -> str:
            """Refund an order.

            Args:
              order_id: the order to refund
              amount: how much to refund
              note: why
            """
            return f"refunded {amount} on {order_id}"
        return execute

    turns = [ModelOutput.for_tool_call("mockllm/model", "helper", {"input": "order A-1"}),
             # one call id for two calls, as some providers (and scripts) give
             ModelOutput.for_tool_call("mockllm/model", "issue_refund",
                                       {"order_id": "A-1", "amount": 9999, "note": NOTE},
                                       tool_call_id="call_1"),
             ModelOutput.for_tool_call("mockllm/model", "submit", {"answer": "done"},
                                       tool_call_id="call_1"),
             ModelOutput.from_content("mockllm/model", "5")]
    for turn in turns:  # no tokenizer is fetched to count them
        turn.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    model = get_model("mockllm/model", custom_outputs=turns)
    helper = react(name="helper", description="Handles an order.", tools=[issue_refund()],
                   model=model)
    task = Task(dataset=[Sample(id="add-small", input="What is 2 + 3?", target="5")],
                solver=[use_tools([as_tool(helper)]), generate()], scorer=match())
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        log = eval(task, model=model, log_dir=scratch, display="none", log_format="eval",
                   score_display=False)[0]
        assert log.status == "success", log.error
        target = folder / "subagent.eval"
        shutil.copyfile(log.location, target)
    return target


if __name__ == "__main__":
    print(run(Path(sys.argv[1])))
