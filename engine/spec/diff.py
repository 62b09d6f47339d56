"""``engine diff``: what changes when the same evidence meets another policy version."""

from __future__ import annotations

from typing import Any

FIELDS = ("state", "met", "rate", "threshold", "minimum", "gate_on", "n")


def _reasons(card: dict[str, Any]) -> set[str]:
    return {f"{r['decision']} {r['code']}" + (f" [{r['category']}]" if "category" in r else "")
            for r in card["reasons"]}


def compare(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Decision, per-category and reason changes between two scorecards of one evidence."""
    categories: dict[str, Any] = {}
    for name in dict.fromkeys([*old["categories"], *new["categories"]]):
        a, b = old["categories"].get(name, {}), new["categories"].get(name, {})
        changed = {k: {"old": a.get(k), "new": b.get(k)} for k in FIELDS if a.get(k) != b.get(k)}
        if changed:
            categories[name] = changed
    before, after = _reasons(old), _reasons(new)
    return {"decision": {"old": old["decision"], "new": new["decision"],
                         "changed": old["decision"] != new["decision"]},
            "policy_sha256": {"old": old["policy_sha256"], "new": new["policy_sha256"]},
            "categories": categories,
            "reasons": {"added": sorted(after - before), "removed": sorted(before - after)}}
