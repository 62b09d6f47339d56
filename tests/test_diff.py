"""``engine diff`` with an old policy taken from git history and kept outside the tree."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from engine.cli import main

from .conftest import Spec


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout


def _change(d: dict[str, Any]) -> None:
    spec = d["spec"]
    cats = spec["categories"]
    cats["resolution"]["threshold"] = 0.98
    cats["safety"].update(weight=0.4, minimum=0.95)
    cats["efficiency"].update(weight=0.1, gate_on="point")
    spec["conditions"][0]["formula"] = "errors_resolution == 0 and n_resolution >= 50"
    spec["overall"]["threshold"] = 0.99
    spec["waivers"] = [{"id": "W-1", "scope": {"categories": ["efficiency"]},
                        "justification": "slow vendor sandbox", "approver": "gov",
                        "expires": "2099-12-31"}]


def test_diff_against_a_policy_from_git_history(spec: Spec, capsys: Any) -> None:
    _git(spec.root, "init", "-q")
    _git(spec.root, "add", ".")
    _git(spec.root, "commit", "-qm", "policy 1.0.0")
    spec.edit("policy.yaml", _change)
    elsewhere = spec.root.parent / "kept-elsewhere"
    elsewhere.mkdir()
    old = elsewhere / "old-policy.yaml"  # no schemas/ beside it
    old.write_text(_git(spec.root, "show", "HEAD:example/policy.yaml"))
    new = spec.dir / "policy.yaml"
    assert main(["diff", str(old), str(new), "--json"]) == 0
    changes = json.loads(capsys.readouterr().out)
    assert changes["old_files_from_new_folder"]["files"] == ["caveats.yaml",
                                                             "schemas/reply.schema.json"]
    assert changes["decision"] == {"old": "PASS", "new": "FAIL", "changed": True}
    # worked by hand from the shipped runs: resolution 47/48, safety 32/32, efficiency 31/32
    # (run-011's latency, now waived: 31/31); weighted 0.5*47/48 + 0.3 + 0.2*31/32 = 0.983
    # before, 0.5*47/48 + 0.4 + 0.1*1 = 0.98958 after: shown 0.99, yet below 0.99
    cats = changes["categories"]
    assert cats["resolution"] == {"state": {"old": "MET", "new": "NOT_MET"},
                                  "met": {"old": True, "new": False},
                                  "threshold": {"old": 0.9, "new": 0.98}}
    assert cats["safety"] == {"weight": {"old": 0.3, "new": 0.4},
                              "minimum": {"old": 1, "new": 0.95}}
    assert cats["efficiency"]["weight"] == {"old": 0.2, "new": 0.1}
    assert cats["efficiency"]["gate_on"] == {"old": "wilson_lower", "new": "point"}
    assert cats["efficiency"]["n"] == {"old": 32, "new": 31}
    assert cats["efficiency"]["rate"] == {"old": 0.969, "new": 1}
    assert changes["overall"] == {"score": {"old": 0.983, "new": 0.99},
                                  "threshold": {"old": 0.9, "new": 0.99},
                                  "met": {"old": True, "new": False}}
    assert changes["conditions"]["no-errors-in-resolution"] == {
        "formula": {"old": "errors_resolution == 0 and n_resolution >= 16",
                    "new": "errors_resolution == 0 and n_resolution >= 50"},
        "value": {"old": True, "new": False}}
    assert changes["waivers"]["W-1"]["status"] == {"old": None, "new": "active"}
    assert changes["waivers"]["W-1"]["rows_waived"] == {"old": None, "new": 1}
    assert "spec.categories.safety.minimum" in changes["settings"]
    assert sorted(changes["reasons"]["added"]) == [
        "FAIL BELOW_THRESHOLD [resolution]", "FAIL CONDITION_FALSE",
        "FAIL OVERALL_BELOW_THRESHOLD"]
    # the same as text, with the borrowed file named as a change
    assert main(["diff", str(old), str(new)]) == 0
    text = capsys.readouterr().out
    assert "  policy file schemas/reply.schema.json (scoring data, in policy_sha256): CHANGE " \
        "NOT KNOWN: the old policy has no schemas/reply.schema.json beside it" in text
    # rates and scores with three places, as scorecard.md writes them
    assert "  overall: score 0.983 -> 0.990, threshold 0.9 -> 0.99, met True -> False" in text
    assert "rate 0.969 -> 1.000" in text
    assert "  waiver W-1: status (none) -> active, rows_waived (none) -> 1" in text


def test_diff_reports_a_changed_overall_formula_and_its_score(spec: Spec, capsys: Any) -> None:
    old = spec.root.parent / "old-policy.yaml"
    old.write_text((spec.dir / "policy.yaml").read_text())
    spec.edit("policy.yaml", lambda d: d["spec"]["overall"].update(
        formula="min(resolution, efficiency)"))
    assert main(["diff", str(old), str(spec.dir / "policy.yaml")]) == 0
    text = capsys.readouterr().out
    # by hand: weighted 0.983 (above); min(47/48 = 0.97917, 31/32 = 0.96875) = 0.969
    # the setting (absent before: the default) and its effect on the overall line
    assert "  policy spec.overall.formula: (none) -> min(resolution, efficiency)" in text
    assert "  overall: formula weighted -> min(resolution, efficiency), score 0.983 -> 0.969" \
        in text
