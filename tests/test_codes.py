"""The code table (engine/codes.py) against the codes the source can emit, read with ``ast``.

A code is collected where the source hands it over as a code: the ``code`` argument (by
position or keyword) of any class or function whose parameter or field is named ``code`` or
``*_code`` (so Problem, Reason, Outcome, EngineError and its subclasses, IntegrityError,
``doc.problem``, ``Verdict.add`` ... and any such callable added later), a class attribute
``code = "..."``, an assignment to a variable named ``code``, a module constant whose name
says it holds codes (``REASON_CODES``, ``RECORD_PROBLEMS``), a ``CODE: message`` prefix
in a printed string, and ``code``/``codes``/``reason_codes`` values in shipped YAML.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

import yaml

from engine.codes import Code, table

from .conftest import ROOT

CODE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{4,}")
PREFIX = re.compile(r"(?:^|: )([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+): ")
STAGES = {"spec", "records", "inspection", "judge", "run", "decide", "evidence", "verify",
          "cli", "protocol:agent-release-gate", "protocol:finding-quality-discovery"}
# Upper-case words in the source that are not codes: row statuses, decisions, category
# states, validation classes, environment variables, a PII entity and a set name.
NOT_CODES = {"PASS", "FAIL", "ERROR", "ABSTAIN", "SKIPPED", "WAIVED", "INCOMPLETE", "TRIAGE",
             "SELF_TEST", "MISSING", "NOT_INCLUDED", "NOT_MET", "LABELED", "UNLABELED",
             "INVALID", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SPECGATE_CACHE_KEY",
             "SPECGATE_SIGNING_KEY", "RAY_ADDRESS", "XDG_CONFIG_HOME", "EMAIL_ADDRESS",
             "CORPUS",
             # engine.judge's lazily resolved names
             "ALIASES", "DEFAULT_KEYS", "DEFAULT_URLS", "PROVIDERS",
             "POSSESSIVE_REPEAT",  # a name in the re module's parser (inspections/_prefilter.py)
             "AGENT", "TOOL",  # OpenInference span kinds (records/otel/openinference.py)
             "UNSET",  # OTLP status of a call read from output messages (records/otel/runs.py)
             "POST",  # the HTTP method (judge/_transport.py)
             "OFFLINE",  # engine.spec.schema's lazily made registry
             "PLAIN", "SHIPPED", "STRICT",  # tables of the generated schema checks (_checks.py)
             # an SLSA Verification Summary's verificationResult and verifiedLevels values
             "PASSED", "FAILED", "SPECGATE_GATE_PASSED"}


CODES = table()


def _is_code_name(name: str) -> bool:
    return name == "code" or name.endswith("_code")


def _trees(root: Path = ROOT / "engine") -> dict[str, ast.Module]:
    return {str(p.relative_to(ROOT)): ast.parse(p.read_text(), str(p))
            for p in sorted(root.rglob("*.py")) if p.name != "codes.py"}  # the tables


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _consts(node: ast.AST | None) -> Iterator[str]:
    """Code-shaped strings a value expression can evaluate to."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
            CODE.fullmatch(node.value):
        yield node.value
    elif isinstance(node, ast.IfExp):
        yield from _consts(node.body)
        yield from _consts(node.orelse)
    elif isinstance(node, ast.BoolOp):
        for value in node.values:
            yield from _consts(value)


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    names = [a.arg for a in node.args.posonlyargs + node.args.args]
    return names[1:] if names[:1] in (["self"], ["cls"]) else names


def code_takers(trees: dict[str, ast.Module]) -> dict[str, set[int]]:
    """Callable name -> positions of its code parameter (-1: keyword only)."""
    takers: dict[str, set[int]] = {}
    bases: dict[str, list[str]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                owner = node.name
                spots = {i for i, a in enumerate(_params(node)) if _is_code_name(a)}
                spots |= {-1 for a in node.args.kwonlyargs if _is_code_name(a.arg)}
                if spots and owner != "__init__":
                    takers.setdefault(owner, set()).update(spots)
            elif isinstance(node, ast.ClassDef):
                bases[node.name] = [n for b in node.bases if (n := _name(b))]
                fields = [s.target.id for s in node.body
                          if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
                init = [s for s in node.body
                        if isinstance(s, ast.FunctionDef) and s.name == "__init__"]
                names = _params(init[0]) if init else fields
                spots = {i for i, a in enumerate(names) if _is_code_name(a)}
                if spots:
                    takers.setdefault(node.name, set()).update(spots)
    changed = True
    while changed:  # a subclass without its own __init__ takes its base's code position
        changed = False
        for cls, parents in bases.items():
            for parent in parents:
                if parent in takers and cls not in takers:
                    takers[cls] = set(takers[parent])
                    changed = True
    return takers


def _call_codes(node: ast.Call, takers: dict[str, set[int]]) -> Iterator[str]:
    spots = takers.get(_name(node.func) or "", set())
    if not spots:
        return
    starred = next((i for i, a in enumerate(node.args) if isinstance(a, ast.Starred)), None)
    for i, arg in enumerate(node.args):
        if i in spots or (starred is not None and i > starred):
            yield from _consts(arg)
    for keyword in node.keywords:
        if keyword.arg and _is_code_name(keyword.arg):
            yield from _consts(keyword.value)


def _assigned_codes(node: ast.Assign, module_level: bool) -> Iterator[str]:
    for target in node.targets:
        if isinstance(target, ast.Name) and _is_code_name(target.id):
            yield from _consts(node.value)
        elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
            for t, v in zip(target.elts, node.value.elts, strict=False):
                if isinstance(t, ast.Name) and _is_code_name(t.id):
                    yield from _consts(v)
        elif module_level and isinstance(target, ast.Name) and \
                re.search(r"CODES|PROBLEMS", target.id):
            for inner in ast.walk(node.value):
                yield from _consts(inner)


def emitted(trees: dict[str, ast.Module]) -> dict[str, set[str]]:
    """Code -> files that hand it over as a code."""
    takers = code_takers(trees)
    found: dict[str, set[str]] = {}
    for file, tree in trees.items():
        top = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            codes: list[str] = []
            if isinstance(node, ast.Call):
                codes += _call_codes(node, takers)
            elif isinstance(node, ast.Assign):
                codes += _assigned_codes(node, id(node) in top)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                codes += PREFIX.findall(node.value)
            for code in codes:
                found.setdefault(code, set()).add(file)
    return found


def _yaml_codes(value: object, key: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            if key in ("codes", "reason_codes") and isinstance(v, str):
                yield v
            yield from _yaml_codes(v, str(k))
    elif isinstance(value, list):
        for item in value:
            yield from _yaml_codes(item, key)
    elif key == "code" and isinstance(value, str):
        yield value


def _schema_codes(value: object) -> Iterator[str]:
    """``x-code`` annotations: the code a JSON Schema gives a key's problems."""
    if isinstance(value, dict):
        if isinstance(value.get("x-code"), str):
            yield value["x-code"]
        for item in value.values():
            yield from _schema_codes(item)
    elif isinstance(value, list):
        for item in value:
            yield from _schema_codes(item)


def yaml_codes() -> set[str]:
    """Codes the shipped spec data and the engine's JSON Schemas make the engine emit
    (gate codes, renamed reasons, ``x-code`` on a schema key)."""
    out: set[str] = set()
    for path in sorted((ROOT / "specs").rglob("*.yaml")):
        out.update(_yaml_codes(yaml.safe_load(path.read_text())))
    for path in sorted((ROOT / "engine").rglob("*.schema.json")):
        out.update(_schema_codes(json.loads(path.read_text())))
    return out


def literals(trees: dict[str, ast.Module]) -> set[str]:
    """Every code-shaped string constant, outside ``__all__`` and argparse metavars."""
    skip: set[int] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(_name(t) == "__all__" for t in node.targets):
                skip.update(id(n) for n in ast.walk(node.value))
            if isinstance(node, ast.keyword) and node.arg == "metavar":
                skip.add(id(node.value))
    return {n.value for tree in trees.values() for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and CODE.fullmatch(n.value) and id(n) not in skip}


def test_every_emitted_code_is_in_the_table() -> None:
    found = emitted(_trees())
    assert len(found) > 150  # the collector sees the engine's codes, not an empty tree
    missing = {code: sorted(files) for code, files in found.items() if code not in CODES}
    assert not missing, f"codes emitted but not in engine/codes.py: {missing}"
    assert not yaml_codes() - set(CODES), "spec data emits codes engine/codes.py lacks"


def test_every_code_shaped_literal_is_a_code_or_a_known_word() -> None:
    unknown = literals(_trees()) - set(CODES) - NOT_CODES
    assert not unknown, f"upper-case strings that look like codes: {sorted(unknown)}; add " \
                        "them to engine/codes.py (or to NOT_CODES here if they are not codes)"
    assert not NOT_CODES & set(CODES)


def test_every_table_code_is_emitted_somewhere() -> None:
    trees = _trees()
    words = literals(trees)
    source = set(emitted(trees)) | yaml_codes() | words
    lower = {n.value for tree in trees.values() for n in ast.walk(tree)
             if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    # PENDING_REVIEW and UNRESOLVED are task statuses the discovery inspection upper-cases
    stale = [c for c in CODES if c not in source and c.lower() not in lower]
    assert not stale, f"engine/codes.py lists codes nothing emits: {stale}"


def test_table_rows_are_well_formed() -> None:
    for code, row in CODES.items():
        assert CODE.fullmatch(code), code
        assert isinstance(row, Code) and row.meaning and "\n" not in row.meaning, code
        assert set(row.stage.split(", ")) <= STAGES, (code, row.stage)
        assert set(row.exit.split(" or ")) <= {"0", "1", "2", "3", "4", "-"}, (code, row.exit)


def test_every_code_is_in_the_reference() -> None:
    text = (ROOT / "docs" / "reference.md").read_text()
    rows = set(re.findall(r"^\| `([A-Z0-9_]+)` \|", text, re.MULTILINE))
    assert set(CODES) <= rows, sorted(set(CODES) - rows)


def test_a_new_code_without_a_table_row_is_caught(tmp_path: Path) -> None:
    """The collector finds a code added in any of the usual ways, even through a new class."""
    source = '''
from engine.errors import EngineError, Problem, UsageError
class NewError(EngineError):
    pass
def a(): raise UsageError("bad", "NEW_USAGE_CODE")
def b(doc): return doc.problem(("spec",), "NEW_SPEC_CODE", "message")
def c(): return Problem("f", 1, 1, "NEW_PROBLEM_CODE", "", "m")
def d(): return Outcome(ERROR, code="NEW_ROW_CODE")
def e(): raise NewError("m", "NEW_SUBCLASS_CODE")
def f(): raise IntegrityError("NEW_INTEGRITY_CODE", "m")
def g(): return Reason(FAIL, "NEW_REASON_CODE", "policy:spec", "m")
def h(x): code = "NEW_VARIABLE_CODE" if x else "BAD_VALUE"
'''
    trees = {**_trees(), "new.py": ast.parse(source)}
    found = set(emitted(trees)) - set(CODES)
    assert found == {"NEW_USAGE_CODE", "NEW_SPEC_CODE", "NEW_PROBLEM_CODE", "NEW_ROW_CODE",
                     "NEW_SUBCLASS_CODE", "NEW_INTEGRITY_CODE", "NEW_REASON_CODE",
                     "NEW_VARIABLE_CODE"}
