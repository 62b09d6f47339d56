"""Digests of every evidence file the engine writes for a fixed set of runs.

``python -m bench.evidence_digests`` prints ``{run/relative-path: sha256}`` as JSON;
``--check FILE`` compares with a recorded set and exits 1 naming each difference;
``--write FILE`` records a new set. A refactoring that must leave evidence byte-identical
is checked by recording before and checking after (tests/test_evidence_golden.py does the
check on every test run against ``tests/data/evidence_digests.json``).

The runs: ``engine run specs/`` (all shipped evaluations, signed), and the release gate over
generated Assevra-format datasets (bench/assevra_data.py: 2,000 rows with full JSON Schema
contracts, 2,000 with compact contracts, 300 with a different seed), each signed. To make
bytes comparable the clock is frozen (2026-01-02T03:04:05Z, for ``generated_at`` and the
output folder stamp), each run is given its run id (``--run-id golden-NAME``) and the
signing key is fixed (Ed25519 signatures are deterministic).
Everything runs in a scratch folder with relative paths, so no machine path enters a file.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FROZEN = _dt.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=_dt.UTC)
SEED = bytes(range(1, 33))


class _Frozen(_dt.datetime):
    @classmethod
    def now(cls, tz: Any = None) -> Any:  # type: ignore[override]
        return FROZEN if tz is not None else FROZEN.replace(tzinfo=None)


def _write_key(path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    key = Ed25519PrivateKey.from_private_bytes(SEED)
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))


def _runs(work: Path) -> list[tuple[str, list[str]]]:
    from tests import refund

    from . import assevra_data
    data = work / "data"
    data.mkdir()
    full = assevra_data.write(data / "full.jsonl", 2000, seed=1)
    compact = assevra_data.write(data / "compact.jsonl", 2000, seed=1, compact=True)
    other = assevra_data.write(data / "other.jsonl", 300, seed=7)
    # The refund fixture before its fix (tests/refund.py): a gate that FAILs.
    before = data / "refund-before.jsonl"
    before.write_text("".join(json.dumps(row) + "\n" for row in refund.rows(fixed=False)))
    gate = "specs/agent-release-gate"
    # The same gate without its suite pin, so generated data reaches a real decision.
    unpinned = work / "unpinned"
    shutil.copytree(work / gate, unpinned)
    text = (unpinned / "evaluation.yaml").read_text()
    (unpinned / "evaluation.yaml").write_text(re.sub(r"(?m)^  suite_sha256:.*\n", "", text))
    sign = ["--key", "key.pem"]
    runs = [
        ("shipped", ["run", "specs/", "--out", "out/shipped", *sign]),
        ("full-2000", ["run", gate, "--input", f"runs={full.relative_to(work)}",
                       "--out", "out/full-2000", *sign]),
        ("compact-2000", ["run", gate, "--input", f"runs={compact.relative_to(work)}",
                          "--out", "out/compact-2000", *sign]),
        ("other-300", ["run", gate, "--input", f"runs={other.relative_to(work)}",
                       "--out", "out/other-300", *sign]),
        ("unpinned-full", ["run", "unpinned", "--input", f"runs={full.relative_to(work)}",
                           "--out", "out/unpinned-full", *sign]),
        ("unpinned-before", ["run", "unpinned", "--input",
                             f"runs={before.relative_to(work)}",
                             "--out", "out/unpinned-before", *sign]),
        ("baseline", ["run", gate, "--baseline",
                      "out/shipped/agent-release-gate/scorecard.json",
                      "--out", "out/baseline", *sign]),
    ]
    # a fixed run id per case: the one input of the signed statements not frozen above
    return [(name, [*argv, "--run-id", f"golden-{name}"]) for name, argv in runs]


def collect() -> dict[str, str]:
    """Run every case with a frozen clock and a fixed key; digest each file written."""
    _dt.datetime = _Frozen  # type: ignore[misc]
    from engine.cli import main
    digests: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(ROOT / "specs", work / "specs")
        _write_key(work / "key.pem")
        here = Path.cwd()
        os.chdir(work)
        try:
            for name, argv in _runs(work):
                with contextlib.redirect_stdout(io.StringIO()):
                    code = main(argv)
                digests[f"{name}/exit_code"] = str(code)
                for path in sorted((work / "out" / name).rglob("*")):
                    if path.is_file():
                        rel = path.relative_to(work / "out").as_posix()
                        digests[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        finally:
            os.chdir(here)
    return digests


def compare(recorded: dict[str, str], now: dict[str, str]) -> list[str]:
    """Each difference as one line; empty when byte-identical."""
    lines = [f"missing now: {k}" for k in sorted(set(recorded) - set(now))]
    lines += [f"new: {k}" for k in sorted(set(now) - set(recorded))]
    lines += [f"changed: {k}" for k in sorted(set(now) & set(recorded))
              if now[k] != recorded[k]]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.evidence_digests")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", type=Path, help="compare with a recorded set")
    group.add_argument("--write", type=Path, help="record the current set")
    args = parser.parse_args(argv)
    now = collect()
    if args.write:
        args.write.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"{len(now)} digests written to {args.write}")
        return 0
    if args.check:
        differences = compare(json.loads(args.check.read_text()), now)
        for line in differences:
            print(line)
        print(f"{len(now)} files, {len(differences)} differences")
        return 1 if differences else 0
    json.dump(now, sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
