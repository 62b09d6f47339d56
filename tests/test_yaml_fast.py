"""The libyaml reader gives the very Document the reference (pure Python) reader gives.

`engine.spec.yaml.parse` reads with libyaml's C parser under the engine's own composer and
falls back to the pure-Python reader whenever anything is refused or in doubt. These tests
read every YAML text the project holds both ways and compare all of it: values with their
types, value and key places, quoted scalars, and the problems reported.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.spec import yaml as _yaml

ROOT = Path(__file__).resolve().parent.parent


def typed(value: Any) -> Any:
    """A value with the type of every part spelt out (1, 1.0 and True differ)."""
    if isinstance(value, dict):
        return ("dict", [(k, typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def both(text: str) -> tuple[Any, Any]:
    """What ``parse`` gives (the fast path when it takes it) and what the reference gives."""
    def seen(found: tuple[_yaml.Document | None, list[Any]]) -> Any:
        doc, problems = found
        if doc is None:
            return None, problems
        return (typed(doc.data), doc.places, doc.key_places, doc.quoted), problems
    return seen(_yaml.parse(text, "f.yaml")), seen(_yaml._parse(text, "f.yaml"))


def corpus() -> list[Any]:
    """Every YAML file under specs/, tests/, engine/, docs/ and rubrics/, and every file
    a conformance case lays out."""
    texts = []
    for folder in ("specs", "tests", "engine", "docs", "rubrics"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in (".yaml", ".yml") and path.is_file():
                texts.append(pytest.param(path.read_bytes().decode("utf-8"),
                                          id=str(path.relative_to(ROOT))))
    for path in sorted((ROOT / "tests" / "conformance").rglob("*.yaml")):
        case = yaml.safe_load(path.read_text("utf-8"))
        files = case.get("files", {}) if isinstance(case, dict) else {}
        for name, text in sorted(files.items()):
            texts.append(pytest.param(text, id=f"{path.stem}/{name}"))
    return texts


CORPUS = corpus()


def test_the_corpus_is_large_and_the_fast_path_is_taken() -> None:
    assert len(CORPUS) > 250
    fast = sum(_yaml._parse_fast(p.values[0].removeprefix("\ufeff"), "f") is not None
               for p in CORPUS)
    assert fast > 200  # most project files read on the fast path (errors do not)


@pytest.mark.parametrize("text", CORPUS)
def test_every_project_yaml_reads_the_same_both_ways(text: str) -> None:
    got, want = both(text.removeprefix("\ufeff"))
    assert got == want


TARGETED = [
    "a: &x 1\n",  # an anchor that no alias uses
    "a: &x 1\nb: *x\n",
    "a: *nowhere\n",
    "a: [&x 1, *x]\n",
    "a: " + "[" * 63 + "]" * 63 + "\n",  # as deep as allowed
    "a: " + "[" * 64 + "]" * 64 + "\n",  # one level too deep
    "a: " + "[" * 5000 + "]" * 5000 + "\n",
    "a: x\nb: \x10y\n",
    "a: \x7f\n",
    "\x00",
    "a: \x85b\n",  # NEL is printable and a line break to both readers
    "a: 'x\u2028y'\nb: 1\n",
    "a: x\r\nb:\r\n  - 'q'\r\n",
    "a: x\rb: y\r",
    "\ufeffa: 1\n",
    "a: 1\n\ufeffb: 2\n",
    "a: 1\nb: 2\na: 3\n",
    "1: x\n",
    "? [a]\n: x\n",
    "a: 9007199254740992\nb: -9007199254740992\nc: 9007199254740991\n",
    "a: 0x1F\nb: 0o17\nc: 1_000\nd: +12\ne: 1e3\nf: 1.5e-3\ng: .5\n",
    "a: .nan\nb: -.inf\nc: .Inf\n",
    "a: 2026-11-29\nb: 2026-11-29T10:00:00Z\nc: '2026-11-29'\nd: 2026-11-29 10:00:00\n",
    "a: yes\nb: no\nc: on\nd: ~\ne: null\nf: True\ng: FALSE\n",
    "a: !!python/object/apply:os.system [ls]\n",
    "a: !!binary aGVsbG8=\n",
    "a: !custom x\n",
    "a: !!str 12\nb: !!int '7'\n",
    "a: !!set {x, y}\n",
    "- !!map {a: 1}\n- !!seq [1]\n- !!omap [a: 1]\n",
    '  a:   "quoted \\"x\\" é"\n  b:    \'single\'\'s\'\n  "c": plain\n',
    'k: {"x": \'y\', z: "\\u00e9"}\n',
    'a: "\\ud800"\n',
    "a: é😀b\n😀: 'é'\nc: [é, 😀]\n",
    "a: |\n  line one\n  line two\nb: >-\n  folded\n  text\n",
    "a: plain\n  continued\n  again\nb: 1\n",
    "a: [1, 2\n",
    "a: b: c\n",
    "a:\n\t- x\n",
    "--- \na: 1\n...\n",
    "a: 1\n---\nb: 2\n",
    "%YAML 1.1\n---\na: 1\n",
    "%TAG !e! tag:example.com,2000:\n---\na: !e!x 1\n",
    "",
    "# only a comment\n",
    "a\n",
    "[1, 2]\n",
    "? a\n? b\n",
    "a: {b: , c}\n",  # empty values: libyaml places some elsewhere, so it declines them
    "a:\nb: 1\n",
    "{a, b: }\n",
    "[a: ]\n",
    "- \n- x\n",
    "a: [b: , c: d]\n",
    "? \n: x\n",
    "a: ''\nb: \"\"\n",
    "{a: 1, b: [x, {c: d}], 'e': \"f\"}\n",
    "a: " + "x" * 2000 + "\n",
    "a: 'unterminated\n",
    "- a\n- b\n -c\n",
    "<<: {a: 1}\nb: 2\n",
    # found by review: libyaml accepted these tabs and the header, the reference refuses them
    "a:\tb\n", "a: b\t\n", "a: [1,\t2]\n", "a: >#\n  x\n", "a: |-#\n  x\n",
    "\ufeffa: 1\nb: [\n", "a: 1\u2028b: 2\n", "a: 'x\x85y'\n",
]


@pytest.mark.parametrize("text", TARGETED)
def test_targeted_cases_read_the_same_both_ways(text: str) -> None:
    got, want = both(text)
    assert got == want


def test_too_many_values_is_refused_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    # both paths read the limit when they count, so a lower one shows they refuse alike at
    # a tenth of the time (the real limit: tests/test_hostile.py's very large spec)
    monkeypatch.setattr(_yaml, "MAX_NODES", 5_000)
    for count in (4_997, 4_998):  # with the mapping, its key and the list: 5,000, 5,001
        text = "a: [" + ", ".join(["1"] * count) + "]\n"
        got, want = both(text)
        assert got == want
        assert [p.code for p in want[1]] == ([] if count == 4_997 else ["SPEC_TOO_LARGE"])


def test_the_fast_path_declines_what_it_must_not_decide() -> None:
    for text in ("a: &x 1\n", "a:\n", "a: \x10\n", "a: 1\na: 2\n", "a: .nan\n", "a: [1\n", "",
                 "a:\tb\n", "a: >#\n  x\n", "\ufeffa: 1\n"):
        assert _yaml._parse_fast(text, "f.yaml") is None, text
    assert _yaml._parse_fast("a: 1\n", "f.yaml") is not None


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**60), 2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12))
documents = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) |
    st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=25)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(documents, st.sampled_from([None, False, True]), st.sampled_from([None, '"', "'"]))
def test_dumped_documents_read_the_same_both_ways(data: Any, flow: Any, style: Any) -> None:
    text = yaml.safe_dump({"d": data}, default_flow_style=flow, default_style=style,
                          allow_unicode=True, width=40)
    got, want = both(text)
    assert got == want


def test_a_tab_is_refused_as_before() -> None:
    # found by review: the libyaml path read 'a:\tb' as {'a': 'b'}; the reference refuses it
    for text in ("a:\tb\n", "a: b\t\n", "a: [1,\t2]\n"):
        doc, problems = _yaml.parse(text, "f.yaml")
        assert doc is None and [p.code for p in problems] == ["YAML_SYNTAX"], text
