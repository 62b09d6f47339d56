"""The per-record fast paths give exactly what the careful paths give (issue 15).

Each fast path here is checked against the plain implementation it short-cuts, on values
built to sit on and around every limit: ``fits``/``clip`` against the clipping walk,
``evidence`` against clip-then-mask, the pii detector's quick rule-out against a full
search, the character class a pattern needs against the pattern, and the per-record plan
against evaluating every guard.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import jmespath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.inspections._prefilter import either, needs
from engine.inspections.pii import build_detector
from engine.records import masking
from engine.records.clip import MAX_DEPTH, MAX_EVIDENCE, MAX_ITEMS, MAX_TOTAL, _Clip, clip, fits
from engine.run.plan import compile_plan
from engine.spec import evaluation as spec
from engine.spec.compile import _direct
from engine.spec.yaml import parse as parse_yaml

ROOT = Path(__file__).resolve().parents[1]
PROFILE = settings(max_examples=400, derandomize=True, deadline=None)
DETECTOR = build_detector(parse_yaml(
    (ROOT / "specs/agent-release-gate/detectors/pii-v1.yaml").read_text(), "pii")[0].data)

# strings around the limits, and strings that look like an earlier clip's markers
_texts = st.one_of(
    st.text(max_size=12),
    st.integers(MAX_EVIDENCE - 3, MAX_EVIDENCE + 3).map(lambda n: "x" * n),
    st.sampled_from(["... [3 more items]", "[2 more keys]", "abc... [7 more characters]",
                     "x" * 480 + "... [9 more characters]", "..."]),
)
_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _texts
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=MAX_ITEMS + 2) |
    st.dictionaries(_texts, inner, max_size=MAX_ITEMS + 2),
    max_leaves=120)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


EDGES = [
    ["a"] * MAX_ITEMS, ["a"] * (MAX_ITEMS + 1), {str(i): i for i in range(MAX_ITEMS)},
    {str(i): i for i in range(MAX_ITEMS + 1)}, _nested(MAX_DEPTH), _nested(MAX_DEPTH + 1),
    ["y" * MAX_EVIDENCE] * 7, ["y" * MAX_EVIDENCE] * 8,  # around the total budget
    ["z" * 498] * 8, [0] * 50, [[0] * 50] * 11, {"...": "[3 more keys]", "a": 1},
    ["y" * (MAX_TOTAL // 8 - 2)] * 8, "w" * (MAX_EVIDENCE + 1),
]


@pytest.mark.parametrize("value", EDGES, ids=range(len(EDGES)))
def test_fits_and_clip_agree_with_the_clipping_walk_at_the_limits(value: Any) -> None:
    reference = _Clip().walk(value, 0)
    assert clip(value) == reference
    if fits(value):
        assert reference == value


def test_fits_says_no_where_clip_cuts() -> None:
    # each of these is cut by the walk, so the fast path must not pass them through
    for value in (["a"] * (MAX_ITEMS + 1), _nested(MAX_DEPTH + 1), ["y" * MAX_EVIDENCE] * 8,
                  "w" * (MAX_EVIDENCE + 1)):
        assert _Clip().walk(value, 0) != value
        assert not fits(value)


@PROFILE
@given(_values)
def test_clip_is_the_clipping_walk(value: Any) -> None:
    assert clip(value) == _Clip().walk(value, 0)
    if fits(value):
        assert _Clip().walk(value, 0) == value


def _reference_evidence(value: Any, mask: masking.Masker | None) -> Any:
    """clip then mask, as rows were made before the fast path."""
    if isinstance(value, str) and len(value) <= MAX_EVIDENCE:
        return value if mask is None else mask.text(value)
    value = _Clip().walk(value, 0)
    return value if mask is None else masking._masked(value, mask)


_pii_texts = st.one_of(_texts, st.sampled_from([
    "card 4111 1111 1111 1111 ok", "ssn 123-45-6789", "mail a.b@example.org now",
    "passport X12345678", "bank account 12345678901", "call +14155550100",
    "DE89 3704 0044 0532 0130 00", "acct: 000123456789"]))
_pii_values = st.recursive(_scalars | _pii_texts, lambda inner: st.lists(inner, max_size=6) |
                           st.dictionaries(_pii_texts, inner, max_size=6), max_leaves=30)


@PROFILE
@given(_pii_values)
def test_evidence_is_clip_then_mask(value: Any) -> None:
    mask = masking.Masker((DETECTOR,))
    assert masking.evidence(value, mask) == _reference_evidence(value, mask)
    assert masking.evidence(value, None) == _reference_evidence(value, None)


# texts mixing what the detector's patterns look for: digits of several scripts, '@',
# separators, context words, letters
_alphabet = st.sampled_from(list("0123456789٣٤۵५@.-+ ()/'abcXYZ") + ["\u2019"])
_detector_texts = st.one_of(
    st.text(_alphabet, max_size=40),
    st.lists(st.sampled_from(["passport", "account", "bank", "dl", "driver's license",
                              "Driver\u2019s License", "4111111111111111", "123-45-6789",
                              "a@b.co", "X12345678", "+14155550100", "DE89370400440532013000",
                              " ", "x", "٣٣٣-٣٣-٣٣٣٣", "12345678"]),
             max_size=6).map("".join))


@PROFILE
@given(_detector_texts)
def test_detector_rules_out_only_texts_where_it_finds_nothing(text: str) -> None:
    detector = build_detector(parse_yaml(
        (ROOT / "specs/agent-release-gate/detectors/pii-v1.yaml").read_text(), "pii")[0].data)
    if detector.find(text):
        assert not detector.clean(text)
        assert not detector.clean(text)  # the remembered answer too


def test_detector_finds_unicode_digits_the_prefilter_must_not_rule_out() -> None:
    # \d in a Python pattern is every Unicode digit: the class the prefilter searches for
    # must be too (an ASCII-only class would pass this text over unmasked)
    text = "id ٤١١١١١١١١١١١١١١١ here"
    if DETECTOR.find(text):
        assert not DETECTOR.clean(text)
    need = needs(re.compile(r"\d{9}"))
    assert need is not None and need.search("٣")


PATTERNS = [r"\d{3}-\d{2}-\d{4}|\d{3} \d{2} \d{4}", r"[2-6]\d{12,18}", r"a+b", r"(?:ab)?c",
            r"x|y\d", r"[^a]b", r"(a)\1", r"(?i)abc", r".+", r"\bfoo\b", r"[A-Za-z0-9._%+-]+@x",
            r"(?:\+1[ .-]?)?(?:\(\d{3}\) ?|\d{3}[ .-])\d{3}[ .-]\d{4}|\+\d{10,15}", r"a{0,3}",
            r"(?<![A-Z])[A-Z]{2}\d{2}", r"(?s:.)q", r"\w\s\W", r"[\]\-^]z"]


@pytest.mark.parametrize("source", PATTERNS)
@PROFILE
@given(text=st.text(st.sampled_from(list("abcxyzqABZ019٣-+@ ()._]^\\")), max_size=24))
def test_needed_class_is_in_every_match(source: str, text: str) -> None:
    pattern = re.compile(source)
    need = needs(pattern)
    if need is not None and pattern.search(text):
        assert need.search(text), (source, text, need.pattern)


def test_needed_classes_read_off_known_patterns() -> None:
    def need(source: str) -> str | None:
        found = needs(re.compile(source))
        return None if found is None else found.pattern
    assert need(r"[A-Za-z0-9._%+-]+@[a-z]+") == "@"
    assert need(r"\d{9}") == r"[\d]"
    assert need(r"(?i)abc") is None  # flags: no answer
    assert need(r"a{0,3}") is None  # may match nothing
    assert need(r".+") is None
    assert either([re.compile(r"\d+"), re.compile(r".*")]) is None


def _naive_steps(policy: Any, unit: Any) -> list[tuple[str, str]]:
    """What the loop did before the plan: every guard evaluated on every unit."""
    out = []
    for category in policy.categories.values():
        for inspection_id in category.inspections:
            inspection = policy.inspections[inspection_id]
            if inspection.when is None or inspection.when.search(unit):
                out.append((category.name, inspection_id))
    return out


def _planned(plan: Any, unit: Any) -> list[tuple[str, str]]:
    return [(s.category, s.inspection.id) for s in plan.steps(unit)
            if not s.guarded or s.inspection.when.search(unit)]


_dimensions = st.sampled_from(["pii", "safety", "cost", "latency", "nope", "", "PII"]) | \
    st.integers() | st.none() | st.lists(st.just("pii"), max_size=1)
_units = st.one_of(
    st.fixed_dictionaries({"dimension": _dimensions}, optional={
        "x": _dimensions, "a": st.fixed_dictionaries({"b": _dimensions}) | st.just("s")}),
    st.dictionaries(st.sampled_from(["dimension", "x"]), st.text(max_size=3), max_size=2))


def _guarded(policy: Any, **guards: str) -> Any:
    """The policy with other guards on some inspections (compiled as the loader does)."""
    changed = {i: replace(policy.inspections[i], when=_direct(jmespath.compile(g)))
               for i, g in guards.items()}
    return replace(policy, inspections={**policy.inspections, **changed})


VARIANTS = {
    "release-gate": {},  # one field compared with literals: a table
    "a guard on another field": {"cost": "x == 'pii'"},
    "a guard that is not an equality": {"latency": "dimension != 'pii'"},
    "a guard on a path": {"grounding": "a.b == 'safety'", "safety": "a.b == 'pii'"},
    "no guards left but one": {"safety-heuristic": "dimension == 'pii'"},
}


@pytest.mark.parametrize("variant", VARIANTS)
@PROFILE
@given(unit=_units)
def test_plan_gives_the_steps_every_guard_gives(variant: str, unit: dict[str, Any]) -> None:
    policy = _guarded(_policy(), **VARIANTS[variant])
    assert _planned(compile_plan(policy), unit) == _naive_steps(policy, unit)


_POLICIES: list[Any] = []


def _policy() -> Any:
    if not _POLICIES:
        _POLICIES.append(spec.load([ROOT / "specs/agent-release-gate"])[0].policy)
    return _POLICIES[0]


def test_release_gate_plan_is_a_table_and_other_guards_are_kept() -> None:
    plan = compile_plan(_policy())
    assert plan.table is not None and plan.key == ("dimension",)
    assert [(s.category, s.inspection.id, s.guarded)
            for s in plan.steps({"dimension": "safety"})] == [("safety", "safety", False)]
    assert plan.steps({"dimension": 3}) == plan.steps({"dimension": "PII"}) == ()
    mixed = compile_plan(_guarded(_policy(), cost="x == 'pii'"))
    assert mixed.table is None and len(mixed.steps({"dimension": "pii"})) == 9


_json_scalars = st.none() | st.booleans() | st.integers(-1, 1) | st.floats(allow_nan=False) | \
    st.text(max_size=2) | st.lists(st.integers(), max_size=1) | \
    st.dictionaries(st.text(max_size=1), st.integers(), max_size=1)


@PROFILE
@given(st.dictionaries(st.sampled_from(["case_id", "id", "x"]), _json_scalars) | _json_scalars)
def test_either_selector_is_jmespath(data: Any) -> None:
    compiled = jmespath.compile("case_id || id")
    fast = _direct(compiled)
    assert type(fast).__name__ == "_Either"
    got, want = fast.search(data), compiled.search(data)
    assert got == want and type(got) is type(want)


_numbers = st.one_of(
    st.integers(), st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["9007199254740991", "9007199254740992", "-9007199254740992", "1e308",
                     "1e309", "-1E+400", "123456789012345.5", "1234567890123456.0", "1e-400",
                     "NaN", "Infinity", "0.1e99", "1" * 320 + ".0"]))


@PROFILE
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), _numbers), max_size=5))
def test_record_lines_read_the_same_with_and_without_number_hooks(members: list[Any]) -> None:
    from engine.records import formats, strict_json
    body = ",".join(f'"{k}":{v if isinstance(v, str) else repr(v)}' for k, v in members)
    raw = ("{" + body + "}").replace("inf", "1e999").encode()
    fast = formats.parse_line(raw, 2)

    def slow(raw: bytes) -> Any:
        return strict_json.RECORD_DECODER, False
    original = strict_json.record_decoder
    formats.record_decoder = slow  # type: ignore[assignment]
    try:
        careful = formats.parse_line(raw, 2)
    finally:
        formats.record_decoder = original  # type: ignore[assignment]
    assert fast == careful
    if isinstance(fast, formats.Record):
        assert [type(v) for v in fast.data.values()] == [type(v) for v in careful.data.values()]


@PROFILE
@given(_pii_values)
def test_plain_flag_is_only_given_where_the_c_encoder_is_canonical(value: Any) -> None:
    from engine.canonical import _plain
    for mask in (masking.Masker((DETECTOR,)), None):
        row, plain = masking.shown(value, mask)
        if plain:
            assert _plain(row)


def test_rows_said_plain_are_written_as_canonical_bytes(tmp_path: Path) -> None:
    import rfc8785

    from engine.evidence.scorecard import RowWriter
    rows = [{"a": 1.5, "b": ["x", None, True], "é": 2}, {"f": 1e20}, {"g": 3.0}]
    with (tmp_path / "r").open("wb") as handle:
        writer = RowWriter(handle)
        for row in rows:
            writer(row)
    assert (tmp_path / "r").read_bytes() == b"".join(rfc8785.dumps(r) + b"\n" for r in rows)


_line_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False,
                                                                      allow_infinity=False) |
    st.text(st.sampled_from(list("ab.0e1-\\u\"é\u2028")), max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.text(st.sampled_from(list("ab.é\\")), max_size=3), inner, max_size=3),
    max_leaves=12)


@PROFILE
@given(st.dictionaries(st.text(st.sampled_from(list("kxé.")), max_size=2), _line_values,
                       max_size=4), st.booleans())
def test_a_line_said_plain_is_plain(data: dict[str, Any], ascii_only: bool) -> None:
    import json

    from engine.canonical import _plain
    from engine.records import formats
    raw = json.dumps(data, ensure_ascii=ascii_only).encode()
    record = formats.parse_line(raw, 2)
    assert isinstance(record, formats.Record) and record.data == data
    if record.plain:
        assert _plain(record.data)


def test_escaped_names_and_floats_are_never_said_plain() -> None:
    from engine.records import formats
    for raw in (b'{"\\u2028k": 1}', b'{"k": 1.5}', b'{"k": 2E3}', '{"\u00e9": 1}'.encode()):
        record = formats.parse_line(raw, 2)
        assert isinstance(record, formats.Record) and not record.plain, raw
    assert formats.parse_line(b'{"k": [1, "x.5", null], "e": "e3"}', 2).plain  # type: ignore[union-attr]


@pytest.mark.parametrize("entities", [
    [r"\d{3})|(?:SECRET\d"],  # closes and reopens the group the edges are put around
    [r"x(\d)", r"(\d)\1{3}"],  # a back-reference means its group in its own pattern only
    [r"(?P<n>\d)", r"(?P<n>x)"],  # the same group name twice cannot share one pattern
], ids=["paren", "backreference", "group-names"])
def test_rule_out_never_hides_what_find_finds_for_unusual_patterns(entities: list[str]) -> None:
    # found by review: each of these once made mask() keep a value find() reports
    detector = build_detector({"name": "t", "entities": [
        {"name": f"E{i}", "class": "hard", "pattern": p} for i, p in enumerate(entities)]})
    for text in ("pin 123x", "id 7777 here", "a 5 b", "SECRET1 x"):
        if detector.find(text):
            assert not detector.clean(text)
            assert detector.mask(text) == detector.mask(text, detector.find(text)) != text
