"""engine run: every Evaluation under the paths, decided, with its evidence."""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import re
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cli.common import (
    KEY_VARIABLE,
    PATHS_HELP,
    USAGE_EXIT,
    described,
    judge_options,
    judge_overrides,
    judge_progress,
    overrides,
    shown,
    signing_key,
)
from engine.errors import UsageError
from engine.evidence import candidate, runs, signing
from engine.evidence.scorecard import publish, signed_now
from engine.judge import DEFAULT_URLS, JudgeConfig
from engine.reports import summary
from engine.run import shards, workers
from engine.run.execute import Result, RunOptions, execute
from engine.spec import evaluation as spec
from engine.spec.schema import is_date

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    pass


DEFAULT_OUT = Path("specgate-out")


LABEL = re.compile(r"[A-Za-z0-9._-]{1,64}", re.ASCII)

EXITS = ("0 PASS, 1 FAIL, 3 INCOMPLETE (no decision could be reached), 4 TRIAGE or SELF_TEST; a "
         "run of several evaluations exits with the worst; "
         + USAGE_EXIT + ". docs/ci.md#exit-codes")
EXAMPLES = (
    "engine run specs/",
    "engine run specs/ --out out/ --key keys/runner/private.pem --run-id 1234.1",
    "engine run specs/example --input runs=captured.jsonl --json",
    "engine run specs/ --out out/ --key keys/runner/private.pem --subject "
    "ghcr.io/acme/support-agent@sha256:" + "0" * 64,
)


def add(sub: Any) -> None:
    """engine run: every Evaluation under the paths, and how this run is made."""
    parser = sub.add_parser("run", help="run every Evaluation under the paths",
                            **described(EXITS, *EXAMPLES))
    parser.add_argument("paths", nargs="+", type=Path, help=PATHS_HELP)
    parser.add_argument("--input", action="append", default=[], metavar="NAME=PATH",
                     help="rebind an input declared by an Evaluation")
    parser.add_argument("--out", type=Path, help="output folder (must be new or empty)")
    parser.add_argument("--key", type=Path, help=f"Ed25519 private key (or ${KEY_VARIABLE})")
    parser.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    parser.add_argument("--run-id", metavar="ID", help="this run's id, signed into every "
                     "scorecard's statement and the summary (e.g. the CI run's id and "
                     "attempt); default: 128 random bits")
    parser.add_argument("--baseline", type=Path, help="earlier signed scorecard to compare with")
    parser.add_argument("--trusted-key", action="append", default=[], type=Path,
                     help="public key a baseline must be signed by (repeatable)")
    parser.add_argument("--label", help="record this label in the scorecard ([A-Za-z0-9._-], "
                     "1-64 characters)")
    parser.add_argument("--baseline-label", metavar="LABEL", help="compare with the newest "
                     "scorecard under --history with this label that verifies")
    parser.add_argument("--history", type=Path, metavar="DIR",
                     help="folder of earlier runs searched by --baseline-label")
    parser.add_argument("--as-of", help="UTC date (YYYY-MM-DD) waivers are judged on; "
                     "default today; a release is never judged before today, nor before "
                     "the signed times it rests on (docs/provenance.md#time)")
    judge_options(parser)
    parser.add_argument("--judge-replay", type=Path, metavar="SCORECARD",
                     help="replay the judgements of a signed scorecard.json (or its folder); "
                     "it must verify against a --trusted-key")
    parser.add_argument("--executor", choices=("local", "ray"), default="local",
                     help="score records in this process (default) or in shards on Ray "
                     "(a local instance, or the cluster in $RAY_ADDRESS)")
    parser.add_argument("--shards", type=int, metavar="N",
                     help="with --executor ray: shards to cut the records into "
                     "(default: one per CPU Ray reports)")
    parser.add_argument("--workers", metavar="N|auto",
                     help="score a large line-based input (1 MiB or more) in N processes of "
                     "this machine (default auto: one per CPU; 1: this process only)")
    parser.add_argument("--governance-key", action="append", default=[], type=Path,
                     metavar="PUB", help="governance's public key: under purpose: release, "
                     "specs its bundle (specs.intoto.jsonl) does not sign exactly are "
                     "INCOMPLETE (repeatable; docs/provenance.md)")
    parser.add_argument("--attestation", action="append", default=[], metavar="NAME=PATH",
                     help="the attestation of input NAME (default: PATH.intoto.jsonl beside "
                     "the input)")
    parser.add_argument("--subject", action="append", default=[], metavar="NAME@sha256:HEX",
                     help="the build this run judges (repeatable): recorded in the scorecard, "
                     "a subject of its signed statement and of the SLSA Verification Summary "
                     "(vsa.intoto.jsonl) written beside it; docs/verifying.md")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    rebound = overrides(args.input)
    key = signing_key(args)
    evaluations = spec.load(args.paths, rebound)
    if not evaluations:
        raise UsageError("no Evaluation found under " + ", ".join(map(str, args.paths)),
                         "NO_EVALUATION")
    # on stderr (--json stays JSON), each once: Evaluations sharing a policy share its own
    for warning in dict.fromkeys(str(w) for e in evaluations for w in e.warnings):
        print(shown(f"warning: {warning}"), file=sys.stderr)
    unknown = set(rebound) - {name for e in evaluations for name in e.inputs}
    if unknown:
        raise UsageError(f"--input {sorted(unknown)[0]}: no Evaluation declares this input",
                         "UNKNOWN_INPUT")
    dests = _destinations(evaluations, args.out)
    if args.subject and args.out is None and len(dests) > 1:
        raise UsageError("--subject with several Evaluations needs --out: their one "
                         "verification summary (vsa.intoto.jsonl), PASSED only when every "
                         "evaluation PASSes, goes at its top", "SUBJECT_NEEDS_OUT")
    if args.out is not None and len(dests) > 1:
        _check_new_or_empty(args.out)
    history = _history(args)
    if (args.baseline or history) and len(evaluations) > 1:
        raise UsageError("a baseline needs a single Evaluation (name its folder or file)",
                         "AMBIGUOUS_BASELINE")
    if args.baseline or history:
        _runner_may_choose_the_baseline(evaluations[0])
    trusted = [signing.load_public(p) for p in args.trusted_key]
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")  # the runner's: a floor, recorded
    as_of = args.as_of or today
    if not is_date(as_of):
        raise UsageError(f"--as-of wants a calendar date YYYY-MM-DD, got '{as_of}'", "BAD_DATE")
    for evaluation in evaluations:
        declared = evaluation.judge
        evaluation.judge = judge_overrides(declared, args)
        evaluation.judge_overridden = bool(shards.rubrics(evaluation)) and \
            _judge_changed(declared, evaluation.judge)
        # A release is judged on the real date: --as-of may look ahead, never back (a
        # back-dated run would revive expired waivers and sign the PASS); the run moves it
        # on to the signed times it rests on, since the clock is the runner's (run/clock.py)
        evaluation.as_of = max(as_of, today) if evaluation.policy.purpose == "release" \
            else as_of
        evaluation.as_of_requested = args.as_of or ""
        evaluation.as_of_clock = today
    cache = None if args.no_judge_cache else args.judge_cache
    progress = judge_progress if sys.stderr.isatty() else None
    executor = _executor(args)
    options = RunOptions(key, args.baseline, tuple(trusted), cache, progress, executor,
                         label=args.label, history=history,
                         governance=tuple(signing.load_public(p) for p in args.governance_key),
                         attestations=_attestations(args.attestation, evaluations),
                         candidates=candidate.parse_all(args.subject))
    run_id = runs.checked_id(args.run_id) if args.run_id is not None else runs.new_id()
    # every scorecard names every evaluation of its run, --out or not: verified alone, one
    # that PASSed must not stand for a run whose other evaluation FAILed (PART_OF_RUN)
    together = [e.name for e in evaluations]
    results = [_execute(e, d, replace(options, run=runs.predicate(run_id, together)))
               for e, d in zip(evaluations, dests, strict=True)]
    worst = max(r.exit_code for r in results)
    # a folder beside --out named like a killed run's staging folder, seen and left there
    for line in dict.fromkeys(line for r in results for line in r.left):
        print(shown(f"warning: {line}"), file=sys.stderr)
    if args.out is not None and len(results) > 1:
        _write_summary(args.out, results, run_id, key, options.candidates)
    if args.json:
        print(json.dumps({"exit_code": worst, "run_id": run_id,
                          "evaluations": [_summary(r) for r in results]}, indent=2))
    else:
        for result in results:
            _print_result(result, key is not None)
        print(f"run: {run_id}")
    return worst


def _history(args: argparse.Namespace) -> tuple[Path, str] | None:
    """(folder, label) of --history and --baseline-label; --label checked on the way."""
    for option, value in (("--label", args.label), ("--baseline-label", args.baseline_label)):
        if value is not None and not LABEL.fullmatch(value):
            raise UsageError(f"{option} wants 1-64 characters of A-Z, a-z, 0-9, '.', '_' or "
                             f"'-', got {value[:80]!r}", "BAD_LABEL")
    if args.baseline and args.baseline_label:
        raise UsageError("--baseline names a file and --baseline-label chooses one from "
                         "--history: give one of them", "BASELINE_CONFLICT")
    if (args.baseline_label is None) != (args.history is None):
        raise UsageError("--baseline-label and --history go together", "BASELINE_CONFLICT")
    return (args.history, args.baseline_label) if args.history else None


def _runner_may_choose_the_baseline(evaluation: spec.Evaluation) -> None:
    """A release whose comparison gates compares with governance's baseline only: whoever
    runs CI could otherwise name, or label and curate, a weaker one (issue 26)."""
    policy = evaluation.policy
    if policy.purpose == "release" and policy.comparison_required:
        raise UsageError(f"'{evaluation.name}' is a release whose comparison gates "
                         "(gate.comparison.required): it compares with the Evaluation's "
                         "history.baseline, which governance approves; --baseline and "
                         "--baseline-label are the runner's choice", "BASELINE_NOT_GOVERNED")


def _destinations(evaluations: list[spec.Evaluation], out: Path | None) -> list[Path]:
    names = [e.name for e in evaluations]
    for name in names:
        if names.count(name) > 1:
            first, second = [spec.display(e.file) for e in evaluations if e.name == name][:2]
            raise UsageError(f"two Evaluations are both named '{name}': {first} and {second} "
                             "(each names its evidence folder; rename one in metadata.name)",
                             "DUPLICATE_NAME")
    if out is None:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        return [DEFAULT_OUT / name / stamp for name in names]
    return [out] if len(names) == 1 else [out / name for name in names]


def _attestations(pairs: list[str], evaluations: list[spec.Evaluation]) -> dict[str, Path]:
    """--attestation NAME=PATH: NAME an input some Evaluation requires attested."""
    out = {}
    wanted = {n for e in evaluations for n, i in e.inputs.items()
              if i.attestation_keys is not None}
    for name, path in overrides(pairs, "--attestation").items():
        if name not in wanted:
            raise UsageError(f"--attestation {name}: no Evaluation requires input '{name}' "
                             "attested (inputs.NAME.attestation)", "UNKNOWN_INPUT")
        out[name] = path
    return out


def _execute(evaluation: spec.Evaluation, dest: Path, options: RunOptions) -> Result:
    """One evaluation, with its scoring progress on a terminal (never in CI logs)."""
    if not sys.stderr.isatty():
        return execute(evaluation, dest, options)
    meter = _Scoring()
    try:
        return execute(evaluation, dest, replace(options, scoring=meter))
    finally:
        meter.clear()


class _Scoring:
    """Records scored, their rate and the time left (by bytes of the unit input read), on
    one terminal line redrawn at most four times a second, from a quarter of a second on
    (a short run shows nothing); cleared when the evaluation is scored."""

    INTERVAL = 0.25  # seconds between two drawings, and before the first

    def __init__(self) -> None:
        self.first: tuple[float, int] | None = None  # (time, bytes read) of the first report
        self.drawn = time.monotonic()
        self.shown = False

    def __call__(self, records: int, read: int, size: int) -> None:
        now = time.monotonic()
        if self.first is None:
            self.first = (now, read)
        if now - self.drawn < self.INTERVAL:
            return
        self.drawn, (since, read_then) = now, self.first
        rate = records / (now - since) if now > since else 0.0
        speed = (read - read_then) / (now - since) if now > since else 0.0
        text = f"  scoring: {records:,} records, {rate:,.0f}/s"
        if size:
            text += f", {min(read / size, 1):.0%} of the input"
        if speed > 0 and size > read:
            text += f", about {_duration((size - read) / speed)} left"
        print(f"\r\033[K{text}", end="", file=sys.stderr, flush=True)
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            print("\r\033[K", end="", file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    whole = int(seconds + 0.5)
    return f"{whole // 60} min {whole % 60:02d} s" if whole >= 60 else f"{whole} s"


def _check_new_or_empty(out: Path) -> None:
    """--out holds no earlier run (a killed run's hidden staging folder aside, which the
    run removes): the summary at its top must never replace an earlier run's."""
    if out.exists() and (not out.is_dir() or any(
            not (p.name.startswith(".") and ".partial-" in p.name) for p in out.iterdir())):
        raise UsageError(f"{out} already holds earlier evidence; it is never overwritten "
                         "(choose another --out)", "OUTPUT_EXISTS")


def _write_summary(out: Path, results: list[Result], run_id: str, key: Any,
                   candidates: dict[str, str]) -> None:
    """summary.md and summary.json at the top of --out, beside the evidence folders of a
    run of several evaluations; with a key, the seal over them and every scorecard
    (summary.json.sig, summary.intoto.jsonl, signer.pub.pem), then the candidates' one
    VSA of the whole run (PASSED only when every evaluation PASSed), written last."""
    folders = [Path(os.path.relpath(r.out, out)).as_posix() for r in results]
    entries = [summary.entry(r.evaluation, r.decision, r.exit_code, r.overall, folder,
                             r.scorecard_sha256, r.reasons, r.inputs)
               for r, folder in zip(results, folders, strict=True)]
    markdown = summary.summary_markdown(entries, run_id, key is not None)
    data = summary.summary_json(entries, run_id, key is not None)
    publish(out / "summary.md", markdown)
    publish(out / "summary.json", data)
    if key is not None:
        scorecards = {f"{folder}/scorecard.json": r.scorecard_sha256
                      for r, folder in zip(results, folders, strict=True)}
        now = signed_now()
        sealed = runs.seal_files(key, data, markdown, scorecards, run_id,
                                 max(r.exit_code for r in results), now)
        for name, signed in sealed.items():
            publish(out / name, signed)
        if candidates:
            judged = [candidate.Judged(r.evaluation, r.decision, *r.policy, uri,
                                       r.scorecard_sha256)
                      for uri, r in sorted(zip(scorecards, results, strict=True),
                                        key=lambda pair: pair[0])]
            verdict = candidate.verdict(judged, run_id, (runs.SUMMARY, hashlib.sha256(
                data).hexdigest()))
            publish(out / candidate.VSA_FILE, candidate.vsa_file(key, candidates,
                                                                  verdict, now))


def _executor(args: argparse.Namespace) -> shards.Executor | None:
    if args.shards is not None and (args.executor != "ray" or args.shards < 1):
        raise UsageError("--shards wants a positive number and --executor ray", "BAD_SHARDS")
    count = _workers(args.workers)
    if args.executor == "local":
        return workers.PoolExecutor(count) if count > 1 else None
    if args.workers is not None:
        raise UsageError("--workers runs processes of this machine; with --executor ray "
                         "choose --shards instead", "BAD_WORKERS")
    from engine.run.on_ray import RayExecutor

    return RayExecutor(args.shards, os.environ.get("RAY_ADDRESS") or None)


def _workers(value: str | None) -> int:
    """``--workers``: a positive number, or ``auto`` (one per CPU, the default)."""
    if value is None or value == "auto":
        return workers.cpu_count()
    if not re.fullmatch(r"[0-9]+", value) or int(value) < 1:
        raise UsageError(f"--workers wants a positive number or auto, got '{value}'",
                         "BAD_WORKERS")
    return int(value)


def _judge_changed(declared: JudgeConfig, used: JudgeConfig) -> bool:
    """True when the command line chose a judge governance did not declare: another live
    provider, endpoint or model, or no judge instead of a declared live one (the policy's
    fallbacks in its place). Whoever runs CI would be choosing the judge. Replay (bound to
    a trusted scorecard) and mock (always SELF_TEST) are not such choices."""
    if used.provider in ("replay", "mock"):
        return False
    if used.provider not in DEFAULT_URLS and declared.provider not in DEFAULT_URLS:
        return False  # no live judge either way
    return (used.provider, used.base_url, used.models) != \
        (declared.provider, declared.base_url, declared.models)


_SIGNED = {"specs": "specs bundle", "attestation": "harness attestation",
           "baseline": "baseline", "calibration": "calibration",
           "replay": "replayed scorecard"}  # as_of.set_by, in words


def _summary(result: Result) -> dict[str, Any]:
    return {"evaluation": result.evaluation, "decision": result.decision,
            "overall_pass": result.decision == "PASS", "exit_code": result.exit_code,
            "overall": result.overall, "out": str(result.out),
            "scorecard_sha256": result.scorecard_sha256, "reasons": result.reasons}


def _print_result(result: Result, signed: bool) -> None:
    score = "" if result.overall is None else f" (overall {result.overall:.4f})"
    fails = summary.failing(result.decision, result.reasons)
    also = f", and failing: {', '.join(fails)}" if fails else ""
    print(f"{shown(result.evaluation)}: {result.decision}{shown(also)}{score}")
    for reason in result.reasons:  # a message may quote a record's values
        print(f"  {reason['decision']:<10} {reason['code']}: {shown(reason['message'])}  "
              f"[{shown(reason['spec_path'])}]")
    for located in result.record_problems:
        print(f"  {shown(located)}")
    print(f"  evidence: {shown(spec.display(result.out.resolve()))}"
          f"{' (signed)' if signed else ' (unsigned: pass --key to sign)'}")
    print(f"  scorecard sha256: {result.scorecard_sha256}")
    dated = result.as_of
    if dated.get("set_by") not in (None, "clock", "requested"):
        source, _, name = dated["set_by"].partition(":")
        what = _SIGNED[source] + (f" of input {name}" if name else "")
        print(f"  judged as of {dated['date']}, the date of the {what} (signed "
              f"{dated['signed'][dated['set_by']]}); the clock read {dated['clock']}")
    specs = result.provenance.get("specs", {})
    if specs.get("status") == "verified":
        print(f"  specs: {len(specs['files'])} file(s), as governance signed them (keyid "
              f"{specs['signer'][:16]})")
    for name, entry in result.provenance.get("inputs", {}).items():
        if entry["status"] == "attested":
            print(f"  input {shown(name)}: attested by the harness (keyid {entry['signer'][:16]})")
    if result.judge_stats:
        s = result.judge_stats
        print(f"  judge: {s['calls']} call(s), {s['cache_hits']} from the cache, "
              f"{s['replayed']} replayed, {s['errors']} without a verdict; answers: "
              f"{s['fresh']} fresh, {s['reused']} reused")
        if s.get("cache_set_aside"):
            print(f"  judge cache: {s['cache_set_aside']} cached answer(s) set aside: they were "
                  "not all there or not of one draw, so every prompt was asked again "
                  "(judge.cache_reuse: all_or_none)")
        if s.get("cache_unwritten"):
            print(f"  judge cache: {s['cache_unwritten']} answer(s) could not be stored there "
                  "(the run used them; a later run asks again)")
        rejected = s.get("cache_rejected", 0)
        if rejected:
            print(f"  judge cache: {rejected} entr{'y' if rejected == 1 else 'ies'} failed "
                  "the MAC check and were not believed (asked again)")

