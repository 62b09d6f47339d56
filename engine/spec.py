"""Load, validate and link specs into runnable plans. Nothing runs before all of it is valid."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rfc8785

from . import _schema, _yaml
from ._compile import compile_checked_formula, compile_params, compile_selector
from .errors import Problem, SpecErrors, did_you_mean
from .formula import BOOLEAN, NUMBER, Formula
from .inspections import TABLE, Primitive
from .stats import DEFAULT_Z

COMMON_KEYS = {"id", "type", "description", "when"}


@dataclass
class Inspection:
    """One compiled inspection entry."""

    id: str
    type: str
    primitive: Primitive
    params: dict[str, Any]
    when: Any
    spec_path: str


@dataclass
class Category:
    """One category: a pass rate over the rows of its inspections."""

    name: str
    weight: float
    threshold: float | None
    minimum: float | None
    gate_on: str
    min_n: int
    required: bool
    inspections: list[str]
    spec_path: str


@dataclass
class Condition:
    """An extra gate condition: false fails, null is INCOMPLETE."""

    id: str
    formula: Formula
    message: str
    spec_path: str


@dataclass
class Policy:
    """A compiled Policy."""

    name: str
    version: str
    scoring_version: str
    purpose: str
    wilson_z: float
    categories: dict[str, Category]
    inspections: dict[str, Inspection]
    overall: Formula | None
    overall_threshold: float | None
    conditions: list[Condition]
    sha256: str


@dataclass
class Suite:
    """A compiled Suite: cases by id and how many trials each expects."""

    name: str
    version: str
    cases: dict[str, dict[str, Any]]
    trials: dict[str, int]
    sha256: str


@dataclass
class Input:
    """A named input of an Evaluation."""

    name: str
    path: Path
    format: str
    spec_path: str


@dataclass
class Evaluation:
    """Everything ``engine run`` needs for one Evaluation."""

    name: str
    version: str
    file: Path
    policy: Policy
    suite: Suite
    inputs: dict[str, Input]
    unit_input: str
    unit_id: Any
    unit_case: Any
    sha256: str


def digest(data: Any) -> str:
    """SHA-256 of the RFC 8785 canonical JSON of ``data``."""
    return hashlib.sha256(rfc8785.dumps(data)).hexdigest()


def display(path: Path) -> str:
    """A path as the user would like to read it: relative to the working folder if inside."""
    rel = os.path.relpath(path)
    return path.as_posix() if rel.startswith("..") else Path(rel).as_posix()


class _Loader:
    """Loads one spec tree; collects every problem instead of stopping at the first."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.problems: list[Problem] = []
        self.docs: dict[Path, _yaml.Document | None] = {}
        self.valid: dict[tuple[Path, str], _yaml.Document | None] = {}
        self.compiled: dict[str, Any] = {}  # file -> compiled Policy or Suite (or None)

    def compile(self, file: Path, kind: str) -> Any:
        """A checked Policy or Suite, compiled once however often it is referenced."""
        doc = self.checked(file, kind)
        if doc is None:
            return None
        if doc.file not in self.compiled:
            self.compiled[doc.file] = (_policy if kind == "Policy" else _suite)(self, doc)
        return self.compiled[doc.file]

    def read(self, file: Path) -> _yaml.Document | None:
        """Parse one file once (cached); envelope-check it."""
        file = file.resolve()
        if file in self.docs:
            return self.docs[file]
        name = display(file)
        doc = None
        try:
            text = file.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            self.problems.append(Problem(name, 1, 1, "BAD_ENCODING", "",
                                         f"not UTF-8 (byte {exc.start})"))
        except OSError as exc:
            self.problems.append(Problem(name, 1, 1, "FILE_UNREADABLE", "", exc.strerror or ""))
        else:
            doc, found = _yaml.parse(text.removeprefix("\ufeff"), name)
            self.problems.extend(found)
        self.docs[file] = doc
        return doc

    def kind(self, doc: _yaml.Document) -> str | None:
        data = doc.data
        return data.get("kind") if isinstance(data, dict) else None

    def checked(self, file: Path, kind: str) -> _yaml.Document | None:
        """The document in ``file`` if it is a valid ``kind`` spec; else record why not (once)."""
        if (file.resolve(), kind) not in self.valid:
            self.valid[file.resolve(), kind] = self._check(file, kind)
        return self.valid[file.resolve(), kind]

    def _check(self, file: Path, kind: str) -> _yaml.Document | None:
        doc = self.read(file)
        if doc is None:
            return None
        if self.kind(doc) != kind:
            self.problems.append(doc.problem(("kind",), "WRONG_KIND",
                                             f"expected a {kind} spec here"))
            return None
        found = _schema.problems(doc, _schema.validator(kind.lower()), doc.data)
        self.problems.extend(found)
        return None if found else doc

    def path(self, doc: _yaml.Document, where: _yaml.Path, rel: str) -> Path | None:
        """Resolve a spec path relative to its file; it must exist and stay inside the root."""
        if os.path.isabs(rel):
            self.problems.append(doc.problem(where, "PATH_ABSOLUTE",
                                             f"'{rel}' must be relative to the spec file"))
            return None
        target = (Path(doc.file).resolve().parent / rel).resolve()
        if not target.is_relative_to(self.root):
            self.problems.append(doc.problem(
                where, "PATH_ESCAPES_ROOT", f"'{rel}' leads outside the spec root",
                f"keep it under {display(self.root)}"))
            return None
        if not target.exists():
            self.problems.append(doc.problem(where, "FILE_NOT_FOUND", f"'{rel}' does not exist"))
            return None
        return target


def spec_files(path: Path) -> list[Path]:
    """The YAML files of a spec tree (or the one file given), sorted."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def load(paths: list[Path], overrides: dict[str, Path] | None = None) -> list[Evaluation]:
    """Every Evaluation found under ``paths``, compiled; SpecErrors lists all problems."""
    evaluations: list[Evaluation] = []
    problems: list[Problem] = []
    for path in paths:
        if not path.exists():
            problems.append(Problem(str(path), 1, 1, "FILE_NOT_FOUND", "",
                                    "no such file or folder"))
            continue
        loader = _Loader(path if path.is_dir() else path.parent)
        for file in spec_files(path):
            doc = loader.read(file)
            if doc is not None and loader.kind(doc) == "Evaluation":
                evaluation = _evaluation(loader, file, overrides or {})
                if evaluation is not None:
                    evaluations.append(evaluation)
            elif doc is not None and loader.kind(doc) in ("Policy", "Suite"):
                loader.compile(file, str(loader.kind(doc)))
            elif doc is not None and loader.kind(doc) is not None:
                loader.problems.append(doc.problem(("kind",), "UNKNOWN_KIND",
                                                   f"'{loader.kind(doc)}' is not a spec kind",
                                                   did_you_mean(str(loader.kind(doc)),
                                                                ["Policy", "Suite",
                                                                 "Evaluation"])))
        problems.extend(loader.problems)
    if problems:
        raise SpecErrors(problems)
    return evaluations


def _evaluation(loader: _Loader, file: Path, overrides: dict[str, Path]) -> Evaluation | None:
    doc = loader.checked(file, "Evaluation")
    if doc is None:
        return None
    spec = doc.data["spec"]
    before = len(loader.problems)
    policy_file = loader.path(doc, ("spec", "policy"), spec["policy"])
    suite_file = loader.path(doc, ("spec", "suite"), spec["suite"])
    policy = loader.compile(policy_file, "Policy") if policy_file else None
    suite = loader.compile(suite_file, "Suite") if suite_file else None
    inputs: dict[str, Input] = {}
    for name, decl in spec["inputs"].items():
        where = ("spec", "inputs", name, "path")
        target = overrides.get(name) or loader.path(doc, where, decl["path"])
        if target is not None:
            inputs[name] = Input(name, target, decl.get("format", "jsonl"),
                                 f"evaluation:spec.inputs.{name}")
    units = spec.get("units", {})
    unit_input = units.get("input") or (next(iter(spec["inputs"])) if len(spec["inputs"]) == 1
                                        else None)
    if unit_input is None or unit_input not in spec["inputs"]:
        loader.problems.append(doc.problem(
            ("spec", "units", "input") if units.get("input") else ("spec", "inputs"),
            "UNKNOWN_INPUT", "say which input's records are the units (spec.units.input)",
            did_you_mean(str(units.get("input")), spec["inputs"])))
    unit_id = compile_selector(doc, ("spec", "units", "id"), units.get("id", "id"),
                               loader.problems)
    unit_case = compile_selector(doc, ("spec", "units", "case"), units.get("case", "case_id"),
                                 loader.problems)
    if len(loader.problems) > before or policy is None or suite is None or unit_input is None:
        return None
    meta = doc.data["metadata"]
    return Evaluation(meta["name"], meta["version"], file, policy, suite, inputs, unit_input,
                      unit_id, unit_case, digest(doc.data))


def _suite(loader: _Loader, doc: _yaml.Document) -> Suite | None:
    spec, meta = doc.data["spec"], doc.data["metadata"]
    cases: dict[str, dict[str, Any]] = {}
    trials: dict[str, int] = {}
    for i, case in enumerate(spec["cases"]):
        if case["id"] in cases:
            loader.problems.append(doc.problem(("spec", "cases", i, "id"), "DUPLICATE_ID",
                                               f"case id '{case['id']}' is used twice"))
        cases[case["id"]] = case
        trials[case["id"]] = case.get("trials", spec.get("trials", 1))
    return Suite(meta["name"], meta["version"], cases, trials, digest(doc.data))


def _policy(loader: _Loader, doc: _yaml.Document) -> Policy | None:
    spec, meta = doc.data["spec"], doc.data["metadata"]
    before = len(loader.problems)
    gate = spec.get("gate", {})
    inspections = _inspections(loader, doc, spec["inspections"])
    categories: dict[str, Category] = {}
    used: set[str] = set()
    for name, cat in spec["categories"].items():
        where = ("spec", "categories", name)
        for j, ref in enumerate(cat["inspections"]):
            used.add(ref)
            if ref not in {i["id"] for i in spec["inspections"]}:
                loader.problems.append(doc.problem(
                    where + ("inspections", j), "UNKNOWN_INSPECTION_ID",
                    f"no inspection has id '{ref}'",
                    did_you_mean(ref, [i["id"] for i in spec["inspections"]])))
        gate_on = cat.get("gate_on", gate.get("gate_on", "point"))
        if gate_on == "wilson_lower" and cat.get("threshold") == 1:
            loader.problems.append(doc.problem(
                where + ("threshold",), "UNATTAINABLE_GATE",
                "the Wilson lower bound never reaches 1.0",
                "lower the threshold or use gate_on: point"))
        categories[name] = Category(name, cat.get("weight", 1), cat.get("threshold"),
                                    cat.get("minimum"), gate_on,
                                    cat.get("min_n", gate.get("min_n", 1)),
                                    cat.get("required", True), cat["inspections"],
                                    f"policy:spec.categories.{name}")
    for i, entry in enumerate(spec["inspections"]):
        if entry["id"] not in used:
            loader.problems.append(doc.problem(
                ("spec", "inspections", i, "id"), "UNUSED_INSPECTION",
                f"inspection '{entry['id']}' is in no category, so its rows would count nowhere"))
    overall, threshold = _overall(loader, doc, spec, categories)
    conditions = _conditions(loader, doc, spec, categories)
    if len(loader.problems) > before:
        return None
    return Policy(meta["name"], meta["version"], spec["scoring_version"],
                  gate.get("purpose", "release"),
                  spec.get("statistics", {}).get("wilson_z", DEFAULT_Z), categories, inspections,
                  overall, threshold, conditions, digest(doc.data))


def _inspections(loader: _Loader, doc: _yaml.Document,
                 entries: list[dict[str, Any]]) -> dict[str, Inspection]:
    out: dict[str, Inspection] = {}
    for i, entry in enumerate(entries):
        where: _yaml.Path = ("spec", "inspections", i)
        kind = entry["type"]
        if entry["id"] in out:
            loader.problems.append(doc.problem(where + ("id",), "DUPLICATE_ID",
                                               f"inspection id '{entry['id']}' is used twice"))
        primitive = TABLE.get(kind)
        if primitive is None:
            loader.problems.append(doc.problem(
                where + ("type",), "UNKNOWN_INSPECTION", f"'{kind}' is not a known type",
                did_you_mean(kind, TABLE)))
            continue
        params = {k: v for k, v in entry.items() if k not in COMMON_KEYS}
        found = _schema.problems(doc, _schema.validator_for(primitive.schema), params, where)
        loader.problems.extend(found)
        if found:
            continue
        compiled = compile_params(doc, where, primitive.schema, params, loader.problems,
                                  lambda rel, at: loader.path(doc, at, rel))
        when = (compile_selector(doc, where + ("when",), entry["when"], loader.problems)
                if "when" in entry else None)
        out[entry["id"]] = Inspection(entry["id"], kind, primitive, compiled, when,
                                      f"policy:spec.inspections[{i}]")
    return out


def _formula(loader: _Loader, doc: _yaml.Document, where: _yaml.Path, source: str,
             names: dict[str, str], want: str) -> Formula | None:
    formula: Formula | None = compile_checked_formula(doc, where, source, names, want,
                                                      loader.problems)
    return formula


def _overall(loader: _Loader, doc: _yaml.Document, spec: dict[str, Any],
             categories: dict[str, Category]) -> tuple[Formula | None, float | None]:
    block = spec.get("overall")
    if block is None:
        return None, None
    names = {name: NUMBER for name in categories} | {"weighted": NUMBER}
    source = block.get("formula", "weighted")
    formula = _formula(loader, doc, ("spec", "overall", "formula"), source, names, NUMBER)
    if "weighted" in (formula.names if formula else ()) and not any(
            c.weight > 0 for c in categories.values()):
        loader.problems.append(doc.problem(("spec", "overall"), "NO_WEIGHT",
                                           "the weighted score needs a category with weight > 0"))
    return formula, block.get("threshold")


def condition_names(categories: dict[str, Category]) -> dict[str, str]:
    """Names a policy condition may use: rates by category name, counts, and 'overall'."""
    names = {"overall": NUMBER, "weighted": NUMBER}
    for name in categories:
        names[name] = NUMBER
        for count in ("n", "passed", "failed", "errors"):
            names[f"{count}_{name}"] = NUMBER
    return names


def _conditions(loader: _Loader, doc: _yaml.Document, spec: dict[str, Any],
                categories: dict[str, Category]) -> list[Condition]:
    out = []
    names = condition_names(categories)
    derived = {"overall", "weighted"} | {f"{count}_{c}" for c in categories
                                          for count in ("n", "passed", "failed", "errors")}
    for name in sorted(set(categories) & derived):
        loader.problems.append(doc.problem(("spec", "categories", name), "NAME_CLASH",
                                           f"category '{name}' clashes with a formula name",
                                           key=True))
    for i, cond in enumerate(spec.get("conditions", [])):
        where = ("spec", "conditions", i, "formula")
        formula = _formula(loader, doc, where, cond["formula"], names, BOOLEAN)
        if formula is not None:
            out.append(Condition(cond["id"], formula, cond.get("message", ""),
                                 f"policy:spec.conditions[{i}]"))
    return out
