"""Parity with Assevra 0.6 without the network: its answers recorded once (issue 16.6).

tests/data/parity/ holds four datasets and, for each, the part of Assevra 0.6.0.post1's
scorecard that parity compares, recorded by ``python -m bench.parity_goldens`` (how, when
and with which command: tests/data/parity/MADE.json). Each run here puts specgate on the
same file and applies the live parity run's rules (``bench.parity.compare``: decision,
included dimensions, counts, rates, Wilson bounds recomputed at z = 1.96 from Assevra's
counts, pass^k, consistency, flaky cases, every row's status). The live run against a
fresh install stays opt-in (``-m parity``, tests/test_parity.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import parity

GOLDENS = Path(__file__).parent / "data" / "parity"
MADE = json.loads((GOLDENS / "MADE.json").read_text())
# What the protocol's reference pair is for (agent-release-gate §16): the "before" agent
# leaks and fails, the "after" agent passes; the generated sets plant failures on purpose.
EXPECTED = {"reference-before": "FAIL", "reference-after": "PASS", "generated-full": "FAIL",
            "generated-compact": "FAIL"}


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return parity.specgate_spec(tmp_path_factory.mktemp("parity"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_specgate_gives_what_assevra_gave(name: str, spec: Path, tmp_path: Path) -> None:
    theirs = json.loads((GOLDENS / name / "assevra.json").read_text())
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_bytes((GOLDENS / name / "dataset.jsonl").read_bytes())
    ours, statuses = parity.run_specgate(spec, dataset, tmp_path / "out")
    assert theirs["decision"] == MADE["decisions"][name] == EXPECTED[name]
    assert ours["decision"] == EXPECTED[name]
    assert parity.compare(theirs, ours, statuses) == []
    assert len(statuses) >= sum(d["sample_size"] for d in theirs["dimensions"])


def test_the_goldens_say_how_they_were_made() -> None:
    assert MADE["assevra"] == parity.ASSEVRA and MADE["by"] == "python -m bench.parity_goldens"
    for name in EXPECTED:
        rows = (GOLDENS / name / "dataset.jsonl").read_text().splitlines()
        theirs = json.loads((GOLDENS / name / "assevra.json").read_text())
        listed = sum(len(d["rows"]) for d in theirs["dimensions"])
        assert rows and listed, name  # the recorded answer lists rows to compare
