"""Load, validate and link specs into runnable plans. Nothing runs before all of it is valid."""

# Category, Condition, Inspection and Policy live in _policy; they are part of this module's
# vocabulary, so they are re-exported here.

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import folders
from engine.canonical import digest
from engine.errors import PathTooDeep, Problem, SpecErrors, did_you_mean, sort_problems
from engine.judge import ALIASES, DEFAULT_KEYS, DEFAULT_URLS, JudgeConfig, Member, parse_member
from engine.records import formats
from engine.records.clip import clip
from engine.spec import crossrefs, expectations, opened, salvage
from engine.spec import schema as _schema
from engine.spec import yaml as _yaml
from engine.spec.compile import compile_selector
from engine.spec.policy import Category, Condition, Inspection, Policy, compile_policy


@dataclass
class Suite:
    """A compiled Suite: cases by id and how many trials each expects."""

    name: str
    """``metadata.name`` of the Suite file (``EVALUATION-cases`` for a derived suite)."""
    version: str
    """``metadata.version`` of the Suite file (``derived`` for a derived suite)."""
    cases: dict[str, dict[str, Any]]
    """Cases by id: inputs and expectations (never measured outputs)."""
    trials: dict[str, int]
    """Case id -> how many runs the case expects."""
    sha256: str
    """The suite hash: digest of the parsed Suite file ('' when derived from the records)."""
    derived: bool = False
    """Cases and digest come from the records (their format derives the suite)."""
    from_evidence: bool = False
    """... and those records are written by the evaluated party (a release needs a pin)."""


@dataclass
class Input:
    """A named input of an Evaluation."""

    name: str
    """The key under ``spec.inputs``."""
    path: Path
    """The file or folder read, resolved (``--input NAME=PATH`` may rebind it)."""
    format: str
    """The input format's name in the format table (default ``jsonl``)."""
    spec_path: str
    """Where it is declared: ``evaluation:spec.inputs.NAME``."""
    options: dict[str, Any] = field(default_factory=dict)
    """``options``: how the format reads it (keyword arguments of its reader)."""
    attestation_keys: list[Path] | None = None
    """``attestation.trusted_keys``: the harness keys whose attestation of these exact
    bytes a release needs; None when the Evaluation requires none."""


@dataclass
class Evaluation:
    """Everything ``engine run`` needs for one Evaluation."""

    name: str
    """``metadata.name``."""
    version: str
    """``metadata.version``."""
    file: Path
    """The Evaluation file."""
    policy: Policy
    """The compiled Policy it names."""
    suite: Suite
    """The compiled Suite it names (or the one its records derive)."""
    inputs: dict[str, Input]
    """Named inputs, by name."""
    unit_input: str
    """The input whose records are the units inspections run on."""
    unit_id: Any
    """Compiled selector of a unit's id (``units.id``, default ``id``)."""
    unit_case: Any
    """Compiled selector of a unit's suite case (``units.case``, default ``case_id``)."""
    sha256: str
    """Digest of the parsed Evaluation file."""
    unit_trace: Any = None
    """Compiled selector of a unit's trace id for findings (``units.trace``), display only."""
    baseline: Path | None = None
    """``history.baseline``: the scorecard to compare with (it may not exist yet)."""
    trusted_keys: list[Path] = field(default_factory=list)
    """``history.trusted_keys``: public keys a baseline's signature must verify against."""
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    """The judge to ask (provider, endpoint, model, panel), after command-line overrides."""
    as_of: str = ""
    """The UTC date waivers are judged on (set by the command line)."""
    as_of_requested: str = ""
    """The date asked for with ``--as-of`` ("" when none was: a release never goes back
    before today, nor before the signed times it rests on: engine/run/clock.py)."""
    as_of_clock: str = ""
    """The runner's clock as read when the run began (its UTC date), recorded as is."""
    suite_pin: str | None = None
    """``spec.suite_sha256``: the suite governance approved, or None."""
    baseline_pin: str | None = None
    """``history.baseline_sha256``: the baseline scorecard governance approved, or None."""
    judge_overridden: bool = False
    """The command line chose another live judge than the Evaluation declares."""
    root: Path | None = None
    """The spec path as given to ``engine run``, so a worker can reload the Evaluation."""
    overrides: dict[str, Path] = field(default_factory=dict)
    """The ``--input`` overrides it was loaded with, for the same reason."""
    warnings: list[Problem] = field(default_factory=list)
    """What ``engine validate`` and ``engine run`` warn about (an even-sized judge panel,
    the policy's warnings); never an error."""
    calibration: Path | None = None
    """``judge.calibration``: the signed calibration.json the judge is held to (it may not
    exist yet: a missing artifact is a status, not an error)."""
    calibration_keys: list[Path] = field(default_factory=list)
    """``judge.calibration_keys``: the only public keys that vouch for a calibration."""
    calibration_sha256: str | None = None
    """The SHA-256 of the calibration's bytes as the Evaluation loaded them (None: it did
    not exist then). Read while loading, the artifact is a subject of a governance-signed
    spec bundle, and the run uses only these bytes: one put back later is not governance's
    current calibration."""
    spec_files: dict[str, Path] = field(default_factory=dict)
    """Every file loading this Evaluation opened (its own, policy, suite, data files,
    schemas, rubrics, prompts, trust-anchor keys), by its path relative to the Evaluation's
    folder: what a governance bundle signs (engine/spec/opened.py)."""
    spec_sha256: dict[str, str] = field(default_factory=dict)
    """The SHA-256 of each of ``spec_files`` as loaded (hashed right after loading; ""
    when the file hashed is not the one the loader opened: replaced or written meanwhile)."""
    anchor_pem: dict[str, bytes] = field(default_factory=dict)
    """The bytes of each trusted public key file as loaded (and hashed with the specs), by
    path: the run uses these, so a key file swapped after loading changes nothing."""
    spec_identity: dict[str, Any] = field(default_factory=dict)
    """Each of ``spec_files``' identity when hashed (opened.identity), checked again before
    the decision."""


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
        self.fallback: Path | None = None  # a folder to look in for files not beside a spec
        self.borrowed: list[str] = []  # relative paths found there instead
        self.opened: dict[Any, opened.Opened] = {}  # memoised step -> the files it opened

    def _memo(self, key: Any, table: dict[Any, Any], compute: Any) -> Any:
        """``table[key]``, computed once; a later use replays the files the computation
        opened, so each Evaluation's recording holds all it rests on (opened.py)."""
        if key in table:
            opened.replay(self.opened.get(key, opened.Opened()))
            return table[key]
        with opened.recording() as paths:
            table[key] = compute()
        self.opened[key] = paths
        return table[key]

    def compile(self, file: Path, kind: str) -> Any:
        """A checked Policy or Suite, compiled once however often it is referenced."""
        doc = self.checked(file, kind)
        if doc is None:
            return None
        return self._memo(("compile", doc.file), self.compiled, lambda: (
            compile_policy if kind == "Policy" else _suite)(self, doc))

    def read(self, file: Path) -> _yaml.Document | None:
        """Parse one file once (cached); envelope-check it."""
        file = file.resolve()
        return self._memo(("read", file), self.docs, lambda: self._read(file))

    def _read(self, file: Path) -> _yaml.Document | None:
        name = display(file)
        doc = None
        try:
            text = opened.read_bytes(file).decode("utf-8")
        except UnicodeDecodeError as exc:
            self.problems.append(Problem(name, 1, 1, "BAD_ENCODING", "",
                                         f"not UTF-8 (byte {exc.start})"))
        except OSError as exc:
            self.problems.append(Problem(name, 1, 1, "FILE_UNREADABLE", "", exc.strerror or ""))
        else:
            doc, found = _yaml.parse(text.removeprefix("\ufeff"), name)
            self.problems.extend(found)
        return doc

    def kind(self, doc: _yaml.Document) -> str | None:
        data = doc.data
        return data.get("kind") if isinstance(data, dict) else None

    def checked(self, file: Path, kind: str) -> _yaml.Document | None:
        """The document in ``file`` if it is a valid ``kind`` spec; else record why not (once)."""
        key = (file.resolve(), kind)
        return self._memo(("checked", *key), self.valid, lambda: self._check(file, kind))

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
        if found and kind == "Policy":  # not compiled: say now what its formulas would
            self.problems.extend(salvage.formula_problems(doc, found))
        return None if found else doc

    def path(self, doc: _yaml.Document, where: _yaml.Path, rel: str) -> Path | None:
        """Resolve a spec path relative to its file; it must exist and stay inside the root."""
        if os.path.isabs(rel):
            self.problems.append(doc.problem(where, "PATH_ABSOLUTE",
                                             f"'{rel}' must be relative to the spec file"))
            return None
        try:
            target = (Path(doc.file).resolve().parent / rel).resolve()
            escapes, exists = not target.is_relative_to(self.root), target.exists()
        except (OSError, ValueError) as exc:  # a name too long, a NUL byte, a loop
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            self.problems.append(doc.problem(where, "BAD_PATH",
                                             f"'{clip(rel)}' is not a usable path: {why}"))
            return None
        if escapes:
            self.problems.append(doc.problem(
                where, "PATH_ESCAPES_ROOT", f"'{rel}' leads outside the spec root",
                f"keep it under {display(self.root)}"))
            return None
        if not exists and self.fallback is not None:
            other = (self.fallback / rel).resolve()
            if other.is_relative_to(self.fallback) and other.exists():
                self.borrowed.append(rel)
                return other
        if not exists:
            self.problems.append(doc.problem(where, "FILE_NOT_FOUND", f"'{rel}' does not exist"))
            return None
        return target


def spec_files(path: Path) -> list[Path]:
    """The YAML files of a spec tree (or the one file given), sorted."""
    if path.is_file():
        return [path]
    try:  # a link to a file is read (then held to the root), a link to a folder is not
        return [p for p in folders.paths(path) if p.suffix in (".yaml", ".yml") and p.is_file()]
    except PathTooDeep as exc:
        raise SpecErrors([Problem(str(path), 1, 1, exc.code, "", str(exc))]) from None


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
                    evaluation.root, evaluation.overrides = path, dict(overrides or {})
                    evaluations.append(evaluation)
            elif doc is not None and loader.kind(doc) in ("Policy", "Suite"):
                loader.compile(file, str(loader.kind(doc)))
            elif doc is not None and loader.kind(doc) == "PolicyTest":
                _policy_test(loader, file)
            elif doc is not None and loader.kind(doc) is not None:
                loader.problems.append(doc.problem(("kind",), "UNKNOWN_KIND",
                                                   f"'{loader.kind(doc)}' is not a spec kind",
                                                   did_you_mean(str(loader.kind(doc)),
                                                                ["Policy", "Suite",
                                                                 "Evaluation",
                                                                 "PolicyTest"])))
        problems.extend(loader.problems)
    if problems:
        raise SpecErrors(problems)
    return evaluations


def load_policy(path: Path) -> Policy:
    """One Policy file, compiled on its own (its data files resolve beside it)."""
    return load_policy_from(path)[0]


def load_policy_from(path: Path, fallback: Path | None = None) -> tuple[Policy, list[str]]:
    """One Policy file, compiled on its own; a data file not beside it is looked for in
    ``fallback`` (say, an old policy kept outside the tree, ``git show``'d), and the
    relative paths found there are returned with it."""
    loader = _Loader(path.parent)
    loader.fallback = fallback.resolve() if fallback is not None else None
    policy = loader.compile(path, "Policy") if path.is_file() else None
    if loader.problems or policy is None:
        raise SpecErrors(loader.problems or [Problem(str(path), 1, 1, "FILE_NOT_FOUND", "",
                                                     "no such Policy file")])
    return policy, sorted(set(loader.borrowed))


def with_policy(evaluation: Evaluation, policy: Policy) -> Evaluation:
    """The Evaluation under another Policy (``engine diff``), whose expectation defaults
    read the suite as the Evaluation's own Policy's do when the records are not the suite."""
    if not evaluation.suite.derived:
        policy = expectations.pointed_at_suite(policy)
    return dataclasses.replace(evaluation, policy=policy)


@dataclass
class PolicyTest:
    """A checked PolicyTest: its file, data, compiled Policy, the Evaluation its record-level
    cases run through (None when it names none), and each case's records file, resolved."""

    file: Path
    data: dict[str, Any]
    policy: Policy
    evaluation: Evaluation | None = None
    records_files: dict[int, Path] = field(default_factory=dict)


def load_policy_tests(paths: list[Path]) -> list[PolicyTest]:
    """Every PolicyTest under ``paths`` with its compiled Policy; SpecErrors if any is bad."""
    out: list[PolicyTest] = []
    problems: list[Problem] = []
    for path in paths:
        loader = _Loader(path if path.is_dir() else path.parent)
        for file in spec_files(path):
            doc = loader.read(file)
            if doc is None or loader.kind(doc) != "PolicyTest":
                continue
            found = _policy_test(loader, file)
            if found is not None:
                out.append(found)
        problems.extend(loader.problems)
    if problems:
        raise SpecErrors(problems)
    return out


def _policy_test(loader: _Loader, file: Path) -> PolicyTest | None:
    """A PolicyTest with its compiled Policy (and Evaluation, when it names one), the names
    it takes from them checked."""
    checked = loader.checked(file, "PolicyTest")
    if checked is None:
        return None
    spec = checked.data["spec"]
    target = loader.path(checked, ("spec", "policy"), spec["policy"])
    policy = loader.compile(target, "Policy") if target else None
    if policy is None:
        return None
    evaluation = None
    if "evaluation" in spec:
        where = loader.path(checked, ("spec", "evaluation"), spec["evaluation"])
        evaluation = _evaluation(loader, where, {}) if where else None
        if evaluation is None:
            return None
        if evaluation.policy is not policy:
            loader.problems.append(checked.problem(
                ("spec", "evaluation"), "TEST_POLICY_MISMATCH",
                f"the Evaluation's policy is '{evaluation.policy.name}' from another file, "
                f"not the policy under test '{policy.name}' ({spec['policy']})",
                "name an Evaluation whose spec.policy is the file spec.policy names"))
    files = {}
    for i, case in enumerate(spec["cases"]):
        if "records_file" in case["given"]:
            found = loader.path(checked, ("spec", "cases", i, "given", "records_file"),
                                case["given"]["records_file"])
            if found is not None:
                files[i] = found
    loader.problems.extend(crossrefs.policy_test(checked, policy, evaluation))
    return PolicyTest(file, checked.data, policy, evaluation, files)


def _evaluation(loader: _Loader, file: Path, overrides: dict[str, Path]) -> Evaluation | None:
    """One Evaluation, compiled, with every file its loading opened (``spec_files``)."""
    with opened.recording() as paths:
        evaluation = _compile_evaluation(loader, file, overrides)
        if evaluation is not None:
            for key in _anchors(evaluation):  # read now, hashed with the specs, and used
                _keep(evaluation, key)          # from memory: never read again at run time
    if evaluation is not None:
        evaluation.spec_files = _spec_files(evaluation, set(paths), loader.root)
        for name, path in evaluation.spec_files.items():
            sha, now = opened.loaded(path, paths)
            evaluation.spec_sha256[name], evaluation.spec_identity[name] = sha, now
    return evaluation


def _anchors(evaluation: Evaluation) -> list[Path]:
    """The public keys the Evaluation trusts: baselines, calibrations, attestations."""
    keys = [*evaluation.trusted_keys, *evaluation.calibration_keys]
    for source in evaluation.inputs.values():
        keys += source.attestation_keys or []
    return keys


def _keep(evaluation: Evaluation, path: Path) -> None:
    try:
        evaluation.anchor_pem[str(path)] = opened.read_bytes(path)
    except OSError:
        pass  # the run says what is wrong with a key it cannot read


def _spec_files(evaluation: Evaluation, paths: set[str], root: Path) -> dict[str, Path]:
    """The recorded files that are the Evaluation's specs: regular files in the spec root,
    never an input (evidence), named relative to the Evaluation's folder."""
    inputs = [source.path for source in evaluation.inputs.values()]
    home = evaluation.file.resolve().parent
    out: dict[str, Path] = {}
    for name in sorted(paths):
        path = Path(name)
        try:
            if not path.is_relative_to(root) or not path.is_file():
                continue
        except OSError:
            continue
        if any(path == p or path.is_relative_to(p) for p in inputs):
            continue
        out[Path(os.path.relpath(path, home)).as_posix()] = path
    return out


def _compile_evaluation(loader: _Loader, file: Path,
                        overrides: dict[str, Path]) -> Evaluation | None:
    doc = loader.checked(file, "Evaluation")
    if doc is None:
        return None
    spec = doc.data["spec"]
    before = len(loader.problems)
    policy_file = loader.path(doc, ("spec", "policy"), spec["policy"])
    suite_file = loader.path(doc, ("spec", "suite"), spec["suite"]) if "suite" in spec else None
    policy = loader.compile(policy_file, "Policy") if policy_file else None
    suite = loader.compile(suite_file, "Suite") if suite_file else None
    inputs = _inputs(loader, doc, overrides)
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
    unit_trace = compile_selector(doc, ("spec", "units", "trace"),
                                  units.get("trace", "trace_id"), loader.problems)
    history = spec.get("history", {})
    baseline = None
    if "baseline" in history:  # may not exist yet: a missing baseline is a status, not an error
        _unlinked(loader, doc, ("spec", "history", "baseline"), history["baseline"])
        baseline = (Path(doc.file).resolve().parent / history["baseline"]).resolve()
        if not baseline.is_relative_to(loader.root):
            loader.problems.append(doc.problem(("spec", "history", "baseline"),
                                               "PATH_ESCAPES_ROOT",
                                               f"'{history['baseline']}' leads outside the "
                                               "spec root", "use --baseline for other places"))
    calibration, calibration_sha = _calibration(loader, doc, spec.get("judge") or {})
    calibrators = [_anchor(loader, doc, ("spec", "judge", "calibration_keys", i), rel)
                   for i, rel in enumerate((spec.get("judge") or {}).get("calibration_keys",
                                                                         []))]
    keys = [_anchor(loader, doc, ("spec", "history", "trusted_keys", i), rel)
            for i, rel in enumerate(history.get("trusted_keys", []))]
    judge, warnings = _judge_config(loader, doc, spec.get("judge"))
    _correction_calibrated(loader, doc, policy, judge, calibration, calibrators)
    unit_format = _unit_format(loader, doc, spec, unit_input)
    if "suite" not in spec and unit_format is not None:
        if unit_format.suite is not None:
            suite = Suite(f"{doc.data['metadata']['name']}-cases", "derived", {}, {}, "",
                          derived=True, from_evidence=unit_format.suite == "evidence")
        else:
            deriving = [n for n in formats.names() if formats.named(n).suite]
            loader.problems.append(doc.problem(
                ("spec",), "MISSING_KEY", "'suite' is required here",
                "only these input formats derive the suite from their records: "
                + ", ".join(deriving)))
    if policy is not None and suite is not None and policy_file and (
            not suite.derived or suite.from_evidence):
        policy_doc = loader.checked(policy_file, "Policy")
        if policy_doc is not None:
            fmt = inputs[unit_input].format if unit_input in inputs else "unit"
            if not suite.derived:
                loader.problems.extend(crossrefs.waiver_scopes(policy_doc, suite.cases,
                                                               suite.name))
                # the records are not the suite: expectations come from the policy or the
                # suite, and so do the guards that choose which units a rule applies to
                policy = expectations.pointed_at_suite(policy)
            found = expectations.from_evidence(
                policy_doc, policy, fmt, unit_format if suite.derived else None)
            (loader.problems if policy.purpose == "release" else warnings).extend(found)
    if len(loader.problems) > before or policy is None or suite is None or unit_input is None:
        return None
    meta = doc.data["metadata"]
    return Evaluation(meta["name"], meta["version"], file, policy, suite, inputs, unit_input,
                      unit_id, unit_case, digest(doc.data), unit_trace, baseline,
                      [k for k in keys if k is not None], judge,
                      suite_pin=spec.get("suite_sha256"),
                      warnings=sort_problems([*policy.warnings, *warnings]),
                      baseline_pin=history.get("baseline_sha256"),
                      calibration=calibration, calibration_sha256=calibration_sha,
                      calibration_keys=[k for k in calibrators if k is not None])


def _correction_calibrated(loader: _Loader, doc: _yaml.Document, policy: Policy | None,
                           judge: JudgeConfig, calibration: Path | None,
                           keys: list[Path | None]) -> None:
    """CORRECTION_UNCALIBRATED when the policy corrects judged rates and a live or replayed
    judge has no governance calibration named: every judged category would be UNRESOLVED,
    so it is said where the calibration is configured."""
    if policy is None or policy.judge_correct == "none" or \
            judge.provider in ("none", "mock") or (calibration is not None and keys):
        return
    missing = "calibration" if calibration is None else "calibration_keys"
    loader.problems.append(doc.problem(
        ("spec", "judge") if "judge" in doc.data["spec"] else ("spec",),
        "CORRECTION_UNCALIBRATED",
        f"the policy corrects judged rates (judge.correct: {policy.judge_correct}) but "
        f"the Evaluation names no judge.{missing}",
        "name the signed calibration.json engine calibrate writes and the governance "
        "key it verifies against (docs/judges.md)"))


def _calibration(loader: _Loader, doc: _yaml.Document,
                 block: dict[str, Any]) -> tuple[Path | None, str | None]:
    """``judge.calibration``, resolved like ``history.baseline``: relative to the file,
    inside the spec root, and allowed not to exist yet; with the SHA-256 of its bytes when
    it exists, read through ``opened`` so that a spec bundle signs it."""
    if "calibration" not in block:
        return None, None
    _unlinked(loader, doc, ("spec", "judge", "calibration"), block["calibration"])
    path = (Path(doc.file).resolve().parent / block["calibration"]).resolve()
    if not path.is_relative_to(loader.root):
        loader.problems.append(doc.problem(("spec", "judge", "calibration"), "PATH_ESCAPES_ROOT",
                                           f"'{block['calibration']}' leads outside the spec "
                                           "root"))
        return path, None
    if not path.is_file():  # not there yet: a status when the run checks it
        return path, None
    try:
        return path, hashlib.sha256(opened.read_bytes(path)).hexdigest()
    except OSError:  # gone since, or unreadable: the run's check says so
        return path, None


def _unlinked(loader: _Loader, doc: _yaml.Document, where: _yaml.Path, rel: str) -> bool:
    """Whether a trust anchor's path (a baseline, key, calibration or replay) reaches its
    file without a symbolic link: a link in the spec folder could lead, under a wider
    spec root the runner gives, to a place the runner writes (PATH_THROUGH_LINK). Each
    component is looked at as written, before the next: ``link/..`` is a link too."""
    current = Path(doc.file).resolve().parent
    try:
        for part in Path(rel).parts:
            if part == "..":
                current = current.parent
                continue
            current = current / part
            if current.is_symlink():
                loader.problems.append(doc.problem(
                    where, "PATH_THROUGH_LINK", f"'{clip(rel)}' passes through a symbolic "
                    "link", "keep baselines, keys and calibrations as plain files in the "
                    "spec folder"))
                return False
    except (OSError, ValueError):
        return True  # loader.path says what is wrong with it
    return True


def _anchor(loader: _Loader, doc: _yaml.Document, where: _yaml.Path,
            rel: str) -> Path | None:
    """``loader.path`` for a trust anchor, which may not pass through a link either."""
    return loader.path(doc, where, rel) if _unlinked(loader, doc, where, rel) else None


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _inputs(loader: _Loader, doc: _yaml.Document,
            overrides: dict[str, Path]) -> dict[str, Input]:
    """The Evaluation's inputs that are there, each checked: a known format, a path inside
    the spec root (or an --input override), a file or a folder as its format reads."""
    spec = doc.data["spec"]
    inputs: dict[str, Input] = {}
    for name, decl in spec["inputs"].items():
        where = ("spec", "inputs", name, "path")
        known = formats.names()  # checked first: an optional input not there yet included
        fmt = decl.get("format", "jsonl")
        if fmt not in known:
            loader.problems.append(doc.problem(
                ("spec", "inputs", name, "format"), "BAD_VALUE",
                f"{json.dumps(fmt)} is not one of {', '.join(map(json.dumps, known))}",
                did_you_mean(str(fmt), known)))
            continue
        options = decl.get("options")
        if options is not None:
            takes = formats.named(fmt).options
            if takes is None:
                loader.problems.append(doc.problem(
                    ("spec", "inputs", name, "options"), "UNKNOWN_KEY",
                    f"format {fmt} takes no options", key=True))
                continue
            found = _schema.problems(doc, _schema.validator_for(takes), options,
                                     ("spec", "inputs", name, "options"))
            if found:
                loader.problems.extend(found)
                continue
        if decl.get("optional") and name not in overrides and not _exists(
                Path(doc.file).resolve().parent / decl["path"]):
            continue  # an optional input that is not there yet (e.g. reviews)
        target = overrides.get(name) or loader.path(doc, where, decl["path"])
        if target is not None and _exists(target) and (fmt == "folder") != target.is_dir():
            given = f"--input {name}={target}" if name in overrides else f"'{decl['path']}'"
            loader.problems.append(doc.problem(
                where, "INPUT_KIND", f"{given} is {'a folder' if target.is_dir() else 'a file'}"
                f"; format {fmt} reads {'a folder' if fmt == 'folder' else 'a file'}"))
            target = None
        attested = decl.get("attestation")
        keys = None if attested is None else [
            k for i, rel in enumerate(attested["trusted_keys"])
            if (k := _anchor(loader, doc, ("spec", "inputs", name, "attestation",
                                           "trusted_keys", i), rel)) is not None]
        if target is not None:
            inputs[name] = Input(name, target, decl.get("format", "jsonl"),
                                 f"evaluation:spec.inputs.{name}", dict(options or {}), keys)
    return inputs


def _unit_format(loader: _Loader, doc: Any, spec: dict[str, Any],
                 unit_input: str | None) -> formats.Format | None:
    """The unit input's format, when it is known and reads records (else a problem)."""
    if unit_input is None or unit_input not in spec["inputs"]:
        return None
    name = spec["inputs"][unit_input].get("format", "jsonl")
    if name not in formats.names():
        return None  # already reported where the format is named
    found = formats.named(name)
    if found.read is None:
        loader.problems.append(doc.problem(
            ("spec", "inputs", unit_input, "format"), "INPUT_KIND",
            f"format {name} holds no records: the units come from a file input",
            "name another input in spec.units.input"))
        return None
    return found


def _panel(loader: _Loader, doc: _yaml.Document, block: dict[str, Any],
           base_url: str) -> tuple[list[Member], list[Problem]]:
    """The panel's members (UNRESOLVABLE_JUDGE for one that cannot be asked) and the
    warning about an even-sized panel (agent-release-gate §11)."""
    judge = (block["provider"], base_url,
             block.get("api_key_env", DEFAULT_KEYS.get(block["provider"])))
    members: list[Member] = []
    for i, entry in enumerate(block.get("panel", ())):
        where: _yaml.Path = ("spec", "judge", "panel", i)
        try:
            member = parse_member(entry, judge)
        except ValueError as exc:
            loader.problems.append(doc.problem(where, "UNRESOLVABLE_JUDGE", str(exc)))
            continue
        if any(m.label == member.label for m in members):
            loader.problems.append(doc.problem(
                where, "UNRESOLVABLE_JUDGE", f"panel member '{member.label}' is listed twice",
                "a member is one provider and model; a second endpoint of it is not another "
                "vote"))
        members.append(member)
    warnings = []
    if members and len(members) % 2 == 0:
        warnings.append(doc.problem(
            ("spec", "judge", "panel"), "EVEN_PANEL",
            f"{len(members)} members: a yes/no tie is ERROR PANEL_TIED and scores take the "
            "mean of the two middle ones", "an odd number of members always has a majority"))
    return members, warnings


def _elsewhere(member: Member, block: dict[str, Any], base_url: str) -> bool:
    """A member with its own endpoint; the others follow the judge's, command-line
    overrides (--judge-base-url) included."""
    key = block.get("api_key_env", DEFAULT_KEYS.get(block["provider"]))
    return (member.provider, member.base_url, member.api_key_env) != (
        block["provider"], base_url, key) or member.label != member.model


def _judge_config(loader: _Loader, doc: _yaml.Document,
                  block: dict[str, Any] | None) -> tuple[JudgeConfig, list[Problem]]:
    if not block:
        return JudgeConfig(), []
    if block["provider"] in ALIASES:  # `openai` is agent-release-gate §11's name for it
        block = {**block, "provider": ALIASES[block["provider"]]}
    provider = block["provider"]
    replay = _anchor(loader, doc, ("spec", "judge", "replay"), block["replay"]) \
        if "replay" in block else None
    if provider == "replay" and "replay" not in block:
        loader.problems.append(doc.problem(("spec", "judge"), "MISSING_KEY",
                                           "provider replay needs 'replay' (a signed "
                                           "scorecard.json or its folder)",
                                           "or pass --judge-replay SCORECARD"))
    if provider in ("openai-compatible", "anthropic") and "model" not in block \
            and "panel" not in block:
        loader.problems.append(doc.problem(("spec", "judge"), "MISSING_KEY",
                                           f"provider {provider} needs a model or a panel"))
    simple = {k: block[k] for k in ("model", "temperature", "seed", "max_tokens", "timeout_s",
                                     "concurrency", "retries", "backoff_s", "max_backoff_s",
                                     "disagreement", "cache_reuse") if k in block}
    base_url = block.get("base_url", DEFAULT_URLS.get(provider, ""))
    members, warnings = _panel(loader, doc, block, base_url)
    return JudgeConfig(provider=provider, base_url=base_url,
                       panel=tuple(m.label for m in members),
                       members=tuple(m for m in members if _elsewhere(m, block, base_url)),
                       api_key_env=block.get("api_key_env", DEFAULT_KEYS.get(provider)),
                       replay=replay, proxy=block.get("proxy"), **simple), warnings


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


__all__ = ["Category", "Condition", "Evaluation", "Input", "Inspection", "Policy", "Suite",
           "display", "load", "spec_files"]
