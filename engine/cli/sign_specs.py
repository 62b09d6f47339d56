"""engine sign-specs (governance): every file each Evaluation loads, signed."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cli.common import (
    PATHS_HELP,
    USAGE_EXIT,
    described,
    shown,
)
from engine.errors import UsageError
from engine.evidence import provenance, signing
from engine.spec import evaluation as spec

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    pass

EXITS = ("0 every bundle written, "
         + USAGE_EXIT)
EXAMPLES = (
    "engine sign-specs specs/ --key keys/governance/private.pem",
)


def add(sub: Any) -> None:
    sign = sub.add_parser("sign-specs", help="governance: sign every file each Evaluation "
                          "loads (specs.intoto.jsonl beside it)", **described(EXITS, *EXAMPLES))
    sign.add_argument("paths", nargs="+", type=Path, help=PATHS_HELP)
    sign.add_argument("--key", type=Path, required=True, help="governance's Ed25519 private key")
    sign.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    key = signing.load_private(args.key)
    evaluations = spec.load(args.paths)
    if not evaluations:
        raise UsageError("no Evaluation found under " + ", ".join(map(str, args.paths)),
                         "NO_EVALUATION")
    for bundle, count in provenance.sign_specs(evaluations, key):
        print(f"signed {count} file(s): {shown(spec.display(bundle))} (keyid "
              f"{signing.keyid(key.public_key())[:16]})")
    for e in evaluations:
        print(shown(f"  {e.name}: {', '.join(e.spec_files)}"))  # one line: values escaped
    return 0

