"""What a newcomer tripped on (issue 28), each checked through the CLI."""

from __future__ import annotations

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
