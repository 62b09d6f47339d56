"""The local gates of finding-quality-discovery (§5): deterministic, exhaustive, first error.

Gate order, codes and messages come from ``gates.yaml``; parameters from ``protocol.yaml``;
statistics from ``statistics.yaml``. Each check here is a primitive that returns None when it
holds, or (part, details) naming which part failed and what it saw.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from engine.protocols.discovery.corpus import MISSING, Corpus, equal, meta, ordered, strict_date
from engine.protocols.discovery.stats import KindStatistics, expected, robustness
from engine.records.strict_json import is_integer, is_number, is_scalar

FINDING_KEYS = frozenset({"finding_id", "claim", "kind", "scope", "population", "comparison",
                          "definitions", "assignments", "statistics", "evidence",
                          "limitations"})
STATES = ("positive_doc_ids", "negative_doc_ids", "unknown_doc_ids")
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


@dataclass
class Protocol:
    """The compiled spec data the gates run on."""

    gates: list[dict[str, Any]]
    params: dict[str, Any]
    statistics: dict[str, KindStatistics]
    key_order: dict[str, list[str]]
    robustness: dict[str, Any]
    tolerance: float
    schema: Any
    message_limit: int


def check_messages(gates: list[dict[str, Any]]) -> None:
    """Message templates may only use simple {names}: ValueError otherwise."""
    for gate in gates:
        for _, name, spec, conversion in string.Formatter().parse(gate["message"]):
            if name is not None and (not name.isidentifier() or spec or conversion):
                raise ValueError(f"gate {gate['id']}: message field {{{name}}} must be a "
                                 "plain name")


class _Safe(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return f"{{{key}}}"


class Gates:
    """Runs the local gates of one submission for one task."""

    def __init__(self, protocol: Protocol, task: dict[str, Any], corpus: Corpus) -> None:
        self.p, self.task, self.corpus = protocol, task, corpus
        self.params = protocol.params
        self.kind = task["kind"]
        self.ids = set(corpus.ids)
        self.seen_ids: set[str] = set()

    # ---- driver -------------------------------------------------------------------------

    def run(self, submission: Any) -> dict[str, Any] | None:
        """The first error object, or None when the submission is valid."""
        for gate in self._gates("submission"):
            failure = self._check(gate, submission)
            if failure:
                return self._error(gate, failure, None)
        findings = [Finding(i, f) for i, f in enumerate(submission["findings"])]
        for phase in ("A", "B"):
            for finding in findings:
                for gate in self._gates(phase):
                    failure = self._check(gate, finding)
                    if failure:
                        return self._error(gate, failure, finding)
        return None

    def selection(self, finding: dict[str, Any]) -> set[str]:
        """The selected population of a finding that passed the gates."""
        rules = finding["population"]["filters"]
        return {d for d in self.corpus.ids
                if all(_matches(meta(self.corpus.rows[d], r["field"]), r) for r in rules)}

    def _gates(self, phase: str) -> list[dict[str, Any]]:
        return [g for g in self.p.gates if g["phase"] == phase and
                (not g.get("kinds") or self.kind in g["kinds"])]

    def _check(self, gate: dict[str, Any], subject: Any) -> Failure:
        check: Callable[[Any], Failure] = getattr(self, f"check_{gate['check']}")
        return check(subject)

    def _error(self, gate: dict[str, Any], failure: tuple[str, dict[str, Any]],
               finding: Finding | None) -> dict[str, Any]:
        part, details = failure
        code = gate["codes"][part] if "codes" in gate else gate["code"]
        message = string.Formatter().vformat(gate["message"], (), _Safe(details))
        error: dict[str, Any] = {"code": code, "message": message[:self.p.message_limit]}
        if finding is not None:
            error["finding_index"] = finding.index
            if isinstance(finding.data.get("finding_id"), str) and part != "unvalidated_id":
                error["finding_id"] = finding.data["finding_id"]
        for key in ("key", "condition_id", "evidence_index", "rule_index"):
            if key in details:
                error[key] = details[key]
        return error

    # ---- G1, G2 ---------------------------------------------------------------------------

    def check_schema(self, sub: Any) -> Failure:
        errors = sorted(self.p.schema.iter_errors(sub), key=jsonschema.exceptions.relevance)
        if not errors:
            return None
        where = "/".join(map(str, errors[0].absolute_path)) or "$"
        return "", {"detail": f"{where}: {errors[0].message}"}

    def check_submission_fields(self, sub: dict[str, Any]) -> Failure:
        ok = set(sub) == {"task_id", "findings", "abstention_reason"} and \
            sub.get("task_id") == self.task["task_id"]
        return None if ok else ("", {"expected": self.task["task_id"]})

    def check_finding_count(self, sub: dict[str, Any]) -> Failure:
        limit = self.task["max_findings"]
        ok = isinstance(sub["findings"], list) and len(sub["findings"]) <= limit
        return None if ok else ("", {"observed": len(sub["findings"]), "limit": limit})

    def check_empty_answer(self, sub: dict[str, Any]) -> Failure:
        reason = sub.get("abstention_reason")
        ok = isinstance(reason, str) and (bool(sub["findings"]) or bool(reason.strip()))
        return None if ok else ("", {})

    # ---- G3, G4 ---------------------------------------------------------------------------

    def check_finding_fields(self, f: Finding) -> Failure:
        keys = set(f.data) if isinstance(f.data, dict) else set()
        if keys == FINDING_KEYS:
            return None
        return "", {"detail": f"missing {sorted(FINDING_KEYS - keys)}, extra "
                              f"{sorted(keys - FINDING_KEYS)}"}

    def check_evidence_span_limit(self, f: Finding) -> Failure:
        limit = self.params["max_evidence_spans"]
        n = len(f.data["evidence"])
        return None if n <= limit else ("", {"observed": n, "limit": limit})

    def check_population_shape(self, f: Finding) -> Failure:
        pop = f.data["population"]
        return None if isinstance(pop, dict) and set(pop) == {"filters"} else ("", {})

    def check_filter_count(self, f: Finding) -> Failure:
        rules = f.data["population"]["filters"]
        limit = self.params["max_filters"]
        if isinstance(rules, list) and len(rules) <= limit:
            return None
        return "", {"observed": len(rules) if isinstance(rules, list) else "not a list",
                    "limit": limit}

    def check_filter_rules(self, f: Finding) -> Failure:
        allowed = self.task["allowed_metadata_fields"]
        lo, hi = self.params["in_values"]["min"], self.params["in_values"]["max"]
        for i, rule in enumerate(f.data["population"]["filters"]):
            if not isinstance(rule, dict) or set(rule) != {"field", "op", "value"} or \
                    rule["field"] not in allowed:
                return "field", {"rule_index": i, "detail": "a rule is exactly field, op, "
                                 f"value, with field in {allowed}"}
            if rule["op"] not in self.params["operators"]:
                return "op", {"rule_index": i, "detail": f"op must be one of "
                              f"{self.params['operators']}"}
            value = rule["value"]
            ok = (isinstance(value, list) and lo <= len(value) <= hi and
                  all(is_scalar(v) for v in value)) if rule["op"] == "in" else is_scalar(value)
            if not ok:
                return "values", {"rule_index": i, "detail": "in takes 1-20 scalars; other "
                                  "operators take one scalar"}
        return None

    def check_population_size(self, f: Finding) -> Failure:
        rules = f.data["population"]["filters"]
        f.sel = [d for d in self.corpus.ids
                 if all(_matches(meta(self.corpus.rows[d], r["field"]), r) for r in rules)]
        f.sel_set = set(f.sel)
        limit = self.task["min_population_n"]
        return None if len(f.sel) >= limit else ("", {"observed": len(f.sel), "limit": limit})

    def check_comparison_null(self, f: Finding) -> Failure:
        return None if f.data["comparison"] is None else ("", {})

    def check_comparison_object(self, f: Finding) -> Failure:
        return None if isinstance(f.data["comparison"], dict) else ("", {})

    def check_group_field(self, f: Finding) -> Failure:
        comp = f.data["comparison"]
        allowed = [x for x in self.task["allowed_metadata_fields"]
                   if x != self.params["temporal_field"]]
        ok = set(comp) == {"field", "groups"} and comp["field"] in allowed
        return None if ok else ("", {})

    def check_group_shape(self, f: Finding) -> Failure:
        groups = f.data["comparison"]["groups"]
        n = self.params["groups"]
        ok = isinstance(groups, list) and len(groups) == n and \
            all(isinstance(g, list) for g in groups)
        return None if ok else ("", {"limit": n})

    def check_group_lists(self, f: Finding) -> Failure:
        lo, hi = self.params["group_values"]["min"], self.params["group_values"]["max"]
        ok = all(lo <= len(g) <= hi and all(is_scalar(v) for v in g)
                 for g in f.data["comparison"]["groups"])
        return None if ok else ("", {"min": lo, "limit": hi})

    def check_group_values(self, f: Finding) -> Failure:
        values = [v for g in f.data["comparison"]["groups"] for v in g]
        for i, a in enumerate(values):
            for b in values[i + 1:]:
                if equal(a, b):
                    return "", {"detail": f"{a!r} and {b!r} are equal"}
        self._arms_group(f)
        return None

    def _arms_group(self, f: Finding) -> None:
        comp = f.data["comparison"]
        arms = []
        for group in comp["groups"]:
            arms.append({d for d in f.sel
                         if (v := meta(self.corpus.rows[d], comp["field"])) is not MISSING and
                         any(equal(v, g) for g in group)})
        f.arms = (arms[0], arms[1])

    def check_temporal_field(self, f: Finding) -> Failure:
        comp = f.data["comparison"]
        ok = set(comp) == {"field", "cutoff"} and comp["field"] == self.params["temporal_field"]
        return None if ok else ("", {})

    def check_cutoff_format(self, f: Finding) -> Failure:
        cutoff = f.data["comparison"]["cutoff"]
        day = strict_date(cutoff) if isinstance(cutoff, str) and len(cutoff) == 10 else None
        if day is None:
            return "", {}
        dated = [(d, strict_date(self.corpus.rows[d].get("timestamp"))) for d in f.sel]
        f.arms = ({d for d, when in dated if when is not None and when < day},
                  {d for d, when in dated if when is not None and when >= day})
        return None

    def check_arm_size(self, f: Finding) -> Failure:
        assert f.arms is not None
        limit = self.task["min_group_n"]
        sizes = [len(a) for a in f.arms]
        return None if min(sizes) >= limit else ("", {"observed": sizes, "limit": limit})

    # ---- G5, G6, G7 -----------------------------------------------------------------------

    def check_finding_identity(self, f: Finding) -> Failure:
        fid = f.data["finding_id"]
        if fid in self.seen_ids or f.data["kind"] != self.kind:
            return "", {"expected": self.kind}
        self.seen_ids.add(fid)
        return None

    def check_non_blank_text(self, f: Finding) -> Failure:
        ok = all(isinstance(f.data[k], str) and f.data[k].strip()
                 for k in ("finding_id", "claim", "scope"))
        return None if ok else ("", {})

    def check_condition_count(self, f: Finding) -> Failure:
        n = self.params["conditions_per_kind"][self.kind]
        ok = len(f.data["definitions"]) == n and len(f.data["assignments"]) == n
        return None if ok else ("", {"expected": n})

    def check_duplicate_condition(self, f: Finding) -> Failure:
        ids = [d["condition_id"] for d in f.data["definitions"]]
        return None if len(set(ids)) == len(ids) else ("", {})

    def check_condition_match(self, f: Finding) -> Failure:
        defined = {d["condition_id"] for d in f.data["definitions"]}
        assigned = {a["condition_id"] for a in f.data["assignments"]}
        return None if defined == assigned else ("", {})

    def check_partition(self, f: Finding) -> Failure:
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

    def check_support_required(self, f: Finding) -> Failure:
        ok = any(e["role"] == "supporting" for e in f.data["evidence"])
        return None if ok else ("", {})

    def check_evidence_records(self, f: Finding) -> Failure:
        for i, record in enumerate(f.data["evidence"]):
            if record["doc_id"] not in f.sel_set or \
                    record["role"] not in self.params["evidence_roles"]:
                return "source_role", {"evidence_index": i, "detail": "doc_id must be in the "
                                       "selected population and role one of "
                                       f"{self.params['evidence_roles']}"}
            text = self.corpus.rows[record["doc_id"]]["text"]
            start, end = record["start"], record["end"]
            if not (is_integer(start) and is_integer(end) and 0 <= start < end <= len(text)
                    and text[start:end] == record["quote"]):
                return "offset", {"evidence_index": i, "detail": "text[start:end] must equal "
                                  "the quote exactly (code-point offsets, integers)"}
        return None

    def check_statistics(self, f: Finding) -> Failure:
        f.expected = self._expected(f)
        reported = f.data["statistics"]
        for key, want in f.expected.items():
            got = reported.get(key)
            ok = (want is None and got is None) or (
                want is not None and is_number(got) and abs(got - want) <= self.p.tolerance)
            if not ok:
                return "", {"key": key, "expected": want, "reported": got}
        return None

    def _expected(self, f: Finding) -> dict[str, Any]:
        sets: dict[str, set[str]] = {"CORPUS": self.ids, "SEL": f.sel_set}
        definitions = f.data["definitions"]
        if self.kind == "compound_association":
            a = f.labels[definitions[0]["condition_id"]]
            b = f.labels[definitions[1]["condition_id"]]
            sets |= {"Apos": a["P"], "Aneg": a["N"], "Bpos": b["P"], "Bneg": b["N"]}
            k0 = a["N"] & (b["P"] | b["N"])
            k1 = a["P"] & (b["P"] | b["N"])
            outcome = b["P"]
        else:
            assert f.arms is not None
            labels = f.labels[definitions[0]["condition_id"]]
            sets |= {"G0": f.arms[0], "G1": f.arms[1], "P": labels["P"], "N": labels["N"],
                     "U": labels["U"]}
            k0, k1, outcome = f.arms[0] - labels["U"], f.arms[1] - labels["U"], labels["P"]
        r = self.p.robustness
        robust = robustness(f.sel, self.corpus.rows, k0, k1, outcome, r["axes"], r["fields"],
                            r["min_known_per_arm"])
        return expected(self.p.statistics[self.kind], sets, robust, self.p.key_order[self.kind])

    # ---- G9 (phase B) ---------------------------------------------------------------------

    def check_support_minimum(self, f: Finding) -> Failure:
        supporting = {e["doc_id"] for e in f.data["evidence"] if e["role"] == "supporting"}
        positive_everywhere = set.intersection(*(lab["P"] for lab in f.labels.values()))
        confirmed = supporting & positive_everywhere
        limit = self.params["min_supporting_documents"]
        if len(supporting) >= limit and supporting == confirmed:
            return None
        return "", {"observed": len(confirmed), "limit": limit}

    def check_counterexample(self, f: Finding) -> Failure:
        labels = [f.labels[d["condition_id"]] for d in f.data["definitions"]]
        if self.kind == "compound_association":
            a, b = labels
            pool = (a["P"] & b["N"]) | (a["N"] & b["P"])
        else:
            pool = labels[0]["N"]
        counter = [e["doc_id"] for e in f.data["evidence"] if e["role"] == "counterexample"]
        outside = [d for d in counter if d not in pool]
        if outside:
            return "", {"detail": f"{outside[0]!r} is not in the counter pool"}
        if pool and not counter:
            return "", {"detail": f"the counter pool holds {len(pool)} document(s) and no "
                                  "counterexample is quoted"}
        return None

    def check_statistic_keys(self, f: Finding) -> Failure:
        want, got = set(f.expected), set(f.data["statistics"])
        if want == got:
            return None
        return "", {"detail": f"missing {sorted(want - got)[:5]}, extra {sorted(got - want)[:5]}"}

    def check_duplicate_span(self, f: Finding) -> Failure:
        seen = set()
        for e in f.data["evidence"]:
            span = (e["doc_id"], e["start"], e["end"])
            if span in seen:
                return "", {"detail": f"{span[0]} [{span[1]}, {span[2]})"}
            seen.add(span)
        return None


def _matches(value: Any, rule: Mapping[str, Any]) -> bool:
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
