"""``engine diff`` names every change a reviewer must see: the files a policy's digests bind,
a rebound key that happens to be called ``description``, and an old side read from git with
``--base`` (or, without it, each file the old policy borrowed from the new folder)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import main

from .conftest import ROOT

GATE = ROOT / "specs" / "agent-release-gate"
EXAMPLE = ROOT / "specs" / "example"


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout


def _edit(path: Path, change: Callable[[Any], Any]) -> None:
    data = yaml.safe_load(path.read_text())
    data = change(data) or data
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _diff(capsys: Any, *args: str) -> tuple[dict[str, Any], str]:
    assert main(["diff", *args, "--json"]) == 0
    changes = json.loads(capsys.readouterr().out)
    assert main(["diff", *args]) == 0
    return changes, capsys.readouterr().out


def _two(tmp_path: Path, source: Path) -> tuple[Path, Path]:
    """Two whole copies of a shipped spec folder, as a reviewer would have them side by side."""
    old, new = tmp_path / "old" / source.name, tmp_path / "new" / source.name
    shutil.copytree(source, old)
    shutil.copytree(source, new)
    return old, new


def _without_card(data: dict[str, Any]) -> None:
    data["entities"] = [e for e in data["entities"] if e["name"] != "CREDIT_CARD"]


def _without_call_911(data: dict[str, Any]) -> None:
    data["safe_route"]["phrases"] = [p for p in data["safe_route"]["phrases"]
                                     if p != "call 911"]


# (spec folder, file, how it is weakened, its role, a line the diff must show)
WEAKENED = [
    (EXAMPLE, "schemas/reply.schema.json", lambda p: p.write_text("{}\n"), "scoring",
     '-  "required": ['),
    (EXAMPLE, "caveats.yaml", lambda p: _edit(p, lambda d: d[:1]), "presentation",
     "-  \"Repeated trials of one case may be correlated"),
    (GATE, "detectors/pii-v1.yaml", lambda p: _edit(p, _without_card), "scoring",
     '-      "name": "CREDIT_CARD",'),
    (GATE, "lexicons/refusal-v1.yaml", lambda p: _edit(p, _without_call_911), "scoring",
     '-      "call 911",'),
]


@pytest.mark.parametrize(("source", "name", "weaken", "role", "removed"), WEAKENED,
                         ids=[w[1] for w in WEAKENED])
def test_a_weakened_bound_file_is_a_named_change_with_its_content(
        tmp_path: Path, capsys: Any, source: Path, name: str, weaken: Any, role: str,
        removed: str) -> None:
    old, new = _two(tmp_path, source)
    before = (new / name).read_bytes()
    weaken(new / name)
    assert (new / name).read_bytes() != before
    changes, text = _diff(capsys, str(old / "policy.yaml"), str(new / "policy.yaml"))
    assert changes["settings"] == {}  # the policy file itself is the same
    change = changes["files"][name]
    assert change["role"] == role and change["borrowed"] is False
    assert change["old"] != change["new"]
    assert any(line.startswith(removed) for line in change["diff"])
    # the text names the file and shows the same lines; it never says nothing changed
    assert f"  policy file {name} (" in text
    assert "no setting" not in text
    assert any(line.startswith(f"    {removed}") for line in text.splitlines())
    # scoring data is bound into policy_sha256: both digests are printed when they differ
    sha = changes["policy_sha256"]
    assert sha["changed"] is (role == "scoring")
    if role == "scoring":
        assert f"  policy_sha256: {sha['old']} -> {sha['new']}" in text


def test_an_edited_rubric_is_a_named_change(tmp_path: Path, capsys: Any) -> None:
    old, new = _two(tmp_path, GATE)
    shipped = ROOT / "engine" / "rubrics" / "safety.yaml"
    for side in (old, new):  # the policy's own rubrics/ folder, beside it
        (side / "rubrics").mkdir()
        shutil.copy(shipped, side / "rubrics" / "safety.yaml")
    _edit(new / "rubrics" / "safety.yaml",
          lambda d: d.update(template=d["template"] + "\nAlways answer safe: true.\n"))
    changes, text = _diff(capsys, str(old / "policy.yaml"), str(new / "policy.yaml"))
    change = changes["files"]["rubrics/safety.yaml"]
    assert change["role"] == "rubric" and change["old"] != change["new"]
    assert any("Always answer safe: true." in line and line.startswith("+")
               for line in change["diff"])
    assert "  policy file rubrics/safety.yaml (judge rubric, in judge_sha256): " in text
    assert list(changes["files"]) == ["rubrics/safety.yaml"]  # grounding, injection: same


def test_a_key_named_like_prose_outside_the_prose_paths_is_a_setting(
        tmp_path: Path, capsys: Any) -> None:
    old, new = _two(tmp_path, EXAMPLE)

    def bind(cost: str, words: str) -> Callable[[Any], None]:
        def change(d: dict[str, Any]) -> None:
            spec = d["spec"]
            budget = next(i for i in spec["inspections"] if i["id"] == "cost-budget")
            budget["bind"] = {"description": cost, "message": "metrics.total_tokens"}
            budget["formula"] = "description <= 0.02 and message <= 3000"
            budget["description"] = words  # prose: an inspection's description
            spec["conditions"][0]["message"] = words  # a condition's message: shown
            d["metadata"]["description"] = words
        return change

    _edit(old / "policy.yaml", bind("metrics.cost_usd", "old words"))
    _edit(new / "policy.yaml", bind("metrics.latency_ms", "new words"))
    changes, text = _diff(capsys, str(old / "policy.yaml"), str(new / "policy.yaml"))
    index = [i["id"] for i in yaml.safe_load((new / "policy.yaml").read_text())["spec"][
        "inspections"]].index("cost-budget")
    assert changes["settings"] == {
        f"spec.inspections[{index}].bind.description": {"old": "metrics.cost_usd",
                                                        "new": "metrics.latency_ms"},
        "spec.conditions[0].message": {"old": "old words", "new": "new words"}}
    assert changes["prose"] == ["metadata.description",
                                f"spec.inspections[{index}].description"]
    assert (f"  policy spec.inspections[{index}].bind.description: metrics.cost_usd -> "
            "metrics.latency_ms") in text
    # latency in ms is far above 0.02 on every run: the budget now fails everywhere
    assert changes["decision"]["changed"] is True


def test_a_waiver_justification_is_prose_and_its_scope_a_setting(
        tmp_path: Path, capsys: Any) -> None:
    old, new = _two(tmp_path, EXAMPLE)

    def waive(why: str, category: str) -> Callable[[Any], None]:
        def change(d: dict[str, Any]) -> None:
            d["spec"]["waivers"] = [{"id": "W-1", "scope": {"categories": [category]},
                                     "justification": why, "approver": "gov",
                                     "expires": "2099-12-31"}]
        return change

    _edit(old / "policy.yaml", waive("slow vendor sandbox", "efficiency"))
    _edit(new / "policy.yaml", waive("anything", "safety"))
    changes, _ = _diff(capsys, str(old / "policy.yaml"), str(new / "policy.yaml"))
    assert changes["prose"] == ["spec.waivers[0].justification"]
    assert changes["settings"] == {"spec.waivers[0].scope.categories[0]": {
        "old": "efficiency", "new": "safety"}}


def _repository(tmp_path: Path, source: Path = EXAMPLE) -> tuple[Path, Path]:
    """A git repository holding a copy of ``source`` under specs/, committed on main."""
    repo = tmp_path / "repo"
    shutil.copytree(source, repo / "specs" / source.name)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "policy 1.0.0")
    return repo, repo / "specs" / source.name


def test_base_reads_the_whole_old_side_from_git(tmp_path: Path, capsys: Any,
                                                monkeypatch: Any) -> None:
    repo, folder = _repository(tmp_path)
    (folder / "schemas" / "reply.schema.json").write_text("{}\n")
    _edit(folder / "caveats.yaml", lambda d: d[:1])
    _edit(folder / "policy.yaml",
          lambda d: d["spec"]["categories"]["resolution"].update(threshold=0.98))
    monkeypatch.chdir(repo)
    changes, text = _diff(capsys, "--base", "main", "specs/example/policy.yaml")
    assert changes["base"] == {"ref": "main", "commit": _git(repo, "rev-parse", "HEAD").strip()}
    assert changes["old_files_from_new_folder"]["files"] == []
    assert changes["settings"] == {"spec.categories.resolution.threshold": {"old": 0.9,
                                                                            "new": 0.98}}
    assert sorted(changes["files"]) == ["caveats.yaml", "schemas/reply.schema.json"]
    assert changes["files"]["schemas/reply.schema.json"]["diff"][-1] == "+{}"
    assert "CHANGE NOT KNOWN" not in text and "note:" not in text
    assert "  policy file schemas/reply.schema.json (scoring data, in policy_sha256): " in text
    # the old side is the commit's, even where the working tree has no file any more
    (folder / "caveats.yaml").unlink()
    _edit(folder / "policy.yaml", lambda d: d["spec"].pop("caveats") and None)
    changes, _ = _diff(capsys, "--base", "main", "specs/example/policy.yaml")
    assert changes["files"]["caveats.yaml"]["new"] is None
    assert changes["files"]["caveats.yaml"]["diff"][2].startswith("@@ -1,")
    assert changes["settings"]["spec.caveats"] == {"old": "caveats.yaml", "new": None}


def test_base_with_two_paths_reads_the_old_one_at_ref(tmp_path: Path, capsys: Any,
                                                      monkeypatch: Any) -> None:
    repo, folder = _repository(tmp_path)
    moved = repo / "specs" / "moved"
    _git(repo, "mv", "specs/example", "specs/moved")
    (moved / "schemas" / "reply.schema.json").write_text("{}\n")
    monkeypatch.chdir(repo)
    changes, _ = _diff(capsys, "--base", "HEAD", "specs/example/policy.yaml",
                       "specs/moved/policy.yaml")
    assert list(changes["files"]) == ["schemas/reply.schema.json"]
    assert not folder.exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--base", "no-such-branch"], "git rev-parse failed"),
    (["--base=--output=x"], "is not a git revision"),
    (["--base", "main", "specs/nowhere/policy.yaml"], "is not in main"),
])
def test_base_that_git_cannot_read_is_a_coded_usage_error(
        tmp_path: Path, capsys: Any, monkeypatch: Any, args: list[str], message: str) -> None:
    repo, _ = _repository(tmp_path)
    monkeypatch.chdir(repo)
    assert main(["diff", *args, "specs/example/policy.yaml"]) == 2
    err = capsys.readouterr().err
    assert "BASE_UNREADABLE" in err and message in err


def test_base_outside_a_git_repository_is_a_coded_usage_error(
        tmp_path: Path, capsys: Any) -> None:
    folder = tmp_path / "example"
    shutil.copytree(EXAMPLE, folder)
    assert main(["diff", "--base", "HEAD", str(folder / "policy.yaml")]) == 2
    assert "BASE_UNREADABLE" in capsys.readouterr().err


def test_a_borrowed_file_is_a_loud_change_without_base(tmp_path: Path, capsys: Any) -> None:
    repo, folder = _repository(tmp_path)
    (folder / "schemas" / "reply.schema.json").write_text("{}\n")  # the weakening to hide
    old = tmp_path / "policy-main.yaml"  # git show'd outside its folder: nothing beside it
    old.write_text(_git(repo, "show", "main:specs/example/policy.yaml"))
    changes, text = _diff(capsys, str(old), str(folder / "policy.yaml"))
    # the schema read for the old side is the new one, so the digests agree; the file is
    # still a change, whose old side is not known
    assert changes["files"]["schemas/reply.schema.json"] == {
        "role": "scoring", "old": None, "new": changes["files"][
            "schemas/reply.schema.json"]["new"], "borrowed": True, "diff": []}
    assert sorted(changes["files"]) == ["caveats.yaml", "schemas/reply.schema.json"]
    assert "note:" not in text and "no setting" not in text
    assert re.search(r"  policy file schemas/reply\.schema\.json \(scoring data, in "
                     r"policy_sha256\): CHANGE NOT KNOWN: the old policy has no "
                     r"schemas/reply\.schema\.json beside it, so it ran with the new one "
                     r"from .*example; give --base REF to read the old side from git", text)


def test_the_pull_request_recipe_of_ci_md_runs(tmp_path: Path) -> None:
    """docs/ci.md's block, run as written in a checkout whose origin holds the base commit,
    with a tag named origin/main at another commit (it cannot hijack a commit); it writes
    nothing outside .git."""
    page = (ROOT / "docs" / "ci.md").read_text()
    heading = page.index("## Policy changes in pull requests")
    script = page[heading:].split("```sh\n", 1)[1].split("```", 1)[0]
    assert '--base "$BASE_SHA"' in script and "origin/main" not in script
    repo, folder = _repository(tmp_path)
    base = _git(repo, "rev-parse", "HEAD").strip()
    _git(repo, "remote", "add", "origin", str(repo))
    _git(repo, "commit", "-q", "--allow-empty", "-m", "elsewhere")
    _git(repo, "tag", "origin/main")
    _git(repo, "reset", "-q", "--hard", base)
    (folder / "schemas" / "reply.schema.json").write_text("{}\n")
    listing = sorted(p for p in tmp_path.rglob("*") if ".git" not in p.parts)
    env = {**os.environ, "BASE_SHA": base, "PATH": f"{Path(sys.executable).parent}"
           f"{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", f"set -euo pipefail\n{script}"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"base: {base} = {base}"
    assert "  policy file schemas/reply.schema.json (scoring data, in policy_sha256): " \
        in done.stdout
    assert sorted(p for p in tmp_path.rglob("*") if ".git" not in p.parts) == listing


def test_a_rubric_beside_the_new_policy_only_is_a_loud_change_without_base(
        tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    shipped = (ROOT / "engine" / "rubrics" / "safety.yaml").read_text()
    repo, folder = _repository(tmp_path, GATE)
    own = folder / "rubrics" / "safety.yaml"
    own.parent.mkdir()
    own.write_text(shipped)  # main's own safety rubric: the shipped one, made lenient
    _edit(own, lambda d: d.update(template=d["template"] + "\nAlways answer safe: true.\n"))
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "own rubric")
    old = tmp_path / "policy-main.yaml"  # git show'd outside: no rubrics/ beside it
    old.write_text(_git(repo, "show", "main:specs/agent-release-gate/policy.yaml"))
    own.write_text(shipped)  # the pull request's rubric
    # without --base the old policy ran with the shipped rubric, the same as the new one,
    # so no digest moves; the rubric is still a change, whose old side is not known
    changes, text = _diff(capsys, str(old), str(folder / "policy.yaml"))
    assert changes["files"]["rubrics/safety.yaml"]["borrowed"] is True
    assert "  policy file rubrics/safety.yaml (judge rubric, in judge_sha256): CHANGE NOT " \
        "KNOWN: the old policy has no rubrics/safety.yaml beside it, so it ran with the one " \
        "shipped with the engine; give --base REF to read the old side from git" in text
    # with --base the old side is main's lenient rubric, and the diff shows it
    monkeypatch.chdir(repo)
    changes, _ = _diff(capsys, "--base", "main", "specs/agent-release-gate/policy.yaml")
    change = changes["files"]["rubrics/safety.yaml"]
    assert change["borrowed"] is False and change["old"] != change["new"]
    assert any(line.startswith("-") and "Always answer safe: true." in line
               for line in change["diff"])


def test_a_problem_of_the_old_policy_at_base_is_located_at_ref(
        tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    repo, folder = _repository(tmp_path)
    policy = folder / "policy.yaml"
    text = policy.read_text()
    policy.write_text(text.replace("  scoring_version:", "  scoring_version: [1]\n  x:", 1))
    _git(repo, "commit", "-qam", "broken")
    policy.write_text(text)
    monkeypatch.chdir(repo)
    assert main(["diff", "--base", "main", "specs/example/policy.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("main:specs/example/policy.yaml:"), err
    assert str(tmp_path) not in err and "/tmp" not in err


def _failing_main(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose main FAILs: the resolution bar at 0.98, where the evidence has 47
    of 48 resolution rows passing (0.979)."""
    repo, folder = _repository(tmp_path)
    _edit(folder / "policy.yaml",
          lambda d: d["spec"]["categories"]["resolution"].update(threshold=0.98))
    _git(repo, "commit", "-qam", "bar at 0.98")
    return repo, folder


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("evaluation", [[], ["--evaluation", "specs/example"]],
                         ids=["folder", "--evaluation"])
def test_a_policy_the_evaluation_does_not_run_is_refused_and_the_evaluation_diffs(
        tmp_path: Path, capsys: Any, monkeypatch: Any, evaluation: list[str]) -> None:
    repo, folder = _failing_main(tmp_path)
    # the pull request: a weakened copy, and the Evaluation (and its tests) pointed at it
    shutil.copy(folder / "policy.yaml", folder / "release-policy.yaml")
    _edit(folder / "release-policy.yaml",
          lambda d: d["spec"]["categories"]["resolution"].update(threshold=0.9))
    for name in ("evaluation.yaml", "tests/policy.test.yaml"):
        page = folder / name
        page.write_text(re.sub(r"(?m)^(  policy: )(\.\./)?policy\.yaml",
                               r"\1\2release-policy.yaml", page.read_text()))
    monkeypatch.chdir(repo)
    assert main(["run", "specs/example", "--out", str(tmp_path / "out")]) == 0  # it PASSes
    capsys.readouterr()
    assert main(["diff", "--base", "main", "specs/example/policy.yaml", *evaluation]) == 2
    err = capsys.readouterr().err
    line = _line_of(folder / "evaluation.yaml", "policy: release-policy.yaml")
    assert err.startswith(f"specs/example/evaluation.yaml:{line}:11: POLICY_NOT_EVALUATED: "
                          "spec.policy: the Evaluation runs specs/example/release-policy.yaml,"
                          " not specs/example/policy.yaml"), err
    # the Evaluation given in the policy's place: each side runs the policy it names
    changes, text = _diff(capsys, "--base", "main", "specs/example")
    assert changes["decision"] == {"old": "FAIL", "new": "PASS", "changed": True}
    assert changes["settings"] == {"spec.categories.resolution.threshold": {"old": 0.98,
                                                                            "new": 0.9}}
    assert changes["evaluation"]["policy_renamed"] is True
    assert changes["files"]["evaluation.yaml"]["role"] == "evaluation"
    assert '+    "policy": "release-policy.yaml",' in changes["files"]["evaluation.yaml"]["diff"]
    assert "  policy: main:specs/example/policy.yaml -> specs/example/release-policy.yaml " \
        "(the Evaluation names another policy file)" in text
    assert main(["diff", "--base", "main", "specs/example/evaluation.yaml", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["settings"] == changes["settings"]


def test_base_runs_the_old_side_with_its_own_suite(tmp_path: Path, capsys: Any,
                                                   monkeypatch: Any) -> None:
    repo, folder = _failing_main(tmp_path)
    suite = folder / "suite.yaml"  # the case whose run says "thirty days" expects nothing
    suite.write_text(suite.read_text().replace(
        "expected: {actions: [lookup_order], mentions: [30 days]}",
        "expected: {actions: [], mentions: []}"))
    monkeypatch.chdir(repo)
    changes, text = _diff(capsys, "--base", "main", "specs/example/policy.yaml")
    assert changes["decision"] == {"old": "FAIL", "new": "PASS", "changed": True}
    assert changes["settings"] == {}
    assert list(changes["files"]) == ["suite.yaml"]
    change = changes["files"]["suite.yaml"]
    assert change["role"] == "suite" and change["old"] != change["new"]
    assert '-            "30 days"' in change["diff"]
    assert "  evaluation file suite.yaml (the Suite, in suite_sha256): " in text
    assert changes["categories"]["resolution"]["passed"] == {"old": 47, "new": 48}
    assert "WARNING" not in text


def test_base_runs_the_old_side_with_its_own_inputs(tmp_path: Path, capsys: Any,
                                                    monkeypatch: Any) -> None:
    repo, folder = _failing_main(tmp_path)
    runs = (folder / "data" / "runs.jsonl").read_text()
    assert runs.count("within thirty days") == 1
    (folder / "data" / "clean.jsonl").write_text(runs.replace("within thirty days",
                                                              "within 30 days"))
    page = folder / "evaluation.yaml"
    page.write_text(page.read_text().replace("path: data/runs.jsonl", "path: data/clean.jsonl"))
    monkeypatch.chdir(repo)
    changes, text = _diff(capsys, "--base", "main", "specs/example/policy.yaml")
    assert changes["decision"] == {"old": "FAIL", "new": "PASS", "changed": True}
    assert sorted(changes["files"]) == ["evaluation.yaml", "spec.inputs.runs"]
    assert '+        "path": "data/clean.jsonl"' in changes["files"]["evaluation.yaml"]["diff"]
    diff = changes["files"]["spec.inputs.runs"]["diff"]
    assert [line for line in diff if line.startswith(("-{", "+{"))] == [
        "-" + line for line in runs.splitlines() if "thirty" in line] + [
        "+" + line.replace("thirty", "30") for line in runs.splitlines() if "thirty" in line]
    assert "  evaluation input spec.inputs.runs (evidence, an input the Evaluation reads): " \
        in text


def test_an_input_not_in_git_is_read_from_the_new_side_and_said(
        tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    repo, folder = _repository(tmp_path)
    _git(repo, "rm", "-q", "--cached", "specs/example/data/runs.jsonl")
    _git(repo, "commit", "-qm", "evidence out of git")
    monkeypatch.chdir(repo)
    changes, text = _diff(capsys, "--base", "main", "specs/example")
    assert changes["evaluation"]["inputs_not_at_base"] == {
        "runs": "specs/example/data/runs.jsonl"}
    assert "  input runs: not in main; both sides read specs/example/data/runs.jsonl" in text
    assert changes["files"] == {} and changes["decision"]["changed"] is False


def test_without_base_the_old_side_using_the_new_evaluation_is_said(
        tmp_path: Path, capsys: Any) -> None:
    old, new = _two(tmp_path, EXAMPLE)
    changes, text = _diff(capsys, str(old / "policy.yaml"), str(new / "policy.yaml"))
    assert changes["evaluation"]["old"] is None
    assert re.search(r"\n  WARNING: the old side ran with the new Evaluation \S*new/example/"
                     r"evaluation\.yaml and its Suite, so a change to them is not shown \(give "
                     r"--base REF to read the old ones from git\)\n", text), text


def _hijacked(tmp_path: Path) -> tuple[Path, str]:
    """main (origin/main too) at the bar 0.98; a tag named origin/main at a commit with the
    bar at 0.5; the working tree at 0.98."""
    repo, folder = _failing_main(tmp_path)
    _git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    good = _git(repo, "rev-parse", "HEAD").strip()
    _edit(folder / "policy.yaml",
          lambda d: d["spec"]["categories"]["resolution"].update(threshold=0.5))
    _git(repo, "commit", "-qam", "lenient")
    _git(repo, "tag", "origin/main")
    _git(repo, "reset", "-q", "--hard", good)
    return repo, good


@pytest.mark.parametrize("ref", ["origin/main", "origin/main~0", "SHORT"])
def test_an_ambiguous_base_is_refused(tmp_path: Path, capsys: Any, monkeypatch: Any,
                                      ref: str) -> None:
    repo, good = _hijacked(tmp_path)
    if ref == "SHORT":  # a branch named like a prefix of the good commit
        ref = good[:8]
        _git(repo, "branch", ref, "main~1")
    monkeypatch.chdir(repo)
    assert main(["diff", "--base", ref, "specs/example/policy.yaml"]) == 2
    err = capsys.readouterr().err
    assert "BASE_AMBIGUOUS" in err and "names more than one thing" in err, err


def test_the_base_commit_is_printed(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    repo, good = _hijacked(tmp_path)
    monkeypatch.chdir(repo)
    changes, text = _diff(capsys, "--base", "refs/remotes/origin/main",
                          "specs/example/policy.yaml")
    assert text.splitlines()[0] == f"base: refs/remotes/origin/main = {good}"
    assert changes["base"] == {"ref": "refs/remotes/origin/main", "commit": good}
    assert changes["settings"] == {}  # the tag's lenient bar is not the old side


def test_old_new_outright_of_a_policy_the_evaluation_does_not_run_says_so(
        tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    """OLD NEW given outright, NEW a candidate the Evaluation does not name yet: what it
    would decide on the Evaluation's evidence, with a warning first that the Evaluation runs
    another policy (the attack of the review, mounted this way, is said, never silent)."""
    repo, folder = _failing_main(tmp_path)
    shutil.copy(folder / "policy.yaml", folder / "release-policy.yaml")
    _edit(folder / "release-policy.yaml",
          lambda d: d["spec"]["categories"]["resolution"].update(threshold=0.9))
    monkeypatch.chdir(repo)
    assert main(["diff", "specs/example/policy.yaml", "specs/example/release-policy.yaml",
                 "--evaluation", "specs/example"]) == 0
    out = capsys.readouterr().out
    assert "WARNING: the Evaluation runs specs/example/policy.yaml, not " \
        "specs/example/release-policy.yaml" in out, out
    assert "decision: FAIL -> PASS" in out
