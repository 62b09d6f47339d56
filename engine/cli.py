"""The command line: the only module that prints or exits."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import rfc8785

from engine import protocols
from engine._version import __version__
from engine.errors import EngineError, SpecErrors, UsageError, VerifyError
from engine.evidence import provenance, runs, signing
from engine.evidence.scorecard import publish, signed_now
from engine.evidence.verify import Verified, verify
from engine.judge import DEFAULT_KEYS, DEFAULT_URLS, PROVIDERS, JudgeConfig
from engine.reports import summary
from engine.run import shards, workers
from engine.run.execute import Result, RunOptions, execute
from engine.spec import evaluation as spec
from engine.spec.schema import is_date

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

EXIT_SPEC = 2
EXIT_INTERNAL = 3  # no decision could be reached: like INCOMPLETE, never PASS or FAIL
KEY_VARIABLE = "SPECGATE_SIGNING_KEY"
DEFAULT_OUT = Path("specgate-out")
DEFAULT_CACHE = Path(".specgate-cache") / "judgements"
PATHS_HELP = "spec files or folders; every Evaluation under them"
EXIT_HELP = ("exit codes: 0 PASS (or valid), 1 FAIL (or invalid evidence), 2 spec or usage "
             "error, 3 INCOMPLETE (or no decision), 4 TRIAGE or SELF_TEST; a run exits with "
             "the worst of its evaluations. docs/ci.md#exit-codes")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="engine", description="specgate: signed release "
                                     "gates for AI agents, driven by YAML specs",
                                     epilog=EXIT_HELP)
    parser.add_argument("--version", action="version", version=f"specgate {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True)
    _run_parser(sub)
    validate = sub.add_parser("validate", help="check specs without running them")
    validate.add_argument("paths", nargs="+", type=Path, help="spec files or folders")
    validate.add_argument("--governance-key", action="append", default=[], type=Path,
                          metavar="PUB", help="also check each bundle's signature")
    _provenance_parsers(sub)
    _verify_parser(sub)
    keygen = sub.add_parser("keygen", help="write a new Ed25519 key pair")
    keygen.add_argument("--out-dir", type=Path, required=True,
                        help="folder for private.pem (mode 600) and public.pem; never overwritten")
    test = sub.add_parser("test", help="run policy unit tests (kind: PolicyTest)")
    test.add_argument("paths", nargs="+", type=Path,
                      help="spec files or folders; every PolicyTest under them")
    test.add_argument("--min-coverage", type=float, help="share of policy rules to exercise")
    diff = sub.add_parser("diff", help="the same evidence under two policy versions")
    diff.add_argument("old", type=Path, help="the old Policy file")
    diff.add_argument("new", type=Path, help="the new Policy file")
    diff.add_argument("--evaluation", type=Path,
                      help="Evaluation to run (default: the one in the new policy's folder)")
    diff.add_argument("--input", action="append", default=[], metavar="NAME=PATH",
                      help="rebind a named input of the Evaluation (repeatable)")
    diff.add_argument("--json", action="store_true", help="machine-readable differences")
    init = sub.add_parser("init", help="scaffold a new spec folder")
    init.add_argument("folder", type=Path, help="a new or empty folder to write the specs into")
    init.add_argument("--name", help="evaluation name (default: the folder's name)")
    hash_cmd = sub.add_parser("hash", help="print policy and suite digests")
    hash_cmd.add_argument("paths", nargs="+", type=Path, help="spec files or folders")
    for command in protocols.commands().values():  # what the protocols add
        added = sub.add_parser(command.name, help=command.help)
        added.add_argument("paths", nargs="+", type=Path, help=PATHS_HELP)
        added.add_argument("--input", action="append", default=[], metavar="NAME=PATH",
                           help="rebind an input declared by an Evaluation")
        command.add(added)
    return parser


def _run_parser(sub: Any) -> None:
    """engine run: every Evaluation under the paths, and how this run is made."""
    run = sub.add_parser("run", help="run every Evaluation under the paths", epilog=EXIT_HELP)
    run.add_argument("paths", nargs="+", type=Path, help=PATHS_HELP)
    run.add_argument("--input", action="append", default=[], metavar="NAME=PATH",
                     help="rebind an input declared by an Evaluation")
    run.add_argument("--out", type=Path, help="output folder (must be new or empty)")
    run.add_argument("--key", type=Path, help=f"Ed25519 private key (or ${KEY_VARIABLE})")
    run.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    run.add_argument("--run-id", metavar="ID", help="this run's id, signed into every "
                     "scorecard's statement and the summary (e.g. the CI run's id and "
                     "attempt); default: 128 random bits")
    run.add_argument("--baseline", type=Path, help="earlier signed scorecard to compare with")
    run.add_argument("--trusted-key", action="append", default=[], type=Path,
                     help="public key a baseline must be signed by (repeatable)")
    run.add_argument("--label", help="record this label in the scorecard ([A-Za-z0-9._-], "
                     "1-64 characters)")
    run.add_argument("--baseline-label", metavar="LABEL", help="compare with the newest "
                     "scorecard under --history with this label that verifies")
    run.add_argument("--history", type=Path, metavar="DIR",
                     help="folder of earlier runs searched by --baseline-label")
    run.add_argument("--as-of", help="UTC date (YYYY-MM-DD) waivers are judged on; "
                     "default today; a release is never judged before today")
    _judge_options(run)
    run.add_argument("--judge-replay", type=Path, metavar="SCORECARD",
                     help="replay the judgements of a signed scorecard.json (or its folder); "
                     "it must verify against a --trusted-key")
    run.add_argument("--executor", choices=("local", "ray"), default="local",
                     help="score records in this process (default) or in shards on Ray "
                     "(a local instance, or the cluster in $RAY_ADDRESS)")
    run.add_argument("--shards", type=int, metavar="N",
                     help="with --executor ray: shards to cut the records into "
                     "(default: one per CPU Ray reports)")
    run.add_argument("--workers", metavar="N|auto",
                     help="score a large line-based input (1 MiB or more) in N processes of "
                     "this machine (default auto: one per CPU; 1: this process only)")
    _calibrate_parser(sub)
    run.add_argument("--governance-key", action="append", default=[], type=Path,
                     metavar="PUB", help="governance's public key: under purpose: release, "
                     "specs its bundle (specs.intoto.jsonl) does not sign exactly are "
                     "INCOMPLETE (repeatable; docs/provenance.md)")
    run.add_argument("--attestation", action="append", default=[], metavar="NAME=PATH",
                     help="the attestation of input NAME (default: PATH.intoto.jsonl beside "
                     "the input)")


def _verify_parser(sub: Any) -> None:
    """engine verify: the runner's key, and the governance and harness keys (provenance)."""
    verify_cmd = sub.add_parser("verify", help="verify a signed scorecard, or every "
                                "scorecard under a folder")
    verify_cmd.add_argument("scorecard", type=Path, metavar="SCORECARD|FOLDER",
                            help="a scorecard.json, or a folder such as a run's --out")
    verify_cmd.add_argument("--trusted-key", type=Path, help="the signer's pinned public key")
    verify_cmd.add_argument("--expect", action="append", default=[], metavar="EVALUATION",
                            help="with a folder: an evaluation that must be there, verified "
                            "(repeatable); any other is then a failure")
    verify_cmd.add_argument("--run-id", metavar="ID", help="the run id the run was given or "
                            "printed (a CI step records it): every scorecard must be of it")
    verify_cmd.add_argument("--governance-key", action="append", default=[], type=Path,
                            metavar="PUB", help="prove the decision was made under the specs "
                            "this key signed (repeatable)")
    verify_cmd.add_argument("--harness-key", action="append", default=[], type=Path,
                            metavar="PUB", help="prove each attested input came from the "
                            "harness holding this key (repeatable)")
    verify_cmd.add_argument("--not-before", metavar="TIME", help="UTC date or time "
                            "(YYYY-MM-DD[THH:MM[:SS]Z]): nothing signed earlier is valid")


def _provenance_parsers(sub: Any) -> None:
    """engine sign-specs (governance) and engine attest (the harness): docs/provenance.md."""
    sign = sub.add_parser("sign-specs", help="governance: sign every file each Evaluation "
                          "loads (specs.intoto.jsonl beside it)")
    sign.add_argument("paths", nargs="+", type=Path, help=PATHS_HELP)
    sign.add_argument("--key", type=Path, required=True, help="governance's Ed25519 private key")
    attest = sub.add_parser("attest", help="the harness: attest a log or a folder of them "
                            "(PATH.intoto.jsonl)")
    attest.add_argument("path", type=Path, metavar="PATH", help="the file or folder written")
    attest.add_argument("--key", type=Path, required=True, help="the harness's private key")
    attest.add_argument("--predicate", metavar="JSON", help="what made it: a JSON object "
                        "(text, or @FILE), recorded in the scorecard (default: {})")
    attest.add_argument("--predicate-type", metavar="URI",
                        help="the predicate's type (default: https://specgate.dev/attestation/v1)")
    attest.add_argument("--out", type=Path, help="where to write it (default: PATH.intoto.jsonl)")


def _calibrate_parser(sub: Any) -> None:
    calibrate = sub.add_parser("calibrate", help="measure the judge against human labels on "
                               "a hold-out set and write a signed calibration artifact")
    calibrate.add_argument("path", type=Path, help="one Evaluation (its file or folder)")
    calibrate.add_argument("--input", action="append", default=[], metavar="NAME=PATH",
                           help="rebind an input to the labelled hold-out records")
    calibrate.add_argument("--out", type=Path, required=True,
                           help="output folder (must be new or empty)")
    calibrate.add_argument("--key", type=Path,
                           help=f"Ed25519 private key (or ${KEY_VARIABLE})")
    _judge_options(calibrate)
    calibrate.set_defaults(judge_replay=None)  # a replay measures no judge: not offered


def _judge_options(parser: argparse.ArgumentParser) -> None:
    """The judge overrides and cache options ``engine run`` and ``engine calibrate`` share."""
    parser.add_argument("--judge-provider", choices=PROVIDERS, help="override the judge provider")
    parser.add_argument("--judge-base-url", help="override the judge endpoint")
    parser.add_argument("--judge-model", help="override the judge model")
    parser.add_argument("--judge-cache", type=Path, default=DEFAULT_CACHE,
                        help=f"judgement cache folder (default {DEFAULT_CACHE})")
    parser.add_argument("--no-judge-cache", action="store_true", help="neither read nor write it")


def _overrides(pairs: list[str], option: str = "--input") -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name or not value:
            raise UsageError(f"{option} wants NAME=PATH, got '{pair}'", "BAD_INPUT_OPTION")
        path = Path(value)
        if not path.exists():
            raise UsageError(f"{option} {name}: {value} does not exist", "INPUT_NOT_FOUND")
        out[name] = path.resolve()
    return out


LABEL = re.compile(r"[A-Za-z0-9._-]{1,64}", re.ASCII)


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


def cmd_run(args: argparse.Namespace) -> int:
    overrides = _overrides(args.input)
    key = _signing_key(args)
    evaluations = spec.load(args.paths, overrides)
    if not evaluations:
        raise UsageError("no Evaluation found under " + ", ".join(map(str, args.paths)),
                         "NO_EVALUATION")
    unknown = set(overrides) - {name for e in evaluations for name in e.inputs}
    if unknown:
        raise UsageError(f"--input {sorted(unknown)[0]}: no Evaluation declares this input",
                         "UNKNOWN_INPUT")
    dests = _destinations(evaluations, args.out)
    if args.out is not None and len(dests) > 1:
        _check_new_or_empty(args.out)
    history = _history(args)
    if (args.baseline or history) and len(evaluations) > 1:
        raise UsageError("a baseline needs a single Evaluation (name its folder or file)",
                         "AMBIGUOUS_BASELINE")
    if args.baseline or history:
        _runner_may_choose_the_baseline(evaluations[0])
    trusted = [signing.load_public(p) for p in args.trusted_key]
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    as_of = args.as_of or today
    if not is_date(as_of):
        raise UsageError(f"--as-of wants a calendar date YYYY-MM-DD, got '{as_of}'", "BAD_DATE")
    for evaluation in evaluations:
        declared = evaluation.judge
        evaluation.judge = _judge_overrides(declared, args)
        evaluation.judge_overridden = bool(shards.rubrics(evaluation)) and \
            _judge_changed(declared, evaluation.judge)
        # A release is judged on the real date: --as-of may look ahead, never back (a
        # back-dated run would revive expired waivers and sign the PASS).
        evaluation.as_of = max(as_of, today) if evaluation.policy.purpose == "release" \
            else as_of
        evaluation.as_of_requested = as_of
    cache = None if args.no_judge_cache else args.judge_cache
    progress = _progress if sys.stderr.isatty() else None
    executor = _executor(args)
    options = RunOptions(key, args.baseline, tuple(trusted), cache, progress, executor,
                         label=args.label, history=history,
                         governance=tuple(signing.load_public(p) for p in args.governance_key),
                         attestations=_attestations(args.attestation, evaluations))
    run_id = runs.checked_id(args.run_id) if args.run_id is not None else runs.new_id()
    together = [e.name for e in evaluations] if args.out is not None else None
    results = [_execute(e, d, replace(options, run=runs.predicate(run_id, together or [e.name])))
               for e, d in zip(evaluations, dests, strict=True)]
    worst = max(r.exit_code for r in results)
    if args.out is not None and len(results) > 1:
        _write_summary(args.out, results, run_id, key)
    if args.json:
        print(json.dumps({"exit_code": worst, "run_id": run_id,
                          "evaluations": [_summary(r) for r in results]}, indent=2))
    else:
        for result in results:
            _print_result(result, key is not None)
        print(f"run: {run_id}")
    return worst


def _attestations(pairs: list[str], evaluations: list[spec.Evaluation]) -> dict[str, Path]:
    """--attestation NAME=PATH: NAME an input some Evaluation requires attested."""
    out = {}
    wanted = {n for e in evaluations for n, i in e.inputs.items()
              if i.attestation_keys is not None}
    for name, path in _overrides(pairs, "--attestation").items():
        if name not in wanted:
            raise UsageError(f"--attestation {name}: no Evaluation requires input '{name}' "
                             "attested (inputs.NAME.attestation)", "UNKNOWN_INPUT")
        out[name] = path
    return out


def _signing_key(args: argparse.Namespace) -> Any:
    """--key, else the key file ${KEY_VARIABLE} names, else None (unsigned)."""
    key_file = args.key or (Path(os.environ[KEY_VARIABLE]) if os.environ.get(KEY_VARIABLE)
                            else None)
    return signing.load_private(key_file) if key_file else None


def cmd_calibrate(args: argparse.Namespace) -> int:
    from engine.run.calibrate import Incomplete, calibrate

    key = _signing_key(args)
    evaluations = spec.load([args.path], _overrides(args.input))
    if len(evaluations) != 1:
        raise UsageError(f"engine calibrate needs exactly one Evaluation under {args.path}, "
                         f"found {len(evaluations)}", "NO_EVALUATION")
    evaluation = evaluations[0]
    unknown = set(_overrides(args.input)) - set(evaluation.inputs)
    if unknown:
        raise UsageError(f"--input {sorted(unknown)[0]}: the Evaluation declares no such "
                         "input", "UNKNOWN_INPUT")
    evaluation.judge = _judge_overrides(evaluation.judge, args)
    evaluation.as_of = evaluation.as_of_requested = dt.datetime.now(dt.UTC).strftime(
        "%Y-%m-%d")
    cache = None if args.no_judge_cache else args.judge_cache
    progress = _progress if sys.stderr.isatty() else None
    try:
        result = calibrate(evaluation, args.out, key, cache, progress)
    except Incomplete as exc:
        print(f"engine: {exc.code}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    value = result.value
    print(f"{evaluation.name}: judge calibration against '{value['label_field']}' "
          f"(min_kappa {value['min_kappa']:g})")
    print(f"  {'category':<24} {'n':>5} {'accuracy':>9} {'kappa':>7} {'sensitivity':>12} "
          f"{'specificity':>12}  met")
    for name, row in [*value["categories"].items(), ("(overall)", value["overall"])]:
        print(f"  {name:<24} {row['n']:>5} {_ratio(row['accuracy']):>9} "
              f"{_ratio(row['kappa']):>7} {_ratio(row['sensitivity']):>12} "
              f"{_ratio(row['specificity']):>12}  {'yes' if row['met'] else 'NO'}")
    print(f"  {value['unlabelled']} record(s) without a label (not in the hold-out)")
    print(f"  calibration: {spec.display(result.out.resolve())}"
          f"{' (signed)' if key is not None else ' (unsigned: pass --key to sign)'}")
    return result.exit_code


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


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


def _write_summary(out: Path, results: list[Result], run_id: str, key: Any) -> None:
    """summary.md and summary.json at the top of --out, beside the evidence folders of a
    run of several evaluations; with a key, the seal over them and every scorecard
    (summary.json.sig, summary.intoto.jsonl, signer.pub.pem), written last."""
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
        sealed = runs.seal_files(key, data, markdown, scorecards, run_id,
                                 max(r.exit_code for r in results), signed_now())
        for name, signed in sealed.items():
            publish(out / name, signed)


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


def _judge_overrides(config: JudgeConfig, args: argparse.Namespace) -> JudgeConfig:
    changes: dict[str, Any] = {}
    if args.judge_provider:
        changes["provider"] = args.judge_provider
        if args.judge_provider in DEFAULT_URLS and not args.judge_base_url and \
                config.provider != args.judge_provider:
            changes["base_url"] = DEFAULT_URLS[args.judge_provider]
            changes["api_key_env"] = DEFAULT_KEYS[args.judge_provider]
    if args.judge_base_url:
        changes["base_url"] = args.judge_base_url
    if args.judge_model:
        changes["model"], changes["panel"], changes["members"] = args.judge_model, (), ()
    if args.judge_replay:
        if not args.judge_replay.exists():
            raise UsageError(f"--judge-replay: {args.judge_replay} does not exist",
                             "INPUT_NOT_FOUND")
        changes["replay"] = args.judge_replay.resolve()
        changes.setdefault("provider", "replay")
    config = replace(config, **changes)
    if config.provider in ("openai-compatible", "anthropic") and not config.models[0]:
        raise UsageError(f"judge provider {config.provider} needs a model (--judge-model)",
                         "NO_JUDGE_MODEL")
    if config.provider == "replay" and config.replay is None:
        raise UsageError("judge provider replay needs --judge-replay SCORECARD", "NO_REPLAY")
    return config


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


def _progress(done: int, total: int) -> None:
    """Judge progress on a terminal (never in CI logs)."""
    end = "\n" if done == total else ""
    print(f"\r  judging {done}/{total}", end=end, file=sys.stderr, flush=True)


def _summary(result: Result) -> dict[str, Any]:
    return {"evaluation": result.evaluation, "decision": result.decision,
            "overall_pass": result.decision == "PASS", "exit_code": result.exit_code,
            "overall": result.overall, "out": str(result.out),
            "scorecard_sha256": result.scorecard_sha256, "reasons": result.reasons}


def _print_result(result: Result, signed: bool) -> None:
    score = "" if result.overall is None else f" (overall {result.overall:.4f})"
    fails = summary.failing(result.decision, result.reasons)
    also = f", and failing: {', '.join(fails)}" if fails else ""
    print(f"{result.evaluation}: {result.decision}{also}{score}")
    for reason in result.reasons:
        print(f"  {reason['decision']:<10} {reason['code']}: {reason['message']}  "
              f"[{reason['spec_path']}]")
    for located in result.record_problems:
        print(f"  {located}")
    print(f"  evidence: {spec.display(result.out.resolve())}"
          f"{' (signed)' if signed else ' (unsigned: pass --key to sign)'}")
    print(f"  scorecard sha256: {result.scorecard_sha256}")
    specs = result.provenance.get("specs", {})
    if specs.get("status") == "verified":
        print(f"  specs: {len(specs['files'])} file(s), as governance signed them (keyid "
              f"{specs['signer'][:16]})")
    for name, entry in result.provenance.get("inputs", {}).items():
        if entry["status"] == "attested":
            print(f"  input {name}: attested by the harness (keyid {entry['signer'][:16]})")
    if result.judge_stats:
        s = result.judge_stats
        print(f"  judge: {s['calls']} call(s), {s['cache_hits']} from the cache, "
              f"{s['replayed']} replayed, {s['errors']} without a verdict")
        if s.get("cache_unwritten"):
            print(f"  judge cache: {s['cache_unwritten']} answer(s) could not be stored there "
                  "(the run used them; a later run asks again)")
        rejected = s.get("cache_rejected", 0)
        if rejected:
            print(f"  judge cache: {rejected} entr{'y' if rejected == 1 else 'ies'} failed "
                  "the MAC check and were not believed (asked again)")


def cmd_validate(args: argparse.Namespace) -> int:
    keys = [signing.load_public(p) for p in args.governance_key]
    evaluations = spec.load(args.paths)
    code = 0
    for e in evaluations:
        print(f"ok: {e.name} (policy {e.policy.name} {e.policy.version}, "
              f"suite {e.suite.name} {e.suite.version})")
        for warning in e.warnings:
            print(f"warning: {warning}")
        bundle = provenance.bundle_status(e, keys)
        where = spec.display(e.file.resolve().parent / provenance.SPECS_FILE)
        if bundle is not None and bundle.code:
            print(f"{'error' if keys else 'warning'}: {where}: {bundle.code}: {bundle.message}")
            code = EXIT_SPEC if keys else code
        elif bundle is not None:
            signer = bundle.block.get("signer")
            print(f"  specs: {where} signs exactly the {len(e.spec_files)} file(s) loaded"
                  + (f" (governance key {signer[:16]})" if signer else
                     " (signature not checked: pass --governance-key)"))
    if not evaluations:
        print("ok: no Evaluation found (nothing to run)")
    return code


def cmd_sign_specs(args: argparse.Namespace) -> int:
    key = signing.load_private(args.key)
    evaluations = spec.load(args.paths)
    if not evaluations:
        raise UsageError("no Evaluation found under " + ", ".join(map(str, args.paths)),
                         "NO_EVALUATION")
    for bundle, count in provenance.sign_specs(evaluations, key):
        print(f"signed {count} file(s): {spec.display(bundle)} (keyid "
              f"{signing.keyid(key.public_key())[:16]})")
    for e in evaluations:
        print(f"  {e.name}: {', '.join(e.spec_files)}")
    return 0


def cmd_attest(args: argparse.Namespace) -> int:
    key = signing.load_private(args.key)
    if not args.path.exists():
        raise UsageError(f"{args.path} does not exist", "INPUT_NOT_FOUND")
    text = args.predicate or "{}"
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--predicate {args.predicate}: {exc}", "BAD_PREDICATE") from None
    try:
        predicate = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--predicate is not JSON ({exc})", "BAD_PREDICATE") from None
    if not isinstance(predicate, dict):
        raise UsageError("--predicate must be a JSON object", "BAD_PREDICATE")
    try:
        rfc8785.dumps(predicate)  # what a scorecard can record (no NaN, no int beyond 2**53)
    except rfc8785.CanonicalizationError as exc:
        raise UsageError(f"--predicate has a value RFC 8785 cannot write ({exc})",
                         "BAD_PREDICATE") from None
    kind = args.predicate_type or provenance.ATTESTATION_PREDICATE
    out, count = provenance.attest(args.path, key, kind, predicate, args.out)
    print(f"attested {count} file(s) of {args.path}: {out} (keyid "
          f"{signing.keyid(key.public_key())[:16]})")
    return 0


def _verified(result: Verified) -> list[str]:
    """What ``engine verify`` says about one scorecard whose integrity holds."""
    if not result.trusted:
        lines = [f"INTEGRITY OK, AUTHORSHIP UNVERIFIED: sha256 {result.scorecard_sha256}, "
                 "checked only against the signer.pub.pem shipped with the evidence, which "
                 "anyone can replace; pin the signer's public key obtained out of band, e.g. "
                 "--trusted-key governance-signing.pub.pem"]
    else:
        lines = [f"VALID: sha256 {result.scorecard_sha256}, decision {result.decision}, "
                 f"signed by the pinned key (keyid {result.signer[:16]})"]
    lines.append(f"signed files checked: {', '.join(result.checked)}")
    lines.append(f"run {result.run_id or '(none named: signed before runs were sealed)'}, "
                 f"signed {result.generated_at or 'at no stated time'} (as the signer asserts)")
    if result.absent:
        lines.append(f"projections not present (not checked): {', '.join(result.absent)}")
    if result.unsigned:
        lines.append(f"NOT COVERED by the signature, do not rely on: "
                     f"{', '.join(result.unsigned)}")
    return lines


def _verify_folder(folder: Path, trusted: Ed25519PublicKey | None, expect: list[str],
                   run_id: str | None, earliest: str | None,
                   pinned: _Pinned | None = None) -> int:
    """Every scorecard under ``folder``, each named with its result, then the run they
    make: 0 only if all are VALID and are one whole run (engine/evidence/runs.py)."""
    result = runs.check(folder, trusted, expect, run_id, earliest)
    for i, one in enumerate(result.found):
        proven: list[str] = []
        if one.verified is not None and pinned is not None:
            try:
                proven = pinned.check(one.path)
            except VerifyError as exc:
                result.found[i] = one = replace(one, verified=None, error=exc)
        if one.verified is None:
            error = one.error or VerifyError("not verified", "VERIFY")
            print(f"{one.path}: INVALID {error.code}: {error}")
            continue
        first, *rest = _verified(one.verified) + proven
        print(f"{one.path}: {first}")
        for line in rest:
            print(f"  {line}")
    seal_ok = _print_seal(folder, result)
    invalid = [str(f.path) for f in result.found if f.verified is None]
    valid = sum(1 for f in result.found if f.verified is not None and f.verified.trusted)
    unpinned = len(result.found) - valid - len(invalid)
    if not expect and not result.run_id:
        print("note: these scorecards name no run, so a removed evaluation folder goes "
              "unnoticed here; name every evaluation you require with --expect NAME")
    print(f"{len(result.found)} scorecard(s) under {folder}: {valid} valid"
          + (f", {unpinned} integrity only (no --trusted-key)" if unpinned else "")
          + (f", {len(invalid)} INVALID: {', '.join(invalid)}" if invalid else "")
          + (f"; run {result.run_id}" if result.run_id else ""))
    return 0 if valid == len(result.found) and seal_ok else 1


def _print_seal(folder: Path, result: runs.Checked) -> bool:
    """The line about the run's signed summary; whether it holds (or is not needed)."""
    where = folder / runs.SUMMARY
    if result.seal_error is not None:
        print(f"{where}: INVALID {result.seal_error.code}: {result.seal_error}")
        return False
    seal = result.seal
    if seal is None:
        return True
    if not seal.trusted:
        print(f"{where}: INTEGRITY OK, AUTHORSHIP UNVERIFIED: run {seal.run_id} (pin the "
              "signer's public key with --trusted-key)")
        return False
    print(f"{where}: VALID: run {seal.run_id} of {len(seal.scorecards)} evaluation(s), "
          f"sealed {seal.generated_at or 'at no stated time'} by the pinned key (keyid "
          f"{seal.signer[:16]})")
    print(f"  signed files checked: {', '.join(seal.checked)}")
    if seal.absent:
        print(f"  not present (not checked): {', '.join(seal.absent)}")
    if seal.unsigned:
        print(f"  NOT COVERED by the signature, do not rely on: {', '.join(seal.unsigned)}")
    return True


def cmd_verify(args: argparse.Namespace) -> int:
    trusted = signing.load_public(args.trusted_key) if args.trusted_key else None
    run_id = runs.checked_id(args.run_id) if args.run_id is not None else None
    earliest = runs.not_before(args.not_before) if args.not_before is not None else None
    pinned = _Pinned([signing.load_public(p) for p in args.governance_key],
                     [signing.load_public(p) for p in args.harness_key])
    if not args.scorecard.exists() and not args.scorecard.is_symlink():
        raise UsageError(f"{args.scorecard} does not exist: nothing to verify",
                         "INPUT_NOT_FOUND")  # a mistyped path is not invalid evidence
    if args.scorecard.is_dir():
        return _verify_folder(args.scorecard, trusted, args.expect, run_id, earliest, pinned)
    try:
        result = verify(args.scorecard, trusted)
        late = runs.single(result, run_id, earliest) or _expected(result, args.expect)
        if late is not None:
            raise late
        proven = pinned.check(args.scorecard)
    except VerifyError as exc:
        print(f"INVALID {exc.code}: {exc}")
        return 1
    for line in _verified(result) + proven:
        print(line)
    return 0 if result.trusted else 1


class _Pinned:
    """The governance and harness keys an auditor pinned (engine verify)."""

    def __init__(self, governance: list[Ed25519PublicKey],
                 harness: list[Ed25519PublicKey]) -> None:
        self.governance, self.harness = governance, harness

    def check(self, scorecard: Path) -> list[str]:
        """The provenance lines of a scorecard that verified, or VerifyError."""
        if not self.governance and not self.harness:
            return []
        return provenance.verify_card(scorecard, self.governance, self.harness)


def _expected(result: Verified, expect: list[str]) -> VerifyError | None:
    """--expect held against one scorecard: it names exactly the one evaluation it is."""
    if not expect or set(expect) == {result.evaluation}:
        return None
    if result.evaluation not in expect:
        return VerifyError(f"the scorecard is of '{result.evaluation}', which --expect does "
                           "not name", "UNEXPECTED_EVALUATION")
    others = sorted(set(expect) - {result.evaluation})
    return VerifyError(f"one scorecard is of '{result.evaluation}' only; no scorecard of "
                       f"'{others[0]}' was given", "MISSING_EVALUATION")


def cmd_keygen(args: argparse.Namespace) -> int:
    private, public = signing.keygen(args.out_dir)
    print(f"wrote {private} (mode 600, keep it secret) and {public}")
    return 0


def cmd_protocol(args: argparse.Namespace) -> int:
    """A subcommand a protocol adds, over the Evaluations under the paths."""
    command = protocols.commands()[args.command]
    code, lines = command.run(args, spec.load(args.paths, _overrides(args.input)))
    for line in lines:
        print(line)
    return code


def cmd_test(args: argparse.Namespace) -> int:
    from engine.decide.policytest import run_file

    found = spec.load_policy_tests(args.paths)
    if not found:
        raise UsageError("no PolicyTest found under " + ", ".join(map(str, args.paths)),
                         "NO_TESTS")
    failed = False
    for file, data, policy in found:
        result = run_file(file, data, policy)
        print(f"{spec.display(file)} (policy {result['policy']})")
        for case in result["results"]:
            mark = "ok  " if case["ok"] else "FAIL"
            print(f"  {mark} {case['name']}: {case['got']['decision']} "
                  f"{', '.join(case['got']['reasons'])}")
            if not case["ok"]:
                print(f"       wanted {case['want']['decision']} "
                      f"{', '.join(case['want'].get('reasons', []))}")
                failed = True
        floor = args.min_coverage if args.min_coverage is not None else result["min_coverage"]
        print(f"  rule coverage {result['coverage']:.0%}"
              + (f" (minimum {floor:.0%})" if floor is not None else ""))
        for path in result["uncovered"]:
            print(f"    not exercised: {path}")
        if floor is not None and result["coverage"] < floor:
            failed = True
    return 1 if failed else 0


def cmd_diff(args: argparse.Namespace) -> int:

    from engine.spec.diff import compare, lines

    evaluations = spec.load([args.evaluation or args.new.parent], _overrides(args.input))
    if len(evaluations) != 1:
        raise UsageError("name one Evaluation with --evaluation", "NO_EVALUATION")
    base = evaluations[0]
    base.as_of = base.as_of_requested = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    # an old policy kept elsewhere (git show main:... > /tmp/old.yaml) reads the data files
    # it names from the new policy's folder when they are not beside it, and says so
    old, borrowed = spec.load_policy_from(args.old, args.new.resolve().parent)
    cards = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, policy in (("old", old), ("new", spec.load_policy(args.new))):
            execute(replace(base, policy=policy), Path(tmp) / label)
            cards.append(json.loads((Path(tmp) / label / "scorecard.json").read_bytes()))
    changes = compare(cards[0], cards[1])
    folder = spec.display(args.new.resolve().parent)
    changes["old_files_from_new_folder"] = {"folder": folder, "files": borrowed}
    if args.json:
        print(json.dumps(changes, indent=2))
        return 0
    if borrowed:
        print(f"note: {', '.join(borrowed)} not beside {spec.display(args.old.resolve())}: "
              f"read from {folder} for the old policy")
    print("\n".join(lines(changes)))
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    from importlib import resources

    folder: Path = args.folder
    if folder.exists() and any(folder.iterdir()):
        raise UsageError(f"{folder} is not empty; init never overwrites", "OUTPUT_EXISTS")
    name = args.name or folder.resolve().name.lower()
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", name):
        raise UsageError(f"'{name}' is not a spec name (lower-case letters, digits, - and _)",
                         "BAD_NAME")
    source = resources.files("engine") / "scaffold"
    # nothing of this machine goes into the files: no absolute path, no install folder
    shown = folder.as_posix() if not folder.is_absolute() and ".." not in folder.parts \
        else folder.name
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "tests").mkdir()
    for template, target in (("evaluation.yaml", "evaluation.yaml"),
                             ("policy.yaml", "policy.yaml"), ("suite.yaml", "suite.yaml"),
                             ("runs.jsonl", "data/runs.jsonl"),
                             ("policy.test.yaml", "tests/policy.test.yaml")):
        text = (source / template).read_text("utf-8")
        text = text.replace("{{name}}", name).replace("{{version}}", __version__).replace(
            "{{dir}}", shown)
        (folder / target).write_text(text)
    print(f"wrote {folder}/evaluation.yaml, policy.yaml, suite.yaml, data/runs.jsonl and "
          f"tests/policy.test.yaml; try: engine run {folder}")
    return 0


def cmd_hash(args: argparse.Namespace) -> int:
    for e in spec.load(args.paths):
        print(f"{e.name}\tpolicy_sha256 {e.policy.sha256}\tsuite_sha256 {e.suite.sha256}")
    return 0


COMMANDS = {"run": cmd_run, "calibrate": cmd_calibrate, "validate": cmd_validate,
            "verify": cmd_verify, "sign-specs": cmd_sign_specs, "attest": cmd_attest,
            "keygen": cmd_keygen, "hash": cmd_hash, "init": cmd_init,
            "test": cmd_test, "diff": cmd_diff}


class Terminated(BaseException):
    """SIGTERM arrived (a CI job cancelled): unwinds like Ctrl-C so staging is removed."""


def _terminated(signum: int, frame: Any) -> None:
    raise Terminated()


class _Stdout:
    """Standard output that may be closed or full (``engine run … | head``, ``>&-``,
    ``>/dev/full``): what cannot be written is dropped, so the exit code stays the
    decision's. The evidence is on disk before anything is printed; a write that fails for
    another reason than a reader gone is said once on stderr."""

    def __init__(self, stream: Any) -> None:
        self.stream, self.closed_by_reader = stream, stream is None

    def write(self, text: str) -> int:
        if not self.closed_by_reader:
            try:
                self.stream.write(text)
            except OSError as exc:
                self._closed(exc)
        return len(text)

    def flush(self) -> None:
        if not self.closed_by_reader:
            try:
                self.stream.flush()
            except OSError as exc:
                self._closed(exc)

    def _closed(self, exc: OSError) -> None:
        self.closed_by_reader = True
        if not isinstance(exc, BrokenPipeError):
            print(f"engine: standard output could not be written ({exc.strerror or exc}); "
                  "the exit code is still the result's", file=sys.stderr)
        try:  # the interpreter flushes stdout once more on exit: give it somewhere to go
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.stream.fileno())
            os.close(null)
        except (OSError, ValueError, AttributeError):
            pass  # not a real file (a test's capture): nothing is flushed at exit

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``engine`` command; returns the exit code."""
    args = _parser().parse_args(argv)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if main_thread else None
    stdout = sys.stdout
    sys.stdout = _Stdout(stdout)  # type: ignore[assignment]
    try:
        code = _dispatch(args)
        sys.stdout.flush()
        return code
    finally:
        sys.stdout = stdout
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command; every failure becomes its exit code and a coded message."""
    try:
        return COMMANDS.get(args.command, cmd_protocol)(args)
    except SpecErrors as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        print(f"{len(exc.problems)} problem(s); nothing was run", file=sys.stderr)
        return EXIT_SPEC
    except EngineError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"engine: {exc.code}: {exc}", file=sys.stderr)
        return EXIT_SPEC
    except KeyboardInterrupt:
        print("engine: interrupted; no partial evidence was kept", file=sys.stderr)
        return 130
    except Terminated:
        print("engine: terminated; no partial evidence was kept", file=sys.stderr)
        return 143
    except OSError as exc:
        if args.debug:
            traceback.print_exc()
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"engine: IO_ERROR: {where}{exc.strerror or exc}; evaluations already written "
              "are complete and nothing partial was kept", file=sys.stderr)
        return EXIT_SPEC
    except Exception as exc:  # noqa: BLE001 - a bug must not look like a PASS or a FAIL
        if args.debug:
            traceback.print_exc()
        print(f"engine: INTERNAL_ERROR: {type(exc).__name__}: {exc} (a bug in specgate; rerun "
              "with --debug for the traceback)", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
