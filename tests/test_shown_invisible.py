"""Characters that print as nothing are escaped in what the CLI prints (hostile review of
issue 38): a zero-width space put inside the card pattern of a policy made the detector a
no-op while `engine diff` printed the two patterns alike."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.cli import main
from engine.cli.common import shown

ROOT = Path(__file__).resolve().parent.parent
INVISIBLE = ["\u00ad", "\u034f", "\u180e", "\u200b", "\u200c", "\u200d", "\u2060",
             "\u2063", "\ufeff"]


@pytest.mark.parametrize("char", INVISIBLE, ids=lambda c: f"U+{ord(c):04X}")
def test_a_character_that_prints_as_nothing_is_shown_escaped(char: str) -> None:
    escaped = f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    assert shown(f"sys{char}tem") == f"sys{escaped}tem"


def test_engine_diff_shows_a_zero_width_space_put_in_a_pattern(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = tmp_path / "example"
    shutil.copytree(ROOT / "specs" / "example", new)
    old = tmp_path / "old-policy.yaml"
    shutil.copy(new / "policy.yaml", old)
    text = (new / "policy.yaml").read_text()
    assert "system prompt" in text
    (new / "policy.yaml").write_text(text.replace("system prompt", "sys\u200btem prompt"))
    assert main(["diff", str(old), str(new / "policy.yaml"), "--evaluation", str(new)]) == 0
    out = capsys.readouterr().out
    assert "sys\\u200btem prompt" in out, out
    assert "\u200b" not in out
