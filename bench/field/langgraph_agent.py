"""The scripted refund agent written with LangChain 1.x on LangGraph, shared by the
``otel_langgraph_*`` makers (this module is not a framework: its name does not start with
``otel_``).

``langchain.agents.create_agent`` (a compiled LangGraph graph with a ``model`` node and a
``tools`` node) on ``langchain_openai.ChatOpenAI`` pointed at the loopback server, with the
script's three functions as LangChain tools (``langchain_core.tools.tool``). Each run is one
``agent.invoke({"messages": [user prompt]}, config=...)``; the tracing is the caller's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.field import otel_loopback as script


def build(base_url: str) -> Any:
    """The compiled agent graph, its model at ``base_url``."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model=script.MODEL, base_url=base_url, api_key="loopback",
                       max_retries=0)
    tools = [tool(script.lookup_order), tool(script.issue_refund), tool(script.escalate)]
    return create_agent(model, tools=tools, system_prompt=script.INSTRUCTIONS,
                        name="refund-agent")


def final_text(result: dict[str, Any]) -> str:
    """The agent's answer: the text of the last message of the graph's state."""
    content = result["messages"][-1].content
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def run_all(agent: Any, around: Callable[[str, int], Any],
            config: Callable[[str, int], dict[str, Any]], take: Callable[[], Any]) -> list[str]:
    """Run the 6 scripted runs in order, each inside the context manager ``around(case,
    trial)`` with the LangChain run config ``config(case, trial)``; ``take()`` after each."""
    outputs = []
    for case, trial in script.runs():
        with around(case, trial):
            result = agent.invoke(
                {"messages": [{"role": "user",
                               "content": script.PROMPT.format(case=case, trial=trial)}]},
                config=config(case, trial))
        outputs.append(final_text(result))
        take()
    return outputs
