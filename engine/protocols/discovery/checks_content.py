"""The gate checks of finding-quality-discovery, G5-G9 (§5): identity, conditions, the
partition, evidence, statistics, and the phase-B checks. Rows as in ``checks``.

How a kind forms its two arms and its counterexample pool is named per kind in
``kinds.yaml``; the functions for each way are the ``ARMS`` and ``POOLS`` tables here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from engine.protocols.discovery.checks import (
    Check,
    Failure,
    Finding,
    cutoff_format,
    group_values,
    row,
)
from engine.protocols.discovery.stats import expected, robustness
from engine.records.strict_json import is_integer, is_number

if TYPE_CHECKING:
    from engine.protocols.discovery.gates import Gates

STATES = ("positive_doc_ids", "negative_doc_ids", "unknown_doc_ids")
Labels = dict[str, set[str]]
Arms = tuple[dict[str, set[str]], set[str], set[str], set[str]]


def finding_identity(g: Gates, f: Finding) -> Failure:
    fid = f.data["finding_id"]
    if fid in g.seen_ids or f.data["kind"] != g.kind:
        return "", {"expected": g.kind}
    g.seen_ids.add(fid)
    return None


def non_blank_text(g: Gates, f: Finding) -> Failure:
    ok = all(isinstance(f.data[k], str) and f.data[k].strip()
             for k in ("finding_id", "claim", "scope"))
    return None if ok else ("", {})


def condition_count(g: Gates, f: Finding) -> Failure:
    n = g.params["conditions_per_kind"][g.kind]
    ok = len(f.data["definitions"]) == n and len(f.data["assignments"]) == n
    return None if ok else ("", {"expected": n})


def duplicate_condition(g: Gates, f: Finding) -> Failure:
    ids = [d["condition_id"] for d in f.data["definitions"]]
    return None if len(set(ids)) == len(ids) else ("", {})


def condition_match(g: Gates, f: Finding) -> Failure:
    defined = {d["condition_id"] for d in f.data["definitions"]}
    assigned = {a["condition_id"] for a in f.data["assignments"]}
    return None if defined == assigned else ("", {})


def partition(g: Gates, f: Finding) -> Failure:
    for assignment in f.data["assignments"]:
        pos, neg, unk = (set(assignment[k]) for k in STATES)
        overlap = (pos & neg) | (pos & unk) | (neg & unk)
        union = pos | neg | unk
        if overlap or union != f.sel_set:
            detail = (f"{len(overlap)} id(s) in two lists" if overlap else
                      f"{len(f.sel_set - union)} selected document(s) unlabelled, "
                      f"{len(union - f.sel_set)} id(s) outside the population")
            return "", {"condition_id": assignment["condition_id"], "detail": detail}
        f.labels[assignment["condition_id"]] = {"P": pos, "N": neg, "U": unk}
    return None


def support_required(g: Gates, f: Finding) -> Failure:
    ok = any(e["role"] == "supporting" for e in f.data["evidence"])
    return None if ok else ("", {})


def evidence_records(g: Gates, f: Finding) -> Failure:
    for i, record in enumerate(f.data["evidence"]):
        if record["doc_id"] not in f.sel_set or record["role"] not in g.params["evidence_roles"]:
            return "source_role", {"evidence_index": i, "detail": "doc_id must be in the "
                                   "selected population and role one of "
                                   f"{g.params['evidence_roles']}"}
        text = g.corpus.rows[record["doc_id"]]["text"]
        start, end = record["start"], record["end"]
        if not (is_integer(start) and is_integer(end) and 0 <= start < end <= len(text)
                and text[start:end] == record["quote"]):
            return "offset", {"evidence_index": i, "detail": "text[start:end] must equal "
                              "the quote exactly (code-point offsets, integers)"}
    return None


def statistics(g: Gates, f: Finding) -> Failure:
    f.expected = expected_statistics(g, f)
    reported = f.data["statistics"]
    for key, want in f.expected.items():
        got = reported.get(key)
        ok = (want is None and got is None) or (
            want is not None and is_number(got) and abs(got - want) <= g.p.tolerance)
        if not ok:
            return "", {"key": key, "expected": want, "reported": got}
    return None


def _condition_arms(f: Finding) -> Arms:
    """Arm 0: A negative, arm 1: A positive, both among B known; the outcome is B positive."""
    a, b = (f.labels[d["condition_id"]] for d in f.data["definitions"][:2])
    sets = {"Apos": a["P"], "Aneg": a["N"], "Bpos": b["P"], "Bneg": b["N"]}
    return sets, a["N"] & (b["P"] | b["N"]), a["P"] & (b["P"] | b["N"]), b["P"]


def _comparison_arms(f: Finding) -> Arms:
    """The arms the comparison formed, less the unknowns; the outcome is positive."""
    assert f.arms is not None  # noqa: S101 - `needs: arms`, checked when the package loads
    labels = f.labels[f.data["definitions"][0]["condition_id"]]
    sets = {"G0": f.arms[0], "G1": f.arms[1], "P": labels["P"], "N": labels["N"],
            "U": labels["U"]}
    return sets, f.arms[0] - labels["U"], f.arms[1] - labels["U"], labels["P"]


# kinds.yaml `arms`: how the arms are read (and, for a comparison, which check forms them)
ARMS: dict[str, Callable[[Finding], Arms]] = {
    "conditions": _condition_arms, "comparison_groups": _comparison_arms,
    "cutoff": _comparison_arms}
FORMED_BY: dict[str, Callable[[Any, Finding], Failure]] = {
    "comparison_groups": group_values, "cutoff": cutoff_format}
# kinds.yaml `counter_pool`: the documents a counterexample may come from
POOLS: dict[str, Callable[[list[Labels]], set[str]]] = {
    "negative": lambda labels: labels[0]["N"],
    "discordant": lambda labels: (labels[0]["P"] & labels[1]["N"]) |
    (labels[0]["N"] & labels[1]["P"]),
}


def expected_statistics(g: Gates, f: Finding) -> dict[str, Any]:
    """Every statistic the finding must report, recomputed (§6)."""
    named, k0, k1, outcome = ARMS[g.rules["arms"]](f)
    sets: dict[str, set[str]] = {"CORPUS": g.ids, "SEL": f.sel_set, **named}
    r: Mapping[str, Any] = g.p.robustness
    robust = robustness(f.sel, g.corpus.rows, k0, k1, outcome, r["axes"], r["fields"],
                        r["min_known_per_arm"])
    return expected(g.p.statistics[g.kind], sets, robust, g.p.key_order[g.kind])


def support_minimum(g: Gates, f: Finding) -> Failure:
    supporting = {e["doc_id"] for e in f.data["evidence"] if e["role"] == "supporting"}
    positive_everywhere = set.intersection(*(lab["P"] for lab in f.labels.values()))
    confirmed = supporting & positive_everywhere
    limit = g.params["min_supporting_documents"]
    if len(supporting) >= limit and supporting == confirmed:
        return None
    return "", {"observed": len(confirmed), "limit": limit}


def counterexample(g: Gates, f: Finding) -> Failure:
    labels = [f.labels[d["condition_id"]] for d in f.data["definitions"]]
    pool = POOLS[g.rules["counter_pool"]](labels)
    counter = [e["doc_id"] for e in f.data["evidence"] if e["role"] == "counterexample"]
    outside = [d for d in counter if d not in pool]
    if outside:
        return "", {"detail": f"{outside[0]!r} is not in the counter pool"}
    if pool and not counter:
        return "", {"detail": f"the counter pool holds {len(pool)} document(s) and no "
                              "counterexample is quoted"}
    return None


def statistic_keys(g: Gates, f: Finding) -> Failure:
    want, got = set(f.expected), set(f.data["statistics"])
    if want == got:
        return None
    return "", {"detail": f"missing {sorted(want - got)[:5]}, extra {sorted(got - want)[:5]}"}


def duplicate_span(g: Gates, f: Finding) -> Failure:
    seen = set()
    for e in f.data["evidence"]:
        span = (e["doc_id"], e["start"], e["end"])
        if span in seen:
            return "", {"detail": f"{span[0]} [{span[1]}, {span[2]})"}
        seen.add(span)
    return None


TABLE: dict[str, Check] = {
    "finding_identity": row(finding_identity, needs="finding_keys"),
    "non_blank_text": row(non_blank_text, needs="finding_keys"),
    "condition_count": row(condition_count, params=("conditions_per_kind",),
                           needs="finding_keys", provides="condition_count"),
    "duplicate_condition": row(duplicate_condition, needs="condition_count",
                               provides="unique_conditions"),
    "condition_match": row(condition_match, needs="unique_conditions",
                           provides="matched_conditions"),
    "partition": row(partition, needs="matched_conditions selection", provides="labels"),
    "support_required": row(support_required, needs="finding_keys"),
    "evidence_records": row(evidence_records, params=("evidence_roles",),
                            parts=("source_role", "offset"), needs="finding_keys selection",
                            provides="evidence"),
    "statistics": row(statistics, needs="labels arms", provides="expected"),
    "support_minimum": row(support_minimum, params=("min_supporting_documents",),
                           needs="labels evidence"),
    "counterexample": row(counterexample, needs="labels evidence"),
    "statistic_keys": row(statistic_keys, needs="expected"),
    "duplicate_span": row(duplicate_span, needs="evidence"),
}
