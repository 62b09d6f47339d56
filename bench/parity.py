"""Parity with Assevra 0.6 (agent-release-gate §16): run both engines on the same files.

Installs ``assevra==0.6.0.post1`` into a throwaway virtual environment (never imported by
specgate), runs it and ``engine run specs/agent-release-gate`` on each dataset, and lists
every difference in the decision, per-dimension counts, rates, Wilson bounds (recomputed at
z = 1.96 from Assevra's counts, compared to 1e-9 with specgate run at z = 1.96), pass^k,
consistency, flaky cases and row statuses. ``python -m bench.parity [WORKDIR]`` prints a
report and exits 1 on any difference.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import yaml

from engine.canonical import digest
from engine.decide.lattice import included as _included
from engine.protocols.release_gate.plugin import suite_part

from . import assevra_data

ASSEVRA = "assevra==0.6.0.post1"
ROOT = Path(__file__).resolve().parent.parent
GATE = ROOT / "specs" / "agent-release-gate"
TOLERANCE = 1e-9


def assevra_env(work: Path) -> Path:
    """A virtual environment with Assevra installed (reused when already there)."""
    env = work / "assevra-venv"
    python = env / "bin" / "python"
    if not (env / "bin" / "assevra").exists():
        venv.create(env, with_pip=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", ASSEVRA], check=True)
    return env


def reference_datasets(env: Path, work: Path) -> dict[str, Path]:
    """Assevra's own reference before/after datasets, as its package writes them."""
    out = work / "assevra-reference"
    if not (out / "after" / "cases.jsonl").exists():
        subprocess.run([str(env / "bin" / "python"), "-m", "assevra.reference", "--out-dir",
                        str(out)], check=True, capture_output=True)
    return {"reference-before": out / "before" / "cases.jsonl",
            "reference-after": out / "after" / "cases.jsonl"}


def assevra_command(env: Path, dataset: Path, out: Path) -> list[str]:
    """``assevra run`` on a dataset: no judge, release, built-in defaults."""
    return [str(env / "bin" / "assevra"), "run", "--config", "none", "--dataset",
            str(dataset), "--out-dir", str(out), "--judge-provider", "none",
            "--format", "json", "--quiet"]


def run_assevra(env: Path, dataset: Path, out: Path) -> dict[str, Any]:
    """Assevra's scorecard for a dataset."""
    subprocess.run(assevra_command(env, dataset, out), check=True, capture_output=True,
                   cwd=out.parent)
    card: dict[str, Any] = json.loads((out / "scorecard.json").read_text())
    return card


def specgate_spec(work: Path) -> Path:
    """The shipped release gate in the protocol's generic form, as Assevra runs it: no
    dimension marked required (every included one is) and statistics.wilson_z 1.96 (D1)."""
    folder = work / "agent-release-gate"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(GATE, folder)
    policy = folder / "policy.yaml"
    data = yaml.safe_load(policy.read_text())
    data["spec"]["statistics"]["wilson_z"] = 1.96
    for category in data["spec"]["categories"].values():
        category["required"] = False
        category.pop("min_cases", None)
    policy.write_text(yaml.safe_dump(data, sort_keys=False))
    return folder


def pin_suite(spec: Path, dataset: Path) -> None:
    """Pin the dataset as the approved suite (what governance does after review, and what
    Assevra never asks for): §10's digest of the rows' inputs and assertions, by id."""
    rows = [json.loads(line) for line in dataset.read_text().splitlines() if line.strip()]
    parts = [suite_part(r) for r in sorted(rows, key=lambda r: str(r.get("id", "")))]
    evaluation = spec / "evaluation.yaml"
    data = yaml.safe_load(evaluation.read_text())
    data["spec"]["suite_sha256"] = digest(parts)
    evaluation.write_text(yaml.safe_dump(data, sort_keys=False))


def run_specgate(spec: Path, dataset: Path, out: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """specgate's scorecard and row statuses (agent rows and controls) for a dataset."""
    pin_suite(spec, dataset)
    subprocess.run([sys.executable, "-m", "engine", "run", str(spec), "--input",
                    f"runs={dataset}", "--out", str(out)], capture_output=True, cwd=ROOT)
    card = json.loads((out / "scorecard.json").read_bytes())
    statuses = {}
    for line in (out / "rows.jsonl").read_text().splitlines():
        row = json.loads(line)
        if "unit" in row:
            statuses[str(row["unit"])] = row["status"]
    return card, statuses


def wilson(passes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson bounds, written out independently of engine.stats."""
    p = passes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def compare(assevra: dict[str, Any], ours: dict[str, Any],
            statuses: dict[str, str]) -> list[str]:
    """Every difference between the two scorecards that §16.1 says must not exist."""
    diffs = []
    if assevra["decision"] != ours["decision"]:
        diffs.append(f"decision: assevra {assevra['decision']}, specgate {ours['decision']}")
    theirs = [d for d in assevra["dimensions"]]
    included = [d["name"] for d in theirs]
    ours_included = [n for n, c in ours["categories"].items() if _included(c)]
    if sorted(included) != sorted(ours_included):
        diffs.append(f"included dimensions: assevra {included}, specgate {ours_included}")
    for dim in theirs:
        name, mine = dim["name"], ours["categories"].get(dim["name"])
        if mine is None:
            continue
        pairs = [("n", mine["n"], dim["sample_size"]), ("passed", mine["passed"], dim["passes"]),
                 ("failed", mine["failed"], dim["sample_size"] - dim["passes"]),
                 ("errors", mine["errors"] + mine["abstained"], dim["evaluation_errors"]),
                 ("attempted", mine["attempted"], dim["attempted"]),
                 ("met", mine["met"], dim["passed"]), ("skipped", mine["state"] == "SKIPPED",
                                                       dim["skipped"])]
        diffs += [f"{name}.{key}: assevra {b}, specgate {a}" for key, a, b in pairs if a != b]
        if dim["sample_size"]:
            if mine["rate"] != dim["passes"] / dim["sample_size"]:
                diffs.append(f"{name}.rate: {mine['rate']} != {dim['passes']}/{dim['sample_size']}")
            lower, upper = wilson(dim["passes"], dim["sample_size"])
            if abs(mine["wilson_lower"] - lower) > TOLERANCE or \
                    abs(mine["wilson_upper"] - upper) > TOLERANCE:
                diffs.append(f"{name}.wilson: specgate [{mine['wilson_lower']}, "
                             f"{mine['wilson_upper']}], recomputed [{lower}, {upper}]")
        for row in dim.get("rows", []):
            status = statuses.get(str(row["id"]))
            if status != row["status"]:
                diffs.append(f"row {row['id']}: assevra {row['status']}, specgate {status}")
    for block in assevra.get("reliability") or []:
        mine = ours["reliability"].get(block["dimension"]) or {}
        for key in ("pass_hat_k", "consistency"):
            if block.get(key) is None and mine.get(key) is None:
                continue
            # D2: Assevra writes these rounded to 4 decimals; specgate keeps full precision.
            if block.get(key) is None or mine.get(key) is None or \
                    abs(block[key] - round(mine[key], 4)) > TOLERANCE:
                diffs.append(f"{block['dimension']}.{key}: assevra {block.get(key)}, "
                             f"specgate {mine.get(key)}")
        if sorted(block.get("flaky_cases", [])) != mine.get("flaky_cases", []):
            diffs.append(f"{block['dimension']}.flaky_cases differ")
    return diffs


def datasets(work: Path, env: Path) -> dict[str, Path]:
    """The reference pair plus generated datasets of 1,200 rows (full and compact)."""
    out = reference_datasets(env, work)
    out["generated-full"] = assevra_data.write(work / "generated-full.jsonl", 1200, seed=3)
    out["generated-compact"] = assevra_data.write(work / "generated-compact.jsonl", 1200,
                                                  seed=4, compact=True)
    return out


def main(work: Path) -> dict[str, list[str]]:
    """Run both engines on every dataset; return the differences per dataset."""
    work.mkdir(parents=True, exist_ok=True)
    env = assevra_env(work)
    spec = specgate_spec(work)
    report = {}
    for name, dataset in datasets(work, env).items():
        for sub in (f"{name}-assevra", f"{name}-specgate"):
            shutil.rmtree(work / sub, ignore_errors=True)
        (work / f"{name}-assevra").mkdir()
        theirs = run_assevra(env, dataset, work / f"{name}-assevra")
        ours, statuses = run_specgate(spec, dataset, work / f"{name}-specgate")
        report[name] = compare(theirs, ours, statuses)
        count = len(dataset.read_text().splitlines())
        print(f"{name}: {count} rows, assevra {theirs['decision']}, "
              f"specgate {ours['decision']}, {len(report[name])} difference(s)")
        for diff in report[name][:20]:
            print(f"  {diff}")
    return report


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".parity")
    sys.exit(1 if any(main(folder).values()) else 0)
