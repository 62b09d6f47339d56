"""engine attest (the harness): a log, or a folder of them, attested."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import rfc8785

from engine.cli.common import (
    USAGE_EXIT,
    described,
    shown,
)
from engine.errors import UsageError
from engine.evidence import provenance, signing
from engine.evidence.scorecard import signed_now

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    pass

EXITS = ("0 attested, "
         + USAGE_EXIT + ": a missing path, a bad predicate, an attestation already there "
         "(never overwritten)")
EXAMPLES = (
    "engine attest logs/run.jsonl --key keys/harness/private.pem",
    "engine attest logs/ --key keys/harness/private.pem --predicate @harness.json",
)


def add(sub: Any) -> None:
    attest = sub.add_parser("attest", help="the harness: attest a log or a folder of them "
                            "(PATH.intoto.jsonl)", **described(EXITS, *EXAMPLES))
    attest.add_argument("path", type=Path, metavar="PATH", help="the file or folder written")
    attest.add_argument("--key", type=Path, required=True, help="the harness's private key")
    attest.add_argument("--predicate", metavar="JSON", help="what made it: a JSON object "
                        "(text, or @FILE), recorded in the scorecard (default: {})")
    attest.add_argument("--predicate-type", metavar="URI",
                        help="the predicate's type (default: https://specgate.dev/attestation/v1)")
    attest.add_argument("--out", type=Path, help="where to write it (default: PATH.intoto.jsonl)")
    attest.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
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
    if kind == provenance.ATTESTATION_PREDICATE:  # when it was attested: a release is
        # judged no earlier (docs/provenance.md#time); another type's predicate is its own
        if "signed_at" in predicate:
            raise UsageError("--predicate: signed_at is written by engine attest (this "
                             "machine's clock, UTC); leave it out", "BAD_PREDICATE")
        predicate["signed_at"] = signed_now()
    out, count = provenance.attest(args.path, key, kind, predicate, args.out)
    print(f"attested {count} file(s) of {shown(args.path)}: {shown(out)} (keyid "
          f"{signing.keyid(key.public_key())[:16]})")
    return 0

