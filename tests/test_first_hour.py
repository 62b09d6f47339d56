"""What a newcomer tripped on (issue 28), each checked through the CLI."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from engine.cli import main

from .conftest import ROOT


def test_verify_on_a_path_that_does_not_exist_is_a_usage_error(tmp_path: Path,
                                                                 capsys: Any) -> None:
    assert main(["verify", str(tmp_path / "no-such-folder")]) == 2
    assert "INPUT_NOT_FOUND" in capsys.readouterr().err
    assert main(["verify", str(tmp_path / "gate-out" / "scorecard.json")]) == 2


def test_two_evaluations_of_one_name_are_named_by_their_files(tmp_path: Path,
                                                              capsys: Any) -> None:
    shutil.copytree(ROOT / "specs" / "example", tmp_path / "a")
    shutil.copytree(ROOT / "specs" / "example", tmp_path / "b")
    assert main(["run", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "DUPLICATE_NAME" in err
    assert "a/evaluation.yaml" in err and "b/evaluation.yaml" in err


def test_the_license_is_the_apache_text_the_metadata_declares() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert 'license = {text = "Apache-2.0"}' in (ROOT / "pyproject.toml").read_text()
    assert "## Unreleased" in (ROOT / "CHANGELOG.md").read_text()


def test_an_unsigned_report_says_it_is_unsigned_and_a_signed_one_is_covered(
        tmp_path: Path) -> None:
    assert main(["keygen", "--out-dir", str(tmp_path / "keys")]) == 0
    example = ROOT / "specs" / "example"
    assert main(["run", str(example), "--out", str(tmp_path / "plain")]) == 0
    assert main(["run", str(example), "--out", str(tmp_path / "signed"), "--key",
                 str(tmp_path / "keys" / "private.pem")]) == 0
    for name in ("scorecard.md", "scorecard.html"):
        plain = (tmp_path / "plain" / name).read_text()
        signed = (tmp_path / "signed" / name).read_text()
        assert "covered by its signature" not in plain and "Unsigned." in plain, name
        assert "no signature covers" in plain, name
        assert "Unsigned." not in signed and "engine verify scorecard.json" in signed, name


def test_an_audit_budget_of_zero_is_refused_not_the_default(tmp_path: Path,
                                                            capsys: Any) -> None:
    folder = tmp_path / "discovery"
    shutil.copytree(ROOT / "specs" / "finding-quality-discovery", folder)
    for budget in ("0", "-3"):
        code = main(["review", str(folder), "--reviews-dir", str(tmp_path / "reviews"),
                     "--judge-base-url", "http://127.0.0.1:9/v1", "--judge-model", "m",
                     "--audit-documents", budget])
        assert code == 2, budget
        assert "--audit-documents wants a positive number" in capsys.readouterr().err
    assert not (tmp_path / "reviews").exists()  # refused before anything is written


def test_every_argument_of_every_command_says_what_it_is() -> None:
    import argparse

    from engine.cli import parser as build

    parser = build()
    assert parser.epilog and "2 spec or usage error" in parser.epilog
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    bare = [(name, a.dest) for name, command in sub.choices.items()
            for a in command._actions
            if a.help is None and not isinstance(a, argparse._HelpAction)]
    assert bare == []


def test_incomplete_that_already_fails_says_so(spec: Any, capsys: Any) -> None:
    """Three threshold misses and one missing run: the decision is INCOMPLETE (exit 3),
    and the terminal and summary.md say what already fails, so no CI retries a failure."""
    from engine.reports.summary import summary_markdown

    runs = spec.runs()
    for run in runs[:6]:
        run["output"]["actions"] = []  # resolution 0.854 < 0.9 (tests/test_trust.py)
    spec.write_runs(runs[:-1])  # the last case is one run short: INCOMPLETE
    capsys.readouterr()
    code, out = spec.run()
    said = capsys.readouterr().out
    card = spec.scorecard()
    assert code == 3 and card["decision"] == "INCOMPLETE"
    fails = [r["code"] for r in card["reasons"] if r["decision"] == "FAIL"]
    assert fails, card["reasons"]
    assert f"support-agent: INCOMPLETE, and failing: {fails[0]}" in said
    entry = {"evaluation": "support-agent", "decision": "INCOMPLETE", "exit_code": 3,
             "overall": None, "reasons": card["reasons"], "folder": "support-agent"}
    table = summary_markdown([entry], "r1", False).decode()
    assert f"| support-agent | **INCOMPLETE**, and failing: `{fails[0]}`" in table


def test_every_command_says_its_exit_codes_and_its_examples_parse() -> None:
    """engine CMD --help ends with what its exit codes mean and examples; each example is
    a command line the parser takes as that command (an option renamed breaks this)."""
    import argparse
    import shlex

    from engine.cli import parser as build

    parser = build()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name, command in sub.choices.items():
        shown = command.format_help()
        flat = " ".join(shown.split())
        assert "exit codes: 0 " in flat and "2 a spec or usage error" in flat, name
        examples = shown.split("examples:\n", 1)[1].splitlines() if "examples:" in shown \
            else []
        assert examples, f"engine {name} --help shows no example"
        for line in examples:
            argv = shlex.split(line)
            assert argv[:2] == ["engine", name], line
            assert parser.parse_args(argv[1:]).command == name
            # what it reads from the checkout is there (what it writes need not be)
            read = [a.rpartition("=")[2] for before, a in zip(argv, argv[1:], strict=False)
                    if before not in ("--out", "--out-dir") and name != "init"
                    and a.rpartition("=")[2].startswith(("specs/", "docs/"))]
            assert all((ROOT / path).exists() for path in read), line


def test_authoring_lists_every_file_engine_init_writes(tmp_path: Path, capsys: Any) -> None:
    # docs/authoring.md's sentence on `engine init`, against what it writes
    text = " ".join((ROOT / "docs" / "authoring.md").read_text().split())
    said = text.split("`engine init` writes ", 1)[1].split(", so", 1)[0]
    named = set(re.findall(r"`([^`]+\.(?:yaml|jsonl))`", said))
    assert main(["init", str(tmp_path / "bot"), "--name", "bot"]) == 0
    written = {p.relative_to(tmp_path / "bot").as_posix()
               for p in (tmp_path / "bot").rglob("*") if p.is_file()}
    assert named == written
    assert said.startswith(f"{['no', 'one', 'two', 'three', 'four', 'five', 'six'][len(written)]}"
                           " files: ")
