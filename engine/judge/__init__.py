"""Judges: rubrics, HTTP transport, the content-addressed cache, replay, mock and panels.

This package is the engine's only HTTP client for models: other stages (the discovery
protocol's reviews) call ``call`` on a client from ``open_client``.
"""

from engine.judge._rubrics import Rubric, RubricError, load_rubric
from engine.judge._runtime import (
    DEFAULT_KEYS,
    DEFAULT_URLS,
    PROVIDERS,
    JudgeConfig,
    Runtime,
    combine,
)
from engine.judge._transport import (
    CallFailed,
    Client,
    Endpoint,
    Reply,
    call,
    check_key,
    open_client,
)

__all__ = ["DEFAULT_KEYS", "DEFAULT_URLS", "PROVIDERS", "CallFailed", "Client", "Endpoint",
           "JudgeConfig", "Reply", "Rubric", "RubricError", "Runtime", "call", "check_key",
           "combine", "load_rubric", "open_client"]
