"""Asking the reviewer model (§9.3) through the judge package's transport.

The request is an OpenAI-compatible chat completion (system prompt, one JSON user message,
``response_format`` JSON); ``engine.judge.call`` sends it with the judge's retries on
429/5xx, whole-request deadlines and API-key handling. What comes back must have stopped
normally and be JSON; anything else is MODEL_TRANSPORT.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from engine.canonical import canonical, digest
from engine.judge import CallFailed, Client, Endpoint, JudgeConfig, call
from engine.protocols.discovery.judge_settings import judge_settings
from engine.records.strict_json import JsonError, loads

_DEFAULTS = JudgeConfig()  # retries and backoff as the judge runtime's


class ReviewError(Exception):
    """A task whose review could not be made: ``code`` is one of §4.4."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Reviewer:
    """Where and how to ask: an OpenAI-compatible endpoint and the stage's limits."""

    base_url: str
    model: str
    api_key_env: str | None
    system: str
    repair_sentence: str
    max_input_chars: int
    max_output_tokens: int
    concurrency: int
    timeout_s: float
    retries: int = _DEFAULTS.retries
    backoff_s: float = _DEFAULTS.backoff_s
    max_backoff_s: float = _DEFAULTS.max_backoff_s

    @property
    def endpoint(self) -> Endpoint:
        """The judge transport's view of this reviewer."""
        return Endpoint("openai-compatible", self.base_url, self.api_key_env, self.timeout_s,
                        self.retries, self.backoff_s, self.max_backoff_s)


def load_reviewer(folder: Path, base_url: str, model: str,
                  api_key_env: str | None) -> Reviewer:
    """The review stage's texts and limits from judge.yaml; SpecErrors when it is bad."""
    system, repair, data = judge_settings(folder)
    retry = {k: data[k] for k in ("retries", "backoff_s", "max_backoff_s") if k in data}
    return Reviewer(base_url, model, api_key_env, system, repair,
                    int(data["max_input_chars"]), int(data["max_output_tokens"]),
                    int(data["blind_concurrency"]), float(data["timeout_s"]), **retry)


def replace_system(reviewer: Reviewer, row_length: int) -> Reviewer:
    """The repair request's system prompt: the same prompt plus the repair sentence."""
    sentence = reviewer.repair_sentence.replace("{row_length}", str(row_length))
    return replace(reviewer, system=f"{reviewer.system}\n\n{sentence}")


async def ask(client: Client, reviewer: Reviewer, user: dict[str, Any]
              ) -> tuple[Any, dict[str, Any]]:
    """One request (§9.3): size check, the call, finish reason, JSON; (answer, receipt)."""
    text = canonical(user).decode()
    if len(reviewer.system) + len(text) > reviewer.max_input_chars:
        raise ReviewError("MODEL_INPUT_TOO_LARGE", f"{len(reviewer.system) + len(text)} "
                          f"characters exceed {reviewer.max_input_chars}")
    params = {"system": reviewer.system, "max_tokens": reviewer.max_output_tokens}
    try:
        reply = await call(client, reviewer.endpoint, reviewer.model, text, params)
    except CallFailed as exc:
        raise ReviewError("MODEL_TRANSPORT", str(exc)) from None
    if reply.finish_reason not in (None, "stop"):
        raise ReviewError("MODEL_TRANSPORT", f"finish_reason {reply.finish_reason!r}")
    try:
        answer = loads(reply.text)
    except JsonError as exc:
        raise ReviewError("MODEL_TRANSPORT", f"the reply is not JSON: {exc}") from None
    receipt = {"model": reviewer.model, "usage": reply.usage,
               "request_sha256": digest({"system": reviewer.system, "payload": user}),
               "response_id": reply.response_id, "attempts": reply.attempts}
    return answer, receipt
