"""Properties that must hold for all inputs, checked with hypothesis (derandomized)."""

from __future__ import annotations

import math
from typing import Any

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import FormulaError, compile_formula
from engine.decide.aggregate import Counts, Tally
from engine.formula import NUMBER, evaluate
from engine.records.strict_json import parse_jcs
from engine.stats import wilson

PROFILE = settings(max_examples=300, derandomize=True, deadline=None)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53 - 1), 2**53 - 1) |
    st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=20)


@PROFILE
@given(json_values)
def test_canonical_json_round_trip_and_idempotence(value: Any) -> None:
    data = rfc8785.dumps(value)
    again = parse_jcs(data)
    assert rfc8785.dumps(again) == data  # idempotent
    assert again == value  # the same value (numbers compared as numbers)


@PROFILE
@given(st.integers(0, 500), st.integers(0, 500))
def test_wilson_bounds_inside_unit_interval_and_around_the_rate(a: int, b: int) -> None:
    passed, n = min(a, b), max(a, b)
    bounds = wilson(passed, n)
    if n == 0:
        assert bounds is None
        return
    assert bounds is not None
    lower, upper = bounds
    assert 0.0 <= lower <= passed / n + 1e-12 and passed / n - 1e-12 <= upper <= 1.0


@PROFILE
@given(st.integers(1, 500), st.data())
def test_wilson_lower_is_monotone_in_passes(n: int, data: st.DataObject) -> None:
    passed = data.draw(st.integers(0, n - 1))
    low_a = wilson(passed, n)
    low_b = wilson(passed + 1, n)
    assert low_a is not None and low_b is not None
    assert low_a[0] <= low_b[0] and low_a[1] <= low_b[1]


statuses = st.sampled_from(["PASS", "FAIL", "ERROR", "ABSTAIN", "SKIPPED"])


@PROFILE
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["i", "j"]), statuses)),
       st.integers(0, 50))
def test_merging_split_tallies_equals_the_unsplit_tally(rows: list[Any], cut: int) -> None:
    def tally(part: list[Any]) -> Tally:
        t = Tally()
        for category, inspection, status in part:
            t.count_row(category, inspection, status)
        return t

    whole = tally(rows)
    merged = tally(rows[:cut]).merge(tally(rows[cut:]))
    assert merged == whole
    assert all(isinstance(c, Counts) for c in merged.categories.values())


atoms = st.sampled_from(["x", "y", "0", "1", "2.5", "null", "true", "'s'", "-x", "(x)"])
operators = st.sampled_from([" + ", " - ", " * ", " / ", " < ", " == ", " and ", " or ",
                             " if ", " else ", ", "])
calls = st.sampled_from(["", "min(", "max(", "sqrt(", "log(", "round(", "coalesce(",
                         "wilson_lower(", "not "])


@PROFILE
@given(st.lists(st.tuples(calls, atoms, operators), min_size=1, max_size=8),
       st.one_of(st.none(), st.floats(allow_nan=False), st.integers(-10, 10), st.text(max_size=3),
                 st.booleans()))
def test_formula_evaluation_raises_only_coded_errors(parts: list[Any], x: Any) -> None:
    source = "".join(call + atom + op for call, atom, op in parts)[:-2]
    source += ")" * source.count("(")
    try:
        formula = compile_formula(source, {"x": "any", "y": NUMBER})
    except FormulaError as exc:
        assert exc.code.startswith("FORMULA_") and exc.col >= 1
        return
    try:
        value = evaluate(formula, {"x": x, "y": 3})
    except FormulaError as exc:
        assert exc.code.startswith("FORMULA_")
        return
    assert not (isinstance(value, float) and not math.isfinite(value))


field_names = st.sampled_from(["a", "b", "dimension"])
documents = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) |
                         st.sampled_from(["pii", "x", ""]),
                         lambda inner: st.dictionaries(field_names, inner, max_size=3) |
                         st.lists(inner, max_size=2), max_leaves=8)


@PROFILE
@given(st.sampled_from(["a", "a.b", "dimension", "a.dimension.b", "dimension == 'pii'",
                        "a.b == 'x'", "a == ''"]), documents)
def test_direct_selectors_agree_with_jmespath(source: str, document: Any) -> None:
    import jmespath

    from engine.spec import compile as _compile
    from engine.spec import yaml as _yaml
    selector = _compile.compile_selector(_yaml.Document("t", None), (), source, [])
    assert type(selector).__name__ == "_Direct"
    assert selector.search(document) == jmespath.search(source, document)


@PROFILE
@given(st.sampled_from(["dimension == 'pii' && contains(a || `[]`, 'x')",
                        "a.b == 'x' && dimension", "a == '' && (b == 'pii' && a)"]), documents)
def test_guarded_and_expressions_agree_with_jmespath(source: str, document: Any) -> None:
    import jmespath

    from engine.spec import compile as _compile
    from engine.spec import yaml as _yaml
    selector = _compile.compile_selector(_yaml.Document("t", None), (), source, [])
    assert type(selector).__name__ == "_Guarded"
    try:
        expected = jmespath.search(source, document)
    except jmespath.exceptions.JMESPathError:  # e.g. contains() on a number: then the
        assert selector.guard.search(document)  # guard must have let it through
        return
    assert selector.search(document) == expected


@PROFILE
@given(json_values)
def test_the_fast_canonical_path_gives_rfc8785_bytes(value: Any) -> None:
    from engine.canonical import canonical
    assert canonical(value) == rfc8785.dumps(value)


@settings(max_examples=3000, derandomize=True, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False) |
       st.floats(1e-4, 1e16) | st.floats(-1e16, -1e-4) |
       st.integers(1, 10**16).map(lambda n: n / 10 ** (n % 21)))
def test_floats_on_the_fast_path_are_written_as_ecmascript_writes_them(x: float) -> None:
    from engine.canonical import canonical
    assert canonical({"x": x, "y": [x, -x]}) == rfc8785.dumps({"x": x, "y": [x, -x]})


def test_the_fast_path_handles_escapes_and_unicode_like_rfc8785() -> None:
    from engine.canonical import canonical
    value = {"b": "tab\t nl\n quote\" back\\ bell\u0007 del\u007f \u00e9 \u2028 \U0001f600",
             "a": [1, -0, 2**53 - 1, True, None, {"z": "", "\u00e9": 1}], "c": {},
             "f": [0.0001, 0.00009999, 1e16 - 2, 123.456, 3.0, -0.0, 1e21, 5e-324, 0.1 + 0.2],
             "t": (1.5, "x")}
    assert canonical(value) == rfc8785.dumps(value)


@PROFILE
@given(st.lists(json_values, max_size=5))
def test_a_list_digest_built_item_by_item_is_the_digest_of_the_list(items: list[Any]) -> None:
    import hashlib

    from engine.canonical import digest_list
    assert digest_list(items) == hashlib.sha256(rfc8785.dumps(items)).hexdigest()


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "é", "a-1", ""]),
                          st.dictionaries(st.text(max_size=3),
                                          st.integers(-(2**53) + 1, 2**53 - 1), max_size=2)),
                max_size=40),
       st.integers(min_value=1, max_value=7), st.integers(min_value=0, max_value=40))
def test_sorted_digest_in_chunks_equals_the_in_memory_sort(items: list[Any], chunk: int,
                                                           split: int) -> None:
    """Spilled, merged chunks (and shards merged at any point) give the digest of the
    stable sort by key of the whole input, duplicates included."""
    from engine.canonical import digest_list
    from engine.decide.sorted_digest import SortedDigest

    want = digest_list(v for _, v in sorted(items, key=lambda kv: kv[0]))
    whole = SortedDigest(chunk)
    for key, value in items:
        whole.add(key, value)
    assert whole.hexdigest() == want
    assert whole.hexdigest() == want  # asking twice changes nothing
    first, second = SortedDigest(chunk), SortedDigest(chunk)
    for key, value in items[:split]:
        first.add(key, value)
    for key, value in items[split:]:
        second.add(key, value)
    first.merge(second)
    assert first.hexdigest() == want
    whole.close()
    first.close()


# State matching (agent-release-gate §2.5): objects are recursive subsets, arrays exact and
# ordered, scalar types significant. The laws below follow from that definition.
json_states = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-2, 2, allow_nan=False) |
    st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                 max_size=3),
    max_leaves=12)


def _extend(value: Any, extra: Any) -> Any:
    """``value`` with a new key added to every object inside it (a superset state)."""
    if isinstance(value, dict):
        out = {k: _extend(v, extra) for k, v in value.items()}
        out.setdefault("\u0000extra", extra)
        return out
    if isinstance(value, list):
        return [_extend(v, extra) for v in value]
    return value


@PROFILE
@given(json_states, json_states)
def test_state_matching_laws(expected: Any, extra: Any) -> None:
    from engine.inspections.agent import state_matches
    assert state_matches(expected, expected) == []  # reflexive
    assert state_matches(expected, _extend(expected, extra)) == []  # extra keys are fine
    shuffled = dict(reversed(list(expected.items()))) if isinstance(expected, dict) else expected
    assert state_matches(expected, shuffled) == []  # key order is not state
    if isinstance(expected, dict) and expected:  # a missing key is always a mismatch
        key = sorted(expected)[0]
        assert state_matches(expected, {k: v for k, v in expected.items() if k != key})
    if isinstance(expected, list) and len(expected) > 1 and expected != expected[::-1]:
        assert state_matches(expected, expected[::-1])  # arrays are ordered


@PROFILE
@given(st.integers(-3, 3))
def test_state_matching_keeps_json_types_apart(n: int) -> None:
    from engine.inspections.agent import state_matches
    assert state_matches(n, float(n)) and state_matches(float(n), n)
    assert state_matches(True, 1) and state_matches(1, True) and state_matches(0, False)
    assert state_matches({"a": n}, {"a": str(n)})


@PROFILE
@given(json_states, json_states, json_states)
def test_state_matching_is_transitive(a: Any, b: Any, c: Any) -> None:
    from engine.inspections.agent import state_matches
    if not state_matches(a, b) and not state_matches(b, c):
        assert not state_matches(a, c)
    assert not state_matches(a, _extend(_extend(a, b), c))


@PROFILE
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]),
                          st.text(st.sampled_from("xyz\u00e9\uffff\U0001f600"), max_size=3),
                          st.integers(1, 3), st.integers(0, 3)), max_size=40),
       st.integers(0, 6))
def test_case_counts_on_disk_equal_case_counts_in_memory(adds: list[Any], limit: int) -> None:
    import pickle

    from engine.decide.spill import CaseTrials
    memory, disk = CaseTrials(limit=10**9), CaseTrials(limit=limit)
    for category, case, n, c in adds:
        memory.add(category, case, n, min(c, n))
        disk.add(category, case, n, min(c, n))
    for category in ("a", "b"):
        assert list(disk.cases(category)) == list(memory.cases(category))
        assert disk.count(category) == memory.count(category)
    assert disk == memory and pickle.loads(pickle.dumps(disk)) == memory
    merged = CaseTrials(limit=limit)
    merged.merge(disk)
    merged.merge(memory)
    assert [(k, n // 2, c // 2) for k, n, c in merged.cases("a")] == list(memory.cases("a"))
    for store in (memory, disk, merged):
        store.close()


@PROFILE
@given(st.lists(st.text("abc", max_size=3), max_size=30), st.integers(0, 5))
def test_id_set_on_disk_is_a_set(items: list[str], limit: int) -> None:
    from engine.decide.spill import IdSet
    ids, reference = IdSet(limit=limit), set()
    for item in items:
        assert (item in ids) == (item in reference)
        ids.add(item)
        reference.add(item)
    assert list(ids) == sorted(reference) and "never" not in ids
    ids.close()


def test_flaky_cases_are_all_counted_and_the_first_hundred_named() -> None:
    from engine.stats import pass_hat_k
    cases = [(f"case-{i:04d}", 3, 1 + i % 2) for i in range(150)] + [("zz", 3, 3)]
    block = pass_hat_k(iter(cases), 2)
    assert block is not None and block["flaky_count"] == 150 and block["repeated_cases"] == 151
    assert block["flaky_cases"] == [f"case-{i:04d}" for i in range(100)]
    # pass^2 per case: 0 for c = 1, C(2,2)/C(3,2) = 1/3 for c = 2 (75 cases), 1 for c = 3:
    # exactly 26/151, rounded once
    assert block["pass_hat_k"] == 26 / 151
