"""Panel members (agent-release-gate §11): ``provider:model`` strings or endpoint objects.

A member is a bare model name (of the judge's own provider, as before), a string
``provider:model``, or an object ``{provider, model, base_url, api_key_env}``, so one panel
can ask an OpenAI-compatible endpoint and Anthropic. A member is identified in the judge
identity by its *label*: the bare model when it is the judge's provider, else
``provider:model`` (the endpoint URL is recorded, not hashed, as for a single judge).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

HTTP = ("openai-compatible", "anthropic")
DEFAULT_KEYS = {"openai-compatible": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
DEFAULT_URLS = {"openai-compatible": "https://api.openai.com/v1",
                "anthropic": "https://api.anthropic.com"}
ALIASES = {"openai": "openai-compatible", "openai-compatible": "openai-compatible",
           "anthropic": "anthropic"}
# Provider names a member may write that specgate does not call directly.
FOREIGN = ("auto", "azure", "bedrock", "gemini", "google", "local", "mock", "none",
           "replay", "vertex")
_THROUGH = "bedrock, gemini, azure and local servers through provider openai-compatible"


@dataclass(frozen=True)
class Member:
    """Where one panel member is asked."""

    label: str
    provider: str
    model: str
    base_url: str
    api_key_env: str | None


def _provider(name: Any) -> str:
    """The canonical provider a member names; ValueError for any other."""
    if isinstance(name, str) and name in ALIASES:
        return ALIASES[name]
    raise ValueError(f"unknown provider '{name}' (one of {', '.join(sorted(ALIASES))}; "
                     f"{_THROUGH})")


def _member(provider: str, model: str, judge: tuple[str, str, str | None],
            base_url: str | None = None, api_key_env: str | None = None) -> Member:
    """A member of ``provider``: the judge's endpoint when it is the judge's provider."""
    own = provider == judge[0]
    return Member(model if own else f"{provider}:{model}", provider, model,
                  base_url or (judge[1] if own else DEFAULT_URLS[provider]),
                  api_key_env or (judge[2] if own else DEFAULT_KEYS[provider]))


def parse_member(entry: Any, judge: tuple[str, str, str | None]) -> Member:
    """One panel entry, given the judge's (provider, base_url, api_key_env); ValueError says
    why it cannot be asked."""
    if isinstance(entry, dict):
        model = entry.get("model")
        if not isinstance(model, str) or not model:
            raise ValueError("a panel member object needs a model")
        return _member(_provider(entry.get("provider")), model, judge,
                       entry.get("base_url"), entry.get("api_key_env"))
    if not isinstance(entry, str) or not entry:
        raise ValueError("a panel member is 'provider:model', a model, or an object")
    prefix, colon, rest = entry.partition(":")
    if colon and (prefix in ALIASES or prefix in FOREIGN):
        if not rest:
            raise ValueError(f"'{entry}' names no model after the provider")
        return _member(_provider(prefix), rest, judge)
    if judge[0] not in HTTP and judge[0] not in ("mock", "replay"):
        raise ValueError(f"'{entry}' has no provider and the judge's provider is "
                         f"{judge[0]}: write it as 'provider:model'")
    return Member(entry, judge[0], entry, judge[1], judge[2])


def of_label(label: str, judge: tuple[str, str, str | None]) -> Member:
    """The member a recorded label stands for (a replayed or overridden judge)."""
    try:
        return parse_member(label, judge)
    except ValueError:
        return Member(label, judge[0], label, judge[1], judge[2])
