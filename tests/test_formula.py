"""The formula language: a conformance corpus of accepted and rejected expressions."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine import FormulaError, compile_formula
from engine.formula import ANY, NUMBER, Z_KEY, evaluate, why_null

CASES = yaml.safe_load((Path(__file__).parent / "data" / "formulas.yaml").read_text())


def _source(case: dict[str, Any]) -> str:
    if "long_string" in case:
        return "'" + "a" * case["long_string"] + "' == 'a'"
    if "nesting" in case:
        return "(" * case["nesting"] + "1" + ")" * case["nesting"]
    if "long_formula" in case:
        return " + ".join(["x"] * (case["long_formula"] // 4 + 1))
    if "not_chain" in case:
        return "not " * case["not_chain"] + "true"
    return str(case["formula"])


@pytest.mark.parametrize("case", CASES["accept"], ids=lambda c: c["formula"])
def test_accepted(case: dict[str, Any]) -> None:
    env = case.get("env", {})
    types = {name: NUMBER for name in env} | {k: ANY for k in case.get("types", {})}
    value = compile_formula(case["formula"], types)(env)
    want = case["want"]
    assert type(value) is type(want) or (isinstance(want, float) and isinstance(value, float))
    assert value == want


@pytest.mark.parametrize("case", CASES["reject"], ids=lambda c: _source(c)[:40])
def test_rejected_at_load_with_a_column(case: dict[str, Any]) -> None:
    with pytest.raises(FormulaError) as caught:
        compile_formula(_source(case), {"x": NUMBER, "y": NUMBER})
    assert caught.value.code == case["code"]
    assert caught.value.col >= 1
    if "col" in case:
        assert caught.value.col == case["col"]


def test_protocol_wilson_reference_values() -> None:
    """agent-release-gate §7.1: 9/12 gives [0.467694665066, 0.911058331606]."""
    lower = compile_formula("wilson_lower(p, n)", {"p": NUMBER, "n": NUMBER})
    upper = compile_formula("wilson_upper(p, n)", {"p": NUMBER, "n": NUMBER})
    assert lower({"p": 9, "n": 12}) == pytest.approx(0.467694665066, abs=1e-12)
    assert upper({"p": 9, "n": 12}) == pytest.approx(0.911058331606, abs=1e-12)
    assert upper({"p": 12, "n": 12}) == 1.0


def test_wilson_uses_the_policy_z() -> None:
    lower = compile_formula("wilson_lower(p, n)", {"p": NUMBER, "n": NUMBER})
    # z = 1: p = 0.5, n = 4: centre 0.5, half = sqrt(0.0625 + 1/64) / 1.25
    want = 0.5 - math.sqrt(0.0625 + 1 / 64) / 1.25
    assert lower({"p": 2, "n": 4, Z_KEY: 1.0}) == pytest.approx(want, abs=1e-15)


@pytest.mark.parametrize("source, env, code", [
    ("s + 1", {"s": "text"}, "FORMULA_TYPE"),
    ("s > 1", {"s": "text"}, "FORMULA_TYPE"),
    ("s == 1", {"s": "text"}, "FORMULA_TYPE"),
    ("s and true", {"s": 1}, "FORMULA_TYPE"),
    ("wilson_lower(s, 2)", {"s": 3}, "FORMULA_DOMAIN"),
    ("round(s, 99)", {"s": 1.5}, "FORMULA_DOMAIN"),
    ("s + 1", {"s": [1]}, "FORMULA_TYPE"),
])
def test_runtime_type_errors_are_coded(source: str, env: dict[str, Any], code: str) -> None:
    formula = compile_formula(source, {"s": ANY})
    with pytest.raises(FormulaError) as caught:
        evaluate(formula, env)
    assert caught.value.code == code


def test_big_integers_become_doubles_not_bignums() -> None:
    formula = compile_formula("x * x * x * x", {"x": NUMBER})
    value = formula({"x": 2**50})
    assert isinstance(value, float) and value == float(2**200)


def test_a_null_from_division_by_zero_says_so_and_where() -> None:
    f = compile_formula("errors / (n - 32) == 0 and n >= 16", {"errors": "number", "n": "number"})
    assert f({"errors": 0, "n": 32}) is None
    # the divisor '(n - 32)' starts at column 11 (the 'n' inside the brackets)
    assert why_null(f, {"errors": 0, "n": 32}) == \
        "division by zero at column 11 of 'errors / (n - 32) == 0 and n >= 16'"
    assert why_null(f, {"errors": None, "n": 40}) == ""  # null for another reason
