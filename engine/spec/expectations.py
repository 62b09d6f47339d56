"""Expectations and scope come from governance (docs/security.md), never from the evidence.

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

The same holds for what decides which units a rule applies to (an inspection's ``when``,
``controls.when``): a guard that reads the records lets them opt out of a check, so it may
read only the suite's case (``case.*``, which no record can write: RESERVED_FIELD) and
literals, else SCOPE_FROM_EVIDENCE. A rubric variable that describes the case (the planted
text, the request) or that ``pass_when`` holds the verdict to (``should_refuse``) is an
expectation that may read the whole case too.

For a format that derives the suite from its records, what is governed is what the pin
covers: the record keys the format does not list as measured (nor start with '_').
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import jmespath

from engine.errors import Problem
from engine.inspections import EXPECTATION, TABLE
from engine.records.formats import Format
from engine.spec.compile import selector
from engine.spec.model import Inspection, Policy
from engine.spec.yaml import Document

CODE = "EXPECTATION_FROM_EVIDENCE"
SCOPE = "SCOPE_FROM_EVIDENCE"
SUITE = "case.expected"

# Where a JMESPath node's value comes from, given where its current node comes from.
_RECORD, _CASE, _GOVERNED = "record", "case", "governed"
_CHAINS = frozenset({"subexpression", "pipe", "index_expression", "projection",
                     "value_projection", "filter_projection", "flatten"})
_PASS_THROUGH = frozenset({"current", "identity", "index", "slice"})
_COMBINED = frozenset({"or_expression", "and_expression", "not_expression", "comparator",
                       "multi_select_list", "multi_select_dict", "key_val_pair"})

# A root: where the field ``name`` read at a value from ``at`` leads (None: record data).
Root = Callable[[str, str], str | None]


def expected_root(at: str, name: str) -> str | None:
    """Only ``case.expected`` is governed: an expectation parameter's root."""
    return {(_RECORD, "case"): _CASE, (_CASE, "expected"): _GOVERNED}.get((at, name))


def case_root(at: str, name: str) -> str | None:
    """The whole suite case is governed: a guard's or a rubric variable's root."""
    return _GOVERNED if (at, name) == (_RECORD, "case") else None


def suite_root(fmt: Format) -> Root:
    """The record keys the format's suite part holds (what ``suite_sha256`` pins)."""
    def root(at: str, name: str) -> str | None:
        return _GOVERNED if at == _RECORD and fmt.suite_key(name) else None
    return root


def _origin(node: Mapping[str, Any], at: str, root: Root) -> str | None:
    """Where ``node``'s value comes from when evaluated at a value from ``at``: governed
    (only what ``root`` admits, and literals), the case, the record, or None when it can
    reach record data. Any node kind not listed here is None: fail closed."""
    kind = node.get("type")
    kids = [k for k in node.get("children", []) if isinstance(k, Mapping)]
    if kind == "literal":
        return _GOVERNED
    if kind in _PASS_THROUGH:
        return at
    if kind == "field":
        return _GOVERNED if at == _GOVERNED else root(at, str(node.get("value")))
    if kind in _CHAINS:
        # left to right, each part evaluated at what the part before it selected; a
        # filter's condition (the last child) reads the elements the left side selected
        if kind == "filter_projection":
            left = _origin(kids[0], at, root)
            parts = [left] if left is None else [_origin(kids[1], left, root),
                                                 _origin(kids[2], left, root)]
            return _GOVERNED if all(p == _GOVERNED for p in parts) else None
        for kid in kids:
            reached = _origin(kid, at, root)
            if reached is None:
                return None
            at = reached
        return at
    if kind in _COMBINED:
        combined = [_origin(kid, at, root) for kid in kids]
        return _GOVERNED if combined and all(c == _GOVERNED for c in combined) else None
    if kind == "function_expression":
        # an &expression is applied to the elements of the other arguments
        plain = [_origin(kid, at, root) for kid in kids if kid.get("type") != "expref"]
        if not all(p == _GOVERNED for p in plain):
            return None
        refs = [_origin(kid["children"][0], _GOVERNED, root) for kid in kids
                if kid.get("type") == "expref"]
        return _GOVERNED if all(r == _GOVERNED for r in refs) else None
    return None


def governed(source: str, root: Root = expected_root) -> bool:
    """Whether a selector reads nothing but what ``root`` admits (by default
    ``case.expected``) and literals."""
    try:
        tree = jmespath.compile(source).parsed
    except jmespath.exceptions.JMESPathError:
        return False
    return _origin(tree, _RECORD, root) == _GOVERNED


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


def expected_entries(prop: Mapping[str, Any], params: Mapping[str, Any]) -> set[str]:
    """The entries of a rubric-variable map that are expectations: those its schema classes
    so (``x-entries``), and those the formula parameter it names (``x-entries-named-by``:
    ``pass_when``) uses, given the inspection's compiled ``params``."""
    out = {k for k, c in prop.get("x-entries", {}).items() if c == EXPECTATION}
    formula = params.get(prop.get("x-entries-named-by", ""))
    return out | set(getattr(formula, "names", ()))


def pointed_at_suite(policy: Policy) -> Policy:
    """The policy with each expectation selector left at its default pointed at the suite
    (``allowed_tools`` -> ``case.expected.allowed_tools``; the injection rubric's
    ``injection`` -> ``case.input.injection``), for unit records that are not the suite.
    The compiled policy is shared by Evaluations, so a changed copy is returned."""
    changed: dict[str, Inspection] = {}
    for inspection in policy.inspections.values():
        params = dict(inspection.params)
        for key, prop in inspection.primitive.schema.get("properties", {}).items():
            if key in inspection.written or "default" not in prop:
                continue
            if prop.get("x-class") == EXPECTATION and prop.get("x-jmespath"):
                source = f"{SUITE}.{prop['default']}"
                params[key], params[f"{key}_source"] = selector(source), source
            elif "x-suite-default" in prop:
                params[key] = {**params[key], **{name: selector(source) for name, source
                                                  in prop["x-suite-default"].items()}}
        if params != inspection.params:
            changed[inspection.id] = dataclasses.replace(inspection, params=params)
    if not changed:
        return policy
    return dataclasses.replace(policy, inspections={k: changed.get(k, v) for k, v in
                                                    policy.inspections.items()})


def _sites(doc: Document, policy: Policy, derived: Format | None
           ) -> Iterator[tuple[tuple[Any, ...], str, str, Root, str]]:
    """(where, source, code, root, what it is) of each selector the policy writes that must
    read only governance data: expectation parameters, the rubric variables classed
    expectations, and the guards that choose which units a rule applies to."""
    spec = doc.data["spec"]
    if derived is not None:
        param_root = case = suite_root(derived)
    else:
        param_root, case = expected_root, case_root
    if isinstance(spec.get("controls"), dict) and isinstance(spec["controls"].get("when"), str):
        yield ("spec", "controls", "when"), spec["controls"]["when"], SCOPE, case, \
            "controls.when decides which units are known-bad controls"
    for i, entry in enumerate(spec["inspections"]):
        where = ("spec", "inspections", i)
        if isinstance(entry.get("when"), str):
            yield (*where, "when"), entry["when"], SCOPE, case, \
                f"'{entry['id']}': when decides which units it checks"
        primitive, compiled = TABLE.get(entry.get("type")), policy.inspections.get(entry["id"])
        if primitive is None:
            continue
        for key, prop in primitive.schema.get("properties", {}).items():
            if key not in entry:
                continue
            if prop.get("x-class") == EXPECTATION:
                for under, source in _selectors(entry[key], prop):
                    yield (*where, key, *under), source, CODE, param_root, \
                        f"'{entry['id']}': {key} is an expectation (what the agent should " \
                        "have done)"
            elif isinstance(entry[key], dict) and compiled is not None:
                for name in sorted(expected_entries(prop, compiled.params) & set(entry[key])):
                    yield (*where, key, name), entry[key][name], CODE, case, \
                        f"'{entry['id']}': {key}.{name} is an expectation (it describes " \
                        "the case, or pass_when holds the verdict to it)"


def from_evidence(doc: Document, policy: Policy, fmt: str, derived: Format | None = None
                  ) -> list[Problem]:
    """EXPECTATION_FROM_EVIDENCE / SCOPE_FROM_EVIDENCE at each selector the policy writes
    that can read record data the evaluated party controls: for records that are not the
    suite (format ``fmt``), anything but the suite's case; for a format that derives the
    suite (``derived``), its measured keys and the keys the pin leaves out."""
    out = []
    for where, source, code, root, what in _sites(doc, policy, derived):
        if not isinstance(source, str) or governed(source, root):
            continue
        if derived is not None:
            why = f"'{source}' can read what the {fmt} records measured, which suite_sha256 " \
                  "does not pin"
            hint = "read only the case's own fields (inputs and assertions), or a literal"
        elif code == SCOPE or root is case_root:
            why = f"'{source}' can read the {fmt} records, which the evaluated party writes"
            hint = "read the suite's case (case.tags, case.id, case.expected.<field>) or a " \
                   "literal"
        else:
            why = f"'{source}' can read the {fmt} records, which the evaluated party writes"
            hint = f"write it as a literal in the policy, or read it from the suite: " \
                   f"{SUITE}.<field>"
        out.append(doc.problem(where, code, f"{what}, but {why}", hint))
    return out
