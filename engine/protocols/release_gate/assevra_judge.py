"""An Assevra 0.6 ``judge:`` section as the Evaluation's ``spec.judge`` (agent-release-gate
§0 and §11): Assevra's providers onto specgate's, the same field names otherwise."""

from __future__ import annotations

import re
from typing import Any

from engine.judge import DEFAULT_KEYS, DEFAULT_URLS
from engine.protocols.release_gate.assevra_config import (
    Key,
    Migration,
    dotted,
    is_number,
    one_of,
    whole,
)

# Assevra provider -> specgate provider; None: only through an OpenAI-compatible gateway.
PROVIDERS: dict[str, str | None] = {
    "anthropic": "anthropic", "openai": "openai-compatible", "local": "openai-compatible",
    "mock": "mock", "none": "none", "azure": None, "bedrock": None, "gemini": None,
    "auto": None}
HTTP = ("anthropic", "openai-compatible")
LOCAL_URL = "http://localhost:11434/v1"  # Assevra's own default for provider local


def _text(value: Any) -> str | None:
    return None if isinstance(value, str) else "must be text"


def _temperature(value: Any) -> str | None:
    return None if is_number(value) and 0 <= value <= 2 else "must be a number from 0 to 2"


def _env_name(value: Any) -> str | None:
    ok = isinstance(value, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value)
    return None if ok else "must name an environment variable (letters, digits, _)"


def _panel(value: Any) -> str | None:
    ok = isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)
    return None if ok else "must be a list of models"


FIELDS = {"provider": one_of(*PROVIDERS), "model": _text, "base_url": _text,
          "api_key_env": _env_name, "max_tokens": whole, "temperature": _temperature,
          "panel": _panel}


def judge(m: Migration, key: Key, value: Any) -> None:
    """Check every judge setting, then carry the judge over, or say why it cannot be."""
    if value is None:
        return
    if not isinstance(value, dict):
        m.bad(key, "ASSEVRA_CONFIG_VALUE", "judge must be a mapping")
        return
    settings: dict[str, Any] = {}
    before = len(m.problems)
    for name, setting in value.items():
        here = (*key, str(name))
        if name not in FIELDS:
            m.unknown.append((dotted(here), setting))
        elif setting is not None and setting != "" and setting != []:
            problem = FIELDS[name](setting)
            if problem is None:
                settings[name] = setting
            else:
                m.bad(here, "ASSEVRA_CONFIG_VALUE", problem)
    if len(m.problems) == before:
        _carry(m, key, settings)


def _carry(m: Migration, key: Key, settings: dict[str, Any]) -> None:
    given = settings.get("provider", "auto")
    provider = PROVIDERS[given]
    if provider is None and given != "auto" and "base_url" in settings:
        provider = "openai-compatible"  # Azure, Bedrock or Gemini behind a gateway
    why = _not_carried(given, provider, settings)
    if why is not None:
        m.dropped.append((dotted(key), settings, why))
        return
    block: dict[str, Any] = {"provider": provider}
    if given == "local":
        block["base_url"] = LOCAL_URL
    for name in ("model", "base_url", "api_key_env", "temperature", "max_tokens"):
        if name in settings and provider not in ("mock", "none"):
            block[name] = settings[name]
    if "panel" in settings and provider not in ("mock", "none"):
        block["panel"] = [_member(entry, given) for entry in settings["panel"]]
    m.evaluation["judge"] = block
    m.carried.append((dotted(key), settings, "evaluation: spec.judge"))


def _not_carried(given: str, provider: str | None, settings: dict[str, Any]) -> str | None:
    if given == "auto":
        return ("provider auto is refused in a release: name the provider in the "
                "Evaluation's spec.judge (until then judged dimensions are SKIPPED)")
    if provider is None:
        return (f"provider {given} needs an OpenAI-compatible gateway: give judge.base_url "
                "(until then judged dimensions are SKIPPED)")
    if provider in ("anthropic", "openai-compatible") and "model" not in settings \
            and "panel" not in settings:
        return ("Assevra picks a default model; specgate records the model it was told: "
                "give judge.model (until then judged dimensions are SKIPPED)")
    for entry in settings.get("panel", []):
        vendor, sep, _ = entry.partition(":")
        if sep and vendor in PROVIDERS and PROVIDERS[vendor] not in HTTP:
            return (f"panel member '{entry}': provider {vendor} cannot be a panel member "
                    "here; ask it through an OpenAI-compatible gateway (a member object with "
                    "base_url)")
    return None


def _member(entry: str, given: str) -> str | dict[str, str]:
    """A panel member: a bare model when it is the judge's provider, else an object naming
    its provider and endpoint (one panel may mix providers, §11)."""
    vendor, sep, model = entry.partition(":")
    if not sep or vendor not in PROVIDERS:
        return entry
    if vendor == given:
        return model
    provider = str(PROVIDERS[vendor])
    if vendor == "local":
        return {"provider": provider, "model": model, "base_url": LOCAL_URL}
    return {"provider": provider, "model": model, "base_url": DEFAULT_URLS[provider],
            "api_key_env": DEFAULT_KEYS[provider]}
