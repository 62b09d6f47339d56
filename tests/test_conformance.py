"""Conformance cases as data: every YAML file under tests/conformance/ runs through the CLI.

A case lays its `files` over a copy of tests/conformance/base/ (a small valid spec), runs
`engine validate` / `engine run` in-process and compares what it printed or wrote with the
case's `want`. See docs/conformance.md for the format.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
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


def check_problems(want: dict[str, Any], code: int, err: str, spec: Path) -> None:
    """Compare exit code and printed problems with the case's want; raise on a difference."""
    assert code == want["exit"], f"exit {code}\n{err}"
    assert problems_printed(err, spec) == want["problems"], err
    for words in want.get("says", []):
        assert words in err, f"{words!r} not printed\n{err}"


@pytest.mark.parametrize("path", cases("spec_errors"))
def test_spec_error_case(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = load_case(path, "spec_error")
    spec = lay_out(case, tmp_path)
    for command in case.get("commands", ["validate", "run"]):
        out = tmp_path / f"out-{command}"
        extra = ["--out", str(out)] if command == "run" else []
        code = main([command, str(spec), *extra, *case.get("args", [])])
        check_problems(case["want"], code, capsys.readouterr().err, spec)
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


@pytest.mark.parametrize("edit", [
    ("decision", "PASS"), ("exit", 0), ("reasons", ["BELOW_THRESHOLD", "GATE_NULL"]),
    ("categories", {"quality": {"wilson_lower": 0.5959}}),
    ("categories", {"quality": {"rate": 0.9001}}), ("categories", {"quality": {"met": None}}),
    ("categories", {"quality": {"n": 10.5}}), ("categories", {"other": {"n": 10}}),
    ("scorecard", {"coverage.records": 11}), ("scorecard", {"coverage.nowhere": 0}),
])
def test_an_edited_decision_expectation_fails(tmp_path: Path, edit: tuple[str, Any]) -> None:
    want, code, card = run_decision(HERE / "decisions" / "wilson-gate-fails.yaml", tmp_path)
    check_decision(want, code, card)
    key, value = edit
    with pytest.raises(AssertionError):
        check_decision({**want, key: value}, code, card)


def test_an_edited_problem_expectation_fails(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    case = load_case(HERE / "spec_errors" / "formula-unknown-name.yaml", "spec_error")
    spec = lay_out(case, tmp_path)
    code = main(["validate", str(spec)])
    err = capsys.readouterr().err
    check_problems(case["want"], code, err, spec)
    [line] = case["want"]["problems"]
    for edited in ({"exit": 1}, {"problems": [line.replace(":12:35:", ":12:36:")]},
                   {"problems": [line, line]}, {"says": ["did you mean 'qualities'?"]}):
        with pytest.raises(AssertionError):
            check_problems({**case["want"], **edited}, code, err, spec)


@pytest.mark.parametrize("text, complaint", [
    ("about: x\nwant: {exit: 2, problems: []}\n", "want/problems"),
    ("about: x\nwant: {exit: 2, problems: ['policy.yaml:1: BAD: x']}\n", "want/problems/0"),
    ("about: x\nfiles: {../escape.yaml: ''}\nwant: {exit: 2, problems: ['a:1:1: B: x']}\n",
     "files"),
    ("about: x\nwnat: {}\n", "(top)"),
    ("about: [unclosed\n", "malformed case"),
])
def test_a_malformed_case_fails_with_its_name(tmp_path: Path, text: str, complaint: str) -> None:
    path = tmp_path / "broken-case.yaml"
    path.write_text(text)
    with pytest.raises(pytest.fail.Exception) as caught:
        load_case(path, "spec_error")
    assert str(caught.value).startswith("broken-case: malformed case")
    assert complaint in str(caught.value)


def test_the_cases_cover_the_codes_and_the_lattice() -> None:
    codes = {line.split(": ")[1] for p in sorted((HERE / "spec_errors").glob("*.yaml"))
             for line in yaml.safe_load(p.read_text())["want"]["problems"]}
    assert len(codes) >= 25, sorted(codes)
    wants = [yaml.safe_load(p.read_text())["want"]
             for p in sorted((HERE / "decisions").glob("*.yaml"))]
    assert len(wants) >= 15
    assert {(w["decision"], w["exit"]) for w in wants} == {
        ("PASS", 0), ("FAIL", 1), ("INCOMPLETE", 3), ("TRIAGE", 4), ("SELF_TEST", 4)}


def test_the_documented_command_runs(tmp_path: Path) -> None:
    text = (HERE.parent.parent / "docs" / "conformance.md").read_text(encoding="utf-8")
    [script] = re.findall(r"```sh\n(.*?)```", text, re.S)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTEST_ADDOPTS": f"--basetemp={tmp_path / 'nested'} -p no:cacheprovider"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=HERE.parent.parent,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout, done.stdout
