"""Parity with the real Assevra 0.6 package (agent-release-gate §16), on the same files.

Selected with ``-m parity``; it installs assevra==0.6.0.post1 into a throwaway virtual
environment, so it needs the package registry.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import parity


@pytest.mark.parity
def test_specgate_matches_assevra_except_where_the_protocol_says(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[
                                                                     str]) -> None:
    report = parity.main(tmp_path)
    printed = capsys.readouterr().out
    assert set(report) == set(parity.fixtures()) >= {
        "reference-before", "reference-after", "generated-full", "generated-compact", "paired",
        "judged", "pii-divergent", "refusal-divergent", "rejected"}
    assert report == {name: [] for name in report}, printed
    assert "reference-before: 36 rows, assevra FAIL, specgate FAIL" in printed
    assert "reference-after: 36 rows, assevra PASS, specgate PASS" in printed
    assert "refusal-divergent: 40 rows, assevra FAIL, specgate PASS" in printed
    assert "rejected: 45 rows, assevra NONE, specgate INCOMPLETE" in printed
