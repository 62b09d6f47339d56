"""The commands a protocol adds (engine review, ...), over the Evaluations under the paths."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import protocols
from engine.cli.common import (
    PATHS_HELP,
    USAGE_EXIT,
    described,
    overrides,
    shown,
)
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
        command.add(added)
        added.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """A subcommand a protocol adds, over the Evaluations under the paths."""
    command = protocols.commands()[args.command]
    code, lines = command.run(args, spec.load(args.paths, overrides(args.input)))
    for line in lines:  # one line each, quoting names and values of the specs and records
        print(shown(line))
    return code

