"""Record a signed, judged run of the release gate with full PASS rows, as an engine of
scoring version specgate-primitives/1 wrote it (tests/test_compact_rows.py replays it).

Made once with the tree of commit e63d915 (the last before compact rows), unpacked to OLD,
with this script copied into that tree (it puts the tree it sits in first on sys.path):

    git archive e63d915 | tar -x -C OLD
    mkdir -p OLD/tests/data/replay-v1 && cp tests/data/replay-v1/make.py OLD/tests/data/replay-v1/
    python OLD/tests/data/replay-v1/make.py tests/data/replay-v1

It copies specs/agent-release-gate into DEST/spec, points its judge at a loopback judge
(answering score 5, and score 1 for one run, so both PASS and FAIL rows are judged), trusts
a fresh key pair and writes the signed run into DEST/out. The private key is deleted; the
public key stays in DEST/spec/agent-release-gate/signed-runs.pub.pem.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from engine.cli import main  # noqa: E402
from engine.evidence import signing  # noqa: E402
from tests import refund  # noqa: E402
from tests.judge_server import Judge  # noqa: E402


def grounding(i: int, supported: bool) -> dict[str, object]:
    return {"id": f"g{i}", "case_id": f"g{i}", "dimension": "grounding",
            "context": f"Order A-{i} ships Monday.",
            "agent_output": "It ships Monday." if supported else "It shipped last year."}


def make(dest: Path) -> None:
    spec = dest / "spec" / "agent-release-gate"
    shutil.rmtree(dest / "spec", ignore_errors=True)
    shutil.rmtree(dest / "out", ignore_errors=True)
    shutil.copytree(ROOT / "specs" / "agent-release-gate", spec)
    judge = Judge()
    judge.responder = lambda body: ('{"score": 1, "reason": "unsupported"}' if "last year" in
                                    json.dumps(body) else '{"score": 5, "reason": "supported"}')
    keys = dest / "keys"
    signing.keygen(keys)
    shutil.copy(keys / "public.pem", spec / "signed-runs.pub.pem")
    path = spec / "evaluation.yaml"
    data = yaml.safe_load(path.read_text())
    data["spec"].pop("suite_sha256", None)
    data["spec"]["inputs"]["runs"]["path"] = "data/replayed.jsonl"
    data["spec"]["judge"] = {"provider": "openai-compatible", "model": "m1",
                             "base_url": f"{judge.url}/v1", "api_key_env": "SPECGATE_TEST_KEY",
                             "timeout_s": 5, "retries": 0}
    data["spec"]["history"] = {"trusted_keys": ["signed-runs.pub.pem"]}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    rows = refund.rows(fixed=True) + [grounding(1, True), grounding(2, False),
                                      grounding(3, True)]
    (spec / "data" / "replayed.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    os.environ["SPECGATE_TEST_KEY"] = "not-a-secret"
    code = main(["run", str(spec), "--out", str(dest / "out"), "--no-judge-cache",
                 "--key", str(keys / "private.pem")])
    judge.close()
    shutil.rmtree(keys)
    print("exit", code)


if __name__ == "__main__":
    make(Path(sys.argv[1]).resolve())
