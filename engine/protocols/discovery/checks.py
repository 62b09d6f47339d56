"""The gate checks of finding-quality-discovery, G1-G4 (§5): one table row per check.

A check is ``(gates, subject) -> Failure``: None when it holds, or (part, details) naming
the part that failed and what it saw. Each row declares what the check reads from
``protocol.yaml`` (``params``), the parts that have their own codes (``parts``; otherwise
the gate gives one ``code``), what it ``needs`` earlier gates to have established and what
it ``provides`` to later ones. ``engine.protocols.discovery.layout`` checks ``gates.yaml``
against these rows when the package loads, so a misspelt check, a missing parameter or a
gate placed before one it needs is a located spec error, never a crash in a run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.protocols.discovery.corpus import MISSING, equal, meta, ordered, strict_date
from engine.records.strict_json import is_scalar

if TYPE_CHECKING:
    from engine.protocols.discovery.gates import Gates

FINDING_KEYS = frozenset({"finding_id", "claim", "kind", "scope", "population", "comparison",
                          "definitions", "assignments", "statistics", "evidence",
                          "limitations"})
Failure = tuple[str, dict[str, Any]] | None


@dataclass
class Finding:
    """What the gates learn about one finding as they pass."""

    index: int
    data: dict[str, Any]
    sel: list[str] = field(default_factory=list)
    sel_set: set[str] = field(default_factory=set)
    arms: tuple[set[str], set[str]] | None = None
    labels: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    expected: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Check:
    """One gate primitive and its contract with the spec data and the other gates."""

    fn: Callable[[Any, Any], Failure]
    subject: str  # "submission" (phase submission) or "finding" (phases A and B)
    params: tuple[str, ...] = ()  # keys of protocol.yaml `gates` it reads
    parts: tuple[str, ...] = ()  # parts reported with their own codes (a `codes` map)
    needs: frozenset[str] = frozenset()  # facts earlier gates must have established
    provides: frozenset[str] = frozenset()  # facts it establishes when it holds


def row(fn: Callable[[Any, Any], Failure], subject: str = "finding", *,
        params: tuple[str, ...] = (), parts: tuple[str, ...] = (), needs: str = "",
        provides: str = "") -> Check:
    """A table row; ``needs`` and ``provides`` are space-separated fact names."""
    return Check(fn, subject, params, parts, frozenset(needs.split()),
                 frozenset(provides.split()))


def matches(value: Any, rule: Mapping[str, Any]) -> bool:
    """Does a document's metadata value match one filter rule (§5.6.1)?"""
    if value is MISSING:
        return False
    target, op = rule["value"], rule["op"]
    if op == "eq":
        return equal(value, target)
    if op == "in":
        return any(equal(value, t) for t in target)
    if not ordered(value, target):
        return False
    return bool(value >= target) if op == "gte" else bool(value <= target)


# ---- G1, G2: the submission ---------------------------------------------------------------

def schema(g: Gates, sub: Any) -> Failure:
    errors = list(g.p.schema.iter_errors(sub))  # none, without jsonschema, when valid
    if not errors:
        return None
    from jsonschema.exceptions import relevance
    errors.sort(key=relevance)
    where = "/".join(map(str, errors[0].absolute_path)) or "$"
    return "", {"detail": f"{where}: {errors[0].message}"}


def submission_fields(g: Gates, sub: Any) -> Failure:
    ok = isinstance(sub, dict) and set(sub) == {"task_id", "findings", "abstention_reason"} \
        and sub.get("task_id") == g.task["task_id"]
    return None if ok else ("", {"expected": g.task["task_id"]})


def finding_count(g: Gates, sub: dict[str, Any]) -> Failure:
    limit = g.task["max_findings"]
    ok = isinstance(sub["findings"], list) and len(sub["findings"]) <= limit
    return None if ok else ("", {"observed": len(sub["findings"]), "limit": limit})


def empty_answer(g: Gates, sub: dict[str, Any]) -> Failure:
    reason = sub.get("abstention_reason")
    ok = isinstance(reason, str) and (bool(sub["findings"]) or bool(reason.strip()))
    return None if ok else ("", {})


# ---- G3, G4: a finding's shape, population and comparison --------------------------------

def finding_fields(g: Gates, f: Finding) -> Failure:
    keys = set(f.data) if isinstance(f.data, dict) else set()
    if keys == FINDING_KEYS:
        return None
    return "", {"detail": f"missing {sorted(FINDING_KEYS - keys)}, extra "
                          f"{sorted(keys - FINDING_KEYS)}"}


def evidence_span_limit(g: Gates, f: Finding) -> Failure:
    limit = g.params["max_evidence_spans"]
    n = len(f.data["evidence"])
    return None if n <= limit else ("", {"observed": n, "limit": limit})


def population_shape(g: Gates, f: Finding) -> Failure:
    pop = f.data["population"]
    return None if isinstance(pop, dict) and set(pop) == {"filters"} else ("", {})


def filter_count(g: Gates, f: Finding) -> Failure:
    rules = f.data["population"]["filters"]
    limit = g.params["max_filters"]
    if isinstance(rules, list) and len(rules) <= limit:
        return None
    return "", {"observed": len(rules) if isinstance(rules, list) else "not a list",
                "limit": limit}


def filter_rules(g: Gates, f: Finding) -> Failure:
    allowed = g.task["allowed_metadata_fields"]
    lo, hi = g.params["in_values"]["min"], g.params["in_values"]["max"]
    for i, rule in enumerate(f.data["population"]["filters"]):
        if not isinstance(rule, dict) or set(rule) != {"field", "op", "value"} or \
                rule["field"] not in allowed:
            return "field", {"rule_index": i, "detail": "a rule is exactly field, op, "
                             f"value, with field in {allowed}"}
        if rule["op"] not in g.params["operators"]:
            return "op", {"rule_index": i, "detail": f"op must be one of "
                          f"{g.params['operators']}"}
        value = rule["value"]
        ok = (isinstance(value, list) and lo <= len(value) <= hi and
              all(is_scalar(v) for v in value)) if rule["op"] == "in" else is_scalar(value)
        if not ok:
            return "values", {"rule_index": i, "detail": "in takes 1-20 scalars; other "
                              "operators take one scalar"}
    return None


def population_size(g: Gates, f: Finding) -> Failure:
    rules = f.data["population"]["filters"]
    f.sel = [d for d in g.corpus.ids
             if all(matches(meta(g.corpus.rows[d], r["field"]), r) for r in rules)]
    f.sel_set = set(f.sel)
    limit = g.task["min_population_n"]
    return None if len(f.sel) >= limit else ("", {"observed": len(f.sel), "limit": limit})


def comparison_null(g: Gates, f: Finding) -> Failure:
    return None if f.data["comparison"] is None else ("", {})


def comparison_object(g: Gates, f: Finding) -> Failure:
    return None if isinstance(f.data["comparison"], dict) else ("", {})


def group_field(g: Gates, f: Finding) -> Failure:
    comp = f.data["comparison"]
    allowed = [x for x in g.task["allowed_metadata_fields"] if x != g.params["temporal_field"]]
    ok = set(comp) == {"field", "groups"} and comp["field"] in allowed
    return None if ok else ("", {})


def group_shape(g: Gates, f: Finding) -> Failure:
    groups = f.data["comparison"]["groups"]
    n = g.params["groups"]
    ok = isinstance(groups, list) and len(groups) == n and all(isinstance(x, list) for x in groups)
    return None if ok else ("", {"limit": n})


def group_lists(g: Gates, f: Finding) -> Failure:
    lo, hi = g.params["group_values"]["min"], g.params["group_values"]["max"]
    ok = all(lo <= len(x) <= hi and all(is_scalar(v) for v in x)
             for x in f.data["comparison"]["groups"])
    return None if ok else ("", {"min": lo, "limit": hi})


def group_values(g: Gates, f: Finding) -> Failure:
    values = [v for x in f.data["comparison"]["groups"] for v in x]
    for i, a in enumerate(values):
        for b in values[i + 1:]:
            if equal(a, b):
                return "", {"detail": f"{a!r} and {b!r} are equal"}
    comp = f.data["comparison"]
    arms = [{d for d in f.sel if (v := meta(g.corpus.rows[d], comp["field"])) is not MISSING
             and any(equal(v, x) for x in group)} for group in comp["groups"]]
    f.arms = (arms[0], arms[1])
    return None


def temporal_field(g: Gates, f: Finding) -> Failure:
    comp = f.data["comparison"]
    ok = set(comp) == {"field", "cutoff"} and comp["field"] == g.params["temporal_field"]
    return None if ok else ("", {})


def cutoff_format(g: Gates, f: Finding) -> Failure:
    cutoff = f.data["comparison"]["cutoff"]
    day = strict_date(cutoff) if isinstance(cutoff, str) and len(cutoff) == 10 else None
    if day is None:
        return "", {}
    dated = [(d, strict_date(g.corpus.rows[d].get("timestamp"))) for d in f.sel]
    f.arms = ({d for d, when in dated if when is not None and when < day},
              {d for d, when in dated if when is not None and when >= day})
    return None


def arm_size(g: Gates, f: Finding) -> Failure:
    assert f.arms is not None  # noqa: S101 - `needs: arms`, checked when the package loads
    limit = g.task["min_group_n"]
    sizes = [len(a) for a in f.arms]
    return None if min(sizes) >= limit else ("", {"observed": sizes, "limit": limit})


TABLE: dict[str, Check] = {
    "schema": row(schema, "submission", provides="schema"),
    "submission_fields": row(submission_fields, "submission", provides="top_level"),
    "finding_count": row(finding_count, "submission", needs="top_level"),
    "empty_answer": row(empty_answer, "submission", needs="top_level"),
    "finding_fields": row(finding_fields, provides="finding_keys"),
    "evidence_span_limit": row(evidence_span_limit, params=("max_evidence_spans",),
                               needs="finding_keys"),
    "population_shape": row(population_shape, needs="finding_keys", provides="population"),
    "filter_count": row(filter_count, params=("max_filters",), needs="population",
                        provides="filter_list"),
    "filter_rules": row(filter_rules, params=("in_values", "operators"),
                        parts=("field", "op", "values"), needs="filter_list",
                        provides="filters"),
    "population_size": row(population_size, needs="filters", provides="selection"),
    "comparison_null": row(comparison_null, needs="finding_keys"),
    "comparison_object": row(comparison_object, needs="finding_keys", provides="comparison"),
    "group_field": row(group_field, params=("temporal_field",), needs="comparison",
                       provides="group_field"),
    "group_shape": row(group_shape, params=("groups",), needs="group_field",
                       provides="group_shape"),
    "group_lists": row(group_lists, params=("group_values",), needs="group_shape",
                       provides="group_lists"),
    "group_values": row(group_values, needs="group_lists selection", provides="arms"),
    "temporal_field": row(temporal_field, params=("temporal_field",), needs="comparison",
                          provides="cutoff_field"),
    "cutoff_format": row(cutoff_format, needs="cutoff_field selection", provides="arms"),
    "arm_size": row(arm_size, needs="arms"),
}
