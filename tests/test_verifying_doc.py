"""docs/verifying.md as an auditor follows it, and ``engine verify FOLDER``.

The doc's shell blocks run verbatim, in order, as one auditor's shell session in a copy of
the checkout's ``specs/``: the first goes into ``scratch/verifying/`` (a copy of the specs),
writes keys and runs ``engine run specs/ --out out/ --key ...``, the others verify what it
wrote there, OpenSSL being the verifier independent of the engine. A block is skipped
only when the line above its fence says ``<!-- doc-test: not run: REASON -->`` (the
marker tests/test_docs.py reads too).
"""

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

from engine.cli import main

from .conftest import ROOT, SHIPPED, Spec

DOC = ROOT / "docs" / "verifying.md"
FENCE = re.compile(r"(?:<!-- doc-test: not run: (?P<why>[^>]*) -->\n)?"
                   r"```(?P<lang>\w*)\n(?P<body>.*?)```", re.S)
SIGNATURE_FILES = {"scorecard.json.sig", "scorecard.intoto.jsonl", "signer.pub.pem"}
EVALUATIONS = tuple(sorted(SHIPPED))  # as engine verify lists a folder: by path


def blocks() -> list[tuple[str, str, str]]:
    """(language, body, reason not run or '') of every fenced sh/python block, in order."""
    return [(m["lang"], m["body"], m["why"] or "") for m in FENCE.finditer(DOC.read_text())
            if m["lang"] in ("sh", "python")]


def openssl() -> None:
    """OpenSSL is the independent verifier: skip without it, unless CI requires the tools."""
    if shutil.which("openssl") is None:
        if os.environ.get("SPECGATE_REQUIRE_TOOLS") == "1":
            pytest.fail("openssl is not installed and SPECGATE_REQUIRE_TOOLS=1")
        pytest.skip("openssl is not installed")


class Reader:
    """An auditor's shell session: each block starts in the folder the last one ended in
    (the page's first block goes into scratch/verifying/, a copy of the specs)."""

    def __init__(self, root: Path) -> None:
        self.root, self.cwd, self.ended = root, root, root.parent / f"{root.name}.ended"
        shutil.copytree(ROOT / "specs", root / "specs")

    def __call__(self, lang: str, body: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ,
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        command = ["bash", "-euo", "pipefail", "-c",
                   f"trap 'pwd > {self.ended}' EXIT\n{body}"] if lang == "sh" else \
            [sys.executable, "-c", body]
        done = subprocess.run(command, cwd=self.cwd, env=env, capture_output=True, text=True)
        if lang == "sh":
            self.cwd = Path(self.ended.read_text().strip())
        return done


def test_every_command_of_the_doc_runs_verbatim(tmp_path: Path) -> None:
    openssl()
    execute = Reader(tmp_path / "checkout")
    found = blocks()
    skipped = [(body, why) for _, body, why in found if why]
    assert [why for _, why in skipped] == ["installs from the network"]
    assert "securesystemslib[crypto]" in skipped[0][0]
    outputs = []
    for lang, body, why in found:
        if not why:
            done = execute(lang, body)
            assert done.returncode == 0, f"{body}\n{done.stdout}{done.stderr}"
            outputs.append(done.stdout)
    assert "engine run specs/ --out out/ --key" in found[0][1]
    engine, deploy, raw, dsse, subjects, library = outputs
    assert "deploy/scorecard.json: VALID: sha256 " in deploy
    assert "candidate: ghcr.io/acme/support-agent@sha256:" in deploy
    for name in EVALUATIONS:
        assert f"out/{name}/scorecard.json: VALID: sha256 " in engine
    n = len(EVALUATIONS)
    assert f"{n} scorecard(s) under out: {n} valid" in engine
    assert raw.strip() == dsse.strip() == "Signature Verified Successfully"
    # every file beside the scorecard but the signature files is a subject, and OK
    assert execute.cwd == tmp_path / "checkout" / "scratch" / "verifying"
    assert sorted(p.name for p in (tmp_path / "checkout").iterdir()) == ["scratch", "specs"]
    folder = execute.cwd / "out" / "support-agent"
    files = sorted(p.name for p in folder.iterdir())
    assert sorted(subjects.replace(": OK", "").split()) == \
        sorted(set(files) - SIGNATURE_FILES)
    assert library.strip() == "PASS"


def test_the_doc_s_openssl_commands_catch_tampering(tmp_path: Path) -> None:
    openssl()
    execute = Reader(tmp_path / "checkout")
    engine, _, raw, dsse, subjects = [b for lang, b, why in blocks() if lang == "sh" and not why]
    for body in (engine, raw, dsse, subjects):
        assert execute("sh", body).returncode == 0
    folder = execute.cwd / "out" / "support-agent"
    html = folder / "scorecard.html"
    html.write_bytes(html.read_bytes().replace(b"PASS", b"FAIL", 1))
    done = execute("sh", subjects)
    assert done.returncode != 0 and "scorecard.html: FAILED" in done.stdout, done.stdout
    (folder / "scorecard.json").write_bytes((folder / "scorecard.json").read_bytes() + b" ")
    done = execute("sh", raw)
    assert done.returncode != 0 and "Verification Failure" in done.stdout + done.stderr


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(out, public key) of one signed run of the shipped specs/."""
    root = tmp_path_factory.mktemp("signed")
    assert main(["keygen", "--out-dir", str(root / "keys")]) == 0
    assert main(["run", str(ROOT / "specs"), "--out", str(root / "out"), "--no-judge-cache",
                 "--key", str(root / "keys" / "private.pem")]) == 0
    return root / "out", root / "keys" / "public.pem"


def run_of(out: Path) -> str:
    """The run id a run's summary.json states."""
    return str(json.loads((out / "summary.json").read_bytes())["run_id"])


def verify(capsys: Any, *args: Path | str) -> tuple[int, list[str], str]:
    capsys.readouterr()
    code = main(["verify", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err


def test_a_folder_names_the_one_tampered_scorecard(tmp_path: Path, signed: tuple[Path, Path],
                                                   capsys: Any) -> None:
    out = tmp_path / "out"
    shutil.copytree(signed[0], out)
    report = out / "finding-quality-discovery" / "report.md"
    report.write_text(report.read_text() + "\nall good\n")
    code, lines, _ = verify(capsys, out, "--trusted-key", signed[1])
    assert code == 1
    bad = f"{out}/finding-quality-discovery/scorecard.json"

    def line(name: str) -> str:
        [found] = [x for x in lines if x.startswith(f"{out}/{name}/scorecard.json: ")]
        return found

    assert line("finding-quality-discovery").startswith(
        f"{bad}: INVALID DIGEST_MISMATCH: report.md changed after signing")
    for name in EVALUATIONS:
        if name != "finding-quality-discovery":
            assert line(name).startswith(f"{out}/{name}/scorecard.json: VALID: sha256 ")
    n = len(EVALUATIONS)
    assert lines[-1] == f"{n} scorecard(s) under {out}: {n - 1} valid, 1 INVALID: {bad}; " \
        f"run {run_of(out)}"


def test_a_folder_is_searched_at_any_depth(tmp_path: Path, signed: tuple[Path, Path],
                                           capsys: Any) -> None:
    out = tmp_path / "out"  # an evaluation's folder moved into an archive, deeper down
    shutil.copytree(signed[0], out)
    shutil.move(out / "support-agent", out / "archive" / "2024" / "support-agent")
    code, lines, _ = verify(capsys, out, "--trusted-key", signed[1])
    # found, and named: the run sealed it at support-agent/, not here
    nested = f"{out}/archive/2024/support-agent/scorecard.json: INVALID RUN_MISMATCH: " \
        "archive/2024/support-agent/scorecard.json is not the scorecard run"
    assert code == 1 and any(line.startswith(nested) for line in lines), lines
    assert f"{out}/support-agent/scorecard.json: INVALID MISSING_EVALUATION: run " in \
        "\n".join(lines)
    # a copy of it put back is the same scorecard twice: one of them is not the run's
    shutil.copytree(out / "archive" / "2024" / "support-agent", out / "support-agent")
    code, lines, _ = verify(capsys, out, "--trusted-key", signed[1])
    assert code == 1 and any("DUPLICATE_SCORECARD" in line for line in lines), lines
    # one evaluation's own --out, archived deeper, still verifies on its own
    alone = tmp_path / "alone"
    shutil.copytree(signed[0] / "support-agent", alone / "2024" / "support-agent")
    code, lines, _ = verify(capsys, alone, "--trusted-key", signed[1])
    assert code == 1 and "RUN_MISMATCH" not in "\n".join(lines)  # it names a run of six
    assert "MISSING_EVALUATION: run " in "\n".join(lines)


def test_a_folder_without_a_pinned_key_is_not_valid(signed: tuple[Path, Path],
                                                    capsys: Any) -> None:
    code, lines, _ = verify(capsys, signed[0])
    assert code == 1
    n = len(EVALUATIONS)
    assert sum("INTEGRITY OK, AUTHORSHIP UNVERIFIED" in line for line in lines) == n + 1
    assert lines[-1] == f"{n} scorecard(s) under {signed[0]}: 0 valid, {n} integrity only " \
        f"(no --trusted-key); run {run_of(signed[0])}"


def test_one_scorecard_reads_as_before(signed: tuple[Path, Path], capsys: Any) -> None:
    card = signed[0] / "support-agent" / "scorecard.json"
    code, lines, _ = verify(capsys, card, "--trusted-key", signed[1])
    assert code == 0 and len(lines) == 3
    assert lines[0].startswith("VALID: sha256 ")
    assert lines[1].startswith("signed files checked: scorecard.json, ")
    assert lines[2].startswith(f"run {run_of(signed[0])}, signed 20")


@pytest.mark.parametrize("content", [{}, {"summary.json": "{}", "sub/notes.txt": "x"}])
def test_a_folder_with_no_scorecard_is_a_usage_error(tmp_path: Path, capsys: Any,
                                                     content: dict[str, str]) -> None:
    for name, text in content.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    code, lines, err = verify(capsys, tmp_path)
    assert code == 2 and lines == []
    assert err.startswith(f"engine: NO_SCORECARD: {tmp_path}: no scorecard.json under")


@pytest.mark.skipif(os.geteuid() == 0, reason="root lists any folder")
def test_a_subfolder_that_cannot_be_listed_fails(tmp_path: Path, signed: tuple[Path, Path],
                                                 capsys: Any) -> None:
    out = tmp_path / "out"
    shutil.copytree(signed[0], out)
    hidden = out / "support-agent"
    hidden.chmod(0)
    try:
        code, lines, _ = verify(capsys, out, "--trusted-key", signed[1])
    finally:
        hidden.chmod(0o755)
    assert code == 1
    assert f"{hidden}: INVALID UNREADABLE: " in "\n".join(lines)


def _copy(out: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(out, copy, symlinks=True)
    return copy


def test_a_removed_swapped_or_linked_evaluation_is_caught(tmp_path: Path,
                                                          signed: tuple[Path, Path],
                                                          capsys: Any) -> None:
    out, public = signed
    expect = [x for name in EVALUATIONS for x in ("--expect", name)]
    base = ["verify", "--trusted-key", str(public)]
    assert main([*base, str(out), *expect]) == 0
    capsys.readouterr()
    removed = _copy(out, tmp_path / "a")  # a failing evaluation's folder deleted
    shutil.rmtree(removed / EVALUATIONS[1])
    assert main([*base, str(removed)]) == 1  # without --expect: the run's seal names it
    assert f"MISSING_EVALUATION: run {run_of(out)} sealed {EVALUATIONS[1]}/scorecard.json" \
        in capsys.readouterr().out
    assert main([*base, str(removed), *expect]) == 1
    assert f"MISSING_EVALUATION: no verified scorecard of '{EVALUATIONS[1]}'" in \
        capsys.readouterr().out
    swapped = _copy(out, tmp_path / "b")  # another evaluation's evidence in its place
    shutil.rmtree(swapped / EVALUATIONS[1])
    shutil.copytree(out / EVALUATIONS[2], swapped / EVALUATIONS[1])
    assert main([*base, str(swapped)]) == 1
    printed = capsys.readouterr().out
    assert "WRONG_FOLDER" in printed and "DUPLICATE_SCORECARD" in printed
    linked = _copy(out, tmp_path / "c")  # a symlink to evidence elsewhere
    shutil.rmtree(linked / EVALUATIONS[1])
    (linked / EVALUATIONS[1]).symlink_to(out / EVALUATIONS[1], target_is_directory=True)
    assert main([*base, str(linked), *expect]) == 1
    printed = capsys.readouterr().out
    assert "SYMLINK" in printed and "MISSING_EVALUATION" in printed
    assert main([*base, str(out), "--expect", "nobody", *expect]) == 1
    assert "MISSING_EVALUATION: no verified scorecard of 'nobody'" in capsys.readouterr().out
    assert main([*base, str(out), "--expect", EVALUATIONS[0]]) == 1
    assert "UNEXPECTED_EVALUATION" in capsys.readouterr().out


# ------------------------------------------------ one run, sealed whole (issue 26)

def test_an_edited_summary_is_caught(tmp_path: Path, signed: tuple[Path, Path],
                                     capsys: Any) -> None:
    out = _copy(signed[0], tmp_path)
    md = out / "summary.md"
    md.write_text(md.read_text().replace("**PASS**", "**PASS** (reviewed)"))
    code, lines, _ = verify(capsys, out, "--trusted-key", signed[1])
    assert code == 1
    assert f"{out}/summary.json: INVALID DIGEST_MISMATCH: summary.md changed after " \
        "signing" in "\n".join(lines)
    out = _copy(signed[0], tmp_path / "again")
    data = json.loads((out / "summary.json").read_bytes())
    data["exit_code"] = 1  # any edit: here one evaluation's line made to read FAIL
    data["evaluations"][0]["decision"] = "FAIL"
    (out / "summary.json").write_text(json.dumps(data, separators=(",", ":"), sort_keys=True))
    code, lines, _ = verify(capsys, out, "--trusted-key", signed[1])
    said = "\n".join(lines)
    assert code == 1 and f"{out}/summary.json: INVALID " in said
    assert "DIGEST_MISMATCH" in said or "BAD_SIGNATURE" in said


def test_files_beside_a_sealed_run_that_no_signature_covers_are_said(
        tmp_path: Path, signed: tuple[Path, Path], capsys: Any) -> None:
    # hostile review: a forged "all PASS" summary at the top of a verified run went unsaid
    out = _copy(signed[0], tmp_path)
    (out / "summary.txt").write_text("all PASS")
    (out / "notes").mkdir()
    (out / "summary.md").unlink()
    code, lines, _ = verify(capsys, out, "--trusted-key", signed[1])
    assert code == 0  # not evidence, so not a failure: but said, like files beside a card
    assert "  not present (not checked): summary.md" in lines
    assert "  NOT COVERED by the signature, do not rely on: notes/, summary.txt" in lines


def test_the_run_id_and_a_time_are_checked_on_one_scorecard(signed: tuple[Path, Path],
                                                            capsys: Any) -> None:
    card = signed[0] / "support-agent" / "scorecard.json"
    run = run_of(signed[0])
    code, lines, _ = verify(capsys, card, "--trusted-key", signed[1], "--run-id", run,
                            "--not-before", "2026-01-01")
    assert code == 0, lines
    code, lines, _ = verify(capsys, card, "--trusted-key", signed[1], "--run-id", "other")
    assert code == 1 and lines == [f"INVALID RUN_MISMATCH: the scorecard belongs to run {run}"
                                   ", not --run-id other"]
    code, lines, _ = verify(capsys, card, "--trusted-key", signed[1], "--not-before",
                            "2999-01-01T00:00Z")
    assert code == 1 and lines[0].startswith("INVALID STALE: the scorecard was signed 20")
    assert lines[0].endswith("before --not-before 2999-01-01T00:00:00Z")


@pytest.mark.parametrize(("option", "value", "code"), [
    ("--run-id", "a b", "BAD_RUN_ID"), ("--run-id", "x" * 129, "BAD_RUN_ID"),
    ("--run-id", "", "BAD_RUN_ID"), ("--not-before", "2026-02-30", "BAD_DATE"),
    ("--not-before", "yesterday", "BAD_DATE"), ("--not-before", "2026-01-01T10:00", "BAD_DATE"),
])
def test_a_bad_run_id_or_time_is_a_usage_error(signed: tuple[Path, Path], capsys: Any,
                                               option: str, value: str, code: str) -> None:
    done, lines, err = verify(capsys, signed[0], "--trusted-key", signed[1], option, value)
    assert done == 2 and lines == [] and f"engine: {code}: {option}" in err
    if option == "--run-id":
        capsys.readouterr()
        assert main(["run", str(ROOT / "specs" / "example"), "--run-id", value]) == 2
        assert f"engine: {code}: --run-id" in capsys.readouterr().err


def test_scorecards_naming_no_run_do_not_vouch_for_each_other(
        tmp_path: Path, signed: tuple[Path, Path], capsys: Any) -> None:
    # evidence written before runs were sealed: each scorecard proves itself, not that it
    # belongs with the others
    from engine.evidence import signing
    from engine.run.execute import RunOptions, execute
    from engine.spec import evaluation as spec
    key = signing.load_private(signed[1].parent / "private.pem")
    out = tmp_path / "old"
    for evaluation in spec.load([ROOT / "specs" / "example", ROOT / "specs" / "inspect-example"]):
        evaluation.as_of = evaluation.as_of_requested = "2026-11-30"
        execute(evaluation, out / evaluation.name, RunOptions(key=key))
    code, lines, _ = verify(capsys, out, "--trusted-key", signed[1])
    assert code == 1
    assert sum("INVALID RUN_UNBOUND: the scorecard of " in line for line in lines) == 2
    alone = out / "support-agent" / "scorecard.json"
    code, lines, _ = verify(capsys, alone, "--trusted-key", signed[1])
    assert code == 0 and "run (none named: signed before runs were sealed)" in lines[2]


def test_an_envelope_nested_deep_is_invalid_not_a_crash(tmp_path: Path,
                                                        signed: tuple[Path, Path],
                                                        spec: Spec, capsys: Any) -> None:
    # hostile review (issue 26): the payload was parsed before its signature was checked,
    # so a payload nested 200,000 deep was INTERNAL_ERROR: RecursionError for verify (and
    # for --baseline and --judge-replay)
    import base64
    out = _copy(signed[0], tmp_path)
    envelope_file = out / "support-agent" / "scorecard.intoto.jsonl"
    envelope = json.loads(envelope_file.read_text())
    envelope["payload"] = base64.b64encode(b"[" * 200000).decode()
    envelope_file.write_text(json.dumps(envelope) + "\n")
    code, lines, err = verify(capsys, out, "--trusted-key", signed[1])
    assert code == 1 and "INTERNAL_ERROR" not in err and "Traceback" not in err
    assert f"{out}/support-agent/scorecard.json: INVALID BAD_SIGNATURE" in "\n".join(lines)
    spec.trust(signed[1])  # the baseline is read and checked against the Evaluation's key
    capsys.readouterr()
    code, again = spec.run("--baseline", str(out / "support-agent" / "scorecard.json"))
    err = capsys.readouterr().err
    assert code == 0 and "INTERNAL_ERROR" not in err and "Traceback" not in err, err
    comparison = json.loads((again / "scorecard.json").read_bytes())["comparison"]
    assert comparison["status"] == "untrusted"
    assert comparison["reasons"][0].startswith("BAD_SIGNATURE: ")


def test_separate_runs_under_one_id_are_not_one_run(tmp_path: Path,
                                                    signed: tuple[Path, Path],
                                                    capsys: Any) -> None:
    # second hostile review: two single-evaluation runs given the same --run-id, put side
    # by side, verified as "one whole run" (evaluation-by-evaluation picking)
    key = signed[1].parent / "private.pem"
    folder = tmp_path / "assembled"
    for name in ("example", "inspect-example"):
        assert main(["run", str(ROOT / "specs" / name), "--key", str(key), "--run-id",
                     "ci.200", "--out", str(tmp_path / name)]) == 0
        card = json.loads((tmp_path / name / "scorecard.json").read_bytes())
        shutil.copytree(tmp_path / name, folder / card["evaluation"]["name"])
    capsys.readouterr()
    code, lines, _ = verify(capsys, folder, "--trusted-key", signed[1], "--run-id", "ci.200")
    assert code == 1
    assert sum("INVALID RUN_MISMATCH" in line and "separate runs under one id" in line
               for line in lines) == 2
    # --expect given with one scorecard: it must be exactly that evaluation
    one = folder / "support-agent" / "scorecard.json"
    code, lines, _ = verify(capsys, one, "--trusted-key", signed[1], "--expect",
                            "agent-release-gate")
    assert code == 1 and lines[0].startswith("INVALID UNEXPECTED_EVALUATION")
    code, lines, _ = verify(capsys, one, "--trusted-key", signed[1], "--expect",
                            "support-agent", "--expect", "inspect-arithmetic")
    assert code == 1 and lines[0].startswith("INVALID MISSING_EVALUATION")
    code, lines, _ = verify(capsys, one, "--trusted-key", signed[1], "--expect",
                            "support-agent")
    assert code == 0, lines


def test_a_name_with_a_final_newline_is_a_spec_error(tmp_path: Path, capsys: Any) -> None:
    # second hostile review: "gate2\n" passed ^[a-z][a-z0-9_-]*$ (Python's $ matches before
    # a final newline), looked like gate2, and named a folder its own seal could not name
    shutil.copytree(ROOT / "specs" / "example", tmp_path / "example")
    path = tmp_path / "example" / "evaluation.yaml"
    path.write_text(path.read_text().replace("name: support-agent", 'name: "support-agent\\n"',
                                             1))
    assert main(["validate", str(tmp_path / "example")]) == 2
    err = capsys.readouterr().err
    assert "BAD_VALUE: metadata.name: 'support-agent\\n' is not a valid name" in err, err
