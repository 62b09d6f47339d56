"""The scorecard as a typed model: one field per top-level name of scorecard.json.

Each field says what it means and who owns its value (docs/security.md):

- *governance*: copied from the spec files whose digests the scorecard binds;
- *evidence*: measured from the records the evaluated party supplied;
- *engine*: computed by the engine (decisions, digests, versions).

``Scorecard.as_json`` is the only way to the JSON value, whose RFC 8785 bytes are hashed and
signed; ``schemas/scorecard.schema.json`` describes the same shape for readers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from engine.canonical import canonical

SCORECARD_VERSION = "specgate.scorecard/v1"
FINDINGS_LISTED = 100  # findings kept in the scorecard; findings.jsonl holds them all
# names absent (not null) from the JSON when they have no value
OMIT_WHEN_NONE = {"report", "label", "calibration", "caveats", "candidates", "as_of"}


def findings_jsonl(found: list[dict[str, Any]]) -> bytes:
    """findings.jsonl: every finding, in the scorecard's order (by dimension, then first
    appearance of the case; the additional blockers last), one JCS object per line."""
    return b"".join(canonical(f) + b"\n" for f in found)


def _json(value: Any) -> Any:
    return value.as_json() if is_dataclass(value) and hasattr(value, "as_json") else value


class _Block:
    """A nested object of the scorecard: its JSON is its fields by name."""

    def as_json(self) -> dict[str, Any]:
        """The JSON object of this block."""
        assert is_dataclass(self)
        return {f.name: _json(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True)
class Named(_Block):
    """A spec's (or the engine's) name and version."""

    name: str
    """The ``metadata.name`` of the spec (``specgate`` for the engine)."""
    version: str
    """The ``metadata.version`` of the spec (the package version for the engine)."""


@dataclass(frozen=True)
class EvaluationId(Named):
    """The Evaluation that was run."""

    sha256: str
    """Digest of the parsed Evaluation file (governance)."""


@dataclass(frozen=True)
class PolicyId(Named):
    """The Policy that was applied."""

    scoring_version: str
    """The policy's own scoring version (governance)."""


@dataclass(frozen=True)
class Coverage(_Block):
    """What of the inputs could be used (evidence, counted by the engine)."""

    records: int
    """Records read from the unit input."""
    rows: int
    """Rows written to rows.jsonl (inspection rows and unusable records)."""
    cases: int
    """Cases the suite declares."""
    cases_observed: int
    """Suite cases with at least one run."""
    cases_short: list[dict[str, Any]]
    """The first 20 cases with fewer runs than trials: {case, runs, trials}."""
    cases_short_count: int
    """How many cases have fewer runs than trials."""
    record_problems: dict[str, int]
    """Unusable records by problem code, sorted by code."""
    record_problem_samples: list[dict[str, Any]]
    """The first 20 unusable records by place: {line, code, message}."""
    control_rows: int
    """Rows of known-bad control records."""


@dataclass(frozen=True)
class Statistics(_Block):
    """Statistical settings the numbers were computed with (governance)."""

    wilson_z: float
    """The z of every Wilson interval in the scorecard."""


@dataclass
class Scorecard(_Block):
    """scorecard.json of one evaluation (see schemas/scorecard.schema.json)."""

    engine: Named
    """Engine name and version (engine)."""
    evaluation: EvaluationId
    """Which Evaluation ran (governance)."""
    policy: PolicyId
    """Which Policy decided (governance)."""
    suite: Named
    """Which Suite the cases come from (governance; the records' own for a derived suite)."""
    policy_sha256: str
    """SHA-256 of the RFC 8785 bytes of policy_document (engine, over governance data)."""
    policy_document: dict[str, Any]
    """What policy_sha256 digests: the parsed Policy, its scoring data digests, the engine's
    primitive-semantics version (governance)."""
    presentation_digests: dict[str, str]
    """Digests of files that change only how findings read, e.g. fix templates (governance)."""
    suite_sha256: str
    """Digest of the suite: of the Suite file, or of the cases the records carry (engine)."""
    purpose: str
    """release, triage or self_test (governance: the policy's gate.purpose)."""
    decision: str
    """PASS, FAIL, INCOMPLETE, TRIAGE or SELF_TEST, by the lattice (engine)."""
    metrics_decision: str
    """The decision before the baseline comparison was bound in (engine)."""
    overall_pass: bool
    """True only when decision is PASS (engine)."""
    exit_code: int
    """The exit code this decision gives ``engine run`` (engine)."""
    reasons: list[dict[str, Any]]
    """Every condition that holds, most decisive first, each with its spec path (engine)."""
    categories: dict[str, dict[str, Any]]
    """Per category: counts (evidence), threshold and weight (governance), rate, bounds,
    state and met (engine)."""
    required_categories: list[str]
    """Categories that must have rows; all included ones when the policy marks none
    (governance)."""
    missing_categories: list[str]
    """Required categories without rows (evidence)."""
    overall: dict[str, Any] | None
    """The overall score, threshold and met; null when the policy has no overall (engine)."""
    conditions: list[dict[str, Any]]
    """Each gate condition with its value: true, false or null (engine)."""
    reliability: dict[str, Any]
    """Per included category: pass^k, consistency and flaky cases; null without repeats
    (engine, over evidence)."""
    controls: dict[str, Any] | None
    """Known-fault controls and whether each was caught; null without controls (engine)."""
    validation: dict[str, Any] | None
    """Record validation by class, in all and by the input format's group
    (``by_<group>``, e.g. ``by_dimension``); null when not validated (evidence)."""
    findings: list[dict[str, Any]]
    """Every finding; the JSON lists the first FINDINGS_LISTED, findings.jsonl all (engine)."""
    waivers: dict[str, Any] | None
    """Every waiver (governance) with its status and the rows it took out (engine); null
    when the policy has none."""
    agent_card: dict[str, Any] | None
    """Catalogue entries as evidenced, partial or not evidenced; null without catalogues
    (engine, over governance mappings)."""
    coverage: Coverage
    """What of the inputs could be used (evidence)."""
    inputs: dict[str, dict[str, Any]]
    """Each named input: format (governance), sha256 and records (evidence)."""
    statistics: Statistics
    """Statistical settings (governance)."""
    judge: dict[str, Any] | None
    """Judge identity, endpoint, digests and replay source; null when no judge ran (engine)."""
    judge_sha256: str | None
    """Digest of the judge identity; null when no judge ran (engine)."""
    comparison: dict[str, Any] | None
    """The comparison with the baseline scorecard; null when none was made (engine)."""
    rows_sha256: str
    """SHA-256 of rows.jsonl beside the scorecard (engine)."""
    report: dict[str, Any] | None = None
    """The protocol report (also report.json, report.md); absent when the policy asks for
    none (engine)."""
    label: str | None = None
    """The run's label (``engine run --label``), by which a later run names it as its
    baseline; absent without one (governance, from the command line)."""
    calibration: dict[str, Any] | None = None
    """The judge calibration check (agent-release-gate §11): required, min_kappa (governance,
    from the policy), the artifact that verified (sha256, signer keyid, signed time; its
    labels are governance's), status verified/missing/untrusted/mismatch with the reason,
    and per judged category its kappa, n, accuracy, sensitivity, specificity and whether it
    is calibrated, with why not (engine). Absent unless the Evaluation names an artifact or
    the policy requires calibration, and a judge ran."""
    provenance: dict[str, Any] = field(default_factory=dict)
    """Whose specs and whose evidence the decision rests on (docs/provenance.md): ``specs``
    (status verified, not_checked, unsigned, invalid or changed; the files loaded with their
    SHA-256; the bundle's digest and signer) and ``inputs`` (per input the Evaluation
    requires attested: status attested, unattested or invalid; the attestation's digest,
    signer and predicate) (engine, over governance's and the harness's signatures)."""
    as_of: dict[str, Any] | None = None
    """The date waivers were judged on and what set it (docs/provenance.md#time): ``date``;
    ``set_by`` (clock, requested, specs, attestation:NAME, baseline or calibration);
    ``clock``, the runner's clock as read (its UTC date; the statement's ``generated_at``
    has it to the second); ``requested``, the
    ``--as-of`` given or null; ``signed``, every verified signed time the run rests on by
    source. A release is never judged before the latest of them (engine, over the
    signers' times)."""
    caveats: list[str] | None = None
    """What the measurements cannot show, as the policy's caveats file words it; the reports
    print them; absent when the policy names none (governance, presentation data)."""
    candidates: list[dict[str, str]] | None = None
    """The builds this decision is about (``engine run --subject NAME@sha256:HEX``): each
    ``{name, sha256}``, also subjects of the signed statement (``candidates/NAME``) and of
    the SLSA Verification Summary ``vsa.intoto.jsonl``; absent when the run named none
    (the runner's statement of what it gated; docs/verifying.md)."""
    scorecard_version: str = SCORECARD_VERSION
    """The version of this format (engine)."""

    def findings_jsonl(self) -> bytes:
        """The bytes of findings.jsonl: every finding."""
        return findings_jsonl(self.findings)

    @property
    def findings_count(self) -> int:
        """How many findings there are in all; findings.jsonl holds every one (engine)."""
        return len(self.findings)

    @property
    def findings_sha256(self) -> str:
        """SHA-256 of findings.jsonl beside the scorecard (engine)."""
        return hashlib.sha256(self.findings_jsonl()).hexdigest()

    def as_json(self) -> dict[str, Any]:
        """The scorecard value whose canonical bytes are signed."""
        out = super().as_json()
        for name in OMIT_WHEN_NONE:
            if out[name] is None:
                del out[name]
        out["findings"] = self.findings[:FINDINGS_LISTED]
        out["findings_count"] = self.findings_count
        out["findings_sha256"] = self.findings_sha256
        return out
