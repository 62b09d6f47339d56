"""Judge endpoints over HTTP: request shapes per provider, retries, deadlines.

Two API shapes: ``openai-compatible`` (POST ``{base_url}/chat/completions``; OpenAI, vLLM,
Ollama, llama.cpp server, LiteLLM) and ``anthropic`` (POST ``{base_url}/v1/messages``).
429, 5xx, timeouts and broken connections are retried with exponential backoff and jitter,
honouring ``Retry-After``; every call has a whole-request deadline, so a judge that
trickles or stays down ends in a coded failure, never a hang. API keys come from the
environment only and never appear in a message.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import time
from dataclasses import dataclass
from typing import Any

import httpx

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 60.0


@dataclass(frozen=True)
class Endpoint:
    """Where and how to call one provider."""

    provider: str
    base_url: str
    api_key_env: str | None
    timeout_s: float
    retries: int
    backoff_s: float
    max_backoff_s: float


@dataclass(frozen=True)
class Reply:
    """What an endpoint answered: the text, token usage, how long and how many attempts."""

    text: str
    usage: dict[str, int]
    latency_ms: int
    attempts: int


class CallFailed(Exception):
    """The endpoint gave no usable reply; ``attempts`` says how often it was tried."""

    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(reason)
        self.attempts = attempts


def _request(endpoint: Endpoint, model: str, prompt: str,
             params: dict[str, Any]) -> tuple[str, dict[str, str], dict[str, Any]]:
    key = os.environ.get(endpoint.api_key_env, "") if endpoint.api_key_env else ""
    base = endpoint.base_url.rstrip("/")
    if endpoint.provider == "anthropic":
        headers = {"anthropic-version": "2023-06-01", "content-type": "application/json"}
        if key:
            headers["x-api-key"] = key
        body = {"model": model, "max_tokens": params["max_tokens"],
                "temperature": params["temperature"],
                "messages": [{"role": "user", "content": prompt}]}
        return f"{base}/v1/messages", headers, body
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    body = {"model": model, "messages": [{"role": "user", "content": prompt}],
            "temperature": params["temperature"], "max_tokens": params["max_tokens"],
            "response_format": {"type": "json_object"}}
    if params.get("seed") is not None:
        body["seed"] = params["seed"]
    return f"{base}/chat/completions", headers, body


def _text(provider: str, data: Any) -> tuple[str, dict[str, int]]:
    """The reply text and token usage of a response body (KeyError/TypeError if malformed)."""
    if provider == "anthropic":
        text = "".join(part["text"] for part in data["content"] if part.get("type") == "text")
        usage = data.get("usage") or {}
        return text, {"input_tokens": int(usage.get("input_tokens", 0)),
                      "output_tokens": int(usage.get("output_tokens", 0))}
    text = data["choices"][0]["message"]["content"]
    usage = data.get("usage") or {}
    return str(text), {"input_tokens": int(usage.get("prompt_tokens", 0)),
                       "output_tokens": int(usage.get("completion_tokens", 0))}


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return min(MAX_RETRY_AFTER_S, max(0.0, float(value)))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value) if value else None
        return None if when is None else min(MAX_RETRY_AFTER_S,
                                             max(0.0, when.timestamp() - time.time()))


def _backoff(endpoint: Endpoint, attempt: int) -> float:
    ceiling = min(endpoint.max_backoff_s, endpoint.backoff_s * 2 ** (attempt - 1))
    return ceiling * random.uniform(0.5, 1.0)  # noqa: S311 - jitter, not security


async def call(client: httpx.AsyncClient, endpoint: Endpoint, model: str, prompt: str,
               params: dict[str, Any]) -> Reply:
    """One judge call with retries; raises CallFailed with a reason safe to record."""
    url, headers, body = _request(endpoint, model, prompt, params)
    reason = "no attempt was made"
    started = time.monotonic()
    for attempt in range(1, endpoint.retries + 2):
        delay = _backoff(endpoint, attempt)
        try:
            response = await asyncio.wait_for(client.post(url, headers=headers, json=body),
                                              endpoint.timeout_s)
        except (TimeoutError, httpx.TimeoutException):
            reason = f"no reply within {endpoint.timeout_s:g} s"
        except httpx.TransportError as exc:
            reason = f"transport error: {type(exc).__name__}"
        else:
            if response.status_code == 200:
                try:
                    text, usage = _text(endpoint.provider, response.json())
                except (ValueError, KeyError, TypeError, IndexError):
                    raise CallFailed("the endpoint's response is not the expected JSON",
                                     attempt) from None
                return Reply(text, usage, int((time.monotonic() - started) * 1000), attempt)
            reason = f"HTTP {response.status_code}"
            if response.status_code not in RETRY_STATUS:
                raise CallFailed(reason, attempt)
            asked = _retry_after(response)
            delay = asked if asked is not None else delay
        if attempt <= endpoint.retries:
            await asyncio.sleep(delay)
    raise CallFailed(f"{reason} after {endpoint.retries + 1} attempts", endpoint.retries + 1)
