"""One evaluation, end to end: stream, inspect, aggregate, decide, seal, commit."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import folders as walk
from engine import protocols, reports
from engine.canonical import digest, sha256_path
from engine.decide import baseline as history
from engine.decide.aggregate import suite_digest
from engine.decide.decision import decide, waiver_block, with_comparison
from engine.decide.labelled import compare as labelled_compare
from engine.decide.lattice import Decision, Reason, settle
from engine.decide.reasons import INCOMPLETE
from engine.evidence import calibration, provenance, signing
from engine.evidence import scorecard as evidence
from engine.judge import Runtime
from engine.judge._replay import bind as bind_replay
from engine.reports import agentcard
from engine.run import clock, shards
from engine.run import rows as runner
from engine.spec.evaluation import Evaluation, display

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )


@dataclass(frozen=True)
class Result:
    """What a finished run reports back."""

    evaluation: str
    decision: str
    exit_code: int
    out: Path
    scorecard_sha256: str
    reasons: list[dict[str, Any]]
    overall: float | None
    record_problems: list[str]
    judge_stats: dict[str, int] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)  # each input's name -> SHA-256
    provenance: dict[str, Any] = field(default_factory=dict)  # the scorecard's block
    as_of: dict[str, Any] = field(default_factory=dict)  # the scorecard's block: what set the date
    policy: tuple[str, str] = ("", "")  # NAME@VERSION and policy_sha256 (a run's VSA)
    # what the run saw beside --out and left there (a planted staging folder): for stderr
    left: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RunOptions:
    """How one run is made beyond what the Evaluation declares (the command line's part)."""

    key: Ed25519PrivateKey | None = None  # signs the scorecard; None leaves it unsigned
    baseline: Path | None = None  # earlier signed scorecard; else the Evaluation's own
    trusted: tuple[Ed25519PublicKey, ...] = ()  # added to the Evaluation's trusted_keys
    cache: Path | None = None  # judgement cache folder; None neither reads nor writes one
    progress: Callable[[int, int], None] | None = None  # judge progress (on a terminal)
    executor: shards.Executor | None = None  # scores the records; None: in this process
    scoring: shards.Progress | None = None  # records scored so far (on a terminal)
    label: str | None = None  # recorded in the scorecard (--label)
    history: tuple[Path, str] | None = None  # (folder, label): the newest verified one
    run: dict[str, Any] | None = None  # the run's id and evaluations, in the statement
    governance: tuple[Ed25519PublicKey, ...] = ()  # --governance-key: who signs the specs
    attestations: dict[str, Path] = field(default_factory=dict)  # --attestation NAME=PATH
    candidates: dict[str, str] = field(default_factory=dict)  # --subject: name -> sha256


@dataclass
class _Run:
    """What the steps of one run hand each other."""

    evaluation: Evaluation
    options: RunOptions
    staging: evidence.Staging
    keys: list[Ed25519PublicKey] = field(default_factory=list)
    runtime: Runtime | None = None
    tally: Any = None
    unit_sha: str = ""
    rows_sha: str = ""
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    judge: dict[str, Any] | None = None
    report: tuple[Any, list[tuple[str, bytes]]] | None = None
    card: dict[str, Any] = field(default_factory=dict)
    subjects: dict[str, str] = field(default_factory=dict)
    specs: provenance.Check | None = None
    held: dict[str, provenance.Held] = field(default_factory=dict)  # attested inputs
    provenance: dict[str, Any] = field(default_factory=dict)
    copies: list[tuple[str, bytes]] = field(default_factory=list)
    base_as_of: str = ""  # the date the command line set, before any signed time moved it
    as_of: dict[str, Any] | None = None  # the scorecard's as_of block (run/clock.py)


def execute(evaluation: Evaluation, dest: Path, options: RunOptions | None = None) -> Result:
    """Run ``evaluation`` and leave its whole evidence in ``dest``, or nothing at all:
    score the records, decide, compare with a baseline, write the evidence, seal, commit."""
    run = _Run(evaluation, options or RunOptions(), evidence.Staging(dest))
    run.specs = provenance.check_specs(evaluation, list(run.options.governance))
    inputs, overrides = dict(evaluation.inputs), dict(evaluation.overrides)
    try:
        _hold(run)
        _date(run)
        _score(run)
        _write(run, _dated(run, _decide(run)))
        held = walk.remove(run.staging.path / HELD)  # the private copies of the inputs
        if held:  # never evidence: a run that cannot remove them keeps nothing (IO_ERROR)
            raise OSError("the private copies of the inputs were not all removed: " + held[0])
        sha = evidence.seal(run.staging, run.card, run.options.key, run.subjects,
                            run.options.run, run.options.candidates)
        out = run.staging.commit()
    except BaseException:
        run.staging.discard()
        raise
    finally:
        evaluation.inputs, evaluation.overrides = inputs, overrides
        if run.tally is not None:
            run.tally.close()  # suite rows and case counts spilled to temporary files
    return _result(run, out, sha)


HELD = ".held"  # in the staging folder: private copies of the attested inputs, never kept


def _hold(run: _Run) -> None:
    """Copy each input the Evaluation requires attested into the staging folder, hashed
    as it is copied, and have the run (workers too) read the copy: what is read is what
    is hashed, whatever happens to the original meanwhile."""
    evaluation = run.evaluation
    (run.staging.path / HELD).mkdir(mode=0o700)
    for name, source in sorted(evaluation.inputs.items()):
        if source.attestation_keys is not None:
            held = provenance.hold(source.path, run.staging.path / HELD / name)
            run.held[name] = held
            evaluation.inputs[name] = replace(source, path=held.path)
            evaluation.overrides[name] = held.path


def _date(run: _Run) -> None:
    """Judge a release no earlier than its specs bundle and input attestations were
    signed: both are checked here, before any record is scored, so that their times count
    for every row whatever the runner's clock says (docs/provenance.md#time)."""
    evaluation = run.evaluation
    assert run.specs is not None
    inputs = {name: _attestation(run, name, scored=False).block for name in sorted(run.held)}
    run.base_as_of = evaluation.as_of
    run.as_of = _judged_on(run, clock.signed_times({"specs": run.specs.block,
                                                    "inputs": inputs}))
    evaluation.as_of = run.as_of["date"]


def _date_replay(run: _Run, signed_at: str) -> None:
    """A release that replays a signed scorecard's answers rests on them: it is judged no
    earlier than that scorecard was signed, before any row is scored (a clock set back to
    before a waiver expired, with the later run's answers replayed, revived the waiver:
    second hostile review of issue 36)."""
    signed = {**(run.as_of or {}).get("signed", {}), "replay": signed_at}
    run.as_of = _judged_on(run, signed)
    run.evaluation.as_of = run.as_of["date"]


def _judged_on(run: _Run, signed: dict[str, str]) -> dict[str, Any]:
    evaluation = run.evaluation
    return clock.judged_on(evaluation.policy.purpose, run.base_as_of, evaluation.as_of_clock,
                           evaluation.as_of_requested, signed)


def _dated(run: _Run, outcome: Decision) -> Decision:
    """The date again with every signed time the decision rests on, the baseline's and
    the calibration's too, read only after the records were scored. Moved past a waiver's
    expiry, the rows that waiver took out were judged too early: INCOMPLETE (AS_OF_MOVED)."""
    evaluation, before = run.evaluation, (run.as_of or {}).get("signed", {})
    signed = clock.signed_times(run.provenance, outcome.calibration, outcome.comparison)
    # a time read before scoring stands even if its file changed since (an attestation
    # swapped for an older one of the same bytes): the date never goes back
    signed |= {k: v for k, v in before.items() if v > signed.get(k, "")}
    run.as_of = _judged_on(run, signed)
    date = run.as_of["date"]
    if date <= evaluation.as_of:
        return outcome
    expired = clock.expired_since(evaluation, date)
    if not expired:  # no waiver's status changes: the rows stand as judged
        evaluation.as_of = date
        return replace(outcome, waivers=waiver_block(evaluation, run.tally))
    blocker = Reason(INCOMPLETE, "AS_OF_MOVED", "evaluation:spec", (
        f"the records were judged as of {evaluation.as_of}, but the {run.as_of['set_by']} "
        f"was signed on {date}, after waiver {', '.join(expired)} expired; run again")
                     ).published(evaluation.policy.reason_codes)
    every = outcome.blockers + (blocker,)
    return replace(outcome, blockers=every, metrics_decision=settle(outcome.held, every)[0])


def _score(run: _Run) -> None:
    """Judge prompts first (all asked at once), then every record into rows.jsonl."""
    evaluation, staging = run.evaluation, run.staging
    run.keys = _run_keys(run)
    run.runtime = _judge_runtime(evaluation, _cache_of(evaluation, run.options),
                                 run.options.progress,
                                 run.keys, (run.options.run or {}).get("id"))
    if run.runtime is not None and run.runtime.config.replayed_at:
        _date_replay(run, run.runtime.config.replayed_at)
    if run.runtime is not None:  # first pass: gather the prompts, then answer them all
        runner.run(evaluation, runner.records(evaluation), lambda row: None, run.runtime)
        run.runtime.answer_all()
    run.tally, run.unit_sha, run.rows_sha = (run.options.executor or shards.local)(
        evaluation, run.runtime, staging.path / "rows.jsonl", run.options.scoring)
    for name, source in sorted(evaluation.inputs.items()):
        if name in run.held:
            sha = run.held[name].sha256
        elif name == evaluation.unit_input:
            sha = run.unit_sha
        else:
            sha = sha256_path(source.path)
        run.inputs[name] = {"format": source.format, "sha256": sha}
    run.inputs[evaluation.unit_input]["records"] = run.tally.records
    if run.runtime is not None:
        lines = run.runtime.lines()
        staging.write("judgements.jsonl", b"".join(lines))
        run.judge = judge_block(evaluation, run.runtime,
                                hashlib.sha256(b"".join(lines)).hexdigest())


def _key(evaluation: Evaluation, path: Path) -> Ed25519PublicKey:
    """A public key the Evaluation trusts, from the bytes read when it was loaded."""
    data = evaluation.anchor_pem.get(str(path))
    return signing.load_public(path) if data is None else \
        signing.public_from_pem(data, str(path))


def _decide(run: _Run) -> Decision:
    """The protocol report, the decision, and the comparison with a baseline."""
    evaluation, tally, judge = run.evaluation, run.tally, run.judge
    run.report = _protocol_report(evaluation, tally, run.options.key)
    # governance's calibration is vouched for only by the keys the Evaluation declares for
    # calibration, and never by a key that signs runs (this run's, or one trusted for
    # baselines): whoever runs CI holds those, signed run or not
    governance = [_key(evaluation, k) for k in evaluation.calibration_keys]
    own = run.options.key
    runs = frozenset(signing.keyid(k) for k in run.keys + ([own.public_key()] if own else []))
    outcome = _provenance(run, decide(evaluation, tally, judge, calibration.check(
        evaluation, judge, governance, runs)))
    baseline = run.options.baseline or evaluation.baseline
    labelled = run.options.history
    if baseline is not None or labelled or run.keys or evaluation.policy.comparison_required:
        current = {"categories": outcome.categories, "decision": outcome.held_decision,
                   "suite_sha256": suite_digest(evaluation, tally),
                   "policy_sha256": evaluation.policy.sha256,
                   "judge_sha256": judge["judge_sha256"] if judge else None,
                   # what fix verification needs beyond the digests
                   "trials": evaluation.suite.trials,
                   "judge_overridden": evaluation.judge_overridden}
        rows, policy = run.staging.path / "rows.jsonl", evaluation.policy
        keys = _baseline_keys(run)
        unpinned = _unpinned(evaluation, baseline)
        block = labelled_compare(current, *labelled, keys, rows, policy.comparison_rules,
                                 policy.wilson_z, policy.comparison_test) if labelled else \
            history.compare(current, None if unpinned else baseline, keys, rows,
                            policy.comparison_rules, policy.wilson_z, policy.comparison_test)
        chosen = (block.get("baseline") or {}).get("scorecard_sha256")
        if not unpinned and chosen and _gates(evaluation) and chosen != evaluation.baseline_pin:
            unpinned = "the baseline changed while it was read: not the pinned one"
        if unpinned:
            block = {"status": "untrusted", "reasons": [unpinned], "regressed": False,
                     "baseline": None, "categories": {}}
        if len(keys) < len(run.keys) and block["status"] in ("missing", "untrusted"):
            block["reasons"] = [*block["reasons"], NOT_THE_RUNNERS]
        outcome = with_comparison(evaluation, outcome, block)
    return outcome


def _provenance(run: _Run, outcome: Decision) -> Decision:
    """The specs checked again (they may have changed while the run read the records)
    and each input the Evaluation requires attested; under ``purpose: release`` what
    fails is a blocker: INCOMPLETE instead of a PASS, never hiding a FAIL."""
    evaluation = run.evaluation
    assert run.specs is not None
    checks = [provenance.recheck_specs(evaluation, run.specs)
              if run.options.governance else run.specs]
    attested: dict[str, Any] = {}
    for name, source in sorted(evaluation.inputs.items()):
        if source.attestation_keys is None:
            continue
        check = _attestation(run, name)
        attested[name] = check.block
        checks.append(check)
    run.provenance = {"specs": checks[0].block, "inputs": attested}
    run.copies = [c.copy for c in checks if c.copy is not None]
    blockers = [Reason(INCOMPLETE, c.code, c.spec_path, c.message).published(
        evaluation.policy.reason_codes) for c in checks if c.code]
    if evaluation.policy.subject_required and not run.options.candidates:
        blockers.append(Reason(  # a PASS that names no build releases whichever comes next
            INCOMPLETE, "CANDIDATE_NOT_NAMED", "policy:spec.gate.subject",
            "the policy requires the release to name its candidate (engine run --subject "
            "NAME@sha256:HEX) and the run named none").published(evaluation.policy.reason_codes))
    if not blockers or evaluation.policy.purpose != "release":
        return outcome
    every = outcome.blockers + tuple(blockers)
    return replace(outcome, blockers=every, metrics_decision=settle(outcome.held, every)[0])


def _attestation(run: _Run, name: str, scored: bool = True) -> provenance.Check:
    """The check of input ``name``'s attestation against the held copy (never vouched for
    by a key that signs runs: this run's, or one trusted for baselines); once ``scored``,
    the bytes the records were read from must be the copy's too."""
    evaluation, own, held = run.evaluation, run.options.key, run.held[name]
    refused = frozenset(signing.keyid(k) for k in
                        _run_keys(run) + ([own.public_key()] if own else []))
    moved = held.moved()
    if scored and name == evaluation.unit_input and run.unit_sha != held.sha256:
        moved.append(held.path.name)  # read other bytes than were copied: not possible
    where = run.options.attestations.get(name) or provenance.beside(held.source)
    keys = evaluation.inputs[name].attestation_keys or []
    return provenance.check_input(provenance.Attested(
        name, held.sha256, held.manifest, [_key(evaluation, k) for k in keys], moved),
        where, refused)


def _run_keys(run: _Run) -> list[Ed25519PublicKey]:
    """The keys trusted for baselines: they sign runs, so they vouch for no input."""
    return [_key(run.evaluation, k) for k in run.evaluation.trusted_keys] + \
        list(run.options.trusted)


NOT_THE_RUNNERS = ("a release trusts baselines signed by a key of the Evaluation's "
                   "history.trusted_keys only; a --trusted-key of the command line is the "
                   "runner's choice")


def _gates(evaluation: Evaluation) -> bool:
    """A release whose comparison gates: its baseline is governance's, pinned."""
    return evaluation.policy.purpose == "release" and evaluation.policy.comparison_required


def _unpinned(evaluation: Evaluation, baseline: Path | None) -> str:
    """Why a release whose comparison gates may not compare with ``baseline`` ("" when it
    may): only the scorecard whose digest governance pinned (history.baseline_sha256)
    counts, since the file at history.baseline sits in a checkout the runner can write."""
    if not _gates(evaluation) or baseline is None:
        return ""
    if evaluation.baseline_pin is None:
        return ("a release whose comparison gates compares only with the baseline "
                "governance pinned: history.baseline_sha256 is not set")
    try:
        found = sha256_path(baseline) if baseline.is_file() else None
    except OSError:
        found = None
    if found is None:
        return ""  # not there: the comparison says the baseline is missing
    if found != evaluation.baseline_pin:
        return (f"the scorecard at history.baseline (sha256 {found[:16]}...) is not the one "
                f"governance pinned in history.baseline_sha256 ({evaluation.baseline_pin[:16]}"
                "...)")
    return ""


def _baseline_keys(run: _Run) -> list[Ed25519PublicKey]:
    """The keys a baseline must verify against: under ``purpose: release`` the
    Evaluation's own, since whoever runs CI could otherwise sign a weaker baseline and
    hand its key in; elsewhere the command line's ``--trusted-key`` too."""
    if run.evaluation.policy.purpose == "release":
        return run.keys[:len(run.evaluation.trusted_keys)]
    return run.keys


def _write(run: _Run, outcome: Decision) -> None:
    """The scorecard and every file it signs: findings, report, validation, projections."""
    evaluation, staging, report = run.evaluation, run.staging, run.report
    policy = evaluation.policy
    agent = agentcard.card(policy.catalogues, policy.card_mappings, outcome,
                           run.options.key is not None) if policy.catalogues else None
    card = evidence.scorecard(evaluation, run.tally, outcome, run.rows_sha, run.inputs, agent,
                              report[0] if report else None, run.options.label, run.provenance,
                              run.options.candidates, run.as_of)
    staging.write("findings.jsonl", evidence.findings_jsonl(outcome.findings))
    subjects = {"rows.jsonl": run.rows_sha, "findings.jsonl": card["findings_sha256"]}
    for name, data in run.copies:  # the bundle and attestations the decision rests on
        staging.write(name, data)
        subjects[name] = hashlib.sha256(data).hexdigest()
    for name, data in report[1] if report else []:
        staging.write(name, data)
        subjects[name] = hashlib.sha256(data).hexdigest()
    if run.judge is not None:
        subjects["judgements.jsonl"] = run.judge["judgements_sha256"]
    if outcome.validation is not None:
        checked = evidence.canonical(
            evidence.validation_report(evaluation, run.tally, outcome.validation))
        staging.write("validation.json", checked)
        subjects["validation.json"] = hashlib.sha256(checked).hexdigest()
    key = run.options.key  # the reports name its fingerprint: they are signed subjects
    for name, data in reports.project(card, key is not None,
                                      signing.keyid(key.public_key()) if key else "").items():
        staging.write(name, data)
        subjects[name] = hashlib.sha256(data).hexdigest()
    subjects |= {f"inputs/{name}": meta["sha256"] for name, meta in run.inputs.items()}
    run.card, run.subjects = card, subjects


def _result(run: _Run, out: Path, sha: str) -> Result:
    card, evaluation = run.card, run.evaluation
    overall = card["overall"]["score"] if card["overall"] else None
    where = display(evaluation.inputs[evaluation.unit_input].path)
    located = [f"{where}:{s['line']}: {s['code']}: {s['message']}"
               for s in card["coverage"]["record_problem_samples"]]
    stats = dict(run.runtime.stats) if run.runtime is not None else {}
    return Result(evaluation.name, card["decision"], card["exit_code"], out, sha,
                  card["reasons"], overall, located, stats,
                  {name: entry["sha256"] for name, entry in sorted(run.inputs.items())},
                  card["provenance"], card.get("as_of") or {},
                  (f"{card['policy']['name']}@{card['policy']['version']}",
                   card["policy_sha256"]), list(run.staging.left))


def _protocol_report(evaluation: Evaluation, tally: Any, key: Ed25519PrivateKey | None
                     ) -> tuple[Any, list[tuple[str, bytes]]] | None:
    """The protocol report the policy asks for (``spec.report``): the scorecard's
    ``report`` member and the files written beside it. A report with a ``key_domain`` is
    handed this run's signing key derived under it (None when unsigned), never the key."""
    if evaluation.policy.report is None:
        return None
    report = protocols.reports()[evaluation.policy.report]
    if report.key_domain is None:
        return report.build(evaluation, tally)
    derived = signing.derived_key(key, report.key_domain) if key is not None else None
    return report.build(evaluation, tally, derived)


CACHE_KEY_DOMAIN = b"specgate.judgement-cache-key/v1"


def _cache_of(evaluation: Evaluation, options: RunOptions) -> tuple[Path | None, bytes | None]:
    """The judgement cache a run reads and writes, and its MAC key (None: the per-user key
    file). The key file lies on the runner, whose owner may be the evaluated party, so a
    release never rests on answers sealed with it: a signed release seals and reads its
    cache with a key derived from its signing key (whoever could forge an entry could sign
    the scorecard itself), an unsigned release uses no cache at all (docs/judges.md)."""
    if options.cache is None or evaluation.policy.purpose != "release":
        return options.cache, None
    if options.key is None:
        return None, None
    return options.cache, signing.derived_key(options.key, CACHE_KEY_DOMAIN)


def _judge_runtime(evaluation: Evaluation, cache: tuple[Path | None, bytes | None],
                   progress: Callable[[int, int], None] | None,
                   keys: list[Ed25519PublicKey], run_id: str | None) -> Runtime | None:
    """A judge runtime when the Evaluation configures a judge and the policy asks one; a
    replay only from a scorecard that verifies against a trusted key. A release takes its
    cached answers all from one draw or none, unless governance wrote judge.cache_reuse."""
    rubrics = shards.rubrics(evaluation)
    if evaluation.judge.provider == "none" or not rubrics:
        return None
    reuse = evaluation.judge.cache_reuse or (
        "all_or_none" if evaluation.policy.purpose == "release" else "partial")
    policy = evaluation.policy  # governance's: how many answers a prompt gets, and the bar
    config = replace(evaluation.judge, cache=cache[0], cache_key=cache[1], cache_reuse=reuse,
                     repeats=policy.judge_repeats, min_agreement=policy.min_agreement)
    if config.replay is not None:
        config = bind_replay(config, keys)
        # answers vouched for only by a key of the command line are the command line's
        # choice of judge, as much as another endpoint would be (JUDGE_OVERRIDDEN)
        if config.replay_overridden or (config.replay_signer is not None and
                                        config.replay_signer >= len(evaluation.trusted_keys)):
            evaluation.judge_overridden = True
    return Runtime(config, rubrics, progress=progress, run_id=run_id)


def judge_block(evaluation: Evaluation, runtime: Runtime, judgements_sha: str) -> dict[str, Any]:
    """The scorecard's record of the judge: identity (hashed), endpoint and replay source
    (recorded only, so a replay stays comparable with the run it replays)."""
    config = runtime.config
    identity = config.identity(runtime.rubrics)
    elsewhere = {m.label: {"provider": m.provider, "base_url": m.base_url}
                 for m in config.members
                 if (m.provider, m.base_url) != (config.provider, config.base_url)}
    return {"identity": identity, "judge_sha256": digest(identity),
            "provider": "replay" if config.replayed_from else config.provider,
            "replayed_from": config.replayed_from,
            "base_url": runtime.config.base_url or None,
            **({"proxy": config.proxy} if config.proxy else {}),
            **({"endpoints": elsewhere} if elsewhere else {}),
            "judgements": len(runtime.requests), "errors": runtime.stats["errors"],
            # how many answers were asked in this run, taken from the cache or replayed,
            # and the rule that let cached answers in (null: no cache was read)
            **{k: runtime.stats[k] for k in ("fresh", "reused", "replayed")},
            "cache_reuse": config.cache_reuse if config.cache is not None and
            not config.replayed_from and config.provider != "mock" else None,
            "judgements_sha256": judgements_sha,
            **({"repeats": {"k": evaluation.policy.judge_repeats,
                            "min_agreement": evaluation.policy.min_agreement,
                            "max_abstained": evaluation.policy.max_abstained}}
               if evaluation.policy.repeats_written else {})}
