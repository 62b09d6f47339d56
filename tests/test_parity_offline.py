"""Parity with Assevra 0.6 without the network (agent-release-gate §16.1).

Each folder of tests/parity/agent-release-gate/ (where §16.1 puts them) is a fixture: a
dataset, Assevra's config, the equivalent Evaluation of the shipped policy, Assevra
0.6.0.post1's answer recorded once by ``python -m bench.parity_goldens`` (its commands in
the answer and in MADE.json) and, where the protocol lets specgate differ, specgate's
expected outcome worked out from §16.2. Here specgate runs the shipped policy as shipped on
every fixture and ``bench.parity.compare`` applies §16.1; the live run against a fresh
install stays opt-in (tests/test_parity.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import parity

GOLDENS = Path(__file__).parent / "parity" / "agent-release-gate"
MADE = json.loads((GOLDENS / "MADE.json").read_text())
ROOT = Path(__file__).parent.parent
# What each fixture is for. Assevra's answer, then specgate's: the reference pair (§16.2)
# fails before the fix and passes after it; the generated sets plant failures; the PII
# vectors fail in both (two real leaks, though not the same rows: D4); the refusal vectors
# are no refusals under refusal/v1, so specgate passes what Assevra fails (D5); the
# rejected dataset gets no scorecard from Assevra and INCOMPLETE from specgate (D11); the
# judged rows include a score of 4.0, no verdict (§11), so grounding is unresolved in both.
EXPECTED = {"reference-before": ("FAIL", "FAIL"), "reference-after": ("PASS", "PASS"),
            "generated-full": ("FAIL", "FAIL"), "generated-compact": ("FAIL", "FAIL"),
            "paired": ("FAIL", "FAIL"), "pii-divergent": ("FAIL", "FAIL"),
            "refusal-divergent": ("FAIL", "PASS"), "rejected": ("NONE", "INCOMPLETE"),
            "judged": ("INCOMPLETE", "INCOMPLETE")}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    work = tmp_path_factory.mktemp("parity")
    return {name: parity.run_fixture(work, name) for name in parity.fixtures()}


@pytest.fixture(scope="module")
def shipped_policy(tmp_path_factory: pytest.TempPathFactory) -> str:
    """policy_sha256 of the shipped spec run as it ships."""
    out = tmp_path_factory.mktemp("shipped") / "out"
    subprocess.run([sys.executable, "-m", "engine", "run", "specs/agent-release-gate", "--out",
                    str(out)], cwd=ROOT, capture_output=True)
    digest: str = json.loads((out / "scorecard.json").read_bytes())["policy_sha256"]
    return digest


def test_every_fixture_is_checked() -> None:
    assert parity.fixtures() == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_specgate_gives_what_assevra_gave(name: str, runs: dict[str, dict[str, Any]],
                                          shipped_policy: str) -> None:
    golden = parity.load(name)
    ours = runs[name]
    assert (golden["decision"], ours["card"]["decision"]) == EXPECTED[name]
    assert MADE["decisions"][name] == golden["decision"]
    assert ours["card"]["policy_sha256"] == shipped_policy  # the shipped policy, unedited
    assert parity.compare(golden, ours) == []


def test_the_goldens_say_how_they_were_made() -> None:
    assert MADE["assevra"] == parity.ASSEVRA and MADE["by"] == "python -m bench.parity_goldens"
    for name in EXPECTED:
        golden = json.loads((GOLDENS / name / "assevra.json").read_text())
        assert golden["commands"] == MADE["commands"][name]
        assert any(c.startswith("ENV/bin/assevra ") for c in golden["commands"])
        listed = golden.get("classes") or [r for d in golden["dimensions"] for r in d["rows"]]
        assert listed, name  # the recorded answer lists rows to compare


def test_the_rejected_dataset_gets_no_assevra_scorecard_and_every_class() -> None:
    golden = parity.load("rejected")
    assert golden["assevra_exit"] == 2 and not golden["wrote_scorecard"]  # D11
    rows = (GOLDENS / "rejected" / "dataset.jsonl").read_text().splitlines()
    assert sorted(golden["classes"], key=int) == [str(i) for i in range(1, len(rows) + 1)]
    # the added rows, by line (§1, §5): no id, unknown and missing dimension, no output;
    # no answer key and a model's unconfirmed one; an unknown match mode, a numeric case_id
    assert [golden["classes"][str(i)] for i in range(37, 46)] == [
        "INVALID", "INVALID", "INVALID", "INVALID", "UNLABELED", "UNLABELED", "INVALID",
        "INVALID", "LABELED"]


def test_the_paired_fixture_is_the_protocols_comparison(runs: dict[str, dict[str, Any]]) -> None:
    # §16.2: before against after; tool_call and action_correctness are now failing
    golden = parity.load("paired")["comparison"]
    assert golden == {"status": "comparable", "regressed": True, "dimensions": {
        "pii": "stable", "tool_call": "now failing", "action_correctness": "now failing"}}
    mcnemar = {n: c["mcnemar"] for n, c in runs["paired"]["card"]["comparison"]["categories"]
               .items()}
    assert (mcnemar["tool_call"]["b"], mcnemar["tool_call"]["c"]) == (3, 0)
    assert mcnemar["tool_call"]["p"] == 0.25 and mcnemar["action_correctness"]["p"] == 0.03125


@pytest.mark.parametrize("change, found", [
    (lambda g: g.update(missing_dimensions=["pii"]), "missing dimensions"),
    (lambda g: g["coverage"].update(input_rows=1), "coverage.input_rows"),
    (lambda g: g["dimensions"].reverse(), "included dimensions"),
    (lambda g: g["dimensions"][0]["ci_95"].__setitem__(0, 0.5), "wilson"),
])
def test_compare_sees_what_the_protocol_lists(change: Any, found: str,
                                              runs: dict[str, dict[str, Any]]) -> None:
    golden = parity.load("reference-before")
    change(golden)
    assert any(found in diff for diff in parity.compare(golden, runs["reference-before"]))


def test_both_engines_saw_the_same_judge_verdicts(runs: dict[str, dict[str, Any]]) -> None:
    from bench.parity_goldens import JUDGED

    golden = parity.load("judged")
    assert golden["judge_asked"] == sorted(marker for marker, _, _ in JUDGED)  # once each
    replayed = [json.loads(line) for line in
                (GOLDENS / "judged" / "replay" / "judgements.jsonl").read_text().splitlines()]
    assert sorted(j["response"] for j in replayed) == sorted(v for _, _, v in JUDGED)
    judge = runs["judged"]["card"]["judge"]
    assert (judge["provider"], judge["replayed"], judge["fresh"]) == ("replay", len(JUDGED), 0)
    # by hand: grounding 5, 4 pass, 2 fails, 4.0 is an ERROR; safety 2 of 3; injection 1 of 2
    statuses = runs["judged"]["statuses"]
    assert [statuses[f"judged-{i}"] for i in range(1, 10)] == [
        "PASS", "PASS", "FAIL", "ERROR", "PASS", "PASS", "FAIL", "PASS", "FAIL"]
