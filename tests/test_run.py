"""`engine run` end to end on the example and its variants; expectations worked by hand.

The shipped example has 8 cases x 2 trials = 16 runs. Rows per category: resolution
3 inspections x 16 = 48 (one fails: run-004 says 'thirty days'), safety 2 x 16 = 32,
efficiency 2 x 16 = 32 (one fails: run-011 took 4350 ms against a 4000 ms budget).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main

from .conftest import ROOT, SHIPPED, Spec

Z = 1.959963984540054


def wilson_lower(s: int, n: int) -> float:
    """Protocol §7.1, written out again here so the test does not lean on engine.stats."""
    p = s / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return max(0.0, centre - half)


def reasons(card: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r["decision"], r["code"]) for r in card["reasons"]]


def test_example_passes_with_the_numbers_worked_by_hand(spec: Spec) -> None:
    code, out = spec.run()
    card = spec.scorecard()
    assert code == 0 and card["decision"] == "PASS" and card["overall_pass"] is True
    cats = card["categories"]
    assert (cats["resolution"]["passed"], cats["resolution"]["n"]) == (47, 48)
    assert (cats["safety"]["passed"], cats["safety"]["n"]) == (32, 32)
    assert (cats["efficiency"]["passed"], cats["efficiency"]["n"]) == (31, 32)
    assert cats["resolution"]["rate"] == 47 / 48
    assert cats["efficiency"]["wilson_lower"] == pytest.approx(wilson_lower(31, 32), abs=1e-15)
    assert cats["efficiency"]["wilson_lower"] == pytest.approx(0.84256, abs=1e-5)
    assert card["overall"]["score"] == pytest.approx(0.5 * 47 / 48 + 0.3 + 0.2 * 31 / 32)
    assert card["reasons"] == []
    assert card["coverage"]["records"] == 16 and card["coverage"]["rows"] == 112
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    failed = sorted((r["unit"], r["inspection"]) for r in rows if r["status"] == "FAIL")
    assert failed == [("run-004", "mentions-key-facts"), ("run-011", "latency-budget")]


def test_mandatory_minimum_fails_whatever_the_total(spec: Spec) -> None:
    runs = spec.runs()
    runs[0]["output"]["reply"] += " Paid with 4242 4242 4242 4242."
    spec.write_runs(runs)
    code, _ = spec.run()
    card = spec.scorecard()
    assert code == 1 and card["decision"] == "FAIL"
    # 0.5*47/48 + 0.3*31/32 + 0.2*31/32 = 0.97396: the weighted total clears 0.9 ...
    assert card["overall"]["met"] is True
    assert card["overall"]["score"] == pytest.approx(0.5 * 47 / 48 + 0.5 * 31 / 32)
    # ... but safety is below its mandatory minimum of 1.0.
    [reason] = card["reasons"]
    assert (reason["code"], reason["category"]) == ("BELOW_MINIMUM", "safety")
    assert reason["spec_path"] == "policy:spec.categories.safety.minimum"
    assert card["categories"]["safety"]["state"] == "NOT_MET"


def test_threshold_on_the_point_estimate(spec: Spec) -> None:
    runs = spec.runs()
    for run in runs[4:8]:
        run["output"]["actions"] = ["lookup_order"]  # 4 more resolution failures: 43/48
    spec.write_runs(runs)
    code, _ = spec.run()
    card = spec.scorecard()
    assert card["categories"]["resolution"]["rate"] == 43 / 48  # 0.8958 < 0.9
    assert code == 1 and reasons(card) == [("FAIL", "BELOW_THRESHOLD")]


def test_threshold_on_the_wilson_lower_bound(spec: Spec) -> None:
    runs = spec.runs()
    for i in (1, 2):
        runs[i]["metrics"]["latency_ms"] = 5000  # efficiency 29/32
    spec.write_runs(runs)
    code, _ = spec.run()
    cat = spec.scorecard()["categories"]["efficiency"]
    assert cat["rate"] == 29 / 32 and cat["rate"] >= 0.8  # the point estimate would pass
    assert cat["wilson_lower"] == pytest.approx(wilson_lower(29, 32), abs=1e-15)
    assert cat["wilson_lower"] < 0.8 and cat["met"] is False and code == 1


def test_overall_threshold(spec: Spec) -> None:
    spec.edit("policy.yaml", lambda d: d["spec"]["overall"].update(threshold=0.99))
    code, _ = spec.run()
    assert code == 1 and reasons(spec.scorecard()) == [("FAIL", "OVERALL_BELOW_THRESHOLD")]


def test_condition_false_fails_and_cites_it(spec: Spec) -> None:
    spec.edit("policy.yaml", lambda d: d["spec"]["conditions"][0].update(
        formula="n_resolution >= 100"))
    code, _ = spec.run()
    card = spec.scorecard()
    assert code == 1 and reasons(card) == [("FAIL", "CONDITION_FALSE")]
    assert card["reasons"][0]["spec_path"] == "policy:spec.conditions[0]"
    assert card["conditions"][0]["value"] is False


@pytest.mark.parametrize("breakage, code", [
    (lambda runs: runs[:-2], "CASE_MISSING"),               # prompt-probe has no runs
    (lambda runs: runs + [{"id": "x", "case_id": "nope"}], "UNKNOWN_CASE"),
    (lambda runs: runs + [{"id": "x"}], "MISSING_CASE_ID"),
])
def test_coverage_problems_are_incomplete(spec: Spec, breakage: Any, code: str) -> None:
    spec.write_runs(breakage(spec.runs()))
    exit_code, _ = spec.run()
    card = spec.scorecard()
    assert exit_code == 3 and card["decision"] == "INCOMPLETE" and not card["overall_pass"]
    assert ("INCOMPLETE", code) in reasons(card)


def test_malformed_lines_are_incomplete_with_their_line(spec: Spec, capsys: Any) -> None:
    path = spec.dir / "data/runs.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = b'{"id": "run-003", "case_id": \n'
    lines[5] = b'{"id": "run-006", "x": NaN}\n'
    lines[7] = b'{"id": "\xff"}\n'
    lines[9] = b'{"id": "run-010", "n": 9007199254740992}\n'  # 2**53: not canonical JSON
    lines[11] = b'{"id": "run-012", "t": "\\ud800"}\n'  # a lone surrogate is not text
    path.write_bytes(b"".join(lines))
    code, _ = spec.run()
    card = spec.scorecard()
    assert code == 3
    assert {("INCOMPLETE", c) for c in ("INVALID_JSON", "NON_FINITE_NUMBER", "NOT_UTF8",
                                        "NUMBER_OUT_OF_RANGE", "LONE_SURROGATE")} <= \
        set(reasons(card))
    assert card["coverage"]["record_problems"] == {
        "INVALID_JSON": 1, "NON_FINITE_NUMBER": 1, "NOT_UTF8": 1, "NUMBER_OUT_OF_RANGE": 1,
        "LONE_SURROGATE": 1}
    samples = card["coverage"]["record_problem_samples"]
    assert [s["line"] for s in samples] == [3, 6, 8, 10, 12]
    assert "surrogate" in samples[4]["message"]
    assert "NaN" in card["coverage"]["record_problem_samples"][1]["message"]
    printed = capsys.readouterr().out
    assert "example/data/runs.jsonl:3: INVALID_JSON: not JSON" in printed
    assert "example/data/runs.jsonl:8: NOT_UTF8: not UTF-8" in printed


def test_error_rows_leave_n_and_make_the_category_unresolved(spec: Spec) -> None:
    runs = spec.runs()
    del runs[0]["output"]["reply"]
    spec.write_runs(runs)
    code, _ = spec.run()
    card = spec.scorecard()
    res, safety = card["categories"]["resolution"], card["categories"]["safety"]
    # mentions-key-facts needs the reply (ERROR); reply-well-formed FAILs the schema.
    assert (res["errors"], res["n"], res["passed"]) == (1, 47, 45)
    assert (safety["errors"], safety["n"]) == (2, 30)
    assert safety["state"] == "UNRESOLVED" and safety["met"] is None
    assert code == 3
    got = reasons(card)
    assert ("INCOMPLETE", "CATEGORY_UNRESOLVED") in got
    assert ("INCOMPLETE", "GATE_NULL") in got  # the weighted score needs every rate
    # INCOMPLETE still reports the threshold it misses: 45/47 < 0.9 is false, so none here,
    # but the condition that resolution has no ERROR rows does fail.
    assert ("FAIL", "CONDITION_FALSE") in got
    assert got.index(("INCOMPLETE", "CATEGORY_UNRESOLVED")) < got.index(("FAIL",
                                                                         "CONDITION_FALSE"))


def test_incomplete_still_lists_threshold_misses(spec: Spec) -> None:
    runs = spec.runs()
    del runs[0]["output"]["reply"]
    for run in runs[4:10]:
        run["output"]["actions"] = []  # resolution: 39 passed of 47 scored = 0.83 < 0.9
    spec.write_runs(runs)
    code, _ = spec.run()
    card = spec.scorecard()
    res = card["categories"]["resolution"]
    assert (res["passed"], res["n"], res["state"], res["met"]) == (39, 47, "UNRESOLVED", None)
    assert code == 3
    assert ("FAIL", "BELOW_THRESHOLD") in reasons(card)
    assert card["decision"] == "INCOMPLETE"


def test_min_n(spec: Spec) -> None:
    spec.edit("policy.yaml", lambda d: d["spec"]["categories"]["safety"].update(min_n=33))
    code, _ = spec.run()
    assert code == 3 and ("INCOMPLETE", "BELOW_MIN_N") in reasons(spec.scorecard())


def _no_efficiency_rows(d: dict[str, Any]) -> None:
    for inspection in d["spec"]["inspections"][5:]:
        # no case is tagged gpu: no rows (a release's guard reads the suite case)
        inspection["when"] = "contains(case.tags || `[]`, 'gpu')"


def test_required_category_without_rows_is_incomplete(spec: Spec) -> None:
    spec.edit("policy.yaml", _no_efficiency_rows)
    code, _ = spec.run()
    card = spec.scorecard()
    assert code == 3 and ("INCOMPLETE", "REQUIRED_CATEGORY_MISSING") in reasons(card)
    assert card["categories"]["efficiency"]["state"] == "MISSING"


def test_optional_category_without_rows_leaves_the_weighted_score(spec: Spec) -> None:
    def change(d: dict[str, Any]) -> None:
        _no_efficiency_rows(d)
        d["spec"]["categories"]["efficiency"]["required"] = False

    spec.edit("policy.yaml", change)
    code, _ = spec.run()
    card = spec.scorecard()
    assert code == 0 and card["categories"]["efficiency"]["state"] == "NOT_INCLUDED"
    assert card["overall"]["score"] == pytest.approx((0.5 * 47 / 48 + 0.3) / 0.8)


@pytest.mark.parametrize("purpose, decision, code", [
    ("triage", "TRIAGE", "PURPOSE_TRIAGE"), ("self_test", "SELF_TEST", "PURPOSE_SELF_TEST")])
def test_purposes_that_never_pass(spec: Spec, purpose: str, decision: str, code: str) -> None:
    spec.edit("policy.yaml", lambda d: d["spec"]["gate"].update(purpose=purpose))
    exit_code, _ = spec.run()
    card = spec.scorecard()
    assert exit_code == 4 and card["decision"] == decision and not card["overall_pass"]
    assert reasons(card)[0] == (decision, code)


def test_worst_exit_code_over_evaluations(spec: Spec) -> None:
    second = spec.root / "second"
    second.mkdir()
    for name in ("policy.yaml", "suite.yaml", "caveats.yaml"):
        (second / name).write_text((spec.dir / name).read_text())
    (second / "schemas").symlink_to(spec.dir / "schemas")
    (second / "evaluation.yaml").write_text((spec.dir / "evaluation.yaml").read_text().replace(
        "name: support-agent", "name: support-agent-b").replace(
        "data/runs.jsonl", "../example/data/runs.jsonl"))
    assert spec.run(out="both")[0] == 0
    assert (spec.root / "both" / "support-agent").is_dir()
    assert (spec.root / "both" / "support-agent-b").is_dir()
    spec.edit("policy.yaml", lambda d: d["spec"]["overall"].update(threshold=0.99))
    assert spec.run(out="again")[0] == 1  # one PASS, one FAIL: FAIL wins


def test_input_rebinding_and_json_summary(spec: Spec, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "elsewhere.jsonl"
    runs = spec.runs()
    runs[0]["output"]["reply"] += " 4242 4242 4242 4242"
    other.write_text("".join(json.dumps(r) + "\n" for r in runs))
    code, out = spec.run("--input", f"runs={other}", "--json", "--run-id", "ci-77.2")
    summary = json.loads(capsys.readouterr().out)
    assert code == 1 and summary["exit_code"] == 1 and summary["run_id"] == "ci-77.2"
    [entry] = summary["evaluations"]
    assert entry["decision"] == "FAIL" and entry["out"] == str(out)
    assert entry["reasons"][0]["code"] == "BELOW_MINIMUM"
    card = spec.scorecard()
    import hashlib
    assert card["inputs"]["runs"]["sha256"] == hashlib.sha256(other.read_bytes()).hexdigest()


@pytest.mark.parametrize("args, message", [
    (["--input", "nope=/etc/hostname"], "UNKNOWN_INPUT"),
    (["--input", "runs=/does/not/exist"], "INPUT_NOT_FOUND"),
    (["--input", "runs"], "BAD_INPUT_OPTION"),
    (["--key", "/etc/hostname"], "BAD_KEY"),
])
def test_usage_errors_exit_2_and_write_nothing(spec: Spec, capsys: Any, args: list[str],
                                               message: str) -> None:
    code, out = spec.run(*args)
    assert code == 2 and message in capsys.readouterr().err and not out.exists()


def test_earlier_evidence_is_never_overwritten(spec: Spec, capsys: Any) -> None:
    assert spec.run()[0] == 0
    before = {p.name: p.read_bytes() for p in (spec.root / "out").iterdir()}
    spec.write_runs(spec.runs()[:-2])
    assert spec.run()[0] == 2
    assert "OUTPUT_EXISTS" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in (spec.root / "out").iterdir()} == before


def test_a_failure_mid_run_leaves_nothing(spec: Spec, monkeypatch: Any, capsys: Any) -> None:
    from engine.evidence import scorecard as evidence

    def full_disk(*args: Any) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(evidence, "seal", full_disk)
    assert spec.run()[0] == 2
    assert "IO_ERROR: No space left on device; evaluations already written are complete " \
        "and nothing partial was kept" in \
        capsys.readouterr().err
    assert sorted(p.name for p in spec.root.iterdir()) == ["example"]


def test_a_bug_is_never_a_decision(spec: Spec, monkeypatch: Any, capsys: Any) -> None:
    from engine.run import rows as runner

    def bug(*args: Any) -> Any:
        raise KeyError("oops")

    monkeypatch.setattr(runner, "run", bug)
    assert spec.run()[0] == 3
    assert "INTERNAL_ERROR: KeyError" in capsys.readouterr().err
    assert sorted(p.name for p in spec.root.iterdir()) == ["example"]


def test_default_output_is_a_new_folder_each_run(spec: Spec, monkeypatch: Any,
                                                 tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(spec.root)]) == 0
    assert main(["run", str(spec.root)]) == 0
    runs = list((tmp_path / "specgate-out" / "support-agent").iterdir())
    assert len(runs) == 2
    assert runs[0].joinpath("scorecard.json").read_bytes() == \
        runs[1].joinpath("scorecard.json").read_bytes()  # no wall clock in the scorecard


def test_console_script_and_module_entry_point(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for command in ([sys.executable, "-m", "engine"],
                    [str(Path(sys.executable).parent / "engine")]):
        done = subprocess.run([*command, "run", str(ROOT / "specs"), "--out",
                               str(tmp_path / command[-1].replace("/", "_"))],
                              capture_output=True, text=True, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "support-agent: PASS" in done.stdout


def _leak_and_waive(spec: Spec, expires: str, scope: dict[str, Any]) -> None:
    runs = spec.runs()
    runs[0]["output"]["reply"] += " Paid with 4242 4242 4242 4242."
    spec.write_runs(runs)
    spec.edit("policy.yaml", lambda d: d["spec"].update(waivers=[{
        "id": "W-7", "scope": scope, "justification": "test card from the vendor's sandbox",
        "approver": "governance@example.com", "expires": expires}]))


def test_an_active_waiver_takes_the_fail_row_out_of_the_rate(spec: Spec) -> None:
    _leak_and_waive(spec, "2099-12-31", {"categories": ["safety"],
                                         "cases": ["refund-late-delivery"]})
    code, out = spec.run("--as-of", "2099-06-30")
    card = spec.scorecard()
    safety = card["categories"]["safety"]
    assert (safety["n"], safety["passed"], safety["waived"]) == (31, 31, 1) and code == 0
    [entry] = card["waivers"]["entries"]
    assert (entry["status"], entry["rows_waived"]) == ("active", 1)
    assert card["waivers"]["as_of"] == "2099-06-30"
    assert "W-7" in (out / "scorecard.html").read_text()
    assert "W-7: active, 1 FAIL row(s) waived" in (out / "scorecard.md").read_text()
    waived = [json.loads(x) for x in (out / "rows.jsonl").read_text().splitlines()
              if '"waived_by"' in x]
    assert [(r["status"], r["waived_by"]) for r in waived] == [("FAIL", "W-7")]
    [case] = ET.parse(out / "junit.xml").findall(
        ".//testcase[@classname='support-agent.waiver']")
    skipped = case.find("skipped")
    assert case.get("name") == "W-7" and skipped is not None
    assert "1 FAIL row(s) waived" in skipped.get("message", "")
    assert "governance@example.com, last day 2099-12-31" in skipped.get("message", "")


def test_an_expired_waiver_no_longer_applies_and_says_so(spec: Spec) -> None:
    _leak_and_waive(spec, "2026-11-28", {"categories": ["safety"]})
    code, out = spec.run("--as-of", "2099-06-30")
    card = spec.scorecard()
    [entry] = card["waivers"]["entries"]
    assert entry["status"] == "expired" and "no longer applies" in entry["note"]
    assert code == 1 and card["categories"]["safety"]["waived"] == 0
    said = "its last day was 2026-11-28; it no longer applies from 2026-11-29"
    assert entry["note"] == said
    assert said in (out / "scorecard.md").read_text()
    assert said in (out / "scorecard.html").read_text()
    [case] = ET.parse(out / "junit.xml").findall(
        ".//testcase[@classname='support-agent.waiver']")
    assert case.find("skipped") is None
    assert "no longer applies" in (case.findtext("system-out") or "")


@pytest.mark.parametrize("as_of, status", [("2099-12-31", "active"), ("2100-01-01", "expired")])
def test_expires_is_the_last_day_a_waiver_applies(spec: Spec, as_of: str, status: str) -> None:
    # The last day of a year: the day after it is the first of the next year.
    _leak_and_waive(spec, "2099-12-31", {"categories": ["safety"]})
    code, out = spec.run("--as-of", as_of)
    [entry] = spec.scorecard()["waivers"]["entries"]
    assert (entry["status"], entry["rows_waived"], code) == \
        (("active", 1, 0) if status == "active" else ("expired", 0, 1))
    assert entry["note"] == ("" if status == "active" else
                             "its last day was 2099-12-31; it no longer applies from 2100-01-01")


def test_a_waiver_scope_must_match_wholly(spec: Spec) -> None:
    _leak_and_waive(spec, "2099-12-31", {"categories": ["safety"], "cases": ["password-reset"]})
    assert spec.run("--as-of", "2099-06-30")[0] == 1  # the leak is in another case


def test_missing_evidence_is_never_waived(spec: Spec) -> None:
    runs = spec.runs()
    del runs[0]["output"]["reply"]
    spec.write_runs(runs)
    spec.edit("policy.yaml", lambda d: d["spec"].update(waivers=[{
        "id": "W-8", "scope": {"categories": ["safety", "resolution"]}, "justification": "j",
        "approver": "a", "expires": "2099-01-01"}]))
    code, _ = spec.run("--as-of", "2099-06-30")
    assert code == 3 and spec.scorecard()["categories"]["safety"]["errors"] == 2


def test_a_waiver_naming_an_unknown_category_is_a_spec_error(spec: Spec, capsys: Any) -> None:
    spec.edit("policy.yaml", lambda d: d["spec"].update(waivers=[{
        "id": "W-9", "scope": {"categories": ["safty"]}, "justification": "j",
        "approver": "a", "expires": "2099-01-01"}]))
    assert spec.run()[0] == 2
    err = capsys.readouterr().err
    assert "UNKNOWN_CATEGORY" in err and "did you mean 'safety'?" in err


def test_init_scaffolds_a_spec_that_validates_tests_and_runs(tmp_path: Path,
                                                             capsys: Any) -> None:
    folder = tmp_path / "my-agent"
    assert main(["init", str(folder)]) == 0
    written = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert written == ["caveats.yaml", "data/runs.jsonl", "evaluation.yaml", "policy.yaml",
                       "suite.yaml", "tests/policy.test.yaml"]
    for file in folder.rglob("*.yaml"):  # nothing of the machine it ran on
        text = file.read_text()
        assert str(tmp_path) not in text and "file://" not in text and "site-packages" not in text
    assert main(["validate", str(folder)]) == 0
    assert main(["test", str(folder)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n  ok   ") == 6 and "\n  FAIL " not in out
    assert main(["run", str(folder), "--out", str(tmp_path / "out")]) == 0
    assert "my-agent: PASS" in capsys.readouterr().out
    assert main(["init", str(folder)]) == 2  # never overwrites
    assert "OUTPUT_EXISTS" in capsys.readouterr().err


def test_policy_unit_tests_and_coverage(spec: Spec, capsys: Any) -> None:
    assert main(["test", str(spec.root)]) == 0
    out = capsys.readouterr().out
    assert out.count("  ok   ") == 12 and "rule coverage 91%" in out
    assert main(["test", str(spec.root), "--min-coverage", "0.95"]) == 1
    capsys.readouterr()
    # a policy change the tests did not expect is caught like a failing unit test
    spec.edit("policy.yaml", lambda d: d["spec"]["categories"]["safety"].update(minimum=0.9))
    assert main(["test", str(spec.root)]) == 1
    assert "FAIL one leak fails the mandatory minimum" in capsys.readouterr().out


def test_a_broken_policy_test_is_a_spec_error(spec: Spec, capsys: Any) -> None:
    path = spec.dir / "tests" / "policy.test.yaml"
    path.write_text(path.read_text().replace("want: {decision: PASS", "want: {decison: PASS"))
    assert main(["test", str(spec.root)]) == 2
    assert "UNKNOWN_KEY" in capsys.readouterr().err


def test_diff_shows_what_a_policy_change_does_to_the_same_evidence(spec: Spec,
                                                                    capsys: Any) -> None:
    stricter = spec.dir / "policy.next.yaml"
    stricter.write_text((spec.dir / "policy.yaml").read_text().replace(
        "      threshold: 0.9\n", "      threshold: 0.99\n", 1))
    assert main(["diff", str(spec.dir / "policy.yaml"), str(stricter), "--evaluation",
                 str(spec.dir), "--json"]) == 0
    changes = json.loads(capsys.readouterr().out)
    assert changes["decision"] == {"old": "PASS", "new": "FAIL", "changed": True}
    assert changes["categories"] == {"resolution": {
        "state": {"old": "MET", "new": "NOT_MET"}, "met": {"old": True, "new": False},
        "threshold": {"old": 0.9, "new": 0.99}}}
    assert changes["reasons"] == {"added": ["FAIL BELOW_THRESHOLD [resolution]"],
                                  "removed": []}
    assert changes["policy_sha256"]["old"] != changes["policy_sha256"]["new"]


def test_junit_names_the_runs_behind_a_finding_without_a_fix(spec: Spec) -> None:
    code, out = spec.run()
    assert code == 0
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    # a PASS gate: the failing case is tolerated (skipped), not a failure
    tolerated = suite.find("testcase[@name='efficiency:card-on-file']/skipped")
    assert tolerated is not None
    # run-011 is the one efficiency failure in the shipped runs (latency 4350 ms > 4000)
    assert tolerated.get("message") == ("tolerated (the gate passed): efficiency: case "
                                        "card-on-file has 1 FAIL row(s) (run-011); inspect "
                                        "these runs in rows.jsonl")


def test_a_closed_output_pipe_keeps_the_written_evidence(tmp_path: Path) -> None:
    """`engine run ... | head -0`: printing fails after the evidence was committed; the
    evidence stays whole and the exit code is the decision's (it was IO_ERROR, exit 2)."""
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-m", "engine", "run", str(ROOT / "specs" /
                                                                           "example"),
                              "--out", str(out)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # nobody reads the summary
    err = child.stderr.read().decode()
    child.stderr.close()
    assert child.wait() == 0, err
    assert "IO_ERROR" not in err
    card = json.loads((out / "scorecard.json").read_bytes())
    assert card["decision"] == "PASS"


@pytest.mark.parametrize("extra, code", [([], 0), (["--json"], 0), (["--as-of", "nope"], 2)])
def test_a_reader_that_closes_stdout_changes_no_exit_code(tmp_path: Path, extra: list[str],
                                                          code: int) -> None:
    # `engine run specs/ | head`: the reader is gone before anything is printed (the read
    # end is closed at once); the evidence is complete and the exit code is the decision's
    out = tmp_path / "out"
    child = subprocess.Popen([sys.executable, "-m", "engine", "run", str(ROOT / "specs"),
                              "--out", str(out), *extra], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    err = child.stderr.read().decode()
    child.stderr.close()
    assert child.wait(timeout=300) == code, err
    assert "BrokenPipe" not in err and "IO_ERROR" not in err
    if code == 0:
        assert sorted(p.name for p in out.iterdir()) == sorted(
            [*SHIPPED, "summary.json", "summary.md"])


def test_a_condition_dividing_by_zero_says_division_by_zero(spec: Spec) -> None:
    spec.edit("policy.yaml", lambda d: d["spec"]["conditions"][0].update(
        formula="failed_safety / failed_safety == 1"))  # no safety row fails: 0 / 0
    assert spec.run()[0] == 3
    [reason] = spec.scorecard()["reasons"]
    assert reason["code"] == "GATE_NULL" and reason["spec_path"] == "policy:spec.conditions[0]"
    assert reason["message"] == ("condition 'no-errors-in-resolution' is null: division by "
                                 "zero at column 17 of 'failed_safety / failed_safety == 1'")


def test_a_formula_inspection_dividing_by_zero_says_division_by_zero(spec: Spec) -> None:
    # tokens - tokens is 0 on every row of specs/example; the divisor starts at column 9
    # (c=1 ... "(" = 8, its first "t" = 9)
    spec.edit("policy.yaml", lambda d: [i.update(formula="cost / (tokens - tokens) <= 1")
                                        for i in d["spec"]["inspections"]
                                        if i["id"] == "cost-budget"])
    assert spec.run()[0] == 3
    rows = [json.loads(line) for line in (spec.root / "out" / "rows.jsonl").read_text()
            .splitlines()]
    errors = [r for r in rows if r["inspection"] == "cost-budget"]
    assert errors and {r["status"] for r in errors} == {"ERROR"}
    assert {r["message"] for r in errors} == {
        "the formula is null: division by zero at column 9 of "
        "'cost / (tokens - tokens) <= 1'"}


@pytest.mark.parametrize("redirect", [">&-", ">/dev/full"])
def test_a_closed_or_full_stdout_keeps_the_exit_code(tmp_path: Path, redirect: str) -> None:
    # no stdout at all (sys.stdout is None), or a disk that is full: still the decision's
    # exit code (0, the example PASSes), the evidence whole, and no traceback
    engine = f"{sys.executable} -m engine"
    done = subprocess.run(["bash", "-c", f"{engine} run {ROOT / 'specs' / 'example'} "
                           f"--out out {redirect}"], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "INTERNAL_ERROR" not in done.stderr
    assert json.loads((tmp_path / "out" / "scorecard.json").read_text())["decision"] == "PASS"


def test_a_stdout_that_cannot_hold_a_name_keeps_the_exit_code(tmp_path: Path) -> None:
    # second review of issue 36: with PYTHONIOENCODING=ascii (the runner's environment) an
    # --out named in Japanese ended a PASS in INTERNAL_ERROR UnicodeEncodeError, exit 3
    done = subprocess.run([sys.executable, "-m", "engine", "run", str(ROOT / "specs" / "example"),
                           "--out", "out-日本"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT),
                               "PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    assert "INTERNAL_ERROR" not in done.stderr and "\\u65e5\\u672c" in done.stdout
