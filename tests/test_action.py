"""The GitHub Action (action.yml): its steps run as the runner runs them, with what GitHub
would put in their environment simulated (inputs, $GITHUB_OUTPUT, $GITHUB_STEP_SUMMARY,
$RUNNER_TEMP, the run id). The install step is not run: the engine under test is installed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import main

from . import gitrepo
from .conftest import ROOT, SHIPPED
from .gitrepo import base_commit

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
EXPRESSION = re.compile(r"^\$\{\{ (inputs|github)\.([\w.-]+) \}\}$")


def step(name: str) -> dict[str, Any]:
    return next(s for s in ACTION["runs"]["steps"] if s["name"] == name)


def run_step(name: str, work: Path, inputs: dict[str, str], extra: dict[str, str]
             ) -> tuple[int, dict[str, str], str]:
    """One step's script in bash, its env expanded as GitHub would; returns its exit
    code, what it wrote to $GITHUB_OUTPUT and to the step summary."""
    values = {k: v.get("default", "") for k, v in ACTION["inputs"].items()} | inputs
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECGATE_")}
    for key, expr in step(name).get("env", {}).items():
        found = EXPRESSION.match(expr)
        if found is None:  # another step's output: the test passes it in ``extra``
            assert expr.startswith("${{ steps.gate.outputs."), expr
            continue
        kind, field = found.groups()
        if kind == "github" and field != "action_path":  # the event's: passed in ``extra``
            continue
        env[key] = values[field] if kind == "inputs" else str(ROOT)
    temp = work.parent / "runner-temp"
    temp.mkdir(exist_ok=True)
    output, summary = work.parent / "github-output", work.parent / "step-summary.md"
    output.write_text("")
    summary.touch()
    env |= {"RUNNER_TEMP": str(temp), "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_RUN_ID": "4711",
            "GITHUB_RUN_ATTEMPT": "2", "GITHUB_SERVER_URL": "https://github.com",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"} | extra
    # GitHub runs `shell: bash` as bash --noprofile --norc -eo pipefail
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                           step(name)["run"]], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert not list(temp.glob("specgate-key.pem"))  # the key never outlives the step
    return done.returncode, outputs, summary.read_text()


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    shutil.copytree(ROOT / "specs", folder / "specs")
    return folder


def test_the_action_is_a_composite_that_uploads_and_exits_with_the_gates_code() -> None:
    assert ACTION["runs"]["using"] == "composite"
    names = [s["name"] for s in ACTION["runs"]["steps"]]
    assert names == ["Install specgate", "Gate", "Comment on the pull request", "History page",
                     "Upload the history page", "Upload the evidence",
                     "Exit with the gate's code"]
    assert step("Upload the evidence")["if"].startswith("always()")
    assert step("Exit with the gate's code")["if"] == "always()"
    for s in ACTION["runs"]["steps"]:  # inputs reach scripts as variables, never as text
        assert "${{" not in s.get("run", ""), s["name"]


def test_a_signed_run_summarises_and_verifies(work: Path, tmp_path: Path) -> None:
    assert main(["keygen", "--out-dir", str(tmp_path / "keys")]) == 0
    pem = (tmp_path / "keys" / "private.pem").read_text()
    code, outputs, summary = run_step("Gate", work, {"signing-key": pem}, {})
    assert code == 0 and outputs == {"exit-code": "0", "signed": "true"}
    assert summary.startswith("## specgate: exit code 0")
    for name in SHIPPED:
        assert f"| {name} | **PASS** | 0 |" in summary
    assert main(["verify", str(work / "gate-out"), "--trusted-key",
                 str(tmp_path / "keys" / "public.pem"), "--run-id", "4711.2"]) == 0
    exit_code, _, _ = run_step("Exit with the gate's code", work, {},
                               {"SPECGATE_EXIT": outputs["exit-code"]})
    assert exit_code == 0


def test_the_history_page_draws_this_run_and_earlier_ones(work: Path, tmp_path: Path) -> None:
    assert main(["keygen", "--out-dir", str(tmp_path / "keys")]) == 0
    pem = (tmp_path / "keys" / "private.pem").read_text()
    public = (tmp_path / "keys" / "public.pem").read_text()
    assert main(["run", str(work / "specs"), "--key", str(tmp_path / "keys" / "private.pem"),
                 "--out", str(work / "earlier")]) == 0
    assert run_step("Gate", work, {"signing-key": pem}, {})[0] == 0
    inputs = {"history": "earlier", "history-key": public}
    code, outputs, summary = run_step("History page", work, inputs, {})
    pages = tmp_path / "runner-temp" / "specgate-history"
    assert code == 0 and outputs == {"exit-code": "0"}
    assert "every run found verified (artifact specgate-evidence-history)" in summary
    html = (pages / "history.html").read_text()
    assert html.count("<p>2 verified runs, 1 segment(s).</p>") == len(SHIPPED)
    assert not (tmp_path / "runner-temp" / "specgate-history.pub.pem").exists()
    rows = work / "earlier" / "agent-release-gate" / "rows.jsonl"
    rows.write_text(rows.read_text().replace('"status":"PASS"', '"status":"FAIL"', 1))
    (pages / "history.html").unlink()
    code, outputs, summary = run_step("History page", work, inputs, {})
    assert code == 0 and outputs == {"exit-code": "1"} and "some runs were left out" in summary
    assert "DIGEST_MISMATCH" in (pages / "history.html").read_text()
    code, outputs, _ = run_step("History page", work, {**inputs, "history": "--out=x"}, {})
    assert code == 2 and not (work / "x").exists()


def test_a_fork_without_secrets_gets_unsigned_evidence_and_the_gates_code(work: Path) -> None:
    code, outputs, summary = run_step("Gate", work, {"signing-key": ""}, {})
    assert code == 0 and outputs == {"exit-code": "0", "signed": "false"}
    assert summary.startswith("> **Unsigned run**")
    assert "## specgate: exit code 0" in summary
    assert (work / "gate-out" / "summary.json").is_file()
    assert not (work / "gate-out" / "summary.json.sig").exists()


def test_a_release_workflow_without_its_key_fails(work: Path) -> None:
    code, outputs, _ = run_step("Gate", work, {"require-signature": "true"}, {})
    assert outputs == {"exit-code": "2", "signed": "false"}
    assert not (work / "gate-out").exists()
    exit_code, _, _ = run_step("Exit with the gate's code", work, {},
                               {"SPECGATE_EXIT": outputs["exit-code"]})
    assert exit_code == 2


def test_a_governance_key_makes_unsigned_specs_incomplete(work: Path, tmp_path: Path) -> None:
    assert main(["keygen", "--out-dir", str(tmp_path / "gov")]) == 0
    public = (tmp_path / "gov" / "public.pem").read_text()
    code, outputs, summary = run_step("Gate", work, {"governance-key": public,
                                                     "specs": "specs/example"}, {})
    assert outputs["exit-code"] == "3"
    assert "SPECS_UNSIGNED" in summary
    assert main(["sign-specs", str(work / "specs" / "example"), "--key",
                 str(tmp_path / "gov" / "private.pem")]) == 0
    shutil.rmtree(work / "gate-out")
    code, outputs, _ = run_step("Gate", work, {"governance-key": public,
                                               "specs": "specs/example"}, {})
    assert outputs["exit-code"] == "0"


def test_the_pre_commit_hooks_run_as_pre_commit_runs_them(work: Path) -> None:
    """pre-commit runs a hook's entry (split like a shell word list) in the repository's
    root when a changed file matches ``files``; neither hook takes file names."""
    import shlex

    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"specgate-validate", "specgate-test"}
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                                 f"{os.environ['PATH']}"}
    for hook in hooks.values():
        assert hook["pass_filenames"] is False and hook["language"] == "python"
        assert re.search(hook["files"], "specs/example/policy.yaml")
        assert not re.search(hook["files"], "engine/cli/run.py")
        done = subprocess.run(shlex.split(hook["entry"]), cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    (work / "specs" / "example" / "policy.yaml").write_text("kind: Policy\n")
    done = subprocess.run(shlex.split(hooks["specgate-validate"]["entry"]), cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "policy.yaml:" in done.stderr


SPEC, GITLAB = yaml.safe_load_all((ROOT / "templates" / "specgate.gitlab-ci.yml").read_text())
PINNED = "0123456789abcdef0123456789abcdef01234567"  # the commit the include names
INPUTS = {"host": "gitlab.example", "project": "acme/specgate", "ref": PINNED}


def interpolated(text: str) -> str:
    """What GitLab writes into the job when the pipeline is created: each
    ``$[[ inputs.NAME ]]`` replaced by the value the include gave."""
    return re.sub(r"\$\[\[ inputs\.(\w+) \]\]", lambda m: INPUTS[m.group(1)], text)


def gitlab(work: Path, variables: dict[str, str]) -> tuple[int, str, str]:
    """The template's script (after its pip install) and after_script, each as GitLab's
    runner runs a list of commands (bash, stopping at the first failure), with its
    variables and the pipeline's id in the environment; the exit code of the script, and
    what after_script printed, and the script's log."""
    job = GITLAB[".specgate"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECGATE_")}
    env |= job["variables"] | {"CI_PIPELINE_ID": "815"} | variables
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    commands = [interpolated(c) for c in job["script"] if "pip install" not in c]
    done = subprocess.run(["bash", "-eo", "pipefail", "-c", "\n".join(commands)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)
    after = subprocess.run(["bash", "-c", "\n".join(job["after_script"])], cwd=work,
                           env=env, capture_output=True, text=True, timeout=60)
    return done.returncode, after.stdout, done.stdout + done.stderr


def test_the_gitlab_template_signs_with_the_file_variable(work: Path, tmp_path: Path) -> None:
    assert main(["keygen", "--out-dir", str(tmp_path / "keys")]) == 0
    key = str(tmp_path / "keys" / "private.pem")  # a File variable: its path
    code, printed, _ = gitlab(work, {"SPECGATE_SIGNING_KEY": key})
    assert code == 0 and printed.startswith("## specgate: exit code 0")
    assert main(["verify", str(work / "gate-out"), "--trusted-key",
                 str(tmp_path / "keys" / "public.pem"), "--run-id", "815"]) == 0
    assert GITLAB[".specgate"]["artifacts"]["when"] == "always"


def test_the_gitlab_template_in_a_fork_and_in_a_release_without_its_key(work: Path) -> None:
    code, printed, _ = gitlab(work, {})
    assert code == 0 and printed.startswith("UNSIGNED RUN")
    assert (work / "gate-out" / "summary.md").is_file()
    shutil.rmtree(work / "gate-out")
    code, printed, _ = gitlab(work, {"SPECGATE_REQUIRE_SIGNATURE": "true"})
    assert code == 2 and not (work / "gate-out").exists()


BUILD = "ghcr.io/acme/support-agent"
DIGEST = "5d4c" * 16  # the candidate's sha256, as a registry would print it


def test_the_action_signs_the_candidate_it_is_given(work: Path, tmp_path: Path) -> None:
    assert main(["keygen", "--out-dir", str(tmp_path / "keys")]) == 0
    pem = (tmp_path / "keys" / "private.pem").read_text()
    public = str(tmp_path / "keys" / "public.pem")
    code, outputs, _ = run_step("Gate", work, {"signing-key": pem, "specs": "specs/example",
                                               "subject": f"{BUILD}@sha256:{DIGEST}"}, {})
    assert outputs == {"exit-code": "0", "signed": "true"}
    assert (work / "gate-out" / "vsa.intoto.jsonl").is_file()
    deploy = ["verify", str(work / "gate-out"), "--trusted-key", public,
              "--require-decision", "PASS"]
    assert main([*deploy, "--subject", f"{BUILD}@sha256:{DIGEST}"]) == 0
    assert main([*deploy, "--subject", f"{BUILD}@sha256:{'0' * 64}"]) == 1
    shutil.rmtree(work / "gate-out")  # a malformed subject stops the run, coded
    code, outputs, summary = run_step("Gate", work, {"signing-key": pem,
                                                     "subject": f"{BUILD}@{DIGEST}"}, {})
    assert outputs["exit-code"] == "2" and not (work / "gate-out").exists()


def test_the_gitlab_template_signs_the_candidate_it_is_given(work: Path,
                                                             tmp_path: Path) -> None:
    assert main(["keygen", "--out-dir", str(tmp_path / "keys")]) == 0
    key = str(tmp_path / "keys" / "private.pem")
    both = f"{BUILD}@sha256:{DIGEST} {BUILD}-tools@sha256:{'1' * 64}"
    code, _, _ = gitlab(work, {"SPECGATE_SIGNING_KEY": key, "SPECGATE_SPECS": "specs/example",
                            "SPECGATE_SUBJECT": both})
    assert code == 0
    card = (work / "gate-out" / "scorecard.json").read_text()
    assert f'"name":"{BUILD}-tools","sha256":"{"1" * 64}"' in card
    for subject in both.split():
        assert main(["verify", str(work / "gate-out"), "--trusted-key",
                     str(tmp_path / "keys" / "public.pem"), "--subject", subject,
                     "--require-decision", "PASS"]) == 0


# the reviewer's attack (attacks/a7): a YAML block scalar, one build per line, with a
# leading blank line and a tab; every line's build is signed, none dropped
LINES = f"\n{BUILD}@sha256:{DIGEST}\n\t{BUILD}-tools@sha256:{'1' * 64}\n"


def test_the_action_signs_every_build_of_a_multi_line_subject(work: Path,
                                                              tmp_path: Path) -> None:
    assert main(["keygen", "--out-dir", str(tmp_path / "keys")]) == 0
    pem = (tmp_path / "keys" / "private.pem").read_text()
    code, outputs, _ = run_step("Gate", work, {"signing-key": pem, "specs": "specs/example",
                                               "subject": LINES}, {})
    assert outputs == {"exit-code": "0", "signed": "true"}
    card = json.loads((work / "gate-out" / "scorecard.json").read_bytes())
    assert card["candidates"] == [{"name": BUILD, "sha256": DIGEST},
                                  {"name": f"{BUILD}-tools", "sha256": "1" * 64}]
    shutil.rmtree(work / "gate-out")  # a word is never an option nor a glob
    (work / "specs" / "x@sha256:a").mkdir()
    code, outputs, _ = run_step("Gate", work, {"signing-key": pem, "specs": "specs/example",
                                               "subject": f"{LINES}--help\nspecs/*"}, {})
    assert outputs["exit-code"] == "2" and not (work / "gate-out").exists()


def test_the_gitlab_template_signs_every_build_of_a_multi_line_subject(
        work: Path, tmp_path: Path) -> None:
    assert main(["keygen", "--out-dir", str(tmp_path / "keys")]) == 0
    key = str(tmp_path / "keys" / "private.pem")
    code, _, _ = gitlab(work, {"SPECGATE_SIGNING_KEY": key, "SPECGATE_SPECS": "specs/example",
                            "SPECGATE_SUBJECT": LINES})
    assert code == 0
    card = json.loads((work / "gate-out" / "scorecard.json").read_bytes())
    assert [c["name"] for c in card["candidates"]] == [BUILD, f"{BUILD}-tools"]


# issue 38: whoever may set a pipeline variable (or a variable of the project) chooses its
# value; none of these values may rebind an input, add an option, expand a glob or change
# what is installed
@pytest.mark.parametrize("specs", ["specs/example --input runs=OTHER.jsonl",
                                   "specs/example\n--input=runs=OTHER.jsonl",
                                   "--help", "--input runs=OTHER.jsonl specs/example"])
def test_the_gitlab_template_takes_no_option_through_its_specs(work: Path,
                                                               specs: str) -> None:
    (work / "OTHER.jsonl").write_text("")
    code, _, log = gitlab(work, {"SPECGATE_SPECS": specs})
    assert code == 2 and not (work / "gate-out").exists()
    assert "SPECGATE_SPECS names spec files or folders only" in log
    assert "starts with '-'; nothing was run" in log


def test_the_gitlab_template_expands_no_glob_in_its_specs(work: Path) -> None:
    code, _, log = gitlab(work, {"SPECGATE_SPECS": "specs/ex*"})
    assert code == 2 and not (work / "gate-out").exists()
    assert "specs/ex*:1:1: FILE_NOT_FOUND" in log  # the word itself, never specs/example


def test_the_gitlab_template_passes_values_whole(work: Path, tmp_path: Path) -> None:
    """An output folder or subject that reads like an option stays the value it is."""
    assert main(["keygen", "--out-dir", str(tmp_path / "keys")]) == 0
    key = str(tmp_path / "keys" / "private.pem")
    code, _, _ = gitlab(work, {"SPECGATE_SIGNING_KEY": key, "SPECGATE_SPECS": "specs/example",
                               "SPECGATE_OUT": "--json"})
    assert code == 0 and (work / "--json" / "scorecard.json.sig").is_file()
    code, _, log = gitlab(work, {"SPECGATE_SPECS": "specs/example",
                                 "SPECGATE_SUBJECT": "--input runs=OTHER.jsonl"})
    assert code == 2 and "--input" in log and not (work / "gate-out").exists()


def test_the_gitlab_template_requires_governance_signed_specs(work: Path,
                                                              tmp_path: Path) -> None:
    assert main(["keygen", "--out-dir", str(tmp_path / "gov")]) == 0
    public = tmp_path / "gov" / "public.pem"
    for given in (str(public), public.read_text()):  # a File variable, or the PEM text
        code, printed, _ = gitlab(work, {"SPECGATE_SPECS": "specs/example",
                                         "SPECGATE_GOVERNANCE_KEY": given})
        assert code == 3 and "SPECS_UNSIGNED" in printed
        shutil.rmtree(work / "gate-out")
    assert main(["sign-specs", str(work / "specs" / "example"), "--key",
                 str(tmp_path / "gov" / "private.pem")]) == 0
    code, _, _ = gitlab(work, {"SPECGATE_SPECS": "specs/example",
                               "SPECGATE_GOVERNANCE_KEY": public.read_text()})
    assert code == 0
    card = json.loads((work / "gate-out" / "scorecard.json").read_bytes())
    assert card["provenance"]["specs"]["status"] == "verified"


def test_the_gitlab_template_installs_this_repository_at_the_included_commit() -> None:
    """The one install line, as GitLab writes it into the job (inputs interpolated) and
    bash expands it, whatever the pipeline's variables say: this repository, by git, at
    the commit the include names; no variable of the job chooses it."""
    assert SPEC["spec"]["inputs"]["ref"]["regex"] == "^[0-9a-f]{40}$"
    assert "default" not in SPEC["spec"]["inputs"]["ref"]  # an include must name it
    assert not re.match(SPEC["spec"]["inputs"]["ref"]["regex"], "main")
    install = [c for c in GITLAB[".specgate"]["script"] if "pip install" in c]
    prefix = "PIP_CONFIG_FILE=/dev/null python3 -m pip install --quiet "
    assert len(install) == 1 and install[0].startswith(prefix)
    argument = install[0].removeprefix(prefix)
    env = {"PATH": os.environ["PATH"], "CI_JOB_TOKEN": "TOKEN",  # a pipeline's variable:
           "CI_SERVER_HOST": "evil.example", "SPECGATE_INSTALL": "specgate",
           "SPECGATE_REF": "main"}
    words = subprocess.run(["bash", "-c", f"printf '%s\\n' {interpolated(argument)}"],
                           env=env, capture_output=True, text=True, check=True).stdout
    assert words.splitlines() == [
        f"git+https://gitlab-ci-token:TOKEN@gitlab.example/acme/specgate.git@{PINNED}"]
    assert not any(k.startswith("SPECGATE_INSTALL") for k in GITLAB[".specgate"]["variables"])


@pytest.mark.parametrize("specs", ["specs/example --input runs=OTHER.jsonl", "--help",
                                   "specs/example\n--input=runs=OTHER.jsonl"])
def test_the_action_takes_no_option_through_its_specs(work: Path, specs: str) -> None:
    (work / "OTHER.jsonl").write_text("")
    code, outputs, summary = run_step("Gate", work, {"specs": specs}, {})
    assert outputs == {"exit-code": "2", "signed": "false"}
    assert not (work / "gate-out").exists()
    assert summary.startswith("> **specgate did not run**: specs names spec files or "
                              "folders only, and '-")


def test_the_action_expands_no_glob_and_reads_every_line_of_its_specs(work: Path) -> None:
    code, outputs, _ = run_step("Gate", work, {"specs": "specs/ex*"}, {})
    assert outputs["exit-code"] == "2" and not (work / "gate-out").exists()
    code, outputs, summary = run_step("Gate", work,
                                      {"specs": "specs/example\nspecs/inspect-example\n"}, {})
    assert outputs["exit-code"] == "0"
    assert "| support-agent | **PASS** | 0 |" in summary
    assert "| inspect-arithmetic | **PASS** | 0 |" in summary


def test_a_key_the_run_cannot_use_is_never_reported_signed(work: Path) -> None:
    code, outputs, summary = run_step("Gate", work, {"signing-key": "not a key"}, {})
    assert outputs == {"exit-code": "2", "signed": "false"}
    assert summary.startswith("> **Unsigned run**: a signing key was given but this run "
                              "wrote no signed evidence (exit 2)")


def test_a_release_stopped_for_its_key_says_why_in_the_job_summary(work: Path) -> None:
    code, outputs, summary = run_step("Gate", work, {"require-signature": "true"}, {})
    assert outputs == {"exit-code": "2", "signed": "false"}
    assert summary.startswith("> **specgate did not run**: require-signature is true and "
                              "no signing key was given")


@pytest.mark.parametrize("install", ["specgate", "specgate==0.0.1", "specgate-engine",
                                     "git+https://github.com/acme/specgate@main",
                                     "--index-url=https://evil.example/simple specgate"])
def test_the_action_installs_nothing_by_name(work: Path, install: str) -> None:
    code, _, _ = run_step("Install specgate", work, {"install": install}, {})
    assert code == 2


def fake_gh(folder: Path, existing: str) -> Path:
    """A stand-in for GitHub's API, which no test reaches: gh logs its arguments and the
    body it was given, and lists ``existing`` as the id of our earlier comment."""
    folder.mkdir()
    (folder / "gh").write_text(f"""#!/usr/bin/env bash
printf '%s\\n' "$*" >> {folder}/calls
for a in "$@"; do case "$a" in body=@*) cat "${{a#body=@}}" > {folder}/body;; esac; done
case "$*" in *--paginate*) printf '%s' '{existing}';; esac
case "$*" in *--paginate*) [ -n '{existing}' ] && printf '\\n99\\n';; esac
exit 0
""")
    (folder / "gh").chmod(0o755)
    return folder


def pull_request(work: Path) -> str:
    """``work`` as a pull request's checkout: a base commit, then a change of the example's
    threshold; origin is the repository itself. Returns the base commit."""
    base = base_commit(work)

    def git(*args: str) -> str:
        return gitrepo.git(work, *args)
    policy = work / "specs" / "example" / "policy.yaml"
    policy.write_text(policy.read_text() + "# a reviewer's note\n")
    cases = work / "specs" / "example" / "tests" / "policy.test.yaml"
    cases.write_text(cases.read_text() + "# another\n")  # the same Policy's folder
    git("commit", "-qam", "change")
    return base


@pytest.mark.parametrize("existing", ["", "77"])
def test_the_action_posts_or_updates_one_pull_request_comment(work: Path, tmp_path: Path,
                                                              existing: str) -> None:
    base = pull_request(work)
    code, outputs, _ = run_step("Gate", work, {"specs": "specs/example"}, {})
    assert outputs == {"exit-code": "0", "signed": "false"}
    gh = fake_gh(tmp_path / "gh", existing)
    event = {"SPECGATE_SIGNED": outputs["signed"], "SPECGATE_EXIT": outputs["exit-code"],
             "SPECGATE_BASE": base, "SPECGATE_PULL": "12", "SPECGATE_REPOSITORY": "acme/agent",
             "GH_TOKEN": "t", "PATH": f"{gh}{os.pathsep}{Path(sys.executable).parent}"
                                      f"{os.pathsep}{os.environ['PATH']}"}
    assert step("Comment on the pull request")["if"].startswith(
        "always() && inputs.comment == 'true' && github.event_name == 'pull_request'")
    code, _, _ = run_step("Comment on the pull request", work,
                          {"specs": "specs/example", "comment": "true"}, event)
    assert code == 0
    calls = (gh / "calls").read_text().splitlines()
    assert calls[0].startswith("api --paginate repos/acme/agent/issues/12/comments --jq ")
    assert calls[1] == ("api --method PATCH repos/acme/agent/issues/comments/77 -F body=@"
                        if existing else
                        "api --method POST repos/acme/agent/issues/12/comments -F body=@") + \
        str(tmp_path / "runner-temp" / "specgate-comment.md")
    body = (gh / "body").read_text()
    assert body.startswith("<!-- specgate: the gate's pull request comment -->\n"
                           "> **Unsigned run**")
    assert "## evaluation support-agent v1.0.0" in body  # the scorecard.md of the run
    assert f"## Spec changes against the base ({base})" in body
    assert "\n    specs/example/policy.yaml\n    specs/example/tests/policy.test.yaml\n" in body
    # engine diff --base (issue 38, section 1) for the one Policy the changes belong to
    assert body.count("### What the policy change moves") == 1
    assert f"\n    $ engine diff --base {base} -- specs/example/evaluation.yaml\n" in body
    assert "\n    base: " in body and "\n    decision: " in body  # the diff ran, and said


# issue 38 review: a variable of the job can steer pip (an index, links, a config file), the
# git it fetches with (a URL rewrite sending the job token elsewhere), and Python (a module
# path that runs code at start-up); the host the token goes to is the include's, not
# CI_SERVER_HOST, which a pipeline variable can set
HOSTILE = {"CI_SERVER_HOST": "evil.example", "PIP_INDEX_URL": "https://evil.example/simple",
           "PIP_EXTRA_INDEX_URL": "https://evil.example/extra", "PIP_FIND_LINKS": "/evil",
           "PIP_NO_INDEX": "1", "GIT_CONFIG_COUNT": "1",
           "GIT_CONFIG_KEY_0": "url.https://evil.example/.insteadOf",
           "GIT_CONFIG_VALUE_0": "https://gitlab.example/"}


def hostile(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """HOSTILE, a pip.conf of the attacker's, and a PYTHONPATH whose sitecustomize (run by
    any Python that has the folder on its path) writes the returned marker; and a folder
    whose python3 records its arguments and environment instead of installing anything."""
    evil = tmp_path / "evil"
    evil.mkdir()
    marker = tmp_path / "python-path-ran"
    (evil / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (evil / "pip.conf").write_text("[global]\nindex-url = https://evil.example/simple\n")
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "python3").write_text(f"""#!/bin/sh
printf '%s\\n' "$@" > {shim}/argv
env > {shim}/env
""")
    (shim / "python3").chmod(0o755)
    return (HOSTILE | {"PIP_CONFIG_FILE": str(evil / "pip.conf"), "PYTHONPATH": str(evil)},
            shim, marker)


def test_the_gitlab_template_installs_and_runs_with_no_variable_steering_it(
        work: Path, tmp_path: Path) -> None:
    variables, shim, marker = hostile(tmp_path)
    job = GITLAB[".specgate"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECGATE_")}
    env |= job["variables"] | {"CI_PIPELINE_ID": "815", "CI_JOB_TOKEN": "TOKEN"} | variables
    env["PATH"] = f"{shim}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}" \
                  f"{os.environ['PATH']}"
    env["SPECGATE_SPECS"] = "specs/example"
    script = "\n".join(interpolated(c) for c in job["script"])  # the install line too
    done = subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (shim / "argv").read_text().splitlines() == [
        "-m", "pip", "install", "--quiet",
        f"git+https://gitlab-ci-token:TOKEN@gitlab.example/acme/specgate.git@{PINNED}"]
    seen = dict(line.split("=", 1) for line in (shim / "env").read_text().splitlines()
                if "=" in line and not line.startswith((" ", "\t")))
    assert seen["PIP_CONFIG_FILE"] == "/dev/null"  # no pip.conf is read, not even the site's
    assert not [k for k in seen if k.startswith(("PIP_", "GIT_", "PYTHON"))
                and k != "PIP_CONFIG_FILE"]
    assert (work / "gate-out" / "scorecard.json").is_file()  # engine ran, and
    assert not marker.exists()  # without the variable's module path


def test_the_action_installs_and_runs_with_no_variable_steering_it(work: Path,
                                                                  tmp_path: Path) -> None:
    variables, shim, marker = hostile(tmp_path)
    path = f"{shim}{os.pathsep}{os.environ['PATH']}"
    code, _, _ = run_step("Install specgate", work, {"install": str(work)},
                          variables | {"PATH": path})
    assert code == 0
    assert (shim / "argv").read_text().splitlines() == [
        "-m", "pip", "install", "--quiet", "--", str(work)]
    seen = dict(line.split("=", 1) for line in (shim / "env").read_text().splitlines()
                if "=" in line and not line.startswith((" ", "\t")))
    assert seen["PIP_CONFIG_FILE"] == "/dev/null"
    assert not [k for k in seen if k.startswith(("PIP_", "GIT_", "PYTHON"))
                and k != "PIP_CONFIG_FILE"]
    code, outputs, _ = run_step("Gate", work, {"specs": "specs/example"}, variables)
    assert outputs["exit-code"] == "0" and not marker.exists()


def test_a_long_comment_is_cut_in_the_summary_never_in_the_diff(work: Path,
                                                                 tmp_path: Path) -> None:
    """A comment holds 65,536 characters: past 60,000 it is cut, at its end, which is the
    run's summary; the spec changes and engine diff come first, and the job summary holds
    them whole."""
    base = pull_request(work)
    code, outputs, _ = run_step("Gate", work, {"specs": "specs/example"}, {})
    assert outputs["exit-code"] == "0"
    with (work / "gate-out" / "scorecard.md").open("a") as card:  # a summary of 70,000
        card.write("| a row of a long summary |\n" * 2500)
    gh = fake_gh(tmp_path / "gh", "")
    event = {"SPECGATE_SIGNED": "false", "SPECGATE_EXIT": "0", "SPECGATE_BASE": base,
             "SPECGATE_PULL": "12", "SPECGATE_REPOSITORY": "acme/agent", "GH_TOKEN": "t",
             "PATH": f"{gh}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
                     f"{os.environ['PATH']}"}
    code, _, summary = run_step("Comment on the pull request", work,
                                {"specs": "specs/example", "comment": "true"}, event)
    assert code == 0
    body = (gh / "body").read_text()
    assert 60000 < len(body) < 65536
    diff = f"    $ engine diff --base {base} -- specs/example/evaluation.yaml\n"
    assert diff in body
    assert body.index(diff) < body.index("## evaluation support-agent v1.0.0")
    assert body.endswith("\n\n(cut at 60,000 characters: the job summary of "
                         "https://github.com/acme/agent/actions/runs/4711 holds the spec "
                         "changes, engine diff and the run summary whole, and each "
                         "evaluation's scorecard.md)\n")
    assert f"## Spec changes against the base ({base})" in summary  # the job summary's
    assert diff in summary
    assert summary.count("### What the policy change moves") == 1
