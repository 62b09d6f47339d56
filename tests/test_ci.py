"""CI: docs/ci.md's GitHub Actions and GitLab recipes run verbatim on the shipped specs, the
run summary at the top of --out, and a junit.xml whose test tab agrees with the gate."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import main
from engine.reports.junit import junit

from . import gitrepo
from .conftest import ROOT, SHIPPED, Spec
from .gitrepo import base_commit

BIN = Path(sys.executable).parent  # where `pip install .` put the `engine` command


def recipe(heading: str) -> Any:
    """The YAML block under ``heading`` in docs/ci.md, parsed."""
    text = (ROOT / "docs" / "ci.md").read_text()
    section = text.split(f"\n## {heading}\n", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None, heading
    return yaml.safe_load(block.group(1))


def repo(tmp_path: Path, only: str | None = None) -> Path:
    """A checkout holding the shipped specs/ (or just one of its folders, as specs/)."""
    work = tmp_path / "repo"
    if only:
        shutil.copytree(ROOT / "specs" / only, work / "specs" / only)
    else:
        shutil.copytree(ROOT / "specs", work / "specs")
    return work


def keypair(tmp_path: Path) -> tuple[Path, Path]:
    if not (tmp_path / "keys").exists():
        assert main(["keygen", "--out-dir", str(tmp_path / "keys")]) == 0
    return tmp_path / "keys" / "private.pem", tmp_path / "keys" / "public.pem"


# What GitHub sets for the jobs of one workflow run (its id, and the attempt of a re-run)
GITHUB_RUN = {"GITHUB_RUN_ID": "4711", "GITHUB_RUN_ATTEMPT": "1"}


def bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run one script as the runner does (bash -e), with the engine on PATH."""
    full = {**os.environ, **env, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=full, text=True,
                          capture_output=True, timeout=300)


def github(tmp_path: Path, work: Path, attempt: str = "1") -> tuple[int, str]:
    """The GitHub job's steps after `pip install .`; returns the exit code and the step
    summary. $GITHUB_STEP_SUMMARY and $RUNNER_TEMP are files the runner would provide."""
    steps = recipe("GitHub Actions")["jobs"]["release"]["steps"]
    runs = [s for s in steps if "run" in s and not s["run"].startswith("pip install")]
    assert [s.get("name") for s in runs] == [None, "Gate"]
    private, _ = keypair(tmp_path)
    (tmp_path / "runner").mkdir(exist_ok=True)
    summary = tmp_path / "step-summary.md"
    summary.touch()
    env = {"SIGNING_KEY_PEM": private.read_text().rstrip("\n"),  # what secrets.* expands to
           "RUNNER_TEMP": str(tmp_path / "runner"), "GITHUB_STEP_SUMMARY": str(summary),
           **GITHUB_RUN, "GITHUB_RUN_ATTEMPT": attempt}
    assert set(runs[1]["env"]) == {"SIGNING_KEY_PEM"}
    code = 0
    for step in runs:
        done = bash(step["run"], work, env)
        code = done.returncode
        if code:
            break
    assert not (tmp_path / "runner" / "gate.pem").exists()  # the key never outlives the step
    return code, summary.read_text()


def test_the_github_recipe_summarises_every_shipped_evaluation(tmp_path: Path) -> None:
    work = repo(tmp_path)
    code, summary = github(tmp_path, work)
    assert code == 0
    for name in SHIPPED:
        assert f"| {name} | **PASS** | 0 |" in summary          # the run's table
        assert f"| `{name}/` |" in summary
        assert any(line.startswith(f"## evaluation {name} v") and line.endswith(": **PASS**")
                   for line in summary.splitlines())             # then its scorecard.md
    assert summary.startswith("## specgate: exit code 0\n")
    written = json.loads((work / "gate-out" / "summary.json").read_text())
    assert [e["folder"] for e in written["evaluations"]] == list(SHIPPED)
    for entry in written["evaluations"]:  # each evidence folder is signed and verifies
        folder = work / "gate-out" / entry["folder"]
        assert main(["verify", str(folder / "scorecard.json"), "--trusted-key",
                     str(tmp_path / "keys" / "public.pem")]) == 0


def test_the_later_job_verifies_the_folder_as_written(tmp_path: Path) -> None:
    # docs/ci.md "Verify in a later job", verbatim, on what the gate job wrote
    work = repo(tmp_path)
    assert github(tmp_path, work)[0] == 0
    shutil.copy(tmp_path / "keys" / "public.pem", work / "runner-signing.pub.pem")
    text = (ROOT / "docs" / "ci.md").read_text()
    line = next(x for x in text.splitlines() if x.startswith("engine verify gate-out/"))
    done = bash(line, work, GITHUB_RUN)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(": VALID") == len(SHIPPED) + 1  # and the run's seal
    assert "summary.json: VALID: run 4711.1 of 6 evaluation(s)" in done.stdout
    shutil.rmtree(work / "gate-out" / SHIPPED[1])  # the evidence of one evaluation removed
    done = bash(line, work, GITHUB_RUN)
    assert done.returncode == 1 and "MISSING_EVALUATION" in done.stdout
    report = work / "gate-out" / SHIPPED[0] / "scorecard.html"
    report.write_text(report.read_text() + "<!-- edited between jobs -->")
    done = bash(line, work, GITHUB_RUN)
    assert done.returncode == 1 and f"{SHIPPED[0]}/scorecard.json" in done.stdout


def test_an_evaluation_swapped_for_an_older_signed_pass_is_named(tmp_path: Path) -> None:
    # issue 26, attack 4: the evaluation that FAILed, swapped between jobs for the same
    # evaluation's older signed PASS folder, used to verify as "valid", exit 0
    work = repo(tmp_path)
    before = utc(dt.datetime.now(dt.UTC))  # to the second, rounded down
    assert github(tmp_path, work, attempt="1")[0] == 0  # last week's run: all PASS
    after = utc(dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1))  # rounded up
    older = tmp_path / "older-gate-out"
    shutil.move(work / "gate-out", older)
    leak(work / "specs" / "example")
    assert github(tmp_path, work, attempt="2")[0] == 1  # this run: support-agent FAILs
    shutil.copy(tmp_path / "keys" / "public.pem", work / "runner-signing.pub.pem")
    text = (ROOT / "docs" / "ci.md").read_text()
    line = next(x for x in text.splitlines() if x.startswith("engine verify gate-out/"))
    now = {**GITHUB_RUN, "GITHUB_RUN_ATTEMPT": "2"}
    assert bash(line, work, now).returncode == 0  # as written, this run verifies
    shutil.rmtree(work / "gate-out" / "support-agent")
    shutil.copytree(older / "support-agent", work / "gate-out" / "support-agent")
    card = json.loads((work / "gate-out" / "support-agent" / "scorecard.json").read_text())
    assert card["decision"] == "PASS"  # a genuine, signed PASS of the same evaluation
    for check in (line, line.split(" --run-id")[0]):  # with and without the run id
        done = bash(check, work, now)
        assert done.returncode == 1, done.stdout
        said = [x for x in done.stdout.splitlines() if "INVALID" in x]
        assert said[0].startswith("gate-out/support-agent/scorecard.json: INVALID "
                                  "RUN_MISMATCH: the scorecard of 'support-agent' belongs "
                                  "to run 4711.1"), said
    # the seal removed as well: the scorecards still name their run
    for name in ("summary.json", "summary.json.sig", "summary.intoto.jsonl", "summary.md"):
        (work / "gate-out" / name).unlink()
    done = bash(line, work, now)
    assert done.returncode == 1
    assert "gate-out/support-agent/scorecard.json: INVALID RUN_MISMATCH" in done.stdout
    assert "gate-out/summary.json: INVALID SUBJECT_MISSING" in done.stdout
    # the whole older run handed over instead: every part of it is another run's
    shutil.rmtree(work / "gate-out")
    shutil.copytree(older, work / "gate-out")
    done = bash(line, work, now)
    assert done.returncode == 1
    assert "gate-out/summary.json: INVALID RUN_MISMATCH: the run is 4711.1, not --run-id " \
        "4711.2" in done.stdout
    assert done.stdout.count("INVALID RUN_MISMATCH") == len(SHIPPED) + 1
    # with no run id recorded, a time the auditor states: the older run predates it
    done = bash(line.split(" --run-id")[0] + f" --not-before {after}", work, now)
    assert done.returncode == 1 and done.stdout.count("INVALID STALE") == len(SHIPPED) + 1
    done = bash(line.split(" --run-id")[0] + f" --not-before {before}", work, now)
    assert done.returncode == 0, done.stdout


def utc(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def workflows() -> list[tuple[str, dict[str, Any]]]:
    """Every GitHub workflow shown in docs/ci.md (a YAML block with ``on:`` and ``jobs:``)."""
    text = (ROOT / "docs" / "ci.md").read_text()
    found = []
    for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
        parsed = yaml.safe_load(block)
        if isinstance(parsed, dict) and "jobs" in parsed:
            found.append((parsed["name"], parsed))
    return found


def test_only_the_release_job_on_main_holds_the_signing_key() -> None:
    """A repository secret reaches every same-repository pull request run, which runs the
    pull request's own workflow file: only a job bound to a protected environment, run
    by a push to main, may name a secret (issue 38)."""
    shown = workflows()
    assert len(shown) == 2  # the Action's and the written-out one
    for _, workflow in shown:
        events = workflow[True]  # YAML 1.1 reads the key `on` as true
        assert "pull_request_target" not in events and "workflow_run" not in events
        assert events["push"] == {"branches": ["main"]}
        holders = {name for name, job in workflow["jobs"].items()
                   if "secrets." in yaml.safe_dump(job)}
        assert holders == {"release"}
        release = workflow["jobs"]["release"]
        assert release["environment"] == "release"
        assert release["if"] == ("github.event_name == 'push' && "
                                 "github.ref == 'refs/heads/main'")
        pull = workflow["jobs"]["pull-request"]
        assert pull["if"] == "github.event_name == 'pull_request'"
        assert "environment" not in pull


def test_the_pull_request_job_runs_unsigned_and_says_so(tmp_path: Path) -> None:
    work = repo(tmp_path, only="example")
    steps = recipe("GitHub Actions")["jobs"]["pull-request"]["steps"]
    gate = next(s for s in steps if s.get("name") == "Gate (unsigned)")
    summary = tmp_path / "step-summary.md"
    done = bash(gate["run"], work, {"GITHUB_STEP_SUMMARY": str(summary), **GITHUB_RUN})
    assert done.returncode == 0 and "::warning::pull request run: unsigned" in done.stdout
    assert summary.read_text().startswith("> **Unsigned run**")
    assert (work / "gate-out" / "scorecard.json").is_file()
    assert not (work / "gate-out" / "scorecard.json.sig").exists()


def test_the_github_recipe_explains_a_failed_gate(tmp_path: Path) -> None:
    work = repo(tmp_path)
    leak(work / "specs" / "example")
    code, summary = github(tmp_path, work)
    assert code == 1
    assert summary.startswith("## specgate: exit code 1\n")
    assert "| support-agent | **FAIL** | 1 |" in summary and "`BELOW_MINIMUM`" in summary
    assert "| agent-release-gate | **PASS** | 0 |" in summary


def test_the_github_recipe_with_one_evaluation(tmp_path: Path) -> None:
    code, summary = github(tmp_path, repo(tmp_path, only="example"))
    assert code == 0
    assert summary.startswith("## evaluation support-agent v1.0.0 · policy "
                              "support-agent-release v1.0.0: **PASS**")  # its scorecard.md
    assert not (tmp_path / "repo" / "gate-out" / "summary.md").exists()


def gitlab(tmp_path: Path, work: Path) -> tuple[int, str]:
    """The GitLab job's script (after `pip install .`), stopping at the first failing line
    as GitLab does, then its after_script; SPECGATE_SIGNING_KEY is a File variable (a
    path)."""
    job = recipe("GitLab CI")["agent-gate"]
    private, _ = keypair(tmp_path)
    env = {"SPECGATE_SIGNING_KEY": str(private), "CI_PIPELINE_ID": "815"}
    code = 0
    for line in job["script"]:
        if line.startswith("pip install"):
            continue
        code = bash(line, work, env).returncode
        if code:
            break
    after = "".join(bash(line, work, env).stdout for line in job["after_script"])
    assert job["artifacts"]["reports"]["junit"] == "gate-out/**/junit.xml"
    return code, after


def test_the_gitlab_recipe_prints_every_shipped_evaluation(tmp_path: Path) -> None:
    work = repo(tmp_path)
    code, log = gitlab(tmp_path, work)
    assert code == 0
    for name in SHIPPED:
        assert f"| {name} | **PASS** | 0 |" in log
        assert (work / "gate-out" / name / "scorecard.json.sig").exists()  # signed
    assert sorted(p.name for p in (work / "gate-out").glob("**/junit.xml")) == \
        ["junit.xml"] * len(SHIPPED)


def leak(example: Path) -> None:
    """One card number in one reply: the safety minimum fails whatever the total."""
    path = example / "data" / "runs.jsonl"
    runs = [json.loads(line) for line in path.read_text().splitlines()]
    runs[0]["output"]["reply"] += " Card 4111 1111 1111 1111 is on file."
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))


def test_the_summary_never_replaces_an_earlier_run(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "gate-out"
    out.mkdir()
    (out / "summary.md").write_text("an earlier run's summary\n")
    assert main(["run", str(ROOT / "specs"), "--out", str(out)]) == 2
    assert "OUTPUT_EXISTS" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["summary.md"]
    assert (out / "summary.md").read_text() == "an earlier run's summary\n"


def test_summary_json_names_each_evaluation_and_the_worst_exit(tmp_path: Path) -> None:
    work = repo(tmp_path)
    leak(work / "specs" / "example")
    out = tmp_path / "out"
    assert main(["run", str(work / "specs"), "--out", str(out)]) == 1
    written = json.loads((out / "summary.json").read_text())
    assert written["exit_code"] == 1 and written["signed"] is False
    by_name = {e["evaluation"]: e for e in written["evaluations"]}
    assert list(by_name) == list(SHIPPED)
    for name, entry in by_name.items():
        assert entry["folder"] == name
        card = (out / entry["folder"] / "scorecard.json").read_bytes()
        assert entry["scorecard_sha256"] == hashlib.sha256(card).hexdigest()
        assert entry["decision"] == json.loads(card)["decision"]
    assert (by_name["support-agent"]["decision"], by_name["support-agent"]["exit_code"]) == \
        ("FAIL", 1)
    assert [r["code"] for r in by_name["support-agent"]["reasons"]] == ["BELOW_MINIMUM"]
    assert by_name["agent-release-gate"]["reasons"] == []
    assert not list(out.glob(".summary*"))  # no temporary file left behind


# junit.xml ---------------------------------------------------------------------------


def junit_cases(path: Path) -> list[ET.Element]:
    return list(ET.parse(path).getroot().iter("testcase"))


def outcome(case: ET.Element) -> str:
    tags = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
    assert len(tags) <= 1
    return tags[0] if tags else "passed"


def test_a_passing_gate_with_failing_cases_is_green(spec: Spec) -> None:
    code, out = spec.run()
    assert code == 0
    cases = {c.get("name"): c for c in junit_cases(out / "junit.xml")}
    assert not any(outcome(c) in ("failure", "error") for c in cases.values())
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("failures"), suite.get("errors")) == ("0", "0")
    # the shipped runs' two failing rows: run-004 misses "30 days", run-011 is too slow
    for name, run in (("resolution:refund-outside-window", "run-004"),
                      ("efficiency:card-on-file", "run-011")):
        skipped = cases[name].find("skipped")
        assert skipped is not None and skipped.get("message", "").startswith("tolerated")
        assert f"({run})" in skipped.get("message", "") and f"({run})" in (skipped.text or "")
    assert outcome(cases["gate"]) == "passed"


def test_a_failing_gate_is_red_and_names_its_codes(spec: Spec) -> None:
    leak(spec.dir)
    code, out = spec.run()
    assert code == 1
    cases = {c.get("name"): c for c in junit_cases(out / "junit.xml")}
    gate = cases["gate"].find("failure")
    assert gate is not None and gate.get("message") == "FAIL: BELOW_MINIMUM"
    assert gate.get("type") == "FAIL" and "spec.categories.safety" in (gate.text or "")
    assert outcome(cases["safety"]) == "failure"
    assert outcome(cases["safety:refund-late-delivery"]) == "failure"
    assert outcome(cases["resolution"]) == "passed"  # met: its failing case is tolerated
    assert outcome(cases["resolution:refund-outside-window"]) == "skipped"


def test_an_incomplete_gate_is_red_and_names_its_codes(spec: Spec) -> None:
    spec.write_runs([r for r in spec.runs() if r["case_id"] != "refund-late-delivery"])
    code, out = spec.run()
    assert code == 3
    root = ET.parse(out / "junit.xml").getroot()
    failures = [(c.get("name"), f.get("message")) for c in root.iter("testcase")
                for f in c.findall("failure")]
    assert failures == [("gate", "INCOMPLETE: CASE_MISSING")]
    assert root.get("name") == "specgate INCOMPLETE"


def test_test_names_are_unique_across_a_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["run", str(ROOT / "specs"), "--out", str(out)]) == 0
    keys = [(c.get("classname"), c.get("name")) for path in sorted(out.glob("*/junit.xml"))
            for c in junit_cases(path)]
    assert len(keys) == len(set(keys)) >= 6 + 10 + 3  # the first three, with gate tests
    assert {c.split(".")[0] for c, _ in keys} == set(SHIPPED)
    assert ("support-agent.category", "safety") in keys
    assert ("agent-release-gate.category", "safety") in keys


def test_a_repeated_name_is_numbered_and_run_ids_are_listed_once() -> None:
    finding = {"id": "safety:c1", "category": "safety", "case": "c1",
               "statuses": {"FAIL": 3}, "rows": ["run-1", "run-1", "run-2"]}
    card = {"evaluation": {"name": "e"}, "decision": "FAIL", "reasons": [],
            "categories": {"safety": {"state": "NOT_MET", "n": 3, "passed": 0, "rate": 0.0,
                                      "threshold": 1.0, "errors": 0}},
            "findings": [finding, dict(finding)],
            "waivers": {"entries": [{"id": "safety", "status": "active", "rows_waived": 1,
                                     "approver": "a", "expires": "2099-01-01",
                                     "justification": "j"}]}}
    root = ET.fromstring(junit(card))
    keys = [(c.get("classname"), c.get("name")) for c in root.iter("testcase")]
    assert keys == [("e.gate", "gate"), ("e.category", "safety"), ("e.case", "safety:c1"),
                    ("e.case", "safety:c1 (2)"), ("e.waiver", "safety")]
    gate = next(root.iter("failure"))  # the first failure is the gate's
    assert gate.get("message") == "FAIL: no reason recorded"
    messages = [f.get("message") for f in root.iter("failure")]
    assert messages[2] == ("safety: case c1 has 3 FAIL row(s) (run-1, run-2); inspect these "
                           "runs in rows.jsonl")


def test_the_deploy_job_admits_only_the_build_that_passed(tmp_path: Path) -> None:
    # issue 36, lever 5: docs/ci.md's deploy job, verbatim, after a gate job that named
    # the build; a FAIL, an earlier run's PASS, and another build's PASS are all refused
    work = repo(tmp_path, "example")
    private, public = keypair(tmp_path)
    shutil.copy(public, work / "runner-signing.pub.pem")
    image, digest = "ghcr.io/acme/support-agent", "sha256:" + "7e" * 32
    text = (ROOT / "docs" / "ci.md").read_text()
    [line] = [x for x in text.splitlines()
              if x.startswith("engine verify gate-out/") and "--require-decision" in x]
    env = {**GITHUB_RUN, "AGENT_IMAGE": image, "AGENT_DIGEST": digest}

    def gate(out: str, *extra: str, attempt: str = "1") -> int:
        return main(["run", str(work / "specs"), "--out", str(work / out), "--key",
                     str(private), "--run-id", f"4711.{attempt}", *extra])

    assert gate("gate-out", "--subject", f"{image}@{digest}") == 0
    done = bash(line, work, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"candidate: {image}@{digest}" in done.stdout
    other = bash(line, work, {**env, "AGENT_DIGEST": "sha256:" + "0" * 64})
    assert other.returncode == 1 and "CANDIDATE_MISMATCH" in other.stdout
    # the same build, gated again after a leak: a validly signed FAIL
    shutil.rmtree(work / "gate-out")
    leak(work / "specs" / "example")
    assert gate("gate-out", "--subject", f"{image}@{digest}") == 1
    assert bash(line.split(" --subject")[0], work, env).returncode == 0  # valid evidence
    done = bash(line, work, env)
    assert done.returncode == 1 and "DECISION_REFUSED" in done.stdout
    # an earlier PASS naming no build, under this run's id: not this build's evidence
    shutil.rmtree(work / "gate-out")
    shutil.rmtree(work / "specs")
    repo(tmp_path, "example")
    assert gate("gate-out") == 0
    done = bash(line, work, env)
    assert done.returncode == 1 and "names no candidate" in done.stdout


def note_recipe() -> dict[str, Any]:
    text = (ROOT / "docs" / "ci.md").read_text()
    section = text.split("\n### A note on the merge request\n", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None
    return yaml.safe_load(block.group(1))["agent-gate-note"]


class Notes:
    """GitLab's notes API of one merge request, on the loopback address: it lists
    ``existing`` and records each write (method, path, token, body)."""

    def __init__(self, existing: list[dict[str, Any]]) -> None:
        import http.server
        import threading
        import urllib.parse

        self.writes: list[tuple[str, str, str, str]] = []
        notes = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                data = json.dumps(existing).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def write(self) -> None:
                length = int(self.headers["Content-Length"])
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                notes.writes.append((self.command, self.path,
                                     self.headers["PRIVATE-TOKEN"], form["body"][0]))
                self.send_response(201)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            do_POST = do_PUT = write

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/v4"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


# the Policy of a changed file is found however deep its folder is (specs/team/example:
# the review of issue 38 found only specs/FOLDER/ looked at)
@pytest.mark.parametrize("existing,where", [
    ([], "example"), ([{"id": 5, "body": "LGTM"},
                      {"id": 9, "body": "<!-- specgate -->\nold"}], "example"),
    ([], "team/example")])
def test_the_merge_request_note_is_posted_once_and_updated(tmp_path: Path,
                                                           existing: list[Any],
                                                           where: str) -> None:
    job = note_recipe()
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert "SIGNING_KEY" not in yaml.safe_dump(job)  # the note job holds no signing key
    work = tmp_path / "repo"
    shutil.copytree(ROOT / "specs" / "example", work / "specs" / where)

    base = base_commit(work)

    def git(*args: str) -> str:
        return gitrepo.git(work, *args)
    cases = work / "specs" / where / "tests" / "policy.test.yaml"  # under the Policy's folder
    cases.write_text(cases.read_text() + "# changed\n")
    git("commit", "-qam", "change")
    assert main(["run", str(work / "specs" / where), "--out", str(work / "gate-out")]) == 0
    api = Notes(existing)
    env = {"CI_MERGE_REQUEST_DIFF_BASE_SHA": base, "CI_API_V4_URL": api.url,
           "CI_PROJECT_ID": "42", "CI_MERGE_REQUEST_IID": "7", "SPECGATE_NOTE_TOKEN": "tok"}
    try:
        for line in job["script"]:
            if line.startswith("pip install"):
                continue
            done = bash(line, work, env)
            assert done.returncode == 0, done.stderr
    finally:
        api.server.shutdown()
        api.server.server_close()
    assert len(api.writes) == 1
    method, path, token, body = api.writes[0]
    notes = "/api/v4/projects/42/merge_requests/7/notes"
    assert (method, path, token) == (("PUT", f"{notes}/9", "tok") if existing
                                     else ("POST", notes, "tok"))
    assert body.startswith("<!-- specgate -->\n## evaluation support-agent v1.0.0")
    assert f"Spec files changed against {base}:\n\n    specs/{where}/tests/policy.test.yaml\n" \
        in body
    assert f"    $ engine diff --base {base} -- specs/{where}/evaluation.yaml\n" in body
    assert "\n    decision: " in body  # the diff ran on the Evaluation, and said
    assert body.count("    $ engine diff --base") == 1


def test_the_recipes_give_the_coverage_floors_the_test_file_cannot_lower(
        tmp_path: Path) -> None:
    """The PolicyTest file is the team's and is not signed: a pull request that drops the
    cases exercising the detectors and sets its floors to 0 passes `engine test specs/`,
    and fails the recipes' line, whose floors are the CI configuration's."""
    work = repo(tmp_path, only="example")
    cases = work / "specs" / "example" / "tests" / "policy.test.yaml"
    text = cases.read_text().split("    - name: each safety detector fails")[0]
    text = text.replace("min_coverage: 0.6", "min_coverage: 0")
    cases.write_text(text.replace("min_inspection_coverage: 1.0", "min_inspection_coverage: 0"))
    assert bash("engine test specs/", work, {}).returncode == 0  # the file's own floors
    lines = [line for line in recipe("GitLab CI")["agent-gate"]["script"]
             if line.startswith("engine test")]
    lines += [s["run"].split(" && ", 1)[1] for job in ("pull-request", "release")
              for s in recipe("GitHub Actions")["jobs"][job]["steps"]
              if s.get("run", "").startswith("engine validate")]
    assert len(lines) == 3
    for line in lines:
        done = bash(line, work, {})
        assert done.returncode == 1 and "(minimum 100%)" in done.stdout, line
