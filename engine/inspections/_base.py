"""What every inspection primitive shares: outcomes, the primitive row, value helpers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jmespath

from engine.records.clip import clip

PASS, FAIL, ERROR, ABSTAIN, SKIPPED = "PASS", "FAIL", "ERROR", "ABSTAIN", "SKIPPED"
STATUSES = (PASS, FAIL, ERROR, ABSTAIN, SKIPPED)


@dataclass(frozen=True)
class Outcome:
    """What a primitive found for one unit; it does not know where it is."""

    status: str
    expected: Any = None
    observed: Any = None
    message: str = ""
    code: str = ""
    record: Any = None  # a structured result a protocol report collects (one per unit)


@dataclass(frozen=True)
class Context:
    """What a primitive may read besides the unit and its parameters."""

    wilson_z: float
    budgets: Mapping[str, Any] = field(default_factory=dict)
    judge: Any = None  # the judge runtime, when the Evaluation configures a judge
    inputs: Mapping[str, Any] = field(default_factory=dict)  # input name -> path
    memo: dict[Any, Any] = field(default_factory=dict)  # per-run cache primitives may share


Run = Callable[[Mapping[str, Any], Mapping[str, Any], Context], Outcome]


@dataclass(frozen=True)
class Primitive:
    """One row of the inspection table: its function, parameter schema and a summary.

    Parameters marked in the schema with ``x-jmespath``, ``x-regex``, ``x-formula`` or
    ``x-schema`` are compiled once when the spec loads; ``run`` receives compiled values.
    """

    run: Run
    schema: Mapping[str, Any]
    summary: str
    mode: str = "deterministic"  # or "heuristic", "llm-judge": how the verdict is reached
    measure: str | None = None  # "cost" or "latency": observed numbers summarised in notes
    asks_judge: bool = False  # may ask the LLM judge (its prompts are gathered first)
    falls_back: bool = False  # a ``fallback`` parameter names the inspection to run instead
    # when no judge is set
    judged_row: Callable[[Mapping[str, Any]], bool] | None = None  # of an ``asks_judge``
    # primitive: whether a row's verdict is the judge's (None: every row's is); calibration
    # measures only those

    def judge_decides(self, expected: Any) -> bool:
        """Whether the judge decided a row whose expectation is ``expected``: the rows
        calibration measures the judge on, and the only ones its correction applies to."""
        return self.asks_judge and (self.judged_row is None or
                                    self.judged_row({"expected": expected}))


class Missing:
    """Selected nothing: the evidence is not there."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING = Missing()


class SelectorFailed(Exception):
    """A selector that cannot be applied to this record (JMESPath type errors such as
    ``contains(tags, 'x')`` where tags is a number): the record's problem, never a crash."""

    code = "SELECTOR_FAILED"


def search(expr: Any, data: Any) -> Any:
    """``expr.search(data)``; SelectorFailed (coded, with the expression) when it cannot apply."""
    try:
        return expr.search(data)
    except (jmespath.exceptions.JMESPathError, TypeError, ValueError, OverflowError,
            RecursionError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SelectorFailed(f"'{clip(getattr(expr, 'expression', '?'))}' cannot be applied "
                             f"to this record: {clip(reason)}") from None


def select(expr: Any, unit: Mapping[str, Any]) -> Any:
    """Apply a compiled JMESPath expression; null and absent both become MISSING."""
    value = search(expr, unit)
    return MISSING if value is None else value


def missing(params: Mapping[str, Any], key: str = "actual") -> Outcome:
    """The ERROR outcome for a selector that found nothing."""
    source = params.get(f"{key}_source", key)
    return Outcome(ERROR, observed=None, message=f"'{source}' selected nothing",
                   code="MISSING_VALUE")


def operand(params: Mapping[str, Any], unit: Mapping[str, Any], key: str) -> Any:
    """A literal parameter ``key`` or the value selected by ``key_from``."""
    if f"{key}_from" in params:
        return select(params[f"{key}_from"], unit)
    return params[key]


def same(a: Any, b: Any) -> bool:
    """Equality where types matter: 1 != 1.0, true != 1, objects and arrays recursive."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def truthy(value: Any) -> bool:
    """JMESPath truthiness: false, null, empty text, list and object are false."""
    if value is None or value is False:
        return False
    return len(value) > 0 if isinstance(value, str | list | dict) else True


def is_number(v: Any) -> bool:
    """A JSON number (booleans are not numbers)."""
    return isinstance(v, int | float) and not isinstance(v, bool)


def verdict(ok: bool, expected: Any, observed: Any, message: str = "") -> Outcome:
    """PASS or FAIL with evidence (a row clips and masks it: ``masking.shown``)."""
    return Outcome(PASS if ok else FAIL, expected, observed, message)


# Every parameter is one of two classes (``x-class`` in its schema; docs/security.md): an
# observation is what the agent did, read from the records; an expectation is what it
# should have done, which governance supplies (a policy literal, the suite's
# ``case.expected``, or records whose cases the Evaluation pins). engine/spec/expectations.py
# holds an expectation selector to that under ``purpose: release``.
OBSERVATION, EXPECTATION = "observation", "expectation"
CLASSES = (OBSERVATION, EXPECTATION)


def observation(prop: Mapping[str, Any]) -> dict[str, Any]:
    """``prop`` classed as an observation: what the agent did."""
    return {**prop, "x-class": OBSERVATION}


def expectation(prop: Mapping[str, Any]) -> dict[str, Any]:
    """``prop`` classed as an expectation: what the agent should have done."""
    return {**prop, "x-class": EXPECTATION}


def per_entry(prop: Mapping[str, Any], classes: Mapping[str, str] | None = None,
              suite: Mapping[str, str] | None = None, named_by: str | None = None
              ) -> dict[str, Any]:
    """A map of rubric variables whose entries have classes of their own: ``classes`` by
    entry name (``x-entries``), or the entries the formula parameter ``named_by`` uses
    (``x-entries-named-by``) are expectations; any other entry is an observation. An
    expectation entry describes the case to the judge (the planted text, what
    the agent should do), so it may read the whole suite case: ``suite`` gives, by entry,
    where its default reads the case for records that are not the suite."""
    out = {**prop, "x-class": OBSERVATION}
    if classes:
        out["x-entries"] = dict(classes)
    if suite:
        out["x-suite-default"] = dict(suite)
    if named_by:
        out["x-entries-named-by"] = named_by
    return out


# Schema fragments the primitives share.
SELECTOR = {"type": "string", "minLength": 1, "x-jmespath": True,
            "description": "JMESPath expression selecting a value from the unit"}
FLAG = {"type": "boolean"}


def literal_or_selected(key: str, literal: Mapping[str, Any], description: str) -> dict[str, Any]:
    """Properties for an expectation given either literally (``key``) or selected
    (``key_from``)."""
    return {
        key: expectation({**literal, "description": description}),
        f"{key}_from": expectation({**SELECTOR, "description": f"JMESPath selecting "
                                                               f"{description}"}),
    }


def params_schema(properties: Mapping[str, Any], required: list[str],
                  one_of: list[str] | None = None) -> dict[str, Any]:
    """A closed object schema; ``one_of`` names a literal/selected pair of which one is needed."""
    schema: dict[str, Any] = {"type": "object", "properties": dict(properties),
                              "required": required, "additionalProperties": False}
    if one_of:
        schema["oneOf"] = [{"required": [k]} for k in one_of]
    return schema
