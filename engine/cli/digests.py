"""engine hash: the policy and suite digests of each Evaluation."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cli.common import (
    USAGE_EXIT,
    described,
    shown,
)
from engine.spec import evaluation as spec

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    pass

EXITS = ("0 printed, "
         + USAGE_EXIT)
EXAMPLES = (
    "engine hash specs/",
)


def add(sub: Any) -> None:
    hash_cmd = sub.add_parser("hash", help="print policy and suite digests",
                              **described(EXITS, *EXAMPLES))
    hash_cmd.add_argument("paths", nargs="+", type=Path, help="spec files or folders")
    hash_cmd.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    for e in spec.load(args.paths):
        print(f"{shown(e.name)}\tpolicy_sha256 {e.policy.sha256}\tsuite_sha256 {e.suite.sha256}")
    return 0

