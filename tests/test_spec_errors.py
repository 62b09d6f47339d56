"""Spec problems: every one coded and located, all reported, sorted, exit 2, nothing run."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from engine import SpecErrors, load
from engine.cli import main

from .conftest import Spec

LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z_]+): "
                  r"(?P<path>\S+): (?P<message>.+)$")


def problems(spec: Spec, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    code, out = spec.run()
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    assert not out.exists(), "nothing may be written when the spec is invalid"
    assert err[-1].endswith("nothing was run")
    found = [LINE.match(line) for line in err[:-1]]
    assert all(found), err
    return [m.groupdict() for m in found if m]


def set_text(spec: Spec, name: str, old: str, new: str) -> None:
    path = spec.dir / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def line_of(spec: Spec, name: str, needle: str) -> int:
    lines = (spec.dir / name).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def test_unknown_inspection_type_names_file_line_and_suggests(spec: Spec, capsys: Any) -> None:
    set_text(spec, "policy.yaml", "type: regex_absent", "type: regex_absnt")
    [p] = problems(spec, capsys)
    assert p["file"].endswith("example/policy.yaml")
    assert int(p["line"]) == line_of(spec, "policy.yaml", "regex_absnt")
    assert p["code"] == "UNKNOWN_INSPECTION"
    assert p["path"] == "spec.inspections[3].type"
    assert "did you mean 'regex_absent'?" in p["message"]


def test_duplicate_key_names_file_line(spec: Spec, capsys: Any) -> None:
    set_text(spec, "policy.yaml", "      weight: 0.3\n", "      weight: 0.3\n      weight: 0.4\n")
    [p] = problems(spec, capsys)
    assert (p["code"], int(p["line"])) == ("DUPLICATE_KEY", line_of(spec, "policy.yaml",
                                                                     "weight: 0.4"))
    assert p["path"] == "spec.categories.safety.weight"


def test_structure_problems_of_every_file_are_reported_together(spec: Spec,
                                                                 capsys: Any) -> None:
    set_text(spec, "policy.yaml", "threshold: 0.9\n", "threshold: 1.5\n")
    set_text(spec, "policy.yaml", "      weight: 0.2\n", "      weight: heavy\n")
    set_text(spec, "suite.yaml", "trials: 2", "trials: two")
    set_text(spec, "evaluation.yaml", "format: jsonl", "format: csv")
    found = problems(spec, capsys)
    assert [(p["file"].rsplit("/", 1)[1], p["code"], p["path"]) for p in found] == [
        ("evaluation.yaml", "BAD_VALUE", "spec.inputs.runs.format"),
        ("policy.yaml", "BAD_THRESHOLD", "spec.categories.resolution.threshold"),
        ("policy.yaml", "BAD_TYPE", "spec.categories.efficiency.weight"),
        ("suite.yaml", "BAD_TYPE", "spec.trials"),
    ]


def test_meaning_problems_reported_sorted(spec: Spec, capsys: Any) -> None:
    set_text(spec, "policy.yaml", "mode: all\n", "mode: every\n")
    set_text(spec, "policy.yaml", "no-card-numbers, no-internal-notes",
             "no-card-numbers, no-internal-note")
    set_text(spec, "policy.yaml", "      limit: 4000\n", "      limt: 4000\n")
    found = problems(spec, capsys)
    codes = [p["code"] for p in found]
    assert sorted(codes) == sorted(["BAD_VALUE", "UNKNOWN_INSPECTION_ID", "UNUSED_INSPECTION",
                                    "UNKNOWN_KEY", "ONE_OF"])
    keys = [(p["file"], int(p["line"]), int(p["col"])) for p in found]
    assert keys == sorted(keys)
    by_code = {p["code"]: p for p in found}
    assert "did you mean 'no-internal-notes'?" in by_code["UNKNOWN_INSPECTION_ID"]["message"]
    assert "did you mean 'limit'?" in by_code["UNKNOWN_KEY"]["message"]
    assert by_code["UNKNOWN_KEY"]["path"] == "spec.inspections[5].limt"


@pytest.mark.parametrize("old, new, code, path", [
    ("inspections: [latency-budget, cost-budget]", "inspections: [latency-budget]",
     "UNUSED_INSPECTION", "spec.inspections[6].id"),
    ("threshold: 0.8", "threshold: 1.0", "UNATTAINABLE_GATE",
     "spec.categories.efficiency.threshold"),
    ("purpose: release", "purpose: ship-it", "UNKNOWN_PURPOSE", "spec.gate.purpose"),
    ("formula: cost <= 0.02 and tokens <= 3000", "formula: cost.__class__",
     "FORMULA_FORBIDDEN", "spec.inspections[6].formula"),
    ("formula: cost <= 0.02 and tokens <= 3000", "formula: cost + tokens",
     "FORMULA_TYPE", "spec.inspections[6].formula"),
    ("errors_resolution == 0", "error_resolution == 0", "FORMULA_UNKNOWN_NAME",
     "spec.conditions[0].formula"),
    ("actual: metrics.latency_ms", "actual: metrics.[latency_ms", "BAD_JMESPATH",
     "spec.inspections[5].actual"),
    ("pattern: '\\b(?:\\d[ -]?){13,16}\\b'", "pattern: '(unclosed'", "BAD_REGEX",
     "spec.inspections[3].pattern"),
    ("schema_file: schemas/reply.schema.json", "schema_file: ../../../etc/passwd",
     "PATH_ESCAPES_ROOT", "spec.inspections[2].schema_file"),
    ("schema_file: schemas/reply.schema.json", "schema_file: /etc/passwd",
     "PATH_ABSOLUTE", "spec.inspections[2].schema_file"),
    ("schema_file: schemas/reply.schema.json", "schema_file: schemas/nope.json",
     "FILE_NOT_FOUND", "spec.inspections[2].schema_file"),
    ("apiVersion: specgate/v1", "apiVersion: specgate/v2", "BAD_VALUE", "apiVersion"),
    ("      weight: 0.5", "      weight: -1", "OUT_OF_RANGE", "spec.categories.resolution.weight"),
    ("  resolution:", "  Resolution:", "BAD_NAME", "spec.categories.Resolution"),
    ("  efficiency:", "  n_safety:", "NAME_CLASH", "spec.categories.n_safety"),
])
def test_policy_problem(spec: Spec, capsys: Any, old: str, new: str, code: str,
                        path: str) -> None:
    set_text(spec, "policy.yaml", old, new)
    found = problems(spec, capsys)
    assert (found[0]["code"], found[0]["path"]) == (code, path), found


def test_formula_problem_points_at_the_column(spec: Spec, capsys: Any) -> None:
    set_text(spec, "policy.yaml", "formula: cost <= 0.02 and tokens <= 3000",
             "formula: cost <= 0.02 and tokns <= 3000")
    [p] = problems(spec, capsys)
    text = (spec.dir / "policy.yaml").read_text().splitlines()[int(p["line"]) - 1]
    assert text[int(p["col"]) - 1:].startswith("tokns")
    assert "did you mean 'tokens'?" in p["message"]


def test_quoted_formula_column_skips_the_quote(spec: Spec, capsys: Any) -> None:
    set_text(spec, "policy.yaml", "formula: cost <= 0.02 and tokens <= 3000",
             "formula: 'cost <= 0.02 and 2 ** tokens'")
    [p] = problems(spec, capsys)
    text = (spec.dir / "policy.yaml").read_text().splitlines()[int(p["line"]) - 1]
    assert p["code"] == "FORMULA_FORBIDDEN"
    assert text[int(p["col"]) - 1:].startswith("2 ** tokens")


def test_path_escape_through_a_symlink(spec: Spec, capsys: Any, tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside.json"
    outside.write_text('{"type": "object"}')
    os.symlink(outside, spec.dir / "schemas" / "linked.json")
    set_text(spec, "policy.yaml", "schemas/reply.schema.json", "schemas/linked.json")
    [p] = problems(spec, capsys)
    assert p["code"] == "PATH_ESCAPES_ROOT"


def test_suite_and_evaluation_problems(spec: Spec, capsys: Any) -> None:
    set_text(spec, "suite.yaml", "- id: password-reset", "- id: address-change")
    set_text(spec, "evaluation.yaml", "policy: policy.yaml", "policy: polcy.yaml")
    found = problems(spec, capsys)
    assert [p["code"] for p in found] == ["FILE_NOT_FOUND", "DUPLICATE_ID"]


def test_wrong_kind_and_unknown_kind(spec: Spec, capsys: Any) -> None:
    set_text(spec, "evaluation.yaml", "suite: suite.yaml", "suite: policy.yaml")
    (spec.dir / "other.yaml").write_text("apiVersion: specgate/v1\nkind: Polcy\n")
    found = problems(spec, capsys)
    assert {p["code"] for p in found} == {"WRONG_KIND", "UNKNOWN_KIND"}


def test_validate_command(spec: Spec, capsys: Any) -> None:
    assert main(["validate", str(spec.root)]) == 0
    assert "ok: support-agent" in capsys.readouterr().out
    set_text(spec, "policy.yaml", "kind: Policy", "kind: Policy\nextra: 1")
    assert main(["validate", str(spec.root)]) == 2


def test_a_policy_no_evaluation_uses_is_still_checked(spec: Spec, capsys: Any) -> None:
    text = (spec.dir / "policy.yaml").read_text().replace("type: at_most", "type: at_mst")
    (spec.dir / "draft-policy.yaml").write_text(text)
    [p] = problems(spec, capsys)
    assert p["file"].endswith("draft-policy.yaml") and p["code"] == "UNKNOWN_INSPECTION"


def test_load_raises_with_problems(spec: Spec) -> None:
    set_text(spec, "policy.yaml", "type: equals" if False else "type: at_most", "type: at_mist")
    with pytest.raises(SpecErrors) as caught:
        load([spec.root])
    assert [p.code for p in caught.value.problems] == ["UNKNOWN_INSPECTION"]


def test_non_utf8_and_bom_specs(spec: Spec, capsys: Any) -> None:
    (spec.dir / "suite.yaml").write_bytes(b"\xef\xbb\xbf" + (spec.dir / "suite.yaml").read_bytes())
    assert main(["validate", str(spec.root)]) == 0  # a UTF-8 BOM on YAML is harmless
    (spec.dir / "suite.yaml").write_bytes(b"name: caf\xe9\n")
    found = problems(spec, capsys)
    assert found[0]["code"] == "BAD_ENCODING"
