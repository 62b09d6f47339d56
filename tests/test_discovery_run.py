"""finding-quality-discovery through `engine run`: statuses, the report, review binding.

The demo's one review is worked by hand: the checker's labels equal the texts, so no
claimed positive is contradicted (pc = 0), no known pair disagrees (d = 0), nothing is
unknown to the checker, and all 3 supporting documents are confirmed: the cap is
`supported`. The judge gave S 0.8, E 0.9, D 0.75, C 0.8, so the score is
15 + 20 + 18 + 22.5 + 8 = 83.5 (§10.1's own example).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.protocols.discovery.review import restrictive
from engine.protocols.discovery.task import load_package

from .conftest import ROOT

SPEC = ROOT / "specs" / "finding-quality-discovery"
GROUP = "amazon_beauty_group_difference_toy"
TEMPORAL = "amazon_beauty_temporal_change_toy"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    folder = tmp_path / "finding-quality-discovery"
    shutil.copytree(SPEC, folder)
    return folder


def run(folder: Path, *extra: str, out: str = "out") -> tuple[int, dict[str, Any], Path]:
    dest = folder.parent / out
    code = main(["run", str(folder), "--out", str(dest), *extra])
    card = json.loads((dest / "scorecard.json").read_bytes()) if dest.exists() else {}
    return code, card, dest


def records(card: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["task_id"]: r for r in card["report"]["task_scores"]}


def test_the_demo_scores_with_the_hand_worked_numbers(demo: Path) -> None:
    code, card, out = run(demo)
    assert code == 0 and card["decision"] == "PASS"
    report = card["report"]
    assert records(card)[GROUP]["status"] == "scored"
    assert records(card)[GROUP]["quality"] == 83.5
    finding = records(card)[GROUP]["findings"][0]
    assert finding["effective_support"] == "supported" and finding["score"] == 83.5
    gate = finding["evidence_gate"]
    assert gate["support_cap"] == "supported" and gate["blind_supported_documents"] == 3
    assert gate["conditions"][0]["positive_contradictions"] == 0
    assert gate["conditions"][0]["disagreements"] == 0
    assert records(card)[TEMPORAL]["status"] == "abstained"
    assert (report["tasks"], report["scored_tasks"], report["quality_mean"],
            report["conditional_quality_mean"], report["abstention_rate"],
            report["valid_submission_rate"]) == (2, 1, None, 83.5, 0.5, 1.0)
    assert list(report["by_kind"]) == ["group_difference", "temporal_change"]
    assert report["by_kind"]["group_difference"]["quality_mean"] == 83.5
    assert report["reviewer_methods"] == ["scripted-demo-reviewer / recorded"]
    ordered = list(json.loads((out / "report.json").read_text()))
    assert ordered[:10] == ["tasks", "scored_tasks", "quality_mean", "conditional_quality_mean",
                            "reference_coverage_mean", "valid_submission_rate",
                            "abstention_rate", "pending_tasks", "missing_tasks",
                            "invalid_tasks"]
    assert ordered[10:] == ["by_kind", "by_source", "task_scores", "difficulty",
                            "scoring_version", "benchmark_version", "tasks_sha256",
                            "reference_sha256", "reviewer_methods", "run", "reviewer"]
    # the demo's review directory: judge_config.json of the scripted reviewer, budget 60,
    # judge.yaml's max_input_chars 800000 and max_output_tokens 6000; no run.json; its fixed
    # seed is accepted only as audit.yaml pins it, for the shipped submission
    assert report["reviewer"] == {"model": "recorded", "base_url": "scripted-demo-reviewer",
                                  "max_input_chars": 800000, "max_output_tokens": 6000,
                                  "audit_documents": 60, "audit_seed_origin": "pinned"}
    assert report["run"] is None
    markdown = (out / "report.md").read_text()
    assert "| conditional_quality_mean | 83.5 |" in markdown and "| quality_mean | null |" in \
        markdown
    assert "neither causal nor held-out" in markdown
    assert ("Reviewer: `scripted-demo-reviewer / recorded`; input budget 800000 characters; "
            "audit size 60 documents; audit seed pinned by audit.yaml for these submissions") \
        in markdown


def test_without_reviews_the_answered_task_is_pending_and_the_run_incomplete(demo: Path) -> None:
    shutil.rmtree(demo / "demo" / "reviews")
    code, card, _ = run(demo)
    assert records(card)[GROUP]["status"] == "pending_review"
    assert card["report"]["pending_tasks"] == 1 and code == 3
    assert "CATEGORY_UNRESOLVED" in [r["code"] for r in card["reasons"]]


def test_an_invalid_submission_is_reported_with_its_code_and_fails(demo: Path) -> None:
    path = demo / "demo" / "submissions" / f"{GROUP}.json"
    submission = json.loads(path.read_text())
    submission["findings"][0]["evidence"][0].update(start=16, end=28)  # UTF-16 offsets
    path.write_text(json.dumps(submission, ensure_ascii=False))
    code, card, _ = run(demo)
    record = records(card)[GROUP]
    assert record["status"] == "invalid" and record["quality"] is None
    assert record["error"]["code"] == "EVIDENCE_OFFSET" and record["error"]["evidence_index"] == 0
    assert card["report"]["invalid_tasks"] == 1 and card["report"]["valid_submission_rate"] == 0.5
    assert code == 1 and [r["code"] for r in card["reasons"]] == ["BELOW_THRESHOLD"]


@pytest.mark.parametrize("text", ["null", "7", '"findings"', "[1]", "true"])
def test_a_submission_that_is_not_an_object_is_invalid_not_a_crash(demo: Path,
                                                                    text: str) -> None:
    # G1: the submission schema wants an object (a scalar once crashed the depth check)
    (demo / "demo" / "submissions" / f"{GROUP}.json").write_text(text)
    code, card, _ = run(demo)
    record = records(card)[GROUP]
    assert (record["status"], record["error"]["code"]) == ("invalid", "SCHEMA")
    assert code == 1 and card["report"]["invalid_tasks"] == 1


def test_a_missing_submission(demo: Path) -> None:
    (demo / "demo" / "submissions" / f"{TEMPORAL}.json").unlink()
    code, card, _ = run(demo)
    assert records(card)[TEMPORAL]["status"] == "missing" and code == 1
    assert card["report"]["missing_tasks"] == 1


@pytest.mark.parametrize("tamper, code", [
    (lambda sub, rev: sub["findings"][0].__setitem__("claim", "A new claim."), "STALE_REVIEW"),
    (lambda sub, rev: rev["blind_check"].__setitem__("seed", ""), "BLIND_SEED_INVALID"),
    (lambda sub, rev: rev["blind_check"].__setitem__("protocol_sha256", "0" * 64),
     "BLIND_PROTOCOL_MISMATCH"),
    (lambda sub, rev: rev["blind_check"]["annotations"].pop(), "BLIND_SAMPLE_MISMATCH"),
    (lambda sub, rev: rev["blind_check"]["annotations"][0]["quotes"].__setitem__(
        0, "not in the text"), "BLIND_ANNOTATION_INVALID"),
    (lambda sub, rev: rev["findings"][0].__setitem__("analytical_depth", 1.5),
     "JUDGE_OUTPUT_INVALID"),
    (lambda sub, rev: rev.__setitem__("scoring_version", "finding-quality-discovery"),
     "STALE_REVIEW"),
])
def test_an_untrusted_review_aborts_and_writes_nothing(demo: Path, capsys: Any, tamper: Any,
                                                       code: str) -> None:
    sub_path = demo / "demo" / "submissions" / f"{GROUP}.json"
    rev_path = demo / "demo" / "reviews" / f"{GROUP}.json"
    sub, rev = json.loads(sub_path.read_text()), json.loads(rev_path.read_text())
    tamper(sub, rev)
    sub_path.write_text(json.dumps(sub, ensure_ascii=False))
    rev_path.write_text(json.dumps(rev, ensure_ascii=False))
    exit_code, _, out = run(demo)
    err = capsys.readouterr().err
    assert exit_code == 2 and not out.exists()
    assert f"{GROUP}: {code}" in err


def test_a_task_its_inspection_could_not_score_stops_the_report(demo: Path, capsys: Any,
                                                                monkeypatch: Any) -> None:
    # whatever makes the inspection fail on a task (here a simulated bug), the report is
    # never built without it: a coded refusal, nothing written, never INTERNAL_ERROR
    from engine.protocols.discovery import task as task_module
    real = task_module.evaluate_task

    def failing(pkg: Any, task: dict[str, Any], *rest: Any) -> dict[str, Any]:
        if task["task_id"] == GROUP:
            raise RuntimeError("simulated")
        return real(pkg, task, *rest)

    monkeypatch.setattr(task_module, "evaluate_task", failing)
    exit_code, _, out = run(demo)
    err = capsys.readouterr().err
    assert exit_code == 2 and not out.exists()
    assert "TASK_NOT_SCORED" in err and GROUP in err and "INTERNAL_ERROR" not in err


def test_a_changed_blind_threshold_invalidates_the_review(demo: Path, capsys: Any) -> None:
    path = demo / "blind_check.yaml"
    path.write_text(path.read_text().replace("min_confirmed_supporting: 3",
                                             "min_confirmed_supporting: 4"))
    exit_code, _, _ = run(demo)
    assert exit_code == 2 and "BLIND_PROTOCOL_MISMATCH" in capsys.readouterr().err


def test_support_precedence_matrix_of_section_8_12() -> None:
    precedence = load_package(SPEC).blind.precedence
    levels = ["supported", "partial", "uncertain", "unsupported"]
    want = {("supported", "supported"): "supported", ("supported", "partial"): "partial",
            ("partial", "uncertain"): "uncertain", ("uncertain", "partial"): "uncertain",
            ("partial", "partial"): "partial", ("uncertain", "unsupported"): "unsupported",
            ("unsupported", "supported"): "unsupported"}
    for (judge, cap), effective in want.items():
        assert restrictive(precedence, judge, cap) == effective
    for judge in levels:  # the matrix is symmetric in this precedence
        for cap in levels:
            assert restrictive(precedence, judge, cap) == restrictive(precedence, cap, judge)


@pytest.mark.parametrize("counters, flags", [
    ({"n": 20, "d": 2}, set()),                           # 2/20 is not > 0.10
    ({"n": 20, "d": 3}, {"partial"}),
    ({"n": 19, "d": 10}, set()),                          # below the known-compared minimum
    ({"p": 8, "pc": 2}, {"partial"}),                     # 0.25 > 0.15
    ({"p": 10, "pc": 5}, {"severe", "partial"}),          # 5/10 >= 0.5
    ({"p": 4, "pc": 4}, set()),                           # fewer than 5 claimed positives
    ({"checked": 50, "checker_unknown": 10}, set()),      # exactly 20% is not uncertain
    ({"checked": 50, "checker_unknown": 11}, {"uncertain"}),
    ({"checked": 0}, {"uncertain"}),
])
def test_blind_gate_thresholds_on_both_sides(counters: dict[str, int], flags: set[str]) -> None:
    from engine.formula import evaluate

    gate = load_package(SPEC).blind
    env = {"checked": 30, "checker_unknown": 0, "p": 0, "pc": 0, "n": 0, "d": 0} | counters
    raised = {name for name, formula in gate.flags.items() if evaluate(formula, env) is True}
    assert raised == flags


def _gate_for(checker: dict[str, str], claimed: dict[str, str], support: list[str]) -> str:
    """The cap for one single-condition finding, given checker and claimed states."""
    from engine.protocols.discovery.review import evidence_gate

    ids = sorted(checker)
    finding = {"finding_id": "f1", "definitions": [{"condition_id": "c"}],
               "assignments": [{"condition_id": "c", **{
                   f"{s}_doc_ids": [d for d in ids if claimed[d] == s]
                   for s in ("positive", "negative", "unknown")}}],
               "evidence": [{"doc_id": d, "role": "supporting"} for d in support]}
    annotations = [{"doc_id": d, "states": [checker[d]], "quotes": [""]} for d in ids]
    gate = load_package(SPEC).blind
    result: str = evidence_gate(gate, finding, 0, set(ids), annotations)["support_cap"]
    return result


def test_each_support_cap() -> None:
    ids = [f"d{i:02d}" for i in range(40)]
    claimed = {d: "positive" if i < 10 else "negative" for i, d in enumerate(ids)}
    support = ids[:3]
    agree = dict(claimed)
    assert _gate_for(agree, claimed, support) == "supported"
    # 5 of 10 claimed positives contradicted -> SEVERE -> unsupported
    severe = {**claimed, **dict.fromkeys(ids[5:10], "negative")}
    assert _gate_for(severe, claimed, support) == "unsupported"
    # 2 of 10 contradicted (0.2 > 0.15 with p >= 8) -> PARTIAL
    partial = {**claimed, **dict.fromkeys(ids[8:10], "negative")}
    assert _gate_for(partial, claimed, support) == "partial"
    # 9 of 40 unknown to the checker (0.225 > 0.20) -> UNCERTAIN, which outranks partial
    unsure = {**claimed, **dict.fromkeys(ids[20:29], "unknown")}
    assert _gate_for(unsure, claimed, support) == "uncertain"
    # only 2 supporting documents confirmed, not all contradicted -> UNCERTAIN
    weak = {**claimed, ids[0]: "unknown"}
    assert _gate_for(weak, claimed, support) == "uncertain"
    # every supporting document contradicted -> SEVERE
    assert _gate_for({**claimed, **dict.fromkeys(support, "negative")}, claimed,
                     support) == "unsupported"


def test_a_task_of_another_profile_aborts(demo: Path, capsys: Any) -> None:
    path = demo / "demo" / "tasks.json"
    tasks = json.loads(path.read_text())
    tasks[1]["difficulty"] = "guided"
    path.write_text(json.dumps(tasks))
    code, _, out = run(demo)
    assert code == 2 and not out.exists() and "PROFILE_MISMATCH" in capsys.readouterr().err


def test_reviews_by_different_methods_are_not_scored_together() -> None:
    from engine.protocols.discovery.report import ReviewIntegrityError, build
    from engine.protocols.discovery.task import load_package

    pkg = load_package(SPEC)
    tasks = [{"task_id": t, "difficulty": pkg.discovery.difficulty} for t in ("a", "b")]
    reviewed = {"a": {"task_id": "a", "reviewer_method": "https://one / model-1"},
                "b": {"task_id": "b", "reviewer_method": "https://two / model-2"}}
    with pytest.raises(ReviewIntegrityError) as caught:
        build(pkg, tasks, reviewed)
    assert caught.value.code == "REVIEWER_METHOD_MIX"
    assert "https://one / model-1" in str(caught.value)


def _judged(demo: Path, **change: Any) -> None:
    """Rewrite the demo review's one judge row (its binding does not cover the row)."""
    path = demo / "demo" / "reviews" / f"{GROUP}.json"
    review = json.loads(path.read_text())
    review["findings"][0].update(change)
    path.write_text(json.dumps(review, ensure_ascii=False))


def test_partial_support_halves_the_score_through_the_cli(demo: Path) -> None:
    _judged(demo, support="partial")  # cap supported, judge partial -> effective partial
    code, card, _ = run(demo)
    finding = records(card)[GROUP]["findings"][0]
    # §10.1: the same dimensions with partial support give 0.5 * 83.5 = 41.75
    assert finding["effective_support"] == "partial" and finding["score"] == 41.75
    assert records(card)[GROUP]["quality"] == 41.75 and code == 0


def test_uncertain_support_leaves_the_task_unresolved_through_the_cli(demo: Path) -> None:
    _judged(demo, support="uncertain")
    code, card, _ = run(demo)
    record = records(card)[GROUP]
    assert record["findings"][0]["score"] is None
    assert record["status"] == "unresolved" and record["quality"] is None
    # unresolved counts as pending and as a valid submission (§11.2): exit 3, incomplete
    assert card["report"]["pending_tasks"] == 1 and card["report"]["valid_submission_rate"] == 1
    assert code == 3 and "CATEGORY_UNRESOLVED" in [r["code"] for r in card["reasons"]]


def test_an_unfulfilled_uncertain_finding_scores_zero_through_the_cli(demo: Path) -> None:
    _judged(demo, support="uncertain", task_fulfilled=False)
    _, card, _ = run(demo)
    record = records(card)[GROUP]
    # the zero rule comes before the null rule (§10.1 step 4): 0, and the task is scored
    assert record["findings"][0]["score"] == 0
    assert record["status"] == "scored" and record["quality"] == 0
    assert card["report"]["scored_tasks"] == 1


def _manifest(demo: Path, **change: Any) -> dict[str, Any]:
    """A run manifest (§12.4) for the demo inventory, written beside its submissions."""
    import hashlib

    import rfc8785

    tasks = json.loads((demo / "demo" / "tasks.json").read_text())
    sha = hashlib.sha256(rfc8785.dumps(tasks)).hexdigest()  # §3.1: SHA-256 of the JCS form
    run_json = {"tasks_sha256": sha, "command": ["agent", "--task", "all"],
                "track": "task_only", "timeout_seconds": 600, "task_id": None, "limit": None,
                "difficulty": "discovery", "effective_tasks_sha256": sha} | change
    (demo / "demo" / "submissions" / "run.json").write_text(json.dumps(run_json))
    return run_json


def test_the_run_manifest_is_copied_into_the_report(demo: Path) -> None:
    manifest = _manifest(demo)
    code, card, out = run(demo)
    assert code == 0 and card["report"]["run"] == manifest
    assert json.loads((out / "report.json").read_text())["run"] == manifest


@pytest.mark.parametrize("change, code", [
    ({"tasks_sha256": "0" * 64}, "RUN_MANIFEST_MISMATCH"),    # made for another inventory
    ({"difficulty": "guided"}, "RUN_MANIFEST_MISMATCH"),      # §12.2: must be discovery
    ({"track": "everything"}, "RUN_MANIFEST_INVALID"),
    ({"limit": 0}, "RUN_MANIFEST_INVALID"),
    ({"extra": 1}, "RUN_MANIFEST_INVALID"),
    # claims the whole inventory ran while its effective digest is of another task list
    ({"effective_tasks_sha256": "0" * 64}, "RUN_MANIFEST_MISMATCH"),
    # one task ran, but the manifest keeps the whole inventory's digest as the effective one
    ({"task_id": "amazon_beauty_group_difference_toy"}, "RUN_MANIFEST_MISMATCH"),
    ({"limit": 1}, "RUN_MANIFEST_MISMATCH"),
    ({"task_id": "no_such_task"}, "RUN_MANIFEST_MISMATCH"),
])
def test_a_different_run_manifest_stops_the_report(demo: Path, capsys: Any,
                                                   change: dict[str, Any], code: str) -> None:
    _manifest(demo, **change)
    exit_code, _, out = run(demo)
    err = capsys.readouterr().err
    assert exit_code == 2 and not out.exists() and code in err and "run.json" in err


@pytest.mark.parametrize("select", [{"task_id": "amazon_beauty_temporal_change_toy"},
                                    {"limit": 1}])
def test_a_partial_runs_manifest_names_the_digest_of_what_it_ran(
        demo: Path, select: dict[str, Any]) -> None:
    # The effective digest (§12.4) is the SHA-256 of the JCS form of the tasks selected,
    # worked out here from tasks.json: the one task of that id, or the first `limit`.
    import hashlib

    import rfc8785

    tasks = json.loads((demo / "demo" / "tasks.json").read_text())
    chosen = [t for t in tasks if t["task_id"] == select["task_id"]] \
        if "task_id" in select else tasks[:select["limit"]]
    manifest = _manifest(demo, **select, effective_tasks_sha256=hashlib.sha256(
        rfc8785.dumps(chosen)).hexdigest())
    code, card, _ = run(demo)
    assert code == 0 and card["report"]["run"] == manifest


def test_a_run_manifest_that_is_not_json_is_invalid(demo: Path, capsys: Any) -> None:
    (demo / "demo" / "submissions" / "run.json").write_text("{")
    exit_code, _, out = run(demo)
    assert exit_code == 2 and not out.exists()
    assert "RUN_MANIFEST_INVALID" in capsys.readouterr().err


def _config(demo: Path, **change: Any) -> None:
    path = demo / "demo" / "reviews" / "judge_config.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | change))


@pytest.mark.parametrize("tamper, code", [
    (lambda d: _config(d, model="another-model"), "JUDGE_CONFIG_MISMATCH"),  # not the method
    # a seed chosen in the review directory: neither sealed by this job nor pinned
    (lambda d: _config(d, audit_seed="f" * 64), "REVIEW_CONFIG_FOREIGN"),
    (lambda d: _config(d, audit_documents=61), "JUDGE_CONFIG_MISMATCH"),     # not the budget
    (lambda d: _config(d, max_output_tokens=12000), "JUDGE_CONFIG_MISMATCH"),
    (lambda d: (d / "judge.yaml").write_text((d / "judge.yaml").read_text().replace(
        "max_input_chars: 800000", "max_input_chars: 700000")), "JUDGE_CONFIG_MISMATCH"),
    (lambda d: (d / "demo" / "reviews" / "judge_config.json").unlink(), "JUDGE_CONFIG_MISSING"),
    (lambda d: (d / "demo" / "reviews" / "judge_config.json").write_text("[]"),
     "JUDGE_CONFIG_MISMATCH"),
])
def test_the_evaluation_checks_the_judge_configuration_again(demo: Path, capsys: Any,
                                                             tamper: Any, code: str) -> None:
    tamper(demo)
    exit_code, _, out = run(demo)
    err = capsys.readouterr().err
    assert exit_code == 2 and not out.exists() and code in err and "INTERNAL_ERROR" not in err
