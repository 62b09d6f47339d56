"""Evidence is byte-identical to the recorded set: a refactoring may move code, never bytes.

The digests in tests/data/evidence_digests.json were recorded by
``python -m bench.evidence_digests --write tests/data/evidence_digests.json`` (frozen clock,
fixed signing key; see that module). A change that means to alter evidence re-records them
in the same commit and says why; any other difference fails here, naming the files.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "tests" / "data" / "evidence_digests.json"


def test_evidence_is_byte_identical_to_the_recorded_set(tmp_path: Path) -> None:
    # docs/architecture.md's commands, as written (a child process: the harness freezes
    # the clock for the whole interpreter); --write goes to a scratch file here
    doc = (ROOT / "docs" / "architecture.md").read_text()
    check = "python -m bench.evidence_digests --check tests/data/evidence_digests.json"
    write = "python -m bench.evidence_digests --write tests/data/evidence_digests.json"
    assert check in doc and write in doc
    done = subprocess.run([sys.executable, *check.split()[1:]], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    recorded = json.loads(RECORDED.read_text())
    # the set covers a PASS, a FAIL, an INCOMPLETE and a baseline comparison
    codes = {k: v for k, v in recorded.items() if k.endswith("/exit_code")}
    assert set(codes.values()) == {"0", "1", "3"}
    assert f"{len(recorded)} files, 0 differences" in done.stdout
    scratch = tmp_path / "digests.json"
    wrote = subprocess.run([sys.executable, *write.split()[1:-1], str(scratch)], cwd=ROOT,
                           capture_output=True, text=True, check=True)
    assert f"{len(recorded)} digests written" in wrote.stdout
    assert json.loads(scratch.read_text()) == recorded
