"""``engine diff``: what changes when the same evidence meets another policy version.

Three views: the policy's own values (every changed setting, found by walking the two
parsed documents, prose left out only where the schema holds prose), the files its digests
bind (each changed one named with a diff of its content) and their effect on the evidence
(decision, category statistics, overall score, conditions, waivers, reasons). Rates and
scores are rounded to three places, as scorecard.md shows them, so a change is reported
when a reader could see it.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine._version import SCORING_VERSION, SCORING_VERSION_FULL_ROWS
from engine.spec import yaml as _yaml

RATES = ("rate", "wilson_lower", "wilson_upper")
FIELDS = ("state", "met", "weight", "threshold", "minimum", "gate_on", "required", "n",
          "passed", *RATES)
PLACES = 3  # scorecard.md shows rates as 0.979
# Prose: the only keys of schemas/policy.schema.json that hold text for people and move
# nothing. A key of the same name anywhere else (a formula's bind variable, an inspection
# parameter) is a setting. "*" is any category name, "#" any list index.
PROSE = (("metadata", "description"), ("spec", "categories", "*", "description"),
         ("spec", "inspections", "#", "description"), ("spec", "waivers", "#", "justification"))
ROLES = {"scoring": "scoring data, in policy_sha256",
         "presentation": "presentation, in presentation_digests",
         "rubric": "judge rubric, in judge_sha256",
         "evaluation": "the Evaluation, signed with the specs",
         "suite": "the Suite, in suite_sha256",
         "input": "evidence, an input the Evaluation reads"}
POLICY_ROLES = ("scoring", "presentation", "rubric")


def shown(value: Any) -> Any:
    """A rate or score as scorecard.md shows it."""
    return round(value, PLACES) if isinstance(value, float) else value


def _pair(a: Any, b: Any) -> dict[str, Any] | None:
    return None if a == b else {"old": a, "new": b}


def _reasons(card: dict[str, Any]) -> set[str]:
    return {f"{r['decision']} {r['code']}" + (f" [{r['category']}]" if "category" in r else "")
            for r in card["reasons"]}


def _is_prose(path: tuple[str | int, ...]) -> bool:
    return any(len(p) == len(path) and all(
        a == b or (a == "*" and isinstance(b, str)) or (a == "#" and isinstance(b, int))
        for a, b in zip(p, path, strict=True)) for p in PROSE)


def _name(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else part
    return out


def settings(old: Any, new: Any, path: tuple[str | int, ...] = (),
             prose: list[str] | None = None) -> dict[str, Any]:
    """Every policy value that differs, by its path in the Policy; a change at a prose path
    (PROSE) is put in ``prose`` instead, by its path alone."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: dict[str, Any] = {}
        for key in dict.fromkeys([*old, *new]):
            where = (*path, key)
            if _is_prose(where):
                if prose is not None and old.get(key) != new.get(key):
                    prose.append(_name(where))
                continue
            out |= settings(old.get(key), new.get(key), where, prose)
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        out = {}
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            out |= settings(a, b, (*path, i), prose)
        return out
    return {} if old == new else {_name(path): {"old": old, "new": new}}


@dataclass(frozen=True)
class Bound:
    """One file a policy's digests bind: its role (ROLES), its digest as bound, and where
    its content is read from (a path, or the text of a rubric shipped with the engine)."""

    role: str
    sha256: str
    path: Path | None
    text: str | None = None

    def lines(self, name: str) -> list[str]:
        """The content as compared: JSON and YAML as their parsed value (what the digest
        binds: layout and comments are not compared), other text as it is."""
        text = self.text if self.text is not None else \
            (self.path.read_bytes() if self.path else b"").decode("utf-8", "replace")
        text = text.removeprefix("\ufeff")
        if name.endswith((".json", ".yaml", ".yml")):
            doc, _ = _yaml.parse(text, name)  # YAML reads JSON
            if doc is not None:
                text = json.dumps(doc.data, indent=2, sort_keys=True, ensure_ascii=False)
        return text.splitlines()


def bound(policy: Any, rubrics: dict[str, Bound] | None = None) -> dict[str, Bound]:
    """The files a compiled Policy's digests bind, by their path in the spec."""
    out = {rel: Bound("scoring", sha, policy.scoring_files.get(rel))
           for rel, sha in policy.document.get("scoring_data", {}).items()}
    out |= {rel: Bound("presentation", sha, policy.presentation_files.get(rel))
            for rel, sha in policy.presentation_digests.items()}
    return out | (rubrics or {})


def files(old: dict[str, Bound], new: dict[str, Bound],
          borrowed: list[str] | None = None) -> dict[str, Any]:
    """Each bound file that differs: its role, old and new digest (None: not bound on that
    side) and a unified diff of its content. A file the old policy ``borrowed`` (read from
    the new one's folder, or a rubric read from the shipped ones where the new policy has
    its own) is a change whatever its digest: its old content is not known."""
    out: dict[str, Any] = {}
    for name in sorted({*old, *new}):
        a, b = old.get(name), new.get(name)
        lent = name in (borrowed or [])
        if not lent and a is not None and b is not None and \
                (a.role, a.sha256) == (b.role, b.sha256):
            continue
        either = b or a
        assert either is not None
        change: dict[str, Any] = {
            "role": either.role, "old": None if lent or a is None else a.sha256,
            "new": b.sha256 if b else None, "borrowed": lent}
        if lent:
            change["diff"] = []
        else:
            change["diff"] = list(difflib.unified_diff(
                a.lines(name) if a else [], b.lines(name) if b else [],
                f"old/{name}", f"new/{name}", lineterm="", n=2))
        out[name] = change
    return out


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


def _document(card: dict[str, Any]) -> dict[str, Any]:
    """The Policy as its scorecard binds it, ``spec.evidence.passing_rows`` read back from
    the engine scoring version it is bound as (so a change of row form is shown)."""
    document = card["policy_document"]
    policy: dict[str, Any] = document["policy"]
    spec: dict[str, Any] = policy.get("spec", {})
    form = {SCORING_VERSION: "compact", SCORING_VERSION_FULL_ROWS: "full"}.get(
        document.get("scoring_version"))
    if form is None:
        return policy
    return {**policy, "spec": {**spec, "evidence": {**spec.get("evidence", {}),
                                                    "passing_rows": form}}}


def compare(old: dict[str, Any], new: dict[str, Any],
            changed_files: dict[str, Any] | None = None) -> dict[str, Any]:
    """Policy settings, the files they bind (``changed_files``, from ``files``) and their
    effect on one evidence, between two scorecards of it."""
    before, after = _reasons(old), _reasons(new)
    waivers = ("status", "rows_waived", "expires", "scope")
    prose: list[str] = []
    return {"decision": {"old": old["decision"], "new": new["decision"],
                         "changed": old["decision"] != new["decision"]},
            "policy_sha256": {"old": old["policy_sha256"], "new": new["policy_sha256"],
                              "changed": old["policy_sha256"] != new["policy_sha256"]},
            "settings": settings(_document(old), _document(new), prose=prose),
            "files": changed_files or {},
            "prose": prose,
            "categories": _categories(old["categories"], new["categories"]),
            "overall": _overall(old.get("overall"), new.get("overall")),
            "conditions": _entries(_by_id(old.get("conditions"), ("formula", "value")),
                                   _by_id(new.get("conditions"), ("formula", "value"))),
            "waivers": _entries(_by_id((old.get("waivers") or {}).get("entries"), waivers),
                                _by_id((new.get("waivers") or {}).get("entries"), waivers)),
            "reasons": {"added": sorted(after - before), "removed": sorted(before - after)}}


def changed(changes: dict[str, Any]) -> bool:
    """Whether anything but prose differs: a setting, a bound file (a borrowed one too), a
    category, the overall score, a condition, a waiver, a reason or the decision."""
    return bool(changes["decision"]["changed"] or changes["policy_sha256"]["changed"]
                or any(changes[k] for k in ("settings", "files", "categories", "overall",
                                            "conditions", "waivers"))
                or changes["reasons"]["added"] or changes["reasons"]["removed"])


def lines(changes: dict[str, Any], borrowed_from: str = "the new policy's folder"
          ) -> list[str]:
    """The changes as text, one line per moved value (and each changed file's diff)."""
    decision = changes["decision"]
    base = changes.get("base")
    out = [f"base: {base['ref']} = {base['commit']}"] if base else []
    out.append(f"decision: {decision['old']} -> {decision['new']}"
               + ("" if decision["changed"] else " (unchanged)"))
    out += _sides(changes.get("evaluation"), base)
    digests = changes["policy_sha256"]
    if digests["changed"]:
        out.append(f"  policy_sha256: {digests['old']} -> {digests['new']}")
    for path, change in changes["settings"].items():
        out.append(f"  policy {path}: {_text(change['old'])} -> {_text(change['new'])}")
    for name, change in changes["files"].items():
        role = ROLES[change["role"]]
        kind = "policy file" if change["role"] in POLICY_ROLES else \
            "evaluation input" if change["role"] == "input" else "evaluation file"
        if change["borrowed"]:
            used = ("the one shipped with the engine" if change["role"] == "rubric" else
                    f"the new one from {borrowed_from}")
            out.append(f"  policy file {name} ({role}): CHANGE NOT KNOWN: the old policy has "
                       f"no {name} beside it, so it ran with {used}; give --base REF to "
                       "read the old side from git")
            continue
        out.append(f"  {kind} {name} ({role}): {change['old'] or '(none)'} -> "
                   f"{change['new'] or '(none)'}")
        out += [f"    {line}" for line in change["diff"]]
    if changes["prose"]:
        out.append("  prose (no setting): " + ", ".join(changes["prose"]))
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
    if not changed(changes) and not changes["prose"]:
        out.append("  no setting, file, category, score or reason changes")
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


def _sides(where: dict[str, Any] | None, base: dict[str, Any] | None) -> list[str]:
    """Which Evaluation each side ran: a warning when the old side ran the new one (its
    Suite, inputs and settings unread from the old side), the old policy's path when the
    Evaluation named another, and each input REF does not hold."""
    if not where:
        return []
    if where.get("evaluation_runs"):  # OLD NEW outright, NEW a candidate it does not name
        return [f"  WARNING: the Evaluation runs {where['evaluation_runs']}, not "
                f"{where['policy_new']}: this is what the new policy would decide on its "
                "evidence, not what the Evaluation decides",
                f"  WARNING: the old side ran with the new Evaluation {where['new']} and its "
                "Suite, so a change to them is not shown (give --base REF to read the old "
                "ones from git)"]
    if where["old"] is None:
        why = (f"{base['ref']} has no Evaluation there" if base else
               "give --base REF to read the old ones from git")
        return [f"  WARNING: the old side ran with the new Evaluation {where['new']} and its "
                f"Suite, so a change to them is not shown ({why})"]
    out = []
    if where["policy_renamed"]:
        out.append(f"  policy: {where['policy_old']} -> {where['policy_new']} (the "
                   "Evaluation names another policy file)")
    out += [f"  input {name}: not in {base['ref'] if base else 'the base'}; both sides read "
            f"{path}" for name, path in where["inputs_not_at_base"].items()]
    return out
