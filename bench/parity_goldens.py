"""Record Assevra 0.6's own answers once, so parity is checked offline in every test run.

``python -m bench.parity_goldens [WORKDIR]`` installs ``assevra==0.6.0.post1`` in a throwaway
environment (as ``bench.parity`` does), runs it on four datasets (its own reference
before/after pair, as its package writes them, and two generated 300-row datasets with
full and compact tool contracts) and writes, under ``tests/data/parity/NAME/``:

- ``dataset.jsonl``: the input, byte for byte what Assevra read;
- ``assevra.json``: the part of Assevra's scorecard that parity compares (decision; per
  dimension its counts, state and row statuses; reliability), nothing else;
- and ``tests/data/parity/MADE.json``: the Assevra version, the command and the date.

tests/test_parity_offline.py then runs specgate on each dataset and compares with
``bench.parity.compare`` (the same rules as the live run: agent-release-gate §16.1).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from . import assevra_data
from .parity import ASSEVRA, ROOT, assevra_command, assevra_env, reference_datasets, run_assevra

GOLDENS = ROOT / "tests" / "data" / "parity"
SIZE = 300


def kept(card: dict[str, Any]) -> dict[str, Any]:
    """What parity compares of an Assevra scorecard."""
    dimensions = [{k: d[k] for k in ("name", "sample_size", "passes", "evaluation_errors",
                                     "attempted", "passed", "skipped")} |
                  {"rows": [{"id": r["id"], "status": r["status"]} for r in d.get("rows", [])]}
                  for d in card["dimensions"]]
    reliability = [{k: b.get(k) for k in ("dimension", "pass_hat_k", "consistency",
                                          "flaky_cases")} for b in card.get("reliability") or []]
    return {"decision": card["decision"], "dimensions": dimensions, "reliability": reliability}


def record(work: Path) -> dict[str, str]:
    """Run Assevra on every dataset and write the goldens; returns its decision by name."""
    work.mkdir(parents=True, exist_ok=True)
    env = assevra_env(work)
    sources = reference_datasets(env, work)
    sources["generated-full"] = assevra_data.write(work / "g-full.jsonl", SIZE, seed=3)
    sources["generated-compact"] = assevra_data.write(work / "g-compact.jsonl", SIZE, seed=4,
                                                      compact=True)
    decisions = {}
    for name, dataset in sources.items():
        folder = GOLDENS / name
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(dataset, folder / "dataset.jsonl")
        out = work / f"{name}-assevra"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        card = kept(run_assevra(env, folder / "dataset.jsonl", out))
        (folder / "assevra.json").write_text(json.dumps(card, indent=1, sort_keys=True) + "\n")
        decisions[name] = card["decision"]
    command = " ".join(assevra_command(Path("ENV"), Path("tests/data/parity/NAME/dataset.jsonl"),
                                       Path("OUT")))
    (GOLDENS / "MADE.json").write_text(json.dumps({
        "assevra": ASSEVRA, "made": dt.date.today().isoformat(), "command": command,
        "by": "python -m bench.parity_goldens", "decisions": decisions,
        "generated": f"bench.assevra_data.write(path, {SIZE}, seed=3 / seed=4, compact=True)",
    }, indent=1, sort_keys=True) + "\n")
    return decisions


if __name__ == "__main__":
    print(record(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".parity")))
