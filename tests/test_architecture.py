"""The layout holds (docs/architecture.md): no import cycle, no protocol named in generic
code, a small top level, short functions, one HTTP client, and a protocol written outside
the engine plugs in through the tables alone."""

from __future__ import annotations

import ast
import json
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import protocols
from engine.cli import main

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"
PROTOCOL_WORDS = re.compile(r"assevra|discovery|agent.release.gate|release_gate|finding.quality",
                            re.I)


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in ENGINE.rglob("*.py")}


def _type_checking_only(tree: ast.Module) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for n in ast.walk(node)}
    return skip


def _imports(name: str, path: Path) -> Iterator[str]:
    """Every engine module ``name`` imports, at module level or inside a function."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:  # ``from pkg import module`` imports the module
                full = f"{base}.{alias.name}"
                yield full if full in MODULES else base


def _with_parents(module: str) -> Iterator[str]:
    """Importing ``engine.a.b`` runs ``engine/a/__init__.py`` first. ``engine`` itself is
    left out: it is always imported first, before any of its modules."""
    parts = module.split(".")
    for end in range(2, len(parts) + 1):
        yield ".".join(parts[:end])


def _graph() -> dict[str, set[str]]:
    return {name: {p for m in _imports(name, path) for p in _with_parents(m)
                   if p in MODULES and p != name and not name.startswith(p + ".")}
            for name, path in MODULES.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, or None (depth-first search with colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle() -> None:
    graph = _graph()
    assert "engine.records.formats" in graph and graph["engine.run.rows"]  # graph is real
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def _docstrings(tree: ast.Module) -> set[int]:
    """Strings that are statements of their own: docstrings, including a field's."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)}


def _names_in_code(path: Path) -> Iterator[tuple[int, str]]:
    """Identifiers, imported module names and string literals (docstrings and comments
    aside: those may cite a protocol document)."""
    tree = ast.parse(path.read_text())
    docs = _docstrings(tree)
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                id(node) not in docs:
            text = node.value
        elif isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        elif isinstance(node, ast.ImportFrom):
            text = node.module or ""
        elif isinstance(node, ast.alias):
            text = f"{node.name} {node.asname or ''}"
        if text is not None:
            yield getattr(node, "lineno", 0), text


def test_no_generic_module_names_a_protocol() -> None:
    generic = [p for p in ENGINE.rglob("*.py")
               if "protocols" not in p.relative_to(ENGINE).parts[:1]]
    assert len(generic) > 40
    found = [f"{p.relative_to(ROOT)}:{line}: {text!r}" for p in generic
             for line, text in _names_in_code(p) if PROTOCOL_WORDS.search(text)]
    assert found == []
    # the registry names the built-in plug-ins, and only by module path
    registry = [t for _, t in _names_in_code(ENGINE / "protocols" / "__init__.py")
                if PROTOCOL_WORDS.search(t)]
    assert sorted(registry) == sorted(protocols.BUILTIN)


def test_top_level_is_small_and_functions_are_short() -> None:
    top = sorted(p.name for p in ENGINE.glob("*.py"))
    assert len(top) <= 10, top
    long = []
    generated = {ENGINE / "reports" / "_scorecard_html.py"}  # jinja2's; tests check it
    for path in set(ENGINE.rglob("*.py")) - generated:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > 80:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} {lines}")
    assert long == []


def runs_code(tree: ast.AST) -> list[int]:
    """Lines that run Python made from text: ``exec(...)``, ``eval(...)`` (also as an
    attribute, ``builtins.exec``) and the built-in ``compile(source, name, "exec")``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else \
            func.attr if isinstance(func, ast.Attribute) else None
        mode = node.args[2] if len(node.args) > 2 else None
        if name in ("exec", "eval") or name == "compile" and isinstance(
                mode, ast.Constant) and mode.value in ("exec", "eval", "single"):
            found.append(node.lineno)
    return found


def test_the_engine_runs_no_exec_or_eval() -> None:
    """Formulas go through the allow-listed formula language (DESIGN.md section 5); nothing
    else is compiled from text at run time either (plan steps are closures, schema checks
    are generated at build time)."""
    found = [f"{path.relative_to(ROOT)}:{line}" for path in sorted(ENGINE.rglob("*.py"))
             for line in runs_code(ast.parse(path.read_text()))]
    assert found == []
    caught = "exec('1')\nbuiltins.eval('1')\ncompile('1', 'x', 'exec')\nre.compile('a')\n"
    assert runs_code(ast.parse(caught)) == [1, 2, 3]


def test_only_the_judge_package_speaks_http() -> None:
    users = sorted(str(p.relative_to(ENGINE)) for p in ENGINE.rglob("*.py")
                   if re.search(r"^\s*(import httpx|from httpx)", p.read_text(), re.M))
    assert users and all(u.startswith("judge/") for u in users), users


# A third protocol, written outside the engine: a CSV input format, an inspection type,
# a report and a subcommand. Nothing in engine/ changes for it.
PLUGIN = '''
import csv, json
from engine.inspections._base import PASS, FAIL, Outcome, Primitive
from engine.protocols import Command, Protocol, Report
from engine.records.formats import Format, Record

def read(path, digest=None):
    raw = path.read_bytes()
    if digest is not None:
        digest.update(raw)
    rows = csv.DictReader(raw.decode().splitlines())
    for line, row in enumerate(rows, start=2):
        yield Record(line, row)

def at_least(unit, params, ctx):
    ok = float(unit["score"]) >= params["floor"]
    return Outcome(PASS if ok else FAIL, expected={"at_least": params["floor"]},
                   observed=unit["score"])

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["floor"],
          "properties": {"floor": {"type": "number"}}}

def report(evaluation, tally):
    value = {"units": tally.records}
    return value, [("tally.json", json.dumps(value).encode())]

def count(args, evaluations):
    return 0, [f"{e.name}: {len(e.inputs)} input(s)" for e in evaluations]

PROTOCOL = Protocol(
    name="csv-scores",
    formats=(Format("csv-scores", read),),
    primitives={"score_at_least": Primitive(at_least, SCHEMA, "the score reaches a floor")},
    reports=(Report("csv-scores", report),),
    commands=(Command("count-inputs", "count inputs", lambda parser: None, count),),
)
'''

SPEC = {
    "evaluation.yaml": """
        apiVersion: specgate/v1
        kind: Evaluation
        metadata: {name: scores, version: 1.0.0}
        spec:
          policy: policy.yaml
          suite: suite.yaml
          inputs: {runs: {path: runs.csv, format: csv-scores}}
          units: {input: runs, id: id, case: case_id}
        """,
    "policy.yaml": """
        apiVersion: specgate/v1
        kind: Policy
        metadata: {name: scores, version: 1.0.0}
        spec:
          scoring_version: scores/1
          gate: {purpose: release, min_n: 1}
          report: csv-scores
          categories:
            quality: {threshold: 0.5, inspections: [good-score]}
          inspections:
            - {id: good-score, type: score_at_least, floor: 0.7}
        """,
    "suite.yaml": """
        apiVersion: specgate/v1
        kind: Suite
        metadata: {name: scores, version: 1.0.0}
        spec:
          cases: [{id: a}, {id: b}, {id: c}]
        """,
    "runs.csv": "id,case_id,score\nr1,a,0.9\nr2,b,0.8\nr3,c,0.1\n",
}


@pytest.fixture
def third_protocol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "csv_scores_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(protocols, "BUILTIN", (*protocols.BUILTIN, "csv_scores_plugin"))
    caches: list[Any] = [protocols.installed, protocols.formats, protocols.primitives,
                         protocols.compilers, protocols.reports, protocols.commands]
    for cached in caches:
        cached.cache_clear()
    spec = tmp_path / "scores"
    spec.mkdir()
    for name, text in SPEC.items():
        (spec / name).write_text(textwrap.dedent(text).lstrip())
    yield spec
    for cached in caches:
        cached.cache_clear()
    sys.modules.pop("csv_scores_plugin", None)


def test_a_third_protocol_plugs_in_through_the_tables(third_protocol: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    out = third_protocol.parent / "out"
    code = main(["run", str(third_protocol), "--out", str(out), "--json"])
    summary = json.loads(capsys.readouterr().out)
    # 2 of 3 scores reach 0.7: rate 0.667 >= 0.5, every suite case has its one run
    assert (code, summary["evaluations"][0]["decision"]) == (0, "PASS")
    card = json.loads((out / "scorecard.json").read_text())
    quality = card["categories"]["quality"]
    assert (quality["passed"], quality["n"]) == (2, 3)
    assert card["report"] == {"units": 3}
    assert json.loads((out / "tally.json").read_text()) == {"units": 3}
    assert main(["count-inputs", str(third_protocol)]) == 0
    assert capsys.readouterr().out == "scores: 1 input(s)\n"


def test_an_unknown_format_is_a_located_spec_error(third_protocol: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    protocols.installed.cache_clear()
    protocols.formats.cache_clear()
    evaluation = third_protocol / "evaluation.yaml"
    evaluation.write_text(evaluation.read_text().replace("format: csv-scores",
                                                         "format: csv-score"))
    assert main(["validate", str(third_protocol)]) == 2
    err = capsys.readouterr().err
    assert "evaluation.yaml:7:" in err and "BAD_VALUE" in err and "csv-scores" in err
