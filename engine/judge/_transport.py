"""Judge endpoints over HTTP: request shapes per provider, retries, deadlines.

Two API shapes: ``openai-compatible`` (POST ``{base_url}/chat/completions``; OpenAI, vLLM,
Ollama, llama.cpp server, LiteLLM) and ``anthropic`` (POST ``{base_url}/v1/messages``).
429, 5xx, timeouts and broken connections are retried with exponential backoff and jitter,
honouring ``Retry-After`` up to ``max_backoff_s`` (a judge asking for a longer wait is a
failed call, not a hang; an unreadable one is ignored); every call has a whole-request
deadline, so a judge that trickles or stays down ends in a coded failure. A body that
cannot be decoded (a ``Content-Encoding`` it does not have) and token counts that are not
counts (negative, fractional, non-finite, beyond 2**53) are failed calls too, so nothing
odd reaches the evidence. API keys come from the environment only, must be visible ASCII
(a line break would split the request's headers) and never appear in a message.

Every HTTP call the engine makes to a model goes through ``call`` on a client from
``open_client``: the judge runtime's and the discovery protocol's reviews alike. The client
reads nothing from the environment (``trust_env=False``: no proxy variable, CA bundle
variable or ``.netrc`` can send a judged verdict elsewhere; docs/security.md) and follows no
redirect. A reply is read in bounded pieces: at most ``MAX_RAW`` bytes on the wire and
``MAX_DECODED`` once decoded (gzip or deflate, decoded here with a bounded output, one
coding only), else a failed call, never the memory of the machine.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import os
import random
import time
import zlib
from dataclasses import dataclass
from typing import Any

import httpx

from engine.errors import UsageError
from engine.records.strict_json import loads

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
MAX_COUNT = 2**53 - 1  # the largest integer every JSON reader keeps exactly
MAX_RAW = 8 << 20  # bytes of one reply on the wire (a judge's verdict is a few kB)
MAX_DECODED = 16 << 20  # bytes of one reply once its Content-Encoding is decoded
CODINGS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}  # read; none besides


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
    finish_reason: str | None = None  # why the model stopped, when the endpoint says (text)
    response_id: str | None = None  # the endpoint's id of the response, when it gives one


Client = httpx.AsyncClient


def open_client(concurrency: int, timeout_s: float, proxy: str | None = None) -> Client:
    """The HTTP client for model calls: at most ``concurrency`` connections, nothing taken
    from the environment (proxies, CA bundles, .netrc), no redirect followed; through
    ``proxy`` only when the Evaluation declares one (``judge.proxy``)."""
    return httpx.AsyncClient(limits=httpx.Limits(max_connections=concurrency),
                             timeout=timeout_s, trust_env=False, follow_redirects=False,
                             proxy=proxy)


class CallFailed(Exception):
    """The endpoint gave no usable reply; ``attempts`` says how often it was tried."""

    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(reason)
        self.attempts = attempts


def key_problem(key: str) -> str:
    """Why an API key cannot go into a header ('' if it can); never quotes the key."""
    if any(c in "\r\n" for c in key):
        return "it holds a line break"
    if not key.isascii():
        return "it holds a non-ASCII character"
    if any(not c.isprintable() or c.isspace() for c in key):
        return "it holds a space or a control character"
    return ""


def check_key(variable: str | None) -> str:
    """The API key in ``variable`` ('' if unset); UsageError BAD_API_KEY if unusable."""
    key = os.environ.get(variable, "") if variable else ""
    why = key_problem(key)
    if why:
        raise UsageError(f"the API key in ${variable} cannot be sent: {why} (the key is not "
                         "shown)", "BAD_API_KEY")
    return key


def _request(endpoint: Endpoint, model: str, prompt: str,
             params: dict[str, Any]) -> tuple[str, dict[str, str], dict[str, Any]]:
    """URL, headers and body; ``params`` may add a ``system`` prompt and leave out the
    ``temperature`` (the endpoint's default then applies)."""
    key = check_key(endpoint.api_key_env)
    base = endpoint.base_url.rstrip("/")
    user = [{"role": "user", "content": prompt}]
    if endpoint.provider == "anthropic":
        headers = {"anthropic-version": "2023-06-01", "content-type": "application/json",
                   "accept-encoding": "gzip, deflate"}  # what _post decodes
        if key:
            headers["x-api-key"] = key
        body = {"model": model, "max_tokens": params["max_tokens"],
                **_optional(params, "temperature", "system"), "messages": user}
        return f"{base}/v1/messages", headers, body
    headers = {"content-type": "application/json", "accept-encoding": "gzip, deflate"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    system = [{"role": "system", "content": params["system"]}] if params.get("system") else []
    body = {"model": model, "messages": system + user, **_optional(params, "temperature"),
            "max_tokens": params["max_tokens"], "response_format": {"type": "json_object"}}
    if params.get("seed") is not None:
        body["seed"] = params["seed"]
    return f"{base}/chat/completions", headers, body


def _optional(params: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: params[name] for name in names if params.get(name) is not None}


def _count(value: Any) -> int:
    """A token count, or ValueError: a whole number in [0, 2**53), not a bool."""
    if value is None:
        return 0
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if type(value) is not int or not 0 <= value <= MAX_COUNT:
        raise ValueError("a token count is not a count")
    return value


def _text(provider: str, data: Any) -> tuple[str, dict[str, int]]:
    """The reply text and token usage of a response body (an exception if malformed)."""
    if provider == "anthropic":
        text = "".join(part["text"] for part in data["content"] if part.get("type") == "text")
        usage = data.get("usage") or {}
        return text, {"input_tokens": _count(usage.get("input_tokens")),
                      "output_tokens": _count(usage.get("output_tokens"))}
    text = data["choices"][0]["message"]["content"]
    if not isinstance(text, str):
        raise TypeError("the reply is not text")
    usage = data.get("usage") or {}
    return text, {"input_tokens": _count(usage.get("prompt_tokens")),
                  "output_tokens": _count(usage.get("completion_tokens"))}


def _retry_after(headers: httpx.Headers) -> float | None:
    """The wait a response asks for in seconds; None if it asks none or is unreadable."""
    value = headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
            seconds = when.timestamp() - time.time()
        except (TypeError, ValueError, OverflowError, IndexError):
            return None
    return None if math.isnan(seconds) else max(0.0, seconds)  # inf: a wait too long


def _backoff(endpoint: Endpoint, attempt: int) -> float:
    ceiling = min(endpoint.max_backoff_s, endpoint.backoff_s * 2 ** (attempt - 1))
    return ceiling * random.uniform(0.5, 1.0)  # noqa: S311 - jitter, not security


def _about(provider: str, data: Any) -> tuple[str | None, str | None]:
    """The finish reason and response id a body gives (None where absent; a finish reason
    that is not text is a malformed reply, an id that is not text is left out)."""
    reason = data.get("stop_reason") if provider == "anthropic" else \
        data["choices"][0].get("finish_reason")
    said = data.get("id")
    if reason is not None and not isinstance(reason, str):
        raise TypeError("the finish reason is not text")
    return reason, said if isinstance(said, str) else None


def _reply(content: bytes, provider: str, started: float, attempt: int) -> Reply:
    try:
        data = loads(content)  # strict: duplicate keys, NaN, lone surrogates
        text, usage = _text(provider, data)
        finish, said = _about(provider, data)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError):
        raise CallFailed("the endpoint's response is not the expected JSON (reply text and "
                         "token counts)", attempt) from None
    return Reply(text, usage, int((time.monotonic() - started) * 1000), attempt, finish, said)


class TooLarge(Exception):
    """A reply beyond the transport's bounds (its size, or a coding it does not read)."""


async def _post(client: httpx.AsyncClient, url: str, headers: dict[str, str],
                body: dict[str, Any]) -> tuple[int, httpx.Headers, bytes]:
    """Status, headers and the decoded body of one POST, read within the bounds."""
    async with client.stream("POST", url, headers=headers, json=body) as response:
        coding = response.headers.get("content-encoding", "").strip().lower()
        if coding not in ("", "identity", *CODINGS):  # gzip twice multiplies a bomb
            raise TooLarge(f"the response's Content-Encoding {coding[:40]!r} is not read "
                           "(gzip, deflate or none)")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_RAW:
            raise TooLarge(f"the response declares {int(declared):,} bytes, more than "
                           f"{MAX_RAW >> 20} MiB")
        decoder = zlib.decompressobj(CODINGS[coding]) if coding in CODINGS else None
        raw, out = 0, bytearray()
        async for chunk in response.aiter_raw():
            raw += len(chunk)
            if raw > MAX_RAW:
                raise TooLarge(f"the response is larger than {MAX_RAW >> 20} MiB")
            if decoder is None:
                out += chunk
            else:
                try:
                    out += decoder.decompress(chunk, MAX_DECODED + 1 - len(out))
                except zlib.error:
                    raise TooLarge(f"the response is not valid {coding}") from None
                if decoder.unconsumed_tail:
                    out += b"?"  # more than the room left: over the bound
            if len(out) > MAX_DECODED:
                raise TooLarge(f"the response decodes to more than {MAX_DECODED >> 20} MiB")
        if decoder is not None:
            out += decoder.flush(MAX_DECODED + 1 - len(out))
            if len(out) > MAX_DECODED:
                raise TooLarge(f"the response decodes to more than {MAX_DECODED >> 20} MiB")
            if not decoder.eof or decoder.unused_data:  # cut short, or bytes after the end
                raise TooLarge(f"the response is not one whole {coding} stream")
        return response.status_code, response.headers, bytes(out)


async def call(client: httpx.AsyncClient, endpoint: Endpoint, model: str, prompt: str,
               params: dict[str, Any]) -> Reply:
    """One judge call with retries; raises CallFailed with a reason safe to record."""
    url, headers, body = _request(endpoint, model, prompt, params)
    reason = "no attempt was made"
    started = time.monotonic()
    for attempt in range(1, endpoint.retries + 2):
        delay = _backoff(endpoint, attempt)
        try:
            status, got, content = await asyncio.wait_for(
                _post(client, url, headers, body), endpoint.timeout_s)
        except TooLarge as exc:  # not transient: asking again would read as much again
            raise CallFailed(str(exc), attempt) from None
        except (TimeoutError, httpx.TimeoutException):
            reason = f"no reply within {endpoint.timeout_s:g} s"
        except httpx.TransportError as exc:
            reason = f"transport error: {type(exc).__name__}"
        except httpx.HTTPError as exc:  # a body that cannot be decoded, say: not transient
            raise CallFailed(f"the response cannot be read ({type(exc).__name__})",
                             attempt) from None
        else:
            if status == 200:
                return _reply(content, endpoint.provider, started, attempt)
            reason = f"HTTP {status}"
            if status not in RETRY_STATUS:
                raise CallFailed(reason, attempt)
            asked = _retry_after(got)
            if asked is not None and asked > endpoint.max_backoff_s:
                raise CallFailed(f"{reason}; the endpoint asked to wait {asked:.3g} s, longer "
                                 f"than max_backoff_s ({endpoint.max_backoff_s:g} s)", attempt)
            delay = asked if asked is not None else delay
        if attempt <= endpoint.retries:
            await asyncio.sleep(delay)
    raise CallFailed(f"{reason} after {endpoint.retries + 1} attempts", endpoint.retries + 1)
