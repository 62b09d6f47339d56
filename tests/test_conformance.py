"""Conformance cases as data: every YAML file under tests/conformance/ runs through the CLI.

A case lays its `files` over a copy of tests/conformance/base/ (a small valid spec), runs
`engine validate` / `engine run` in-process and compares what it printed or wrote with the
case's `want`. See docs/conformance.md for the format.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from engine.cli import main

HERE = Path(__file__).resolve().parent / "conformance"
SCHEMA = yaml.safe_load((HERE / "case.schema.yaml").read_text(encoding="utf-8"))
TOLERANCE = 5e-5  # figures are written to 4 decimal places
PROBLEM = re.compile(r"^(?P<at>[^:]+:\d+:\d+: [A-Z_]+: \S+): ")


def cases(kind: str) -> list[Any]:
    return [pytest.param(p, id=p.stem) for p in sorted((HERE / kind).glob("*.yaml"))]


def load_case(path: Path, kind: str) -> dict[str, Any]:
    """The case as data; a malformed case fails with its name, never as a crash."""
    try:
        case = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        case, broken = None, str(exc)
    else:
        broken = ""
    if broken:
        pytest.fail(f"{path.stem}: malformed case: {broken}", pytrace=False)
    validator = jsonschema.Draft202012Validator({**SCHEMA, "$ref": f"#/$defs/{kind}"})
    error = jsonschema.exceptions.best_match(validator.iter_errors(case))
    if error is not None:
        where = "/".join(map(str, error.absolute_path)) or "(top)"
        pytest.fail(f"{path.stem}: malformed case at {where}: {error.message}", pytrace=False)
    return dict(case)


def lay_out(case: dict[str, Any], root: Path) -> Path:
    """A copy of the base spec with the case's files written over it."""
    spec = root / "spec"
    shutil.copytree(HERE / "base", spec)
    for name in case.get("remove", []):
        (spec / name).unlink()
    for name, text in case.get("files", {}).items():
        (spec / name).parent.mkdir(parents=True, exist_ok=True)
        (spec / name).write_text(text, encoding="utf-8")
    return spec


def problems_printed(err: str, spec: Path) -> list[str]:
    """`file:line:col: CODE: path` of every printed problem, file relative to the spec."""
    lines = err.splitlines()
    assert lines and lines[-1].endswith("nothing was run"), err
    found = []
    for line in lines[:-1]:
        match = PROBLEM.match(line.replace(f"{spec}/", "", 1))
        assert match, f"not a located problem: {line}"
        found.append(match["at"])
    return found


@pytest.mark.parametrize("path", cases("spec_errors"))
def test_spec_error_case(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = load_case(path, "spec_error")
    spec = lay_out(case, tmp_path)
    want = case["want"]
    for command in case.get("commands", ["validate", "run"]):
        out = tmp_path / f"out-{command}"
        extra = ["--out", str(out)] if command == "run" else []
        code = main([command, str(spec), *extra, *case.get("args", [])])
        err = capsys.readouterr().err
        assert code == want["exit"], f"{command}: exit {code}\n{err}"
        assert problems_printed(err, spec) == want["problems"], f"{command}:\n{err}"
        for words in want.get("says", []):
            assert words in err, f"{command}: {words!r} not printed\n{err}"
        assert not out.exists(), "nothing may be written when the spec is invalid"


def same(got: Any, want: Any) -> bool:
    """Equal, with numbers (not booleans) equal to 4 decimal places."""
    numbers = (int, float)
    if isinstance(want, numbers) and not isinstance(want, bool):
        return isinstance(got, numbers) and not isinstance(got, bool) and \
            math.isclose(got, want, rel_tol=0, abs_tol=TOLERANCE)
    return type(got) is type(want) and got == want


def dig(card: dict[str, Any], dotted: str) -> Any:
    value: Any = card
    for key in dotted.split("."):
        assert isinstance(value, dict) and key in value, f"scorecard has no {dotted}"
        value = value[key]
    return value


def check_decision(want: dict[str, Any], code: int, card: dict[str, Any]) -> None:
    """Compare a run's exit code and scorecard with the case's want; raise on a difference."""
    got = (code, card["decision"], sorted(r["code"] for r in card["reasons"]))
    assert got == (want["exit"], want["decision"], sorted(want["reasons"])), got
    if "overall" in want:
        score = card["overall"]["score"]
        assert same(score, want["overall"]), f"overall score {score}, want {want['overall']}"
    for name, figures in want.get("categories", {}).items():
        assert name in card["categories"], f"no category {name}"
        for key, value in figures.items():
            seen = card["categories"][name][key]
            assert same(seen, value), f"{name}.{key} is {seen}, want {value}"
    for dotted, value in want.get("scorecard", {}).items():
        seen = dig(card, dotted)
        assert same(seen, value), f"{dotted} is {seen!r}, want {value!r}"


def run_decision(path: Path, tmp_path: Path) -> tuple[dict[str, Any], int, dict[str, Any]]:
    case = load_case(path, "decision")
    spec, out = lay_out(case, tmp_path), tmp_path / "out"
    code = main(["run", str(spec), "--out", str(out), *case.get("args", [])])
    card = json.loads((out / "scorecard.json").read_bytes())
    return case["want"], code, card


@pytest.mark.parametrize("path", cases("decisions"))
def test_decision_case(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    want, code, card = run_decision(path, tmp_path)
    check_decision(want, code, card)
