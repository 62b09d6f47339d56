"""Benchmark: the local gates of finding-quality-discovery on a full-size task.

A 10,000-document compound task, 3 findings x 2 conditions with every id assigned, 15
evidence spans each and all 60 statistics; the submission is checked end to end (corpus
decompression, parsing, G0-G9). ``python -m bench.discovery_gates [--tasks N]`` prints the
time per task and the peak memory.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from engine.protocols.discovery import check_submission, load_corpus, load_protocol
from engine.protocols.discovery.checks import Finding, population_size
from engine.protocols.discovery.checks_content import expected_statistics, partition
from engine.protocols.discovery.gates import Gates

ROOT = Path(__file__).resolve().parent.parent
WORDS = "dryer battery screen strap heat noise refund seller color size smell leak".split()


def corpus(n: int, rng: random.Random) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        words = rng.choices(WORDS, k=rng.randrange(20, 60))
        rows.append({"doc_id": f"doc-{i:05d}", "source": "amazon_beauty",
                     "text": " ".join(words) + ".", "title": None,
                     "timestamp": f"20{20 + i % 5}-0{1 + i % 9}-1{i % 10}T00:00:00Z",
                     "entity_id": f"e{i % 40}", "rating": 1 + i % 5, "category": "c",
                     "store": f"s{i % 7}"})
    return rows


def finding(rows: list[dict[str, Any]], k: int, rng: random.Random) -> dict[str, Any]:
    ids = [r["doc_id"] for r in rows]
    by_id = {r["doc_id"]: r for r in rows}
    assignments = []
    for c in ("a", "b"):
        states = {d: rng.choice(["positive", "negative", "negative", "unknown"]) for d in ids}
        assignments.append({"condition_id": f"{c}{k}",
                            **{f"{s}_doc_ids": [d for d in ids if states[d] == s]
                               for s in ("positive", "negative", "unknown")}})
    both = sorted(set(assignments[0]["positive_doc_ids"]) & set(assignments[1]["positive_doc_ids"]))
    discord = sorted(set(assignments[0]["positive_doc_ids"]) &
                      set(assignments[1]["negative_doc_ids"]))
    evidence = [{"doc_id": d, "start": 0, "end": 5, "quote": by_id[d]["text"][:5],
                 "role": "supporting"} for d in both[:12]]
    evidence += [{"doc_id": d, "start": 0, "end": 5, "quote": by_id[d]["text"][:5],
                  "role": "counterexample"} for d in discord[:3]]
    return {"finding_id": f"f{k}", "claim": "A relates to B.", "kind": "compound_association",
            "scope": "all", "population": {"filters": []}, "comparison": None,
            "definitions": [{"condition_id": a["condition_id"], "inclusion": "x",
                             "exclusion": "y"} for a in assignments],
            "assignments": assignments, "statistics": {}, "evidence": evidence,
            "limitations": ["synthetic"]}


def build(folder: Path, seed: int, n: int = 10_000) -> tuple[dict[str, Any], Path, bytes]:
    """A task of ``n`` documents and a valid submission for it (all statistics filled)."""
    rng = random.Random(seed)
    rows = corpus(n, rng)
    data = gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode(), mtime=0)
    path = folder / f"task{seed}.jsonl.gz"
    path.write_bytes(data)
    task: dict[str, Any] = {"task_id": f"bench_{seed}", "source": "amazon_beauty",
            "kind": "compound_association", "max_findings": 3, "n_documents": n,
            "allowed_metadata_fields": ["entity_id", "rating", "store", "timestamp",
                                        "report_year"],
            "min_population_n": n // 10, "min_group_n": n // 100,
            "corpus_sha256": hashlib.sha256(data).hexdigest()}
    package = load_protocol(ROOT / "specs" / "finding-quality-discovery")
    loaded = load_corpus(path, str(task["corpus_sha256"]), n)
    gates = Gates(package.protocol, task, loaded)
    findings = [finding(rows, k, rng) for k in range(3)]
    for i, f in enumerate(findings):  # fill in the statistics the gates will recompute
        state = Finding(i, f)
        population_size(gates, state)
        partition(gates, state)
        f["statistics"] = expected_statistics(gates, state)
    submission = {"task_id": task["task_id"], "findings": findings, "abstention_reason": ""}
    return task, path, json.dumps(submission).encode()


def main(tasks: int) -> None:
    package = load_protocol(ROOT / "specs" / "finding-quality-discovery")
    with tempfile.TemporaryDirectory() as tmp:
        built = [build(Path(tmp), seed) for seed in range(tasks)]
        times = []
        for task, path, raw in built:
            started = time.perf_counter()
            corpus_ = load_corpus(path, task["corpus_sha256"], task["n_documents"])
            result = check_submission(package, task, corpus_, raw)
            times.append(time.perf_counter() - started)
            assert result["valid"], result.get("error")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{tasks} full-size task(s): 10,000 documents, 3 findings x 2 conditions, "
          f"{len(raw) / 1e6:.2f} MB submission each")
    print(f"per task: median {sorted(times)[len(times) // 2]:.3f} s, max {max(times):.3f} s; "
          f"total {sum(times):.2f} s; peak RSS {peak:.0f} MB (includes building the inputs)")


if __name__ == "__main__":
    main(int(sys.argv[sys.argv.index("--tasks") + 1]) if "--tasks" in sys.argv else 5)
