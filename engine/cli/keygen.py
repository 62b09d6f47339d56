"""engine keygen: a new Ed25519 key pair."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cli.common import (
    USAGE_EXIT,
    described,
    shown,
)
from engine.evidence import signing

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    pass

EXITS = ("0 written, "
         + USAGE_EXIT + ": KEY_EXISTS when a key is already there")
EXAMPLES = (
    "engine keygen --out-dir keys/runner",
)


def add(sub: Any) -> None:
    keygen = sub.add_parser("keygen", help="write a new Ed25519 key pair",
                            **described(EXITS, *EXAMPLES))
    keygen.add_argument("--out-dir", type=Path, required=True,
                        help="folder for private.pem (mode 600) and public.pem; never overwritten")
    keygen.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    private, public = signing.keygen(args.out_dir)
    print(f"wrote {shown(str(private))} (mode 600, keep it secret) and {shown(str(public))}")
    return 0

