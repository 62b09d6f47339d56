"""Expectations come from governance (docs/security.md), never from the evidence.

Every inspection parameter is classed in its schema (``x-class``) as an *observation* (what
the agent did, read from the records) or an *expectation* (what it should have done). An
expectation given literally is the policy's. One given as a selector reads the unit, which is
the record with the suite's case bound as ``case``; it is governance's only when it reads
``case.expected`` (or nothing but literals), or when the unit records are themselves the
suite (a format that derives the suite: its cases are pinned by ``suite_sha256``, or the
release is INCOMPLETE with SUITE_NOT_PINNED).

For any other format an expectation selector left at its default (Assevra's record field,
``allowed_tools``) is pointed at ``case.expected.<field>``; one written in the policy that
can reach record data is EXPECTATION_FROM_EVIDENCE: a spec error under ``purpose: release``,
a warning under triage and self_test, which can never PASS anyway.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import jmespath

from engine.errors import Problem
from engine.inspections import EXPECTATION, TABLE
from engine.spec.compile import selector
from engine.spec.model import Inspection, Policy
from engine.spec.yaml import Document

CODE = "EXPECTATION_FROM_EVIDENCE"
SUITE = "case.expected"

# Where a JMESPath node's value comes from, given where its current node comes from.
_RECORD, _CASE, _GOVERNED = "record", "case", "governed"
_CHAINS = frozenset({"subexpression", "pipe", "index_expression", "projection",
                     "value_projection", "filter_projection", "flatten"})
_PASS_THROUGH = frozenset({"current", "identity", "index", "slice"})
_COMBINED = frozenset({"or_expression", "and_expression", "not_expression", "comparator",
                       "multi_select_list", "multi_select_dict", "key_val_pair"})


def _origin(node: Mapping[str, Any], at: str) -> str | None:
    """Where ``node``'s value comes from when evaluated at a value from ``at``: governed
    (only ``case.expected`` and literals), the case, the record, or None when it can reach
    record data. Any node kind not listed here is None: fail closed."""
    kind = node.get("type")
    kids = [k for k in node.get("children", []) if isinstance(k, Mapping)]
    if kind == "literal":
        return _GOVERNED
    if kind in _PASS_THROUGH:
        return at
    if kind == "field":
        step = {(_RECORD, "case"): _CASE, (_CASE, "expected"): _GOVERNED}
        return _GOVERNED if at == _GOVERNED else step.get((at, str(node.get("value"))))
    if kind in _CHAINS:
        # left to right, each part evaluated at what the part before it selected; a
        # filter's condition (the last child) reads the elements the left side selected
        if kind == "filter_projection":
            left = _origin(kids[0], at)
            parts = [left] if left is None else [_origin(kids[1], left), _origin(kids[2], left)]
            return _GOVERNED if all(p == _GOVERNED for p in parts) else None
        for kid in kids:
            reached = _origin(kid, at)
            if reached is None:
                return None
            at = reached
        return at
    if kind in _COMBINED:
        combined = [_origin(kid, at) for kid in kids]
        return _GOVERNED if combined and all(c == _GOVERNED for c in combined) else None
    if kind == "function_expression":
        # an &expression is applied to the elements of the other arguments
        plain = [_origin(kid, at) for kid in kids if kid.get("type") != "expref"]
        if not all(p == _GOVERNED for p in plain):
            return None
        refs = [_origin(kid["children"][0], _GOVERNED) for kid in kids
                if kid.get("type") == "expref"]
        return _GOVERNED if all(r == _GOVERNED for r in refs) else None
    return None


def governed(source: str) -> bool:
    """Whether a selector reads nothing but ``case.expected`` and literals."""
    try:
        tree = jmespath.compile(source).parsed
    except jmespath.exceptions.JMESPathError:
        return False
    return _origin(tree, _RECORD) == _GOVERNED


def _selectors(value: Any, prop: Mapping[str, Any]) -> Iterator[tuple[tuple[Any, ...], str]]:
    """(path under the parameter, source) of each selector a parameter's value holds."""
    if prop.get("x-jmespath") and isinstance(value, str):
        yield (), value
    elif prop.get("x-jmespath-list") and isinstance(value, list):
        yield from (((i,), v) for i, v in enumerate(value) if isinstance(v, str))
    elif isinstance(prop.get("additionalProperties"), Mapping) and \
            prop["additionalProperties"].get("x-jmespath") and isinstance(value, dict):
        yield from (((k,), v) for k, v in value.items() if isinstance(v, str))


def _expectations(inspection: Inspection) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for key, prop in inspection.primitive.schema.get("properties", {}).items():
        if prop.get("x-class") == EXPECTATION:
            yield key, prop


def pointed_at_suite(policy: Policy) -> Policy:
    """The policy with each expectation selector left at its default pointed at the suite
    (``allowed_tools`` -> ``case.expected.allowed_tools``), for unit records that are not the
    suite. The compiled policy is shared by Evaluations, so a changed copy is returned."""
    changed: dict[str, Inspection] = {}
    for inspection in policy.inspections.values():
        params = dict(inspection.params)
        for key, prop in _expectations(inspection):
            if key in inspection.written or not (prop.get("x-jmespath") and "default" in prop):
                continue
            source = f"{SUITE}.{prop['default']}"
            params[key], params[f"{key}_source"] = selector(source), source
        if params != inspection.params:
            changed[inspection.id] = dataclasses.replace(inspection, params=params)
    if not changed:
        return policy
    return dataclasses.replace(policy, inspections={k: changed.get(k, v) for k, v in
                                                    policy.inspections.items()})


def from_evidence(doc: Document, fmt: str) -> list[Problem]:
    """EXPECTATION_FROM_EVIDENCE at each expectation selector the policy writes that can
    read record data, when the unit records (format ``fmt``) are not the pinned suite."""
    out = []
    for i, entry in enumerate(doc.data["spec"]["inspections"]):
        primitive = TABLE.get(entry.get("type"))
        if primitive is None:
            continue
        for key, prop in primitive.schema.get("properties", {}).items():
            if prop.get("x-class") != EXPECTATION or key not in entry:
                continue
            for under, source in _selectors(entry[key], prop):
                if governed(source):
                    continue
                out.append(doc.problem(
                    ("spec", "inspections", i, key, *under), CODE,
                    f"'{entry['id']}': {key} is an expectation (what the agent should have "
                    f"done), but '{source}' can read the {fmt} records, which the evaluated "
                    "party writes", f"write it as a literal in the policy, or read it from "
                    f"the suite: {SUITE}.<field>"))
    return out
