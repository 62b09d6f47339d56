"""Judges: rubrics, HTTP transport, the content-addressed cache, replay, mock and panels.

This package is the engine's only HTTP client for models: other stages (the discovery
protocol's reviews) call ``call`` on a client from ``open_client``. Its names are looked
up on first use, so a run that asks no judge never imports the HTTP client (httpx) nor
asyncio, nor a run that loads no rubric the template engine.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.judge._cache import key_path, load_key
    from engine.judge._panel import ALIASES, DEFAULT_KEYS, DEFAULT_URLS, Member, parse_member
    from engine.judge._rubrics import Rubric, RubricError, load_rubric
    from engine.judge._runtime import (
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

# Each public name -> the private module that defines it.
_WHERE = {
    **dict.fromkeys(("key_path", "load_key"), "_cache"),
    **dict.fromkeys(("Rubric", "RubricError", "load_rubric"), "_rubrics"),
    **dict.fromkeys(("ALIASES", "DEFAULT_KEYS", "DEFAULT_URLS", "Member", "parse_member"),
                    "_panel"),
    **dict.fromkeys(("PROVIDERS", "JudgeConfig", "Runtime", "combine"), "_runtime"),
    **dict.fromkeys(("CallFailed", "Client", "Endpoint", "Reply", "call", "check_key",
                     "open_client"), "_transport"),
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for."""
    if name not in _WHERE:
        raise AttributeError(f"module 'engine.judge' has no attribute '{name}'")
    value = getattr(import_module(f"engine.judge.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


__all__ = ["ALIASES", "DEFAULT_KEYS", "DEFAULT_URLS", "PROVIDERS", "CallFailed", "Client",
           "Endpoint", "JudgeConfig", "Member", "Reply", "Rubric", "RubricError", "Runtime",
           "call", "check_key", "combine", "key_path", "load_key", "load_rubric",
           "open_client", "parse_member"]
