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


def test_evidence_is_byte_identical_to_the_recorded_set() -> None:
    # A child process: the harness freezes the clock for the whole interpreter.
    done = subprocess.run([sys.executable, "-m", "bench.evidence_digests", "--check",
                           str(RECORDED)], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    recorded = json.loads(RECORDED.read_text())
    # the set covers a PASS, a FAIL, an INCOMPLETE and a baseline comparison
    codes = {k: v for k, v in recorded.items() if k.endswith("/exit_code")}
    assert set(codes.values()) == {"0", "1", "3"}
    assert f"{len(recorded)} files, 0 differences" in done.stdout
