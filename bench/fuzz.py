"""Fuzzing for a fixed budget: the spec loader, the formula parser, the submission gates.

``python -m bench.fuzz [--cases N] [--seed S] [--targets spec,formula,gates]`` mutates
valid inputs (the shipped example spec, formulas from a token soup, a valid discovery
submission) and feeds each to the real entry point. An outcome is fine when it is a
result or a coded error (``SpecErrors`` whose every problem has a code and a line,
``FormulaError``, a gate failure with a protocol code); anything else is a crash, printed
with the input that caused it, and the command exits 1. Deterministic for a given seed.
``tests/test_fuzz.py`` runs a small budget in CI; docs/security.md records a long one.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import random
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._oracle import Crash, WrongPass

ROOT = Path(__file__).resolve().parent.parent
YAML_TOKENS = ["&a ", "*a", "<<: *a", "!!python/object:os.system ", "{", "}", "[", "]", ": ",
               "- ", '"', "'", "\t", "\x00", "\ufeff", "1e999", ".nan", "9007199254740993",
               "~", "? ", "|", ">", "#", "%YAML 1.1\n", "---\n", "...\n", "../../", "/etc/",
               "é", "\U0001f600", "\\u0000", "null", "true", "-1", "0x1F", "2026-13-45"]
FORMULA_TOKENS = ["x", "y", "n", "rate", "cost", "min(", "max(", "sqrt(", "log(", "round(",
                  "coalesce(", "wilson_lower(", "abs(", "len(", "(", ")", ",", "+", "-", "*",
                  "/", "//", "%", "**", "<", "<=", "==", "!=", ">", ">=", "and", "or", "not",
                  "if", "else", "in", "is", "None", "True", "False", "null", "0", "1", "2.5",
                  "1e308", "-0.0", "9007199254740993", "'a'", '"b"', "[", "]", "{", "}", ":",
                  "lambda", "x.__class__", "__import__('os')", "[1]*9", "'a'*9", ";", "\n",
                  "é", "\\", "`", "@", "..."]




def mutate_text(text: str, rng: random.Random) -> str:
    """One to three random edits: a token inserted, a line deleted, duplicated or swapped,
    a character flipped, the text cut short, or a value nested deeply."""
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(7)
        i = rng.randrange(len(lines)) if lines else 0
        if kind == 0 and lines:
            line = lines[i]
            at = rng.randint(0, len(line))
            lines[i] = line[:at] + rng.choice(YAML_TOKENS) + line[at:]
        elif kind == 1 and len(lines) > 1:
            del lines[i]
        elif kind == 2 and lines:
            lines.insert(i, lines[i])
        elif kind == 3 and len(lines) > 1:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 4 and lines and lines[i]:
            at = rng.randrange(len(lines[i]))
            lines[i] = lines[i][:at] + chr(rng.randrange(1, 0x300)) + lines[i][at + 1:]
        elif kind == 5:
            joined = "\n".join(lines)
            lines = joined[:rng.randint(0, len(joined))].split("\n")
        elif kind == 6 and lines:
            depth = rng.choice([10, 70, 200])
            lines[i] = lines[i] + " " + "[" * depth + "1" + "]" * depth
    return "\n".join(lines)


def fuzz_spec(rng: random.Random, work: Path, state: dict[str, Any]) -> str:
    """Mutate one file of a copy of the example spec; load it (and run it when it loads)."""
    from engine.errors import EngineError, SpecErrors
    from engine.run.execute import execute
    from engine.spec import evaluation as spec

    folder = work / "spec"
    if "files" not in state:
        shutil.copytree(ROOT / "specs" / "example", folder)
        state["files"] = {p: p.read_text() for p in sorted(folder.rglob("*.yaml"))}
    files: dict[Path, str] = state["files"]
    for path, text in files.items():  # restore, then break one file
        path.write_text(text)
    target = rng.choice(sorted(files))
    broken = mutate_text(files[target], rng)
    if rng.random() < 0.1:  # sometimes the bytes, not the text
        data = bytearray(broken.encode())
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        target.write_bytes(bytes(data))
    else:
        target.write_text(broken)
    try:
        evaluations = spec.load([folder])
    except SpecErrors as exc:
        for problem in exc.problems:
            if not (problem.code and problem.code.isupper() and problem.line >= 1):
                raise Crash(f"uncoded or unlocated problem: {problem}") from None
        return "spec error"
    out = work / f"out-{rng.randrange(10**9)}"
    for evaluation in evaluations:
        try:
            execute(evaluation, out / evaluation.name)
        except EngineError:
            return "run refused"
    shutil.rmtree(out, ignore_errors=True)
    return "loaded and ran"


def fuzz_formula(rng: random.Random, work: Path, state: dict[str, Any]) -> str:
    """Compile a token soup (or a mutated valid formula) and evaluate it on random values."""
    from engine import FormulaError, compile_formula
    from engine.formula import ANY, NUMBER, evaluate

    if rng.random() < 0.3:
        source = mutate_text(rng.choice(["rate >= 0.9 and n >= 30", "min(x, y) * 2 <= cost",
                                         "coalesce(x, 0) + wilson_lower(3, 4) > 0.5"]), rng)
    else:
        source = " ".join(rng.choice(FORMULA_TOKENS) for _ in range(rng.randint(1, 14)))
    try:
        formula = compile_formula(source, {"x": ANY, "y": NUMBER, "n": NUMBER,
                                           "rate": NUMBER, "cost": NUMBER})
    except FormulaError as exc:
        if not exc.code.startswith("FORMULA_"):
            raise Crash(f"{source!r}: uncoded load error {exc.code}") from None
        return "refused at load"
    values = [None, 0, 1, -1, 0.5, 1e308, -0.0, "a", "", True, False, [1, 2], {"k": 1}]
    env = {"x": rng.choice(values), "y": rng.choice([0, 1, 2.5, 1e308, -3, None]),
           "n": rng.choice([0, 1, 30, None]), "rate": rng.choice([0.0, 0.9, 1.0, None]),
           "cost": rng.choice([0, 0.01, None])}
    try:
        value = evaluate(formula, env)
    except FormulaError as exc:
        if not exc.code.startswith("FORMULA_"):
            raise Crash(f"{source!r}: uncoded runtime error {exc.code}") from None
        return "refused at run"
    if isinstance(value, float) and not math.isfinite(value):
        raise Crash(f"{source!r} on {env}: non-finite result {value}")
    return "evaluated"


def fuzz_gates(rng: random.Random, work: Path, state: dict[str, Any]) -> str:
    """Mutate a valid discovery submission (structure or bytes) and run the local gates."""
    from engine.protocols.discovery import check_submission, load_corpus, load_protocol

    from .discovery_gates import build

    if "task" not in state:
        task, path, valid = build(work, seed=5, n=300)
        state["package"] = load_protocol(ROOT / "specs" / "finding-quality-discovery")
        state["task"], state["raw"] = task, valid
        state["corpus"] = load_corpus(path, task["corpus_sha256"], task["n_documents"])
    raw: bytes = state["raw"]
    if rng.random() < 0.3:
        data = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        mutated = bytes(data)
    else:
        submission = json.loads(raw)
        for _ in range(rng.randint(1, 3)):
            _mutate_value(submission, rng)
        mutated = json.dumps(submission).encode()
    result = check_submission(state["package"], state["task"], state["corpus"], mutated)
    if result["valid"]:
        return "valid"
    code = result["error"].get("code")
    if not (isinstance(code, str) and code.isupper()):
        raise Crash(f"gate failure without a code: {result['error']}")
    return "refused"


_ODD = [None, True, 0, -1, 1.5, 2**53, 1e308, "", "x", "\ud800", [], {}, [None], {"": 1},
        "doc-00001", "positive", "compound_association"]


def _mutate_value(value: Any, rng: random.Random) -> None:
    """Walk to a random place in a JSON value and replace, delete or add something."""
    while True:
        if isinstance(value, dict) and value:
            key = rng.choice(sorted(value))
            if rng.random() < 0.3 or not isinstance(value[key], dict | list):
                choice = rng.randrange(3)
                if choice == 0:
                    del value[key]
                elif choice == 1:
                    value[key] = copy.deepcopy(rng.choice(_ODD))
                else:
                    value[key + rng.choice(["", "_x"])] = copy.deepcopy(rng.choice(_ODD))
                return
            value = value[key]
        elif isinstance(value, list) and value:
            i = rng.randrange(len(value))
            if rng.random() < 0.3 or not isinstance(value[i], dict | list):
                choice = rng.randrange(3)
                if choice == 0:
                    del value[i]
                elif choice == 1:
                    value[i] = copy.deepcopy(rng.choice(_ODD))
                else:
                    value.insert(i, value[i])
                return
            value = value[i]
        else:
            return


def fuzz_records(rng: random.Random, work: Path, state: dict[str, Any]) -> str:
    """Mutate evidence that must FAIL and run it (``bench/fuzz_records.py``)."""
    from .fuzz_records import fuzz_records as target

    return target(rng, work, state)


TARGETS: dict[str, Callable[[random.Random, Path, dict[str, Any]], str]] = {
    "spec": fuzz_spec, "formula": fuzz_formula, "gates": fuzz_gates, "records": fuzz_records}


def run(cases: int, seed: int, targets: list[str]) -> dict[str, Any]:
    """Fuzz each target for ``cases`` inputs; returns counts of outcomes and the crashes."""
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in targets:
            rng = random.Random(f"{seed}-{name}")
            work = Path(tmp) / name
            work.mkdir()
            state: dict[str, Any] = {}
            outcomes: Counter[str] = Counter()
            crashes: list[str] = []
            passes: Counter[str] = Counter()  # mutations that gave a wrong PASS
            started = time.perf_counter()
            for _ in range(cases):
                try:
                    outcomes[TARGETS[name](rng, work, state)] += 1
                except WrongPass as exc:
                    outcomes["wrong PASS"] += 1
                    passes[str(exc)] += 1
                except Crash as exc:
                    outcomes["crash"] += 1
                    crashes.append(str(exc))
                except Exception:  # noqa: BLE001 - this is what a fuzzer looks for
                    outcomes["crash"] += 1
                    crashes.append(traceback.format_exc(limit=4))
            report[name] = {"cases": cases, "seconds": time.perf_counter() - started,
                            "outcomes": dict(outcomes), "crashes": crashes,
                            "wrong_passes": dict(passes)}
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz", description=__doc__)
    parser.add_argument("--cases", type=int, default=2000, help="inputs per target")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--targets", default="spec,formula,gates,records")
    args = parser.parse_args(argv)
    report = run(args.cases, args.seed, args.targets.split(","))
    for name, r in report.items():
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"].items()))
        print(f"{name}: {r['cases']} inputs in {r['seconds']:.1f} s: {outcomes}")
        for crash in r["crashes"][:5]:
            print("  CRASH:", crash)
        for mutations, count in sorted(r["wrong_passes"].items(), key=lambda kv: -kv[1]):
            print(f"  WRONG PASS x{count}: {mutations}")
    return 1 if any(r["crashes"] or r["wrong_passes"] for r in report.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
