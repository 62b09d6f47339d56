"""Parity with Assevra 0.6 (agent-release-gate §16.1): run both engines on the same fixtures.

Each fixture under ``tests/parity/agent-release-gate/NAME/`` holds the dataset, the Assevra
config (``assevra.yaml``), the equivalent Evaluation (``evaluation.yaml``: the shipped
policy, the fixture's input and its pinned suite), Assevra 0.6.0.post1's recorded answer
(``assevra.json``) and, where the protocol lets specgate differ (D4, D5, D11), specgate's
expected outcome (``expected.json``). specgate runs the shipped policy as shipped: its spec
folder is copied byte for byte and only the fixture's Evaluation is added beside it.

What is compared (§16.1): the decision; the included and the skipped dimensions, in order;
per dimension n, passes, failures, errors, attempted, met, the rate (exactly) and the Wilson
bounds (D1's second option: within 1e-4 of Assevra's JSON, which rounds them to 4 places and
uses z = 1.96, while specgate keeps the shipped z); missing dimensions; the coverage counts;
every row status; pass^k, consistency and flaky cases; for paired fixtures ``regressed`` and
each dimension's comparison status; for datasets Assevra rejects, every row class.

``python -m bench.parity [WORKDIR]`` installs Assevra in a throwaway environment, records
its answers afresh, compares them with specgate's and exits 1 on any difference.
``python -m bench.parity_goldens`` writes the recorded answers the offline test reads.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

ASSEVRA = "assevra==0.6.0.post1"
ROOT = Path(__file__).resolve().parent.parent
GATE = ROOT / "specs" / "agent-release-gate"
FIXTURES = ROOT / "tests" / "parity" / "agent-release-gate"
TOLERANCE = 1e-9
WILSON_TOLERANCE = 1e-4  # D1: Assevra's bounds are rounded to 4 places and use z = 1.96
Z = 1.959963984540054  # the shipped statistics.wilson_z (protocol §7.1)


def assevra_env(work: Path) -> Path:
    """A virtual environment with Assevra installed (reused when already there)."""
    env = work / "assevra-venv"
    python = env / "bin" / "python"
    if not (env / "bin" / "assevra").exists():
        venv.create(env, with_pip=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", ASSEVRA], check=True)
    return env


def assevra_command(env: Path, dataset: Path, out: Path) -> list[str]:
    """``assevra run`` on a dataset with its built-in defaults and no judge (bench.scale)."""
    return [str(env / "bin" / "assevra"), "run", "--config", "none", "--dataset",
            str(dataset), "--out-dir", str(out), "--judge-provider", "none",
            "--format", "json", "--quiet"]


def fixtures() -> list[str]:
    """Every fixture's name, sorted."""
    return sorted(p.parent.name for p in FIXTURES.glob("*/evaluation.yaml"))


def load(name: str) -> dict[str, Any]:
    """A fixture's recorded Assevra answer, with specgate's expected outcome when it has one."""
    folder = FIXTURES / name
    golden: dict[str, Any] = json.loads((folder / "assevra.json").read_text())
    expected = folder / "expected.json"
    golden["expected"] = json.loads(expected.read_text()) if expected.exists() else {}
    return golden


def spec_folder(work: Path, name: str, dataset: str = "dataset.jsonl",
                public: Path | None = None) -> Path:
    """The shipped spec folder, copied unchanged, with the fixture's Evaluation beside it."""
    folder = work / f"spec-{name}"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(GATE, folder)
    shutil.copyfile(FIXTURES / name / "evaluation.yaml", folder / "parity.yaml")
    shutil.copyfile(FIXTURES / name / dataset, folder / "dataset.jsonl")
    if public is not None:
        shutil.copyfile(public, folder / "baseline.pub.pem")
    if (FIXTURES / name / "replay").is_dir():  # recorded judge verdicts, and their signer
        shutil.copytree(FIXTURES / name / "replay", folder / "replay")
        shutil.copyfile(FIXTURES / name / "replay.pub.pem", folder / "replay.pub.pem")
    return folder


def run_specgate(work: Path, name: str, dataset: str = "dataset.jsonl",
                 extra: tuple[str, ...] = (), public: Path | None = None) -> dict[str, Any]:
    """specgate on a fixture: the scorecard, the row statuses, the row classes (from
    validation.json) and the dimensions in the order the report lists them."""
    spec = spec_folder(work, name, dataset, public)
    out = work / f"out-{name}-{Path(dataset).stem}"
    shutil.rmtree(out, ignore_errors=True)
    done = subprocess.run([sys.executable, "-m", "engine", "run", str(spec / "parity.yaml"),
                           "--out", str(out), *extra], capture_output=True, text=True, cwd=ROOT)
    if not (out / "scorecard.json").exists():
        raise RuntimeError(f"{name}: engine run wrote no scorecard: {done.stderr}")
    card = json.loads((out / "scorecard.json").read_bytes())
    statuses = {}
    for line in (out / "rows.jsonl").read_text().splitlines():
        row = json.loads(line)
        if "unit" in row:
            statuses[str(row["unit"])] = row["status"]
    checked = json.loads((out / "validation.json").read_text())
    classes = {str(r["line"]): r["class"] for r in checked["problems"]}
    by_dimension = {d: {k: v for k, v in counts.items() if v}
                    for d, counts in checked["by_dimension"].items()}
    order = [m.group(1) for m in re.finditer(r"^\| ([a-z_]+) \| ([A-Z_]+) \|",
                                             (out / "scorecard.md").read_text(), re.M)
             if m.group(1) in card["categories"]]
    return {"card": card, "statuses": statuses, "classes": classes,
            "by_dimension": by_dimension, "order": order,
            "exit": done.returncode, "out": out}


def wilson(passes: int, n: int, z: float = Z) -> tuple[float, float]:
    """Wilson bounds, written out independently of engine.stats (protocol §7.1)."""
    p = passes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def _dimension(dim: dict[str, Any], mine: dict[str, Any],
               overridden: bool) -> list[str]:
    name = dim["name"]
    pairs = [("n", mine["n"], dim["sample_size"]), ("passed", mine["passed"], dim["passes"]),
             ("failed", mine["failed"], dim["sample_size"] - dim["passes"]),
             ("errors", mine["errors"] + mine["abstained"], dim["evaluation_errors"]),
             ("attempted", mine["attempted"], dim["attempted"]),
             ("met", mine["met"], dim["passed"])]
    diffs = [f"{name}.{key}: assevra {b}, specgate {a}" for key, a, b in pairs if a != b]
    if not dim["sample_size"]:
        if mine["rate"] is not None:  # D3: Assevra writes 0 and [0, 0]; specgate null
            diffs.append(f"{name}.rate: specgate {mine['rate']} for n = 0")
        return diffs
    if mine["rate"] != dim["passes"] / dim["sample_size"]:
        diffs.append(f"{name}.rate: {mine['rate']} != {dim['passes']}/{dim['sample_size']}")
    # D1: Assevra's JSON bounds (4 places, z = 1.96); where the fixture overrides Assevra's
    # counts (D4, D5), the bounds of specgate's expected counts, written out here.
    bounds, tolerance = (wilson(dim["passes"], dim["sample_size"]), TOLERANCE) if overridden \
        else (tuple(dim["ci_95"]), WILSON_TOLERANCE)
    if abs(mine["wilson_lower"] - bounds[0]) > tolerance or \
            abs(mine["wilson_upper"] - bounds[1]) > tolerance:
        diffs.append(f"{name}.wilson: specgate [{mine['wilson_lower']}, "
                     f"{mine['wilson_upper']}], expected {list(bounds)}")
    return diffs


def compare(golden: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """Every difference between Assevra's recorded answer (with the fixture's permitted
    deviations applied) and specgate's run that §16.1 says must not exist."""
    expected = golden.get("expected", {})
    card, statuses = ours["card"], ours["statuses"]
    diffs = []
    decision = expected.get("decision", golden["decision"])
    if decision != card["decision"]:
        diffs.append(f"decision: expected {decision}, specgate {card['decision']}")
    classes = golden.get("classes")
    if classes is not None:  # a dataset Assevra rejects (D11): the row classes must match
        for line, state in classes.items():  # by line: a row may have no usable id
            mine = ours["classes"].get(line, "LABELED")  # validation.json lists the others
            if mine != state:
                diffs.append(f"line {line} class: assevra {state}, specgate {mine}")
        diffs += [f"line {line}: not in the dataset Assevra read"
                  for line in sorted(set(ours["classes"]) - set(classes))]
        theirs_counts = {d: {k: v for k, v in counts.items() if v}
                         for d, counts in golden["by_dimension"].items()}
        if theirs_counts != ours["by_dimension"]:
            diffs.append(f"classes per dimension: assevra {theirs_counts}, "
                         f"specgate {ours['by_dimension']}")
        return diffs
    theirs = [d | expected.get("dimensions", {}).get(d["name"], {}) for d in golden["dimensions"]]
    included = [d["name"] for d in theirs]
    ours_included = [n for n in ours["order"] if card["categories"][n]["state"] != "NOT_INCLUDED"]
    if included != ours_included:
        diffs.append(f"included dimensions: assevra {included}, specgate {ours_included}")
    skipped = [d["name"] for d in theirs if d["skipped"]]
    ours_skipped = [n for n in ours["order"] if card["categories"][n]["state"] == "SKIPPED"]
    if skipped != ours_skipped:
        diffs.append(f"skipped dimensions: assevra {skipped}, specgate {ours_skipped}")
    if golden["missing_dimensions"] != card["missing_categories"]:
        diffs.append(f"missing dimensions: assevra {golden['missing_dimensions']}, "
                     f"specgate {card['missing_categories']}")
    coverage = card["coverage"]
    for key, mine in (("input_rows", coverage["records"]),
                      ("agent_rows", coverage["rows"]),
                      ("control_rows", coverage["control_rows"])):
        if golden["coverage"][key] != mine:
            diffs.append(f"coverage.{key}: assevra {golden['coverage'][key]}, specgate {mine}")
    rows = expected.get("rows", {})
    for dim in theirs:
        mine = card["categories"].get(dim["name"])
        if mine is None:
            continue
        diffs += _dimension(dim, mine, dim["name"] in expected.get("dimensions", {}))
        for row in dim.get("rows", []):
            want = rows.get(str(row["id"]), row["status"])
            status = statuses.get(str(row["id"]))
            if status != want:
                diffs.append(f"row {row['id']}: expected {want}, specgate {status}")
    for block in golden.get("reliability") or []:
        mine = (card["reliability"] or {}).get(block["dimension"]) or {}
        for key in ("pass_hat_k", "consistency"):
            if block.get(key) is None and mine.get(key) is None:
                continue
            # D2: Assevra writes these rounded to 4 places; specgate keeps full precision.
            if block.get(key) is None or mine.get(key) is None or \
                    abs(block[key] - round(mine[key], 4)) > TOLERANCE:
                diffs.append(f"{block['dimension']}.{key}: assevra {block.get(key)}, "
                             f"specgate {mine.get(key)}")
        if sorted(block.get("flaky_cases", [])) != mine.get("flaky_cases", []):
            diffs.append(f"{block['dimension']}.flaky_cases differ")
    comparison = golden.get("comparison")
    if comparison is not None:  # a paired fixture (§16.1 item 8)
        mine = card["comparison"] or {}
        if mine.get("status") != comparison["status"]:
            diffs.append(f"comparison status: assevra {comparison['status']}, "
                         f"specgate {mine.get('status')}")
        if mine.get("regressed") != comparison["regressed"]:
            diffs.append(f"regressed: assevra {comparison['regressed']}, "
                         f"specgate {mine.get('regressed')}")
        statuses_now = {n: d.get("status") for n, d in (mine.get("categories") or {}).items()}
        for name, status in comparison["dimensions"].items():
            if statuses_now.get(name) != status:
                diffs.append(f"{name} comparison: assevra {status}, "
                             f"specgate {statuses_now.get(name)}")
    return diffs


def run_fixture(work: Path, name: str) -> dict[str, Any]:
    """specgate on one fixture, as the fixture says. A paired fixture's Evaluation trusts
    baselines signed by ``baseline.pub.pem``: a fresh key pair signs the baseline run, its
    public half is put there, and the run compares with that signed scorecard."""
    if not (FIXTURES / name / "baseline.jsonl").exists():
        return run_specgate(work, name)
    keys = work / f"keys-{name}"
    if not (keys / "private.pem").exists():
        subprocess.run([sys.executable, "-m", "engine", "keygen", "--out-dir", str(keys)],
                       check=True, capture_output=True, cwd=ROOT)
    trusted = ("--key", str(keys / "private.pem"))
    base = run_specgate(work, name, "baseline.jsonl", trusted, keys / "public.pem")
    return run_specgate(work, name, extra=("--baseline", str(base["out"] / "scorecard.json")),
                        public=keys / "public.pem")


def main(work: Path) -> dict[str, list[str]]:
    """Record Assevra's answers afresh, run specgate on every fixture, return the differences."""
    from . import parity_goldens

    work.mkdir(parents=True, exist_ok=True)
    env = assevra_env(work)
    report = {}
    for name in fixtures():
        golden = parity_goldens.answer(env, work, name)
        expected = FIXTURES / name / "expected.json"
        golden["expected"] = json.loads(expected.read_text()) if expected.exists() else {}
        ours = run_fixture(work, name)
        report[name] = compare(golden, ours)
        count = len((FIXTURES / name / "dataset.jsonl").read_text().splitlines())
        print(f"{name}: {count} rows, assevra {golden['decision']}, "
              f"specgate {ours['card']['decision']}, {len(report[name])} difference(s)")
        for diff in report[name][:20]:
            print(f"  {diff}")
    return report


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".parity")
    sys.exit(1 if any(main(folder).values()) else 0)
