"""``engine diff``: what changes when the same evidence meets another policy version.

Two views: the policy's own values (every changed setting, found by walking the two
parsed documents) and their effect on the evidence (decision, category statistics,
overall score, conditions, waivers, reasons). Rates and scores are rounded to three
places, as scorecard.md shows them, so a change is reported when a reader could see it.
"""

from __future__ import annotations

from typing import Any

from engine._version import SCORING_VERSION, SCORING_VERSION_FULL_ROWS

RATES = ("rate", "wilson_lower", "wilson_upper")
FIELDS = ("state", "met", "weight", "threshold", "minimum", "gate_on", "required", "n",
          "passed", *RATES)
PLACES = 3  # scorecard.md shows rates as 0.979
WORDS = ("description", "message", "justification")  # prose: moves no number


def shown(value: Any) -> Any:
    """A rate or score as scorecard.md shows it."""
    return round(value, PLACES) if isinstance(value, float) else value


def _pair(a: Any, b: Any) -> dict[str, Any] | None:
    return None if a == b else {"old": a, "new": b}


def _reasons(card: dict[str, Any]) -> set[str]:
    return {f"{r['decision']} {r['code']}" + (f" [{r['category']}]" if "category" in r else "")
            for r in card["reasons"]}


def settings(old: Any, new: Any, path: str = "spec") -> dict[str, Any]:
    """Every policy value that differs, by its spec path (prose fields left out)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: dict[str, Any] = {}
        for key in dict.fromkeys([*old, *new]):
            if key not in WORDS:
                out |= settings(old.get(key), new.get(key), f"{path}.{key}")
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        out = {}
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            out |= settings(a, b, f"{path}[{i}]")
        return out
    return {} if old == new else {path: {"old": old, "new": new}}


def _categories(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in dict.fromkeys([*old, *new]):
        a, b = old.get(name, {}), new.get(name, {})
        changed = {k: v for k in FIELDS
                   if (v := _pair(shown(a.get(k)), shown(b.get(k)))) is not None}
        if changed:
            out[name] = changed
    return out


def _overall(old: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any]:
    a, b = old or {}, new or {}
    return {k: v for k in ("formula", "score", "threshold", "met")
            if (v := _pair(shown(a.get(k)), shown(b.get(k)))) is not None}


def _by_id(entries: list[dict[str, Any]] | None, fields: tuple[str, ...]) -> dict[str, Any]:
    return {e["id"]: {k: e.get(k) for k in fields} for e in entries or []}


def _entries(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in dict.fromkeys([*old, *new]):
        a, b = old.get(key, {}), new.get(key, {})
        changed = {k: v for k in dict.fromkeys([*a, *b])
                   if (v := _pair(a.get(k), b.get(k))) is not None}
        if changed:
            out[key] = changed
    return out


def _spec(card: dict[str, Any]) -> dict[str, Any]:
    """The policy's settings as its scorecard binds them, ``evidence.passing_rows`` read back
    from the engine scoring version it is bound as (so a change of row form is shown)."""
    document = card["policy_document"]
    spec: dict[str, Any] = document["policy"].get("spec", {})
    form = {SCORING_VERSION: "compact", SCORING_VERSION_FULL_ROWS: "full"}.get(
        document.get("scoring_version"))
    if form is None:
        return spec
    return {**spec, "evidence": {**spec.get("evidence", {}), "passing_rows": form}}


def compare(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Policy settings and their effect on one evidence, between two scorecards of it."""
    before, after = _reasons(old), _reasons(new)
    waivers = ("status", "rows_waived", "expires", "scope")
    return {"decision": {"old": old["decision"], "new": new["decision"],
                         "changed": old["decision"] != new["decision"]},
            "policy_sha256": {"old": old["policy_sha256"], "new": new["policy_sha256"]},
            "settings": settings(_spec(old), _spec(new)),
            "categories": _categories(old["categories"], new["categories"]),
            "overall": _overall(old.get("overall"), new.get("overall")),
            "conditions": _entries(_by_id(old.get("conditions"), ("formula", "value")),
                                   _by_id(new.get("conditions"), ("formula", "value"))),
            "waivers": _entries(_by_id((old.get("waivers") or {}).get("entries"), waivers),
                                _by_id((new.get("waivers") or {}).get("entries"), waivers)),
            "reasons": {"added": sorted(after - before), "removed": sorted(before - after)}}


def lines(changes: dict[str, Any]) -> list[str]:
    """The changes as text, one line per moved value."""
    decision = changes["decision"]
    out = [f"decision: {decision['old']} -> {decision['new']}"
           + ("" if decision["changed"] else " (unchanged)")]
    for path, change in changes["settings"].items():
        out.append(f"  policy {path}: {_text(change['old'])} -> {_text(change['new'])}")
    for section in ("categories", "conditions", "waivers"):
        for name, change in changes[section].items():
            label = {"categories": "", "conditions": "condition ", "waivers": "waiver "}[section]
            out.append(f"  {label}{name}: " + ", ".join(
                f"{k} {_text(v['old'], k)} -> {_text(v['new'], k)}" for k, v in change.items()))
    if changes["overall"]:
        out.append("  overall: " + ", ".join(
            f"{k} {_text(v['old'], k)} -> {_text(v['new'], k)}"
            for k, v in changes["overall"].items()))
    out += [f"  + {code}" for code in changes["reasons"]["added"]]
    out += [f"  - {code}" for code in changes["reasons"]["removed"]]
    if len(out) == 1:
        out.append("  no setting, category, score or reason changes")
    return out


def _text(value: Any, key: str = "") -> str:
    """A value as the text shows it: rates and scores with three places, as scorecard.md
    writes them (1.000, 0.890), so the two read alike."""
    if value is None:
        return "(none)"
    if key in (*RATES, "score") and isinstance(value, int | float) and \
            not isinstance(value, bool):
        return f"{value:.{PLACES}f}"
    return str(value)
