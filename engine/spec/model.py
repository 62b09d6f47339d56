"""The compiled Policy and its parts: what the engine keeps of a Policy spec after checking.

Every field is governance data (it comes from the Policy file or the data files it names,
all bound into ``policy_sha256`` or ``presentation_digests``), compiled once at load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.decide.paired import Settings
from engine.errors import Problem
from engine.formula import Formula
from engine.inspections import Primitive
from engine.records.masking import Masker

# the keys of every inspection entry; the others are its type's parameters
COMMON_KEYS = frozenset({"id", "type", "description", "when"})


@dataclass
class Inspection:
    """One compiled inspection entry (``spec.inspections[i]``)."""

    id: str
    """The entry's ``id``, which categories list."""
    type: str
    """The primitive's name in the inspection table (``type:``)."""
    primitive: Primitive
    """The primitive that evaluates one unit."""
    params: dict[str, Any]
    """The entry's other keys, checked by the primitive's schema and compiled."""
    when: Any
    """Compiled ``when:`` selector limiting the units it applies to, or None for all."""
    spec_path: str
    """Where the entry is: ``policy:spec.inspections[i]``."""
    written: frozenset[str] = frozenset()
    """The parameters the entry writes (the others are their defaults)."""


@dataclass
class Category:
    """One category: a pass rate over the rows of its inspections."""

    name: str
    """The category's key under ``spec.categories``."""
    weight: float
    """Its weight in the weighted overall score (0 leaves it out)."""
    threshold: float | None
    """The rate (or Wilson lower bound) it must reach, or None for no threshold."""
    minimum: float | None
    """A mandatory minimum on the point rate, whatever ``gate_on`` says, or None."""
    gate_on: str
    """What the threshold is compared with: ``point`` (the rate) or ``wilson_lower``."""
    min_n: int
    """Scored rows (PASS + FAIL) it needs to be resolved."""
    required: bool
    """Whether a run without rows for it is INCOMPLETE (else it is left out)."""
    inspections: list[str]
    """Ids of the inspections whose rows it counts."""
    spec_path: str
    """Where it is: ``policy:spec.categories.NAME``."""
    severity: str = "high"
    """Severity of its findings."""
    min_cases: int = 1
    """Scored suite cases it needs to be resolved."""


@dataclass
class Condition:
    """An extra gate condition: false fails, null is INCOMPLETE."""

    id: str
    """The condition's ``id``."""
    formula: Formula
    """The compiled boolean formula over rates, counts and ``overall``."""
    message: str
    """What a FAIL reason says when it is false (a default names the id when empty)."""
    spec_path: str
    """Where it is: ``policy:spec.conditions[i]``."""


@dataclass
class Policy:
    """A compiled Policy: the rules a run is decided by."""

    name: str
    """``metadata.name``."""
    version: str
    """``metadata.version``."""
    scoring_version: str
    """``spec.scoring_version``: the policy's own version of its scoring rules."""
    purpose: str
    """``gate.purpose``: release (may PASS), triage or self_test (never PASS)."""
    wilson_z: float
    """``statistics.wilson_z``: the z of every Wilson interval."""
    categories: dict[str, Category]
    """Categories by name, in spec order."""
    inspections: dict[str, Inspection]
    """Compiled inspections by id, in spec order."""
    overall: Formula | None
    """``overall.formula`` (default ``weighted``), or None when the policy has no overall."""
    overall_threshold: float | None
    """``overall.threshold``: the overall score a run must reach, or None."""
    conditions: list[Condition]
    """Extra gate conditions, in spec order."""
    sha256: str
    """The policy hash: digest of ``document``."""
    budgets: dict[str, Any] = field(default_factory=dict)
    """``spec.budgets``: default cost, latency and price budgets for budget inspections."""
    validate: bool = True
    """Whether records are validated on a run (always for a release)."""
    strict: bool = True
    """Whether any INVALID or UNLABELED record makes the run INCOMPLETE (always for a release)."""
    controls: Any = None
    """Compiled ``controls.when`` selector marking known-fault control units, or None."""
    control_expect: str = "FAIL"
    """``controls.expect``: the status a control row must get to count as caught."""
    pass_k: int = 2
    """``reliability.pass_k``: the k of pass^k."""
    min_cases: int = 1
    """``gate.min_cases``: the default of each category's ``min_cases``."""
    reliability_gates: dict[str, float | int] = field(default_factory=dict)
    """Gates on repeated trials: ``min_pass_hat_k``, ``min_consistency``, ``max_flaky_cases``."""
    reason_codes: dict[str, str] = field(default_factory=dict)
    """Engine reason code -> the code the policy publishes it as (the decision never changes)."""
    fixes: dict[str, Any] = field(default_factory=dict)
    """Suggested-fix templates for findings (presentation data)."""
    mask: Masker | None = None
    """What row evidence hides (secrets, PII, matches), or None."""
    comparison_required: bool = False
    """``gate.comparison.required``: a missing or incompatible baseline, or a regression, gates."""
    subject_required: bool = False
    """``gate.subject: required``: a release that names no candidate is INCOMPLETE."""
    document: dict[str, Any] = field(default_factory=dict)
    """What ``sha256`` digests: the parsed Policy (``evidence.passing_rows`` bound through the
    scoring version), its scoring data digests, the engine scoring version."""
    presentation_digests: dict[str, str] = field(default_factory=dict)
    """Digests of files that change only how findings read (fix templates, catalogues)."""
    scoring_files: dict[str, Path] = field(default_factory=dict)
    """The files whose digests ``document`` binds (``scoring_data``), by their path in the
    spec: where they were read (``engine diff`` shows their content)."""
    presentation_files: dict[str, Path] = field(default_factory=dict)
    """The same for ``presentation_digests``."""
    comparison_rules: dict[str, Formula] = field(default_factory=dict)
    """``regressed`` / ``improved`` -> the formula that says when a category is so."""
    comparison_test: Settings = field(default_factory=Settings)
    """``gate.comparison`` test, alpha, multiplicity, cluster_by and bootstrap: the paired
    test that decides regressed / improved instead of the formulas (default: the formulas)."""
    report: str | None = None
    """``spec.report``: the protocol report the run writes, or None."""
    waivers: list[dict[str, Any]] = field(default_factory=list)
    """Waivers as written: id, scope, justification, approver, expiry."""
    catalogues: list[dict[str, Any]] = field(default_factory=list)
    """Agent Card catalogues, each with its digest."""
    caveats: list[str] | None = None
    """``spec.caveats``: what the measurements cannot show, one sentence each (presentation
    data, printed by the reports), or None when the policy names no caveats file."""
    calibration_required: bool = False
    """``judge.calibration.required``: a judged category needs a verified calibration whose
    kappa reaches ``min_kappa``, else it is UNRESOLVED (CALIBRATION_MISSING)."""
    min_kappa: float = 0.85
    """``judge.calibration.min_kappa``: the Cohen's kappa a calibration must reach."""
    label_field: str = "human_label"
    """``judge.calibration.label_field``: the record field holding the human label."""
    judge_correct: str = "none"
    """``judge.correct``: ``rogan_gladen`` gates each judged category on its rate corrected
    for the judge's calibrated sensitivity and specificity (engine/decide/correction.py)."""
    judge_repeats: int = 1
    """``judge.repeats``: how many times each judge prompt is asked (docs/judges.md)."""
    min_agreement: float = 1.0
    """``judge.min_agreement``: below this share of a row's answers agreeing, it is ABSTAIN."""
    max_abstained: float = 0.0
    """``judge.max_abstained``: the share of a category's attempted rows that may be ABSTAIN
    before it is UNRESOLVED (0: any ABSTAIN row unresolves it, agent-release-gate §3)."""
    repeats_written: bool = False
    """Whether the policy writes any of the three: the scorecard then records them."""
    card_mappings: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """Evidence item or category -> catalogue entries it evidences, ``full`` / ``partial``."""
    passing_rows: str = "compact"
    """``evidence.passing_rows``: ``compact`` PASS rows keep identity, status, spec path, code,
    message and numeric values only; ``full`` ones also their expected and observed evidence."""
    warnings: list[Problem] = field(default_factory=list)
    """What ``engine validate`` and ``engine run`` warn about in it (weights nothing that
    decides reads, engine/spec/advice.py); never an error, and not part of its digest."""
    waiver_ends: list[tuple[str, Problem]] = field(default_factory=list)
    """Each waiver's last day with the warning ``engine validate`` prints after it
    (WAIVER_EXPIRED); not part of the digest."""
