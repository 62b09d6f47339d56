"""A conformance kit for finding-quality-discovery (§16), built from the protocol's text.

A 32-document corpus (two stores, one document with no store and a null rating, one with
an emoji before its quoted span), a group_difference task with small minimums, and a valid
submission whose 64 statistics are computed here by a second, independent reading of §6.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

EMOJI_TEXT = "Great \U0001f600 dryer. It overheats fast."  # 'It overheats' is at 15..27


def corpus_rows() -> list[dict[str, Any]]:
    rows = []
    for i in range(1, 33):
        store = "north" if i <= 15 else "south" if i <= 30 else ("west" if i == 32 else None)
        overheats = (i % 3 == 0) if i <= 15 else (i % 3 != 0)
        text = (f"Dryer {i} overheats after ten minutes." if overheats else
                f"Dryer {i} works quietly and dries well.")
        stamp = f"202{3 + i % 2}-0{1 + i % 9}-1{i % 10}"
        row: dict[str, Any] = {"doc_id": f"d{i:02d}", "source": "amazon_beauty", "text": text,
                               "title": f"review {i}", "timestamp": stamp,
                               "timestamp_kind": "review_date", "entity_id": f"e{1 + i % 3}",
                               "entity_name": None, "category": "dryers",
                               "rating": 1 + i % 5}
        if store is not None:
            row["store"] = store
        rows.append(row)
    rows[2]["text"] = EMOJI_TEXT            # d03, north, a positive document
    rows[30]["rating"] = None                 # d31: no store and a null rating
    rows[7]["rating"] = 4.0                   # d08: a float rating is its own stratum
    return rows


def write_corpus(folder: Path, rows: list[dict[str, Any]]) -> tuple[Path, str]:
    path = folder / "toy_group.jsonl.gz"
    data = gzip.compress("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                 for r in rows).encode(), mtime=0)
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()


def task(sha: str) -> dict[str, Any]:
    return {"task_id": "amazon_beauty_group_difference_toy", "source": "amazon_beauty",
            "kind": "group_difference", "question": "Which store's dryers overheat more?",
            "difficulty": "discovery", "discovery_mode": "agent_selected", "max_findings": 3,
            "allowed_metadata_fields": ["entity_id", "rating", "store", "timestamp",
                                        "report_year"],
            "min_population_n": 20, "min_group_n": 10, "n_documents": 32,
            "corpus_path": "corpora/amazon_beauty_group_difference_toy.jsonl.gz",
            "corpus_sha256": sha,
            "robustness_protocol": {"axes": ["entity_id", "rating", "report_year"],
                                    "min_known_per_arm": 5}}


def labels(rows: list[dict[str, Any]]) -> tuple[list[str], list[str], list[str]]:
    """Positive when the text says it overheats; d05 and d20 are left unknown."""
    pos = [r["doc_id"] for r in rows if "overheat" in r["text"] and
           r["doc_id"] not in ("d05", "d20")]
    unk = ["d05", "d20"]
    neg = [r["doc_id"] for r in rows if r["doc_id"] not in pos and r["doc_id"] not in unk]
    return pos, neg, unk


# ---- an independent reading of §6 (no engine code) ------------------------------------------

def _eff(x0: set[str], x1: set[str], o: set[str]) -> float | None:
    if not x0 or not x1:
        return None
    return 100 * (len(x1 & o) / len(x1) - len(x0 & o) / len(x0))


def _year(ts: Any) -> str | None:
    if not isinstance(ts, str) or len(ts) < 10:
        return None
    y, m, d = ts[:4], ts[5:7], ts[8:10]
    if not (y + m + d).isdigit() or ts[4] != "-" or ts[7] != "-":
        return None
    import datetime
    try:
        datetime.date(int(y), int(m), int(d))
    except ValueError:
        return None
    return str(int(y))


def statistics(rows: list[dict[str, Any]], sel: list[str], g0: set[str], g1: set[str],
               pos: set[str], unk: set[str]) -> dict[str, Any]:
    by_id = {r["doc_id"]: r for r in rows}
    out: dict[str, Any] = {}
    rate = {}
    for i, g in ((0, g0), (1, g1)):
        n, p, u = len(g), len(g & pos), len(g & unk)
        rate[i] = p / (n - u) if n - u else None
        out |= {f"group{i}_total_n": n, f"group{i}_known_n": n - u, f"group{i}_positive_n": p,
                f"group{i}_unknown_n": u, f"group{i}_rate_known": rate[i]}
    order = ["group0_total_n", "group0_known_n", "group0_positive_n", "group0_unknown_n",
             "group0_rate_known", "group1_total_n", "group1_known_n", "group1_positive_n",
             "group1_unknown_n", "group1_rate_known"]
    out = {k: out[k] for k in order}
    n0, n1 = len(g0), len(g1)
    p0, p1, u0, u1 = len(g0 & pos), len(g1 & pos), len(g0 & unk), len(g1 & unk)
    out["excluded_metadata_n"] = len(sel) - len(g0 | g1)
    out["delta_known_pp"] = None if None in rate.values() else 100 * (rate[1] - rate[0])
    out["delta_identification_lower_pp"] = 100 * (p1 / n1 - (p0 + u0) / n0)
    out["delta_identification_upper_pp"] = 100 * ((p1 + u1) / n1 - p0 / n0)
    out["corpus_total_n"] = len(rows)
    out["population_total_n"] = len(sel)
    out["population_coverage"] = len(sel) / len(rows)
    k0, k1 = g0 - unk, g1 - unk
    out["robustness_known_arm0_n"], out["robustness_known_arm1_n"] = len(k0), len(k1)
    support = pos & (k0 | k1)
    for axis in ("entity_id", "rating", "report_year"):
        strata: dict[str, set[str]] = {}
        missing = set()
        for d in sel:
            raw = by_id[d].get(axis) if axis != "report_year" else _year(by_id[d].get("timestamp"))
            key = None if raw is None or isinstance(raw, list | dict) else str(raw)
            if key is None or not key.strip():
                missing.add(d)
            else:
                strata.setdefault(key, set()).add(d)
        elig = [(k, s) for k, s in sorted(strata.items()) if len(k0 & s) >= 5 and len(k1 & s) >= 5]
        w = [len(k0 & s) + len(k1 & s) for _, s in elig]
        dl = [_eff(k0 & s, k1 & s, pos) for _, s in elig]
        c = sum(w)
        cov = set().union(*[s for _, s in elig]) if elig else set()
        big = sorted(strata.items(), key=lambda kv: (-len(kv[1]), kv[0]))[0][1] if strata else None
        r0, r1 = k0 - (big or set()) - missing, k1 - (big or set()) - missing
        sp = support - missing
        f = {"strata_n": len(strata), "missing_metadata_n": len(missing),
             "eligible_strata_n": len(elig), "covered_known_n": c,
             "excluded_known_n": len(k0 | k1) - c,
             "standardized_delta_pp": sum(a * b for a, b in zip(w, dl, strict=True)) / c
             if c else None,
             "covered_crude_delta_pp": _eff(k0 & cov, k1 & cov, pos) if elig else None,
             "min_stratum_delta_pp": min(dl) if dl else None,
             "max_stratum_delta_pp": max(dl) if dl else None,
             "drop_largest_n": len(big) if big is not None else 0,
             "drop_largest_arm0_n": len(r0), "drop_largest_arm1_n": len(r1),
             "drop_largest_delta_pp": _eff(r0, r1, pos) if big is not None and len(r0) >= 5
             and len(r1) >= 5 else None,
             "support_missing_metadata_n": len(support & missing),
             "max_support_share": max(len(s & sp) for s in strata.values()) / len(sp) if sp
             else None}
        for name, value in f.items():
            out[f"robustness_{axis}_{name}"] = value
    return out


def submission(rows: list[dict[str, Any]], task_id: str) -> dict[str, Any]:
    pos, neg, unk = labels(rows)
    sel = [r["doc_id"] for r in rows]
    g0 = {r["doc_id"] for r in rows if r.get("store") == "north"}
    g1 = {r["doc_id"] for r in rows if r.get("store") == "south"}
    by_id = {r["doc_id"]: r for r in rows}

    def span(doc_id: str, quote: str, role: str) -> dict[str, Any]:
        start = by_id[doc_id]["text"].index(quote)
        return {"doc_id": doc_id, "start": start, "end": start + len(quote), "quote": quote,
                "role": role}

    evidence = [span("d03", "It overheats", "supporting"),
                span("d16", "overheats after ten minutes", "supporting"),
                span("d17", "overheats after ten minutes", "supporting"),
                span("d01", "works quietly", "counterexample"),
                span("d02", "dries well", "context")]
    assert evidence[0]["start"] == 15 and evidence[0]["end"] == 27
    return {"task_id": task_id, "abstention_reason": "", "findings": [{
        "finding_id": "f1", "kind": "group_difference",
        "claim": "South-store dryers overheat far more often than north-store dryers.",
        "scope": "All 32 reviews; north vs south store; 2023-2024.",
        "population": {"filters": []},
        "comparison": {"field": "store", "groups": [["north"], ["south"]]},
        "definitions": [{"condition_id": "overheats", "inclusion": "The reviewer reports the "
                         "dryer overheating.", "exclusion": "Worries or hearsay."}],
        "assignments": [{"condition_id": "overheats", "positive_doc_ids": pos,
                         "negative_doc_ids": neg, "unknown_doc_ids": unk}],
        "statistics": statistics(rows, sel, g0, g1, set(pos), set(unk)),
        "evidence": evidence,
        "limitations": ["One product category.", "Labels from review text only."]}]}


def mutated(base: dict[str, Any], change: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    change(out)
    return out
