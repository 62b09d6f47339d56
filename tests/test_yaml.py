"""The YAML loader: safe, located, and strict about what a spec may contain."""

from __future__ import annotations

import pytest

from engine.spec import yaml as _yaml


def codes(text: str) -> list[tuple[int, int, str]]:
    doc, problems = _yaml.parse(text, "f.yaml")
    return [(p.line, p.col, p.code) for p in problems]


def test_values_and_places() -> None:
    doc, problems = _yaml.parse("a: 1\nb:\n  - x\n  - {c: 2.5}\nd: 2020-01-01\n", "f.yaml")
    assert problems == [] and doc is not None
    assert doc.data == {"a": 1, "b": ["x", {"c": 2.5}], "d": "2020-01-01"}
    assert doc.places[("b", 1, "c")] == (4, 9)
    assert doc.key_places[("d",)] == (5, 1)


@pytest.mark.parametrize("text, want", [
    ("a: 1\nb: 2\na: 3\n", [(3, 1, "DUPLICATE_KEY")]),
    ("1: x\n", [(1, 1, "NON_STRING_KEY")]),
    ("? [a]\n: x\n", [(1, 3, "NON_STRING_KEY")]),
    ("a: &x 1\nb: *x\n", [(1, 4, "YAML_ANCHOR")]),
    ("a: !!python/object/apply:os.system [ls]\n", [(1, 4, "YAML_TAG")]),
    ("a: .nan\nb: -.inf\n", [(1, 4, "NON_FINITE"), (2, 4, "NON_FINITE")]),
    ("a: 9007199254740992\n", [(1, 4, "INTEGER_RANGE")]),
    ('a: "\\ud800"\n', [(1, 4, "BAD_SCALAR")]),
    ("a: [1, 2\n", [(2, 1, "YAML_SYNTAX")]),
    # found by bench/fuzz.py: control characters crashed the loader before it parsed
    ("a: x\nb: \x10y\n", [(2, 4, "BAD_CHARACTER")]),
    ("a: \x7f\n", [(1, 4, "BAD_CHARACTER")]),
    ("\x00", [(1, 1, "BAD_CHARACTER")]),
    ("", [(1, 1, "EMPTY_SPEC")]),
    ("a: " + "[" * 100 + "]" * 100 + "\n", [(1, 67, "SPEC_TOO_DEEP")]),
])
def test_refused(text: str, want: list[tuple[int, int, str]]) -> None:
    assert codes(text) == want


def test_alias_bomb_stops_at_the_first_anchor() -> None:
    # Nine levels of nine-fold references would expand to 9**9 strings if ever built.
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        refs = ",".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    assert codes("\n".join(lines) + "\n") == [(1, 5, "YAML_ANCHOR")]


def test_alias_without_anchor_is_refused() -> None:
    assert codes("a: *nowhere\n") == [(1, 4, "YAML_ALIAS")]


def test_timestamps_stay_text() -> None:
    doc, _ = _yaml.parse("when: 2026-11-29T10:00:00Z\n", "f.yaml")
    assert doc is not None and doc.data == {"when": "2026-11-29T10:00:00Z"}


# Plain values YAML 1.1 (PyYAML) and YAML 1.2's core schema read differently: a reviewer (or
# another tool) reading `1:06:40` as a time or `4_000_0` as 4000 would approve another value.
@pytest.mark.parametrize("value, says", [
    ("1:06:40", "read here as 4000, but the text '1:06:40'"),  # 1*3600 + 6*60 + 40
    ("4_000_0", "read here as 40000, but the text '4_000_0'"),
    ("1_000.5", "read here as 1000.5,"),
    ("0b1010", "read here as 10,"),
    ("017", "read here as 15, but 17 in YAML 1.2"),  # 1*8 + 7
    ("+0x1F", "read here as 31,"),
    ("yes", "read here as true, but the text 'yes'"),
    ("Off", "read here as false, but the text 'Off'"),
    ("1e3", "text to this YAML 1.1 reader but the number 1000.0"),
    ("08", "the number 8 in YAML 1.2"),
    ("0o17", "the number 15 in YAML 1.2"),
    ("-.5", "the number -0.5 in YAML 1.2"),
])
def test_values_yaml_versions_read_differently_are_refused(value: str, says: str) -> None:
    doc, problems = _yaml.parse(f"spec:\n  limits:\n    - at: {value}\n", "f.yaml")
    assert doc is None and [(p.line, p.col, p.code, p.path) for p in problems] == \
        [(3, 11, "YAML_AMBIGUOUS", "spec.limits[0].at")]  # the value's column
    assert says in problems[0].message and "quote it for text" in problems[0].message


@pytest.mark.parametrize("text, value", [
    ("a: 4000\n", 4000), ("a: '1:06:40'\n", "1:06:40"), ("a: \"4_000\"\n", "4_000"),
    ("a: 0x1F\n", 31), ("a: 07\n", 7), ("a: +12\n", 12), ("a: 1.5e-3\n", 0.0015),
    ("a: true\n", True), ("a: FALSE\n", False), ("a: ~\n", None), ("a: !!str yes\n", "yes"),
    ("a: 10:30 today\n", "10:30 today"), ("a: |\n  017\n", "017\n"), ("a: -0\n", 0),
])
def test_values_both_versions_read_alike_load(text: str, value: object) -> None:
    doc, problems = _yaml.parse(text, "f.yaml")
    assert problems == [] and doc is not None and doc.data == {"a": value}
    assert type(doc.data["a"]) is type(value)


@pytest.mark.parametrize("text", ['a: !!int "4_000_0"\n', "a: !!int '1:06:40'\n",
                                  'a: !!bool "yes"\n', "a: !!float '1_0.5'\n",
                                  "a: !!null ''\n"])
def test_a_number_boolean_or_null_by_an_explicit_tag_is_refused(text: str) -> None:
    """`!!int "4_000_0"` loaded as 40000 past the YAML 1.1 / 1.2 check (hostile review of
    issue 38): no spec value needs a tag to be a number, a boolean or null."""
    doc, problems = _yaml.parse(text, "f.yaml")
    assert doc is None and [p.code for p in problems] == ["YAML_TAG"], problems
