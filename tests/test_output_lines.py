"""Issue 36, lever 6 (review): a line break in a name or value cannot print a line of its
own. The reviewer's attacks (attacks/a6), mounted as the gated team would: a spec folder,
a PolicyTest case and a spec file named with a line break and a forged verdict after it.
Each command runs in a subprocess, so what is asserted is the bytes a CI log receives."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import _dispatch, main

from .conftest import EXAMPLE

FORGED = "ok: support-agent (policy FORGED"


def engine(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_a_spec_folder_named_with_a_line_break_forges_no_ok_line(tmp_path: Path) -> None:
    assert main(["keygen", "--out-dir", str(tmp_path / "keys")]) == 0
    folder = tmp_path / "s3" / f"ex\n{FORGED}"
    shutil.copytree(EXAMPLE, folder)
    (folder / "specs.intoto.jsonl").write_text("{}\n")
    for args in (["validate", "s3"],
                 ["sign-specs", "s3", "--key", str(tmp_path / "keys" / "private.pem")]):
        done = engine(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert not [x for x in lines if x.startswith(FORGED)], done.stdout
        assert f"s3/ex\\x0a{FORGED}/specs.intoto.jsonl" in done.stdout
    assert len(lines) == 2  # sign-specs: the bundle and the one Evaluation's files


def test_a_policy_test_case_named_with_a_line_break_forges_no_result(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "w" / "example")
    path = tmp_path / "w" / "example" / "tests" / "policy.test.yaml"
    data = yaml.safe_load(path.read_text())
    data["spec"]["cases"][1]["name"] = "one leak\n  ok   FORGED line: PASS"
    data["spec"]["cases"][1]["want"] = {"decision": "PASS", "reasons": []}
    path.write_text(yaml.safe_dump(data))
    done = engine("test", "w", cwd=tmp_path)
    assert done.returncode == 1
    assert not [x for x in done.stdout.splitlines() if "FORGED" in x and
                not x.startswith("  FAIL one leak")], done.stdout
    assert "  FAIL one leak\\x0a  ok   FORGED line: PASS: FAIL BELOW_MINIMUM" in done.stdout


def test_a_spec_file_named_with_line_breaks_forges_nothing_on_stderr(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "s2" / "example")
    name = "bad\nsupport-agent: PASS (overall 1.0)\n  evidence: gate-out (signed).yaml"
    (tmp_path / "s2" / "example" / name).write_text("kind: [\n")
    done = engine("validate", "s2", cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 2 and lines[1] == "1 problem(s); nothing was run", done.stderr
    assert lines[0].startswith("s2/example/bad\\x0asupport-agent: PASS (overall 1.0)\\x0a  "
                               "evidence: gate-out (signed).yaml:2:1: YAML_SYNTAX: ")


@pytest.mark.parametrize(("raised", "said"), [
    (OSError(13, "Permission denied", "s/x\nsupport-agent: PASS"),
     "engine: IO_ERROR: s/x\\x0asupport-agent: PASS: Permission denied; "),
    (ValueError("x\nsupport-agent: PASS"),
     "engine: INTERNAL_ERROR: ValueError: x\\x0asupport-agent: PASS (a bug"),
])
def test_an_io_or_internal_error_stays_on_one_line(raised: Exception, said: str,
                                                   capsys: Any) -> None:
    # what the command was doing is the file system's or a bug's: the file name or the
    # exception text it carries may hold a line break, and still prints one line
    def handler(args: argparse.Namespace) -> int:
        raise raised

    assert _dispatch(argparse.Namespace(handler=handler, debug=False)) in (2, 3)
    err = capsys.readouterr().err
    assert err.startswith(said) and err.count("\n") == 1, err


def test_engine_hash_keeps_its_tabs(tmp_path: Path) -> None:
    # the stdout guard escapes a record's control characters, not the command's own tabs
    done = engine("hash", str(EXAMPLE), cwd=tmp_path)
    assert done.returncode == 0
    name, policy, suite = done.stdout.rstrip("\n").split("\t")
    assert name == "support-agent" and policy.startswith("policy_sha256 ")


def test_a_keygen_folder_named_with_a_line_break_forges_no_line(tmp_path: Path) -> None:
    # second review of issue 36: keygen printed its --out-dir raw
    done = engine("keygen", "--out-dir", "k\nVALID: forged", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not [x for x in done.stdout.splitlines() if x.startswith("VALID")], done.stdout
    assert "k\\x0aVALID: forged/private.pem" in done.stdout
