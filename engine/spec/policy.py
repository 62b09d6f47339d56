"""Compile a Policy: inspections, categories, overall score and conditions."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import protocols
from engine._version import SCORING_VERSION, SCORING_VERSION_FULL_ROWS
from engine.canonical import digest
from engine.decide.findings import build_fixes
from engine.decide.paired import DEFAULT_ITERATIONS, DEFAULT_SEED, Settings
from engine.decide.reasons import REASON_CODES
from engine.errors import did_you_mean
from engine.formula import BOOLEAN, NUMBER, Formula
from engine.inspections import TABLE
from engine.inspections.pii import build_detector
from engine.records.masking import masker
from engine.records.strict_json import shallow
from engine.spec import advice, opened, salvage
from engine.spec import schema as _schema
from engine.spec import yaml as _yaml
from engine.spec.compile import (
    compile_checked_formula,
    compile_params,
    compile_selector,
    condition_names,
    load_data_file,
)
from engine.spec.model import COMMON_KEYS, Category, Condition, Inspection, Policy
from engine.stats import DEFAULT_Z

if TYPE_CHECKING:
    from engine.spec.evaluation import _Loader

__all__ = ["Category", "Condition", "Inspection", "Policy", "compile_policy", "condition_names"]

RELIABILITY_GATES = ("min_pass_hat_k", "min_consistency", "max_flaky_cases")
REPEAT_KEYS = frozenset({"repeats", "min_agreement", "max_abstained"})  # of spec.judge


class _DataFiles:
    """The files a policy reads, by role, so that their content is bound into its digests:
    scoring data (lexicons, detectors, schemas) into policy_sha256, presentation (fix
    templates) into presentation_digests."""

    def __init__(self, loader: _Loader, doc: _yaml.Document) -> None:
        self.loader, self.doc = loader, doc
        self.scoring: dict[str, Path] = {}
        self.presentation: dict[str, Path] = {}
        self.caveats: list[str] | None = None

    def resolver(self, table: dict[str, Path]) -> Callable[[str, _yaml.Path], Path | None]:
        """A path resolver that also records what it resolved into ``table``."""
        def resolve(rel: str, at: _yaml.Path) -> Path | None:
            path = self.loader.path(self.doc, at, rel)
            if path is not None and path.is_file():  # a folder is bound by its files
                table[rel] = path
            return path
        return resolve

    @staticmethod
    def digests(table: dict[str, Path]) -> dict[str, str]:
        """Digest of each file's parsed content (JSON or YAML), by its path in the spec."""
        out = {}
        for rel, path in sorted(table.items()):
            text = opened.read_bytes(path).decode("utf-8", errors="replace").removeprefix("\ufeff")
            if path.suffix not in (".json", ".yaml", ".yml"):
                out[rel] = digest(text)
                continue
            if path.suffix == ".json":
                try:
                    out[rel] = digest(shallow(text))  # too deep: digested as text below
                    continue
                except ValueError:
                    pass
            parsed, _ = _yaml.parse(text, rel)
            out[rel] = digest(parsed.data if parsed else text)
        return out


def compile_policy(loader: _Loader, doc: _yaml.Document) -> Policy | None:
    """The compiled Policy of a schema-valid document, or None with its problems recorded."""
    spec, before = doc.data["spec"], len(loader.problems)
    files = _DataFiles(loader, doc)
    inspections = _inspections(loader, doc, spec["inspections"], files)
    categories = _categories(loader, doc, spec)
    _check_unused(loader, doc, spec)
    overall = _overall(loader, doc, spec, categories)
    conditions = _conditions(loader, doc, spec, categories)
    controls = spec.get("controls", {})
    when = compile_selector(doc, ("spec", "controls", "when"), controls["when"],
                            loader.problems) if controls else None
    _check_reason_codes(loader, doc, spec)
    _check_fallbacks(loader, doc, spec, inspections)
    fixes, mask_with = _data_files(loader, doc, spec, categories, files)
    rules = _comparison_rules(loader, doc, spec.get("gate", {}))
    card = _agent_card(loader, doc, spec, files)
    _check_waiver_scopes(loader, doc, spec, categories)
    _check_report(loader, doc)
    _check_repeats(loader, doc, spec.get("judge", {}))
    if len(loader.problems) > before:
        return None
    compiled = _Compiled(inspections, categories, overall, conditions, when, fixes, mask_with,
                         rules, card)
    policy = _policy(doc, files, compiled)
    policy.warnings = advice.dead_weights(doc, *overall, conditions)
    policy.waiver_ends = advice.waiver_ends(doc)
    return policy


@dataclass
class _Compiled:
    """The parts of a Policy compiled from its document, before they are assembled."""

    inspections: dict[str, Inspection]
    categories: dict[str, Category]
    overall: tuple[Formula | None, float | None]  # the formula and its threshold
    conditions: list[Condition]
    controls: Any  # compiled controls.when selector, or None
    fixes: dict[str, Any]
    mask_with: Any  # the evidence.mask_with detector, or None
    comparison_rules: dict[str, Formula]
    agent_card: tuple[list[dict[str, Any]], dict[str, Any]]  # catalogues, mappings


def _policy(doc: _yaml.Document, files: _DataFiles, parts: _Compiled) -> Policy:
    """Assemble a Policy from its compiled parts and the document's plain settings."""
    spec, meta = doc.data["spec"], doc.data["metadata"]
    gate, validation = spec.get("gate", {}), spec.get("validation", {})
    judge = spec.get("judge", {})
    calibration = judge.get("calibration", {})
    purpose = gate.get("purpose", "release")
    passing_rows = spec.get("evidence", {}).get("passing_rows", "compact")
    document = {"policy": _digested(doc.data), "scoring_data": files.digests(files.scoring),
                "scoring_version": SCORING_VERSION if passing_rows == "compact"
                else SCORING_VERSION_FULL_ROWS}
    return Policy(meta["name"], meta["version"], spec["scoring_version"], purpose,
                  spec.get("statistics", {}).get("wilson_z", DEFAULT_Z), parts.categories,
                  parts.inspections, *parts.overall, parts.conditions, digest(document),
                  budgets=spec.get("budgets", {}),
                  validate=purpose == "release" or validation.get("on_run", True),
                  strict=purpose == "release" or validation.get("strict", False),
                  controls=parts.controls,
                  control_expect=spec.get("controls", {}).get("expect", "FAIL"),
                  pass_k=spec.get("reliability", {}).get("pass_k", 2),
                  min_cases=gate.get("min_cases", 1),
                  reliability_gates={k: gate[k] for k in RELIABILITY_GATES if k in gate},
                  reason_codes=spec.get("reason_codes", {}), fixes=parts.fixes,
                  mask=masker(parts.inspections.values(), parts.mask_with,
                              spec.get("evidence", {}).get("mask_matches", True)),
                  comparison_required=gate.get("comparison", {}).get("required", False),
                  subject_required=gate.get("subject", "optional") == "required",
                  comparison_rules=parts.comparison_rules, document=document,
                  comparison_test=_comparison_test(gate.get("comparison", {})),
                  report=spec.get("report"), waivers=spec.get("waivers", []),
                  catalogues=parts.agent_card[0], card_mappings=parts.agent_card[1],
                  presentation_digests=files.digests(files.presentation),
                  scoring_files=dict(files.scoring), presentation_files=dict(files.presentation),
                  caveats=files.caveats,
                  calibration_required=calibration.get("required", False),
                  min_kappa=calibration.get("min_kappa", 0.85),
                  label_field=calibration.get("label_field", "human_label"),
                  judge_correct=spec.get("judge", {}).get("correct", "none"),
                  judge_repeats=judge.get("repeats", 1),
                  min_agreement=judge.get("min_agreement", 1.0),
                  max_abstained=judge.get("max_abstained", 0.0),
                  repeats_written=bool(REPEAT_KEYS & judge.keys()),
                  passing_rows=passing_rows)


def _digested(data: dict[str, Any]) -> dict[str, Any]:
    """The Policy as its digest takes it: ``evidence.passing_rows`` is bound through the
    engine scoring version it selects (compact: specgate-primitives/2, full:
    specgate-primitives/1), not as a key, so a policy that keeps full rows has the
    policy_sha256 it had before the key existed (and its earlier baselines stay comparable)."""
    evidence = data.get("spec", {}).get("evidence")
    if not isinstance(evidence, dict) or "passing_rows" not in evidence:
        return data
    rest = {k: v for k, v in evidence.items() if k != "passing_rows"}
    spec = {k: v for k, v in data["spec"].items() if k != "evidence"}
    return {**data, "spec": {**spec, "evidence": rest} if rest else spec}


def _categories(loader: _Loader, doc: _yaml.Document,
                spec: dict[str, Any]) -> dict[str, Category]:
    """Every category, with its inspection references checked and gate defaults applied."""
    gate, ids = spec.get("gate", {}), [i["id"] for i in spec["inspections"]]
    out: dict[str, Category] = {}
    for name, cat in spec["categories"].items():
        where = ("spec", "categories", name)
        for j, ref in enumerate(cat["inspections"]):
            if ref not in ids:
                loader.problems.append(doc.problem(
                    where + ("inspections", j), "UNKNOWN_INSPECTION_ID",
                    f"no inspection has id '{ref}'", did_you_mean(ref, ids)))
        gate_on = cat.get("gate_on", gate.get("gate_on", "point"))
        if gate_on == "wilson_lower" and cat.get("threshold") == 1:
            loader.problems.append(doc.problem(
                where + ("threshold",), "UNATTAINABLE_GATE",
                "the Wilson lower bound never reaches 1.0",
                "lower the threshold or use gate_on: point"))
        out[name] = Category(name, cat.get("weight", 1), cat.get("threshold"),
                             cat.get("minimum"), gate_on, cat.get("min_n", gate.get("min_n", 1)),
                             cat.get("required", True), cat["inspections"],
                             f"policy:spec.categories.{name}", cat.get("severity", "high"),
                             cat.get("min_cases", gate.get("min_cases", 1)))
    return out


def _check_unused(loader: _Loader, doc: _yaml.Document, spec: dict[str, Any]) -> None:
    """An inspection that no category lists (nor names as a fallback) would count nowhere."""
    used = {ref for cat in spec["categories"].values() for ref in cat["inspections"]}
    used |= {str(entry["fallback"]) for entry in spec["inspections"] if "fallback" in entry}
    for i, entry in enumerate(spec["inspections"]):
        if entry["id"] not in used:
            loader.problems.append(doc.problem(
                ("spec", "inspections", i, "id"), "UNUSED_INSPECTION",
                f"inspection '{entry['id']}' is in no category, so its rows would count nowhere"))


def _check_reason_codes(loader: _Loader, doc: _yaml.Document, spec: dict[str, Any]) -> None:
    """A policy may rename only reasons the engine gives."""
    for i, code in enumerate(spec.get("reason_codes", {})):
        if code not in REASON_CODES:
            loader.problems.append(doc.problem(
                ("spec", "reason_codes", code), "UNKNOWN_REASON_CODE",
                f"'{code}' is not a reason the engine gives", did_you_mean(code, REASON_CODES),
                key=True, rank=i))


def _check_fallbacks(loader: _Loader, doc: _yaml.Document, spec: dict[str, Any],
                     inspections: dict[str, Inspection]) -> None:
    """A fallback must name a compiled inspection."""
    for i, entry in enumerate(spec["inspections"]):
        if "fallback" in entry and entry["fallback"] not in inspections:
            loader.problems.append(doc.problem(
                ("spec", "inspections", i, "fallback"), "UNKNOWN_INSPECTION_ID",
                f"no inspection has id '{entry['fallback']}'",
                did_you_mean(str(entry["fallback"]), inspections)))


def build_caveats(data: Any) -> list[str]:
    """A caveats file: a list of sentences (extra spaces and line breaks folded); ValueError
    naming what is wrong otherwise."""
    if not isinstance(data, list) or not data:
        raise ValueError("a caveats file is a non-empty list of sentences")
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"caveat {i + 1} is not a sentence")
        out.append(" ".join(item.split()))
    return out


def _data_files(loader: _Loader, doc: _yaml.Document, spec: dict[str, Any],
                categories: dict[str, Category], files: _DataFiles) -> tuple[dict[str, Any], Any]:
    """Fix templates and caveats (presentation data) and the masking detector (scoring
    data); the caveats are kept on ``files``."""
    fixes: dict[str, Any] = {}
    if "fixes" in spec.get("findings", {}):
        fixes = load_data_file(doc, ("spec", "findings", "fixes"), spec["findings"]["fixes"],
                               lambda data: build_fixes(data, set(categories)), loader.problems,
                               files.resolver(files.presentation)) or {}
    if "caveats" in spec:
        files.caveats = load_data_file(doc, ("spec", "caveats"), spec["caveats"],
                                       build_caveats, loader.problems,
                                       files.resolver(files.presentation))
    mask_with = None
    if "mask_with" in spec.get("evidence", {}):
        mask_with = load_data_file(doc, ("spec", "evidence", "mask_with"),
                                   spec["evidence"]["mask_with"], build_detector,
                                   loader.problems, files.resolver(files.scoring))
    return fixes, mask_with


def _comparison_test(comparison: dict[str, Any]) -> Settings:
    """The paired-test settings of ``gate.comparison`` (schema-valid), defaults filled in."""
    boot = comparison.get("bootstrap", {})
    return Settings(test=comparison.get("test", "wilson_lower"),
                    alpha=float(comparison.get("alpha", 0.05)),
                    multiplicity=comparison.get("multiplicity", "none"),
                    cluster_by=comparison.get("cluster_by", "unit"),
                    iterations=boot.get("iterations", DEFAULT_ITERATIONS),
                    seed=boot.get("seed", DEFAULT_SEED), effect=comparison.get("effect"),
                    min_power=comparison.get("min_power"),
                    discordance=float(comparison.get("discordance", 0.0)))


def _comparison_rules(loader: _Loader, doc: _yaml.Document,
                      gate: dict[str, Any]) -> dict[str, Formula]:
    """The regressed_when / improved_when formulas of a baseline comparison."""
    comparison = gate.get("comparison", {})
    test = comparison.get("test", "wilson_lower")
    for key in ("regressed_when", "improved_when"):
        if test != "wilson_lower" and key in comparison:
            loader.problems.append(doc.problem(
                ("spec", "gate", "comparison", key), "PAIRED_RULES_IGNORED",
                f"{key} is not read under test: {test} (the paired test decides regressed "
                "and improved); remove it, or use test: wilson_lower"))
    if comparison.get("cluster_by", "unit") == "case" and test != "paired_bootstrap":
        loader.problems.append(doc.problem(
            ("spec", "gate", "comparison", "cluster_by"), "PAIRED_CLUSTER_UNSUPPORTED",
            f"cluster_by: case needs test: paired_bootstrap (under {test} every pair counts "
            "as independent); use cluster_by: unit, or test: paired_bootstrap"))
    for key in ("min_power", "discordance"):
        if key in comparison and "effect" not in comparison:
            loader.problems.append(doc.problem(
                ("spec", "gate", "comparison", key), "POWER_NEEDS_EFFECT",
                f"{key} needs gate.comparison.effect, the drop that must be detectable "
                "(0.05 for five points of pass rate)"))
    names = dict.fromkeys(("rate", "baseline_rate", "baseline_lower", "baseline_upper"), NUMBER)
    return {status: compile_checked_formula(
        doc, ("spec", "gate", "comparison", f"{status}_when"),
        comparison.get(f"{status}_when", default), names, BOOLEAN, loader.problems)
        for status, default in (("regressed", "rate < baseline_lower"),
                                ("improved", "rate > baseline_upper"))}


def _check_waiver_scopes(loader: _Loader, doc: _yaml.Document, spec: dict[str, Any],
                         categories: dict[str, Category]) -> None:
    """A waiver may scope only categories the policy has."""
    for i, waiver in enumerate(spec.get("waivers", [])):
        for j, name in enumerate(waiver["scope"].get("categories", [])):
            if name not in categories:
                loader.problems.append(doc.problem(
                    ("spec", "waivers", i, "scope", "categories", j), "UNKNOWN_CATEGORY",
                    f"no category is named '{name}'", did_you_mean(name, categories)))


def _check_repeats(loader: _Loader, doc: _yaml.Document, judge: dict[str, Any]) -> None:
    """``judge.min_agreement`` means something only when each prompt is asked more than
    once: with one answer every row agrees with itself, so a bar written there is a mistake
    (the policy's author meant repeats)."""
    if "min_agreement" in judge and judge.get("repeats", 1) == 1:
        loader.problems.append(doc.problem(
            ("spec", "judge", "min_agreement"), "AGREEMENT_WITHOUT_REPEATS",
            "judge.min_agreement is set, but judge.repeats is 1: one answer always agrees "
            "with itself", "set judge.repeats to the number of answers per prompt (e.g. 5)"))


def _check_report(loader: _Loader, doc: _yaml.Document) -> None:
    """The protocol report ``spec.report`` names must be one some protocol provides, and
    the policy must use an inspection type the report is built from."""
    name = doc.data["spec"].get("report")
    if name is None:
        return
    if name not in protocols.reports():
        known = sorted(protocols.reports())
        loader.problems.append(doc.problem(
            ("spec", "report"), "BAD_VALUE",
            f"{json.dumps(name)} is not one of {', '.join(map(json.dumps, known))}",
            did_you_mean(name, known)))
        return
    needs = protocols.reports()[name].needs
    used = {entry["type"] for entry in doc.data["spec"]["inspections"]}
    if needs and not needs & used:
        loader.problems.append(doc.problem(
            ("spec", "report"), "REPORT_WITHOUT_INSPECTION",
            f"the {name} report is built from an inspection of type "
            f"{' or '.join(sorted(needs))}, and this policy has none"))


def _agent_card(loader: _Loader, doc: _yaml.Document, spec: dict[str, Any],
                files: _DataFiles) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Catalogues and mappings of the Agent Card; every reference must name an entry."""
    from engine.reports.agentcard import build_catalogue, build_provenance

    block = spec.get("agent_card") or {"catalogues": []}
    catalogues = []
    for i, rel in enumerate(block["catalogues"]):
        where: _yaml.Path = ("spec", "agent_card", "catalogues", i)
        found = load_data_file(doc, where, rel, build_catalogue, loader.problems,
                               files.resolver(files.presentation))
        if found is not None:
            catalogues.append({**found, "sha256": digest(found)})
    mappings: dict[str, Any] = {}
    if "provenance" in block:
        mappings |= load_data_file(doc, ("spec", "agent_card", "provenance"),
                                   block["provenance"], build_provenance, loader.problems,
                                   files.resolver(files.presentation)) or {}
    known = {f"{c['catalogue']}:{e['id']}" for c in catalogues for e in c["entries"]}
    for name, cat in spec["categories"].items():
        if "controls" in cat:
            mappings[name] = {k: list(cat["controls"].get(k, [])) for k in ("full", "partial")}
            for strength in ("full", "partial"):
                for j, ref in enumerate(cat["controls"].get(strength, [])):
                    if ref not in known:  # also when no catalogue is loaded at all
                        loader.problems.append(doc.problem(
                            ("spec", "categories", name, "controls", strength, j),
                            "UNKNOWN_CONTROL", f"'{ref}' is in no loaded catalogue",
                            did_you_mean(ref, known) if known else
                            "load its catalogue in spec.agent_card.catalogues"))
    for item, mapping in mappings.items():
        if item in spec["categories"]:
            continue
        for ref in mapping["full"] + mapping["partial"]:
            if ref not in known:
                loader.problems.append(doc.problem(("spec", "agent_card", "provenance"),
                                                   "UNKNOWN_CONTROL",
                                                   f"{item}: '{ref}' is in no loaded catalogue",
                                                   did_you_mean(ref, known)))
    return catalogues, mappings


def _inspections(loader: _Loader, doc: _yaml.Document, entries: list[dict[str, Any]],
                 files: _DataFiles) -> dict[str, Inspection]:
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
        if found:  # not compiled: say now what its formulas would
            loader.problems.extend(salvage.inspection_problems(doc, where, entry, found))
            continue
        compiled = compile_params(doc, where, primitive.schema, params, loader.problems,
                                  files.resolver(files.scoring))
        when = (compile_selector(doc, where + ("when",), entry["when"], loader.problems)
                if "when" in entry else None)
        out[entry["id"]] = Inspection(entry["id"], kind, primitive, compiled, when,
                                      f"policy:spec.inspections[{i}]", frozenset(params))
    return out


def _overall(loader: _Loader, doc: _yaml.Document, spec: dict[str, Any],
             categories: dict[str, Category]) -> tuple[Formula | None, float | None]:
    block = spec.get("overall")
    if block is None:
        return None, None
    names = {name: NUMBER for name in categories} | {"weighted": NUMBER}
    source = block.get("formula", "weighted")
    formula = compile_checked_formula(doc, ("spec", "overall", "formula"), source, names, NUMBER,
                                      loader.problems)
    if "weighted" in (formula.names if formula else ()) and not any(
            c.weight > 0 for c in categories.values()):
        loader.problems.append(doc.problem(("spec", "overall"), "NO_WEIGHT",
                                           "the weighted score needs a category with weight > 0"))
    return formula, block.get("threshold")


def _conditions(loader: _Loader, doc: _yaml.Document, spec: dict[str, Any],
                categories: dict[str, Category]) -> list[Condition]:
    out: list[Condition] = []
    names = condition_names(categories)
    derived = {"overall", "weighted"} | {f"{count}_{c}" for c in categories
                                          for count in ("n", "passed", "failed", "errors")}
    for name in sorted(set(categories) & derived):
        loader.problems.append(doc.problem(("spec", "categories", name), "NAME_CLASH",
                                           f"category '{name}' clashes with a formula name",
                                           key=True))
    for i, cond in enumerate(spec.get("conditions", [])):
        where = ("spec", "conditions", i, "formula")
        if cond["id"] in {c.id for c in out}:
            loader.problems.append(doc.problem(("spec", "conditions", i, "id"), "DUPLICATE_ID",
                                               f"condition id '{cond['id']}' is used twice"))
        formula = compile_checked_formula(doc, where, cond["formula"], names, BOOLEAN,
                                          loader.problems)
        if formula is not None:
            out.append(Condition(cond["id"], formula, cond.get("message", ""),
                                 f"policy:spec.conditions[{i}]"))
    return out
