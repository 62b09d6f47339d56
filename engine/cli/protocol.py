"""The commands a protocol adds (engine review, ...), over the Evaluations under the paths."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import protocols
from engine.cli.common import (
    KEY_VARIABLE,
    PATHS_HELP,
    USAGE_EXIT,
    described,
    overrides,
    shown,
    signing_key,
)
from engine.evidence import signing
from engine.spec import evaluation as spec

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    pass


def add(sub: Any) -> None:
    """One subcommand for each command a protocol adds."""
    for command in protocols.commands().values():
        added = sub.add_parser(command.name, help=command.help,
                               **described(f"{command.exits}, {USAGE_EXIT}",
                                           *command.examples))
        added.add_argument("paths", nargs="+", type=Path, help=PATHS_HELP)
        added.add_argument("--input", action="append", default=[], metavar="NAME=PATH",
                           help="rebind an input declared by an Evaluation")
        if command.key_domain is not None:
            added.add_argument("--key", type=Path,
                               help=f"Ed25519 private key of the protected job (or "
                                    f"${KEY_VARIABLE}), as engine run takes it")
        command.add(added)
        added.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """A subcommand a protocol adds, over the Evaluations under the paths."""
    command = protocols.commands()[args.command]
    if command.key_domain is not None:  # the command sees a derived key, never the key
        key = signing_key(args)
        args.derived_key = signing.derived_key(key, command.key_domain) if key else None
    code, lines = command.run(args, spec.load(args.paths, overrides(args.input)))
    for line in lines:  # one line each, quoting names and values of the specs and records
        print(shown(line))
    return code

