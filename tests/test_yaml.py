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
