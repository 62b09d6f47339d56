"""Caveats (issue 28, item 8): what the measurements cannot show is spec data, and every
report prints it: scorecard.md, scorecard.html, the discovery report.md, and summary.md
points at it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from engine.cli import main

from . import refund
from .conftest import ROOT, Gate, Spec

SUPPLIED = "These measurements hold for the cases in the suite and the runs captured for them"
CORRELATED = "Repeated trials of one case may be correlated"
SYMPTOMS = "they are symptoms to investigate, not root causes"
JUDGE_ERROR = "of each finding) carry evaluator error: the judge model can misread"
NOT_COMPARABLE = "These discovery scores are not comparable with historical narrow-task scores"


def test_the_release_gate_reports_print_the_policy_s_caveats(gate: Gate) -> None:
    _, card, out = gate.run(refund.rows(fixed=False))
    said = card["caveats"]
    assert len(said) == 3
    assert said[0].startswith(SUPPLIED) and said[1].startswith(CORRELATED) and SYMPTOMS in said[2]
    md = (out / "scorecard.md").read_text()
    section = md[md.index("### Caveats\n"):]
    section = section[:section.index("\n### ", 1)]
    assert section.count("\n- ") == 3 and SUPPLIED in section and SYMPTOMS in section
    page = (out / "scorecard.html").read_text().replace("&#39;", "'")
    listed = page[page.index('<h2 id="caveats">Caveats</h2>'):]
    listed = listed[:listed.index("</ul>")]
    assert listed.count("<li>") == 3 and CORRELATED in listed
    # the caveats file is presentation data: its digest is bound, beside the fix templates
    assert set(card["presentation_digests"]) >= {"caveats.yaml", "fixes.yaml"}


def test_rewording_a_caveat_leaves_the_policy_hash_alone(spec: Spec) -> None:
    _, out = spec.run(out="before")
    before = json.loads((out / "scorecard.json").read_bytes())
    (spec.dir / "caveats.yaml").write_text("- Only the supplied cases were measured.\n")
    _, out = spec.run(out="after")
    after = json.loads((out / "scorecard.json").read_bytes())
    assert after["caveats"] == ["Only the supplied cases were measured."]
    assert after["policy_sha256"] == before["policy_sha256"]
    assert after["presentation_digests"]["caveats.yaml"] != \
        before["presentation_digests"]["caveats.yaml"]
    assert "- Only the supplied cases were measured." in (out / "scorecard.md").read_text()


def test_a_policy_without_caveats_writes_none(spec: Spec) -> None:
    spec.edit("policy.yaml", lambda d: d["spec"].pop("caveats"))
    _, out = spec.run()
    card = json.loads((out / "scorecard.json").read_bytes())
    assert "caveats" not in card
    assert "Caveats" not in (out / "scorecard.md").read_text()
    assert 'id="caveats"' not in (out / "scorecard.html").read_text()


def test_a_caveats_file_that_is_not_a_list_of_sentences_is_a_spec_error(
        spec: Spec, capsys: object) -> None:
    (spec.dir / "caveats.yaml").write_text("- one\n- ''\n")
    code, _ = spec.run()
    assert code == 2
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert "BAD_DATA_FILE" in err and "caveat 2 is not a sentence" in err


def test_the_run_summary_points_at_the_caveats(spec: Spec) -> None:
    shutil.copytree(spec.dir, spec.root / "second")  # two evaluations: a run summary
    spec.edit("evaluation.yaml", lambda d: d["metadata"].update(name="support-agent-two"))
    spec.run()
    summary = (spec.root / "out" / "summary.md").read_text()
    assert "where its policy gives caveats (what the measurements cannot show), the " \
        "scorecard lists them" in summary


def test_the_discovery_reports_carry_judge_error_and_no_comparison_with_narrow_tasks(
        tmp_path: Path) -> None:
    folder = tmp_path / "specs" / "finding-quality-discovery"
    shutil.copytree(ROOT / "specs" / "finding-quality-discovery", folder)
    assert main(["run", str(folder), "--out", str(tmp_path / "out")]) == 0
    report = (tmp_path / "out" / "report.md").read_text()
    # after the layout §11.4 fixes (title, digests, metrics, disclaimer, two tables)
    assert report.index("## by source") < report.index("## caveats\n")
    caveats = report[report.index("## caveats\n"):]
    assert JUDGE_ERROR in caveats and NOT_COMPARABLE in caveats
    md = (tmp_path / "out" / "scorecard.md").read_text()
    assert JUDGE_ERROR.replace("(", "\\(").replace(")", "\\)") in md
    assert NOT_COMPARABLE in md and SYMPTOMS in md
