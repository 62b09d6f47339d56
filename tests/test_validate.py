"""engine validate on spec files written here: structure and formula problems in one run,
and the warnings a valid spec gets (WEIGHTS_UNUSED)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main

from .conftest import ROOT, Spec

HEAD = """\
apiVersion: specgate/v1
kind: Policy
metadata: {name: demo, version: 1.0.0, owner: qa}
spec:
  scoring_version: demo/1
"""

# line 8: a weight that is not a number (structure); lines 11, 15, 20: formula problems
BROKEN = HEAD + """\
  categories:
    safety:
      weight: heavy
      inspections: [short]
  overall:
    formula: min(safety, speed)
    threshold: 0.9
  conditions:
    - id: enough
      formula: n_safety >= 2 ** 3
  inspections:
    - id: short
      type: formula
      bind: {words: output.words}
      formula: wordz <= 100
"""


def validate(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    """engine validate PATH: its exit code, its problem lines (stderr), its stdout."""
    code = main(["validate", str(path)])
    said = capsys.readouterr()
    lines = said.err.splitlines()
    if code == 2:
        assert lines[-1].endswith("problem(s); nothing was run"), said.err
        lines = lines[:-1]
    assert "INTERNAL_ERROR" not in said.err + said.out
    return code, lines, said.out


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


def test_structure_and_formula_problems_are_reported_in_one_run(
        tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, BROKEN)
    code, lines, _ = validate(Path("policy.yaml"), capsys)
    assert code == 2
    assert lines == [
        "policy.yaml:8:15: BAD_TYPE: spec.categories.safety.weight: must be a number",
        "policy.yaml:11:26: FORMULA_UNKNOWN_NAME: spec.overall.formula: unknown name 'speed'",
        "policy.yaml:15:28: FORMULA_FORBIDDEN: spec.conditions[0].formula: "
        "operator '**' is not allowed",
        "policy.yaml:20:16: FORMULA_UNKNOWN_NAME: spec.inspections[0].formula: "
        "unknown name 'wordz' (did you mean 'words'?)",
    ]
    # mending the structure leaves the same formula problems, at the same places
    write(tmp_path, BROKEN.replace("weight: heavy", "weight: 1"))
    code, again, _ = validate(Path("policy.yaml"), capsys)
    assert (code, again) == (2, lines[1:])


def test_formula_names_are_not_judged_on_broken_categories(
        tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The categories are a list, so which names the formulas may use is unknown: only
    each formula's own text is checked; a formula that is not text is a structure
    problem only."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path, HEAD + """\
  categories: [safety]
  overall:
    formula: min(safety, speed)
  conditions:
    - id: enough
      formula: n_safety >= 2 ** 3
    - id: number
      formula: 42
  inspections:
    - id: short
      type: judge
      rubric: brevity
      inputs: {reply: output.reply}
      pass_when: verdict == 'short' and lenght(reply) < 3
""")
    code, lines, _ = validate(Path("policy.yaml"), capsys)
    assert code == 2
    assert lines == [
        "policy.yaml:6:15: BAD_TYPE: spec.categories: must be a mapping",
        "policy.yaml:11:28: FORMULA_FORBIDDEN: spec.conditions[0].formula: "
        "operator '**' is not allowed",
        "policy.yaml:13:16: BAD_TYPE: spec.conditions[1].formula: must be text",
        "policy.yaml:19:41: FORMULA_UNKNOWN_FUNCTION: spec.inspections[0].pass_when: "
        "unknown function 'lenght'",
    ]


@pytest.mark.parametrize("body", [
    "  categories: {a: {inspections: [x]}}\n  inspections: {x: 1}\n  conditions: text\n",
    "  categories: 3\n  inspections: [[1], {type: [1]}, {type: formula, bind: [x], "
    "formula: 'x and'}]\n",
    "  categories: {}\n  inspections: []\n  overall: 3\n  gate: {comparison: 5}\n",
    "  categories: {a: 1}\n  inspections: [1]\n  overall: {formula: [a]}\n"
    "  gate: {comparison: {regressed_when: 'rate <', improved_when: 1}}\n",
    "  - not a mapping\n",
])
def test_any_broken_shape_is_reported_never_crashes(tmp_path: Path, capsys: Any,
                                                    body: str) -> None:
    write(tmp_path, HEAD + body)
    code, lines, _ = validate(tmp_path, capsys)
    assert code == 2 and lines
    located = re.compile(r"^\S+:\d+:\d+: [A-Z_]+: \S+: .+$")
    assert all(located.match(line) for line in lines), lines


OVERALL = ("  overall:\n"
           "    threshold: 0.9        # weighted mean of category rates (weights above)\n")
DEAD = ("warning: example/policy.yaml:20:15: WEIGHTS_UNUSED: spec.categories.resolution.weight: "
        "category weights (resolution 0.5, safety 0.3, efficiency 0.2) can never change the "
        "decision: ")


@pytest.mark.parametrize("overall, condition, why", [
    ("  overall:\n    formula: min(resolution, safety)\n    threshold: 0.9\n", "",
     "overall.formula 'min(resolution, safety)' does not use 'weighted', and no condition "
     "does (use 'weighted' in overall.formula or in a condition, or remove the weights)"),
    ("  overall:\n    formula: 0.5 * resolution + 0.5 * safety\n", "weighted >= 0.5", None),
    ("  overall: {}\n", "",
     "overall.formula uses 'weighted', but the overall score has no threshold and no "
     "condition names 'overall' (give overall a threshold, or remove the weights)"),
    ("  overall: {}\n", "overall >= 0.5", None),
    ("", "",
     "the policy has no overall score, and no condition names 'weighted' or 'overall' (add "
     "'overall: {threshold: ...}' to gate on the weighted score, or remove the weights)"),
    ("", "overall >= 0.9", None),  # without an overall block, 'overall' is the weighted score
    (OVERALL, "", None),  # the shipped example: weighted score against a threshold
], ids=["min-of-rates", "condition-reads-weighted", "no-threshold", "condition-reads-overall",
        "no-overall", "no-overall-condition-reads-overall", "shipped"])
def test_weights_nothing_gated_reads_are_a_warning(spec: Spec, capsys: Any,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   overall: str, condition: str,
                                                   why: str | None) -> None:
    monkeypatch.chdir(spec.root)
    policy = spec.dir / "policy.yaml"
    text = policy.read_text()
    assert OVERALL in text
    text = text.replace(OVERALL, overall)
    if condition:
        text = text.replace("formula: errors_resolution == 0 and n_resolution >= 16",
                            f"formula: errors_resolution == 0 and {condition}")
    policy.write_text(text)
    code, _, out = validate(spec.root, capsys)
    assert code == 0, out  # a warning, never an error
    warnings = [line for line in out.splitlines() if line.startswith("warning: ")]
    assert warnings == ([DEAD + why] if why else [])


def test_weights_of_zero_are_never_dead(spec: Spec, capsys: Any) -> None:
    text = (spec.dir / "policy.yaml").read_text().replace(OVERALL, "")
    (spec.dir / "policy.yaml").write_text(re.sub(r"weight: 0\.\d", "weight: 0", text))
    code, _, out = validate(spec.root, capsys)
    assert code == 0 and "warning" not in out


def test_engine_run_prints_the_warning_and_decides_as_before(spec: Spec, capsys: Any,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    monkeypatch.chdir(spec.root)
    code, _ = spec.run(out="before")
    assert "warning" not in capsys.readouterr().err
    policy = spec.dir / "policy.yaml"
    policy.write_text(policy.read_text().replace(OVERALL, "  overall: {}\n"))
    assert spec.run("--json", out="after")[0] == code
    said = capsys.readouterr()
    assert said.err.startswith(DEAD[:DEAD.index("can never")])
    assert '"exit_code"' in said.out  # stdout stays the JSON summary


def test_the_shipped_specs_have_no_dead_weights(capsys: Any) -> None:
    code, _, out = validate(ROOT / "specs", capsys)
    assert code == 0 and "WEIGHTS_UNUSED" not in out


def test_two_evaluations_of_one_policy_print_its_warning_once(tmp_path: Path,
                                                              capsys: Any) -> None:
    folder = tmp_path / "example"
    shutil.copytree(ROOT / "specs" / "example", folder)
    policy = folder / "policy.yaml"
    policy.write_text(policy.read_text().replace(OVERALL, "  overall: {}\n"))
    second = (folder / "evaluation.yaml").read_text().replace(
        "name: support-agent\n", "name: support-agent-twin\n", 1)
    assert "support-agent-twin" in second
    (folder / "evaluation-twin.yaml").write_text(second)
    main(["run", str(folder), "--out", str(tmp_path / "out")])
    warned = [x for x in capsys.readouterr().err.splitlines() if "WEIGHTS_UNUSED" in x]
    assert len(warned) == 1, warned


# an inspection whose own parameters break its type's schema (bind is a list): lines 15, 16
BAD_PARAMS = HEAD + """\
  categories:
    safety:
      weight: 1
      inspections: [short]
  overall:
    threshold: 0.9
  inspections:
    - id: short
      type: formula
      bind: [words]
      formula: words <=
"""


def test_an_inspection_with_broken_parameters_still_has_its_formula_checked(
        tmp_path: Path, capsys: Any) -> None:
    bind = "policy.yaml:15:13: BAD_TYPE: spec.inspections[0].bind: must be a mapping"
    formula = "policy.yaml:16:16: FORMULA_SYNTAX: spec.inspections[0].formula: "
    path = write(tmp_path, BAD_PARAMS)
    code, lines, _ = validate(path, capsys)  # the Policy's own structure is sound
    assert code == 2 and len(lines) == 2, lines
    assert lines[0].endswith(bind) and formula in lines[1], lines
    path.write_text(BAD_PARAMS.replace("  overall:\n    threshold: 0.9\n",
                                       "  overall:\n    threshold: high\n"))
    code, lines, _ = validate(path, capsys)  # and with a structure problem beside it
    assert code == 2 and len(lines) == 3, lines
    assert lines[0].endswith("policy.yaml:11:16: BAD_THRESHOLD: spec.overall.threshold: must be "
                             "a number")
    assert lines[1].endswith(bind) and formula in lines[2], lines


def test_a_missing_bind_is_one_problem_not_every_name_unknown(tmp_path: Path,
                                                                capsys: Any) -> None:
    path = write(tmp_path, BAD_PARAMS.replace("      bind: [words]\n", "").replace(
        "formula: words <=\n", "formula: words <= 100\n"))
    code, lines, _ = validate(path, capsys)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].endswith("policy.yaml:13:7: MISSING_KEY: spec.inspections[0]: 'bind' is "
                             "required here"), lines


def test_a_base_60_or_grouped_number_is_refused_where_it_is(tmp_path: Path,
                                                            capsys: Any) -> None:
    # `limit: 1:06:40` loads as 4000 and `min_n: 4_000_0` as 40000 in YAML 1.1: neither is
    # what a reviewer of the pull request reads.
    folder = tmp_path / "example"
    shutil.copytree(ROOT / "specs" / "example", folder)
    policy = folder / "policy.yaml"
    text = policy.read_text()
    assert "    min_n: 8\n" in text and "      limit: 4000\n" in text
    policy.write_text(text.replace("    min_n: 8\n", "    min_n: 4_000_0\n")
                      .replace("      limit: 4000\n", "      limit: 1:06:40\n"))
    lines = policy.read_text().splitlines()
    at_n = next(i for i, line in enumerate(lines, 1) if "min_n: 4_000_0" in line)
    at_limit = next(i for i, line in enumerate(lines, 1) if "limit: 1:06:40" in line)
    code, problems, _ = validate(folder, capsys)
    assert code == 2
    assert [line.split(": ")[:3] for line in problems] == [
        [f"{policy}:{at_n}:12", "YAML_AMBIGUOUS", "spec.gate.min_n"],
        [f"{policy}:{at_limit}:14", "YAML_AMBIGUOUS", "spec.inspections[5].limit"]]
    assert "read here as 40000" in problems[0] and "read here as 4000," in problems[1]


def test_an_expired_waiver_is_a_located_warning(spec: Spec, capsys: Any) -> None:
    # Written today or later, the first waiver's last day (2026-01-31) has passed; the
    # second's has not. A warning: the spec stays valid (exit 0).
    spec.edit("policy.yaml", lambda d: d["spec"].update(waivers=[
        {"id": f"W-{n}", "scope": {"categories": ["safety"]}, "justification": "known",
         "approver": "governance@example.com", "expires": day}
        for n, day in ((1, "2026-01-31"), (2, "2999-12-31"))]))
    policy = spec.dir / "policy.yaml"
    lines = policy.read_text().splitlines()
    [(line, col)] = [(i, text.index("2026-01-31")) for i, text in enumerate(lines, 1)
                     if "expires:" in text and "2026-01-31" in text]  # col: 1-based quote
    code, problems, out = validate(spec.dir, capsys)
    warned = [x for x in out.splitlines() if "WAIVER_EXPIRED" in x]
    assert code == 0 and problems == [] and warned == [
        f"warning: {policy}:{line}:{col}: WAIVER_EXPIRED: spec.waivers[0].expires: waiver W-1 "
        "has expired: its last day was 2026-01-31; it no longer applies from 2026-02-01 "
        "(renew it with a new approval and expires, or remove it)"]
