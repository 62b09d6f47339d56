"""engine calibrate: the judge measured against human labels on a hold-out set."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cli.common import (
    EXIT_INTERNAL,
    KEY_VARIABLE,
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
from engine.spec import evaluation as spec

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    pass

EXITS = ("0 every judged category reaches min_kappa, 1 one does not, 3 nothing could be "
         "measured (a labelled row got no verdict, or no row is labelled), " + USAGE_EXIT
         + ": a bad label too")
EXAMPLES = (
    "engine calibrate my-judged-agent/ --input runs=holdout.jsonl --out calibration/ "
    "--key governance-signing.pem",
)


def add(sub: Any) -> None:
    calibrate = sub.add_parser("calibrate", help="measure the judge against human labels on "
                               "a hold-out set and write a signed calibration artifact",
                               **described(EXITS, *EXAMPLES))
    calibrate.add_argument("path", type=Path, help="one Evaluation (its file or folder)")
    calibrate.add_argument("--input", action="append", default=[], metavar="NAME=PATH",
                           help="rebind an input to the labelled hold-out records")
    calibrate.add_argument("--out", type=Path, required=True,
                           help="output folder (must be new or empty)")
    calibrate.add_argument("--key", type=Path,
                           help=f"Ed25519 private key (or ${KEY_VARIABLE})")
    judge_options(calibrate)
    calibrate.set_defaults(judge_replay=None)  # a replay measures no judge: not offered
    calibrate.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from engine.run.calibrate import Incomplete, calibrate

    key = signing_key(args)
    evaluations = spec.load([args.path], overrides(args.input))
    if len(evaluations) != 1:
        raise UsageError(f"engine calibrate needs exactly one Evaluation under {args.path}, "
                         f"found {len(evaluations)}", "NO_EVALUATION")
    evaluation = evaluations[0]
    unknown = set(overrides(args.input)) - set(evaluation.inputs)
    if unknown:
        raise UsageError(f"--input {sorted(unknown)[0]}: the Evaluation declares no such "
                         "input", "UNKNOWN_INPUT")
    evaluation.judge = judge_overrides(evaluation.judge, args)
    evaluation.as_of = evaluation.as_of_requested = dt.datetime.now(dt.UTC).strftime(
        "%Y-%m-%d")
    cache = None if args.no_judge_cache else args.judge_cache
    progress = judge_progress if sys.stderr.isatty() else None
    try:
        result = calibrate(evaluation, args.out, key, cache, progress)
    except Incomplete as exc:
        print(shown(f"engine: {exc.code}: {exc}"), file=sys.stderr)
        return EXIT_INTERNAL
    value = result.value
    print(f"{shown(evaluation.name)}: judge calibration against '{shown(value['label_field'])}' "
          f"(min_kappa {value['min_kappa']:g})")
    print(f"  {'category':<24} {'n':>5} {'accuracy':>9} {'kappa':>7} {'sensitivity':>12} "
          f"{'specificity':>12}  met")
    for name, row in [*value["categories"].items(), ("(overall)", value["overall"])]:
        print(f"  {shown(name):<24} {row['n']:>5} {_ratio(row['accuracy']):>9} "
              f"{_ratio(row['kappa']):>7} {_ratio(row['sensitivity']):>12} "
              f"{_ratio(row['specificity']):>12}  {'yes' if row['met'] else 'NO'}")
    print(f"  {value['unlabelled']} record(s) without a label (not in the hold-out)")
    print(f"  calibration: {shown(spec.display(result.out.resolve()))}"
          f"{' (signed)' if key is not None else ' (unsigned: pass --key to sign)'}")
    return result.exit_code


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"

