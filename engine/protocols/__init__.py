"""Protocols plug in here: each contributes rows to the engine's tables, never an ``if``.

A protocol is a package under ``engine/protocols/`` whose ``plugin`` module defines
``PROTOCOL``, a :class:`Protocol`. What it may contribute:

- ``formats``: input formats (``Evaluation.spec.inputs.*.format``), each a
  :class:`engine.records.formats.Format` (reader, line-based or not, row validator, and
  whether and how its records derive the suite);
- ``primitives``: inspection types (``Policy.spec.inspections.*.type``);
- ``compilers``: parameter compilers for the ``x-NAME`` marks in primitives' parameter
  schemas (:data:`engine.spec.compile.Compiler`);
- ``reports``: protocol reports a policy names in ``spec.report``, written beside the
  scorecard and signed with it;
- ``commands``: ``engine`` subcommands;
- ``codes``: the codes only it emits, as rows of the engine's table of codes.

Generic code reads the merged tables through the functions below; it never imports a
protocol package, and no generic module names one. The registry imports the plugins the
first time a table is asked for (``BUILTIN`` names them by module path, as an entry point
would), so importing any generic module never imports a protocol.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.inspections._base import Primitive
    from engine.records.formats import Format

# The protocols that ship with the engine, by the module that holds their PROTOCOL.
BUILTIN = ("engine.protocols.release_gate.plugin", "engine.protocols.discovery.plugin")


@dataclass(frozen=True)
class Report:
    """A protocol report: ``build(evaluation, tally)`` returns (the scorecard's ``report``
    member, then each file to write beside the scorecard as ``(name, bytes)``)."""

    name: str  # the value of Policy ``spec.report`` that asks for it
    build: Callable[..., tuple[Any, list[tuple[str, bytes]]]]
    needs: frozenset[str] = frozenset()  # inspection types the policy must use (any one)
    # when set, build gets a third argument: the run's signing key derived under this
    # domain (signing.derived_key), or None when the run is unsigned
    key_domain: bytes | None = None


@dataclass(frozen=True)
class Command:
    """An ``engine`` subcommand. The CLI gives it ``paths`` and ``--input NAME=PATH``;
    ``add(parser)`` declares its other arguments; ``run(args, evaluations)`` gets the
    Evaluations found under the paths and returns ``(exit code, lines to print)`` (only
    the CLI prints)."""

    name: str
    help: str
    add: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, list[Any]], tuple[int, list[str]]]
    exits: str = "0 done"  # what its exit codes mean (its --help; 2 is always a usage error)
    examples: tuple[str, ...] = ()  # command lines its --help shows, each one parsed by a test
    # when set, the command takes --key FILE (else $SPECGATE_SIGNING_KEY) as engine run does,
    # and ``args.derived_key`` is that key derived under this domain (None without a key)
    key_domain: bytes | None = None


@dataclass(frozen=True)
class Protocol:
    """What one protocol adds to the engine's tables."""

    name: str  # the protocol's own name, e.g. "finding-quality-discovery"
    formats: tuple[Format, ...] = ()
    primitives: Mapping[str, Primitive] = field(default_factory=dict)
    compilers: Mapping[str, Any] = field(default_factory=dict)  # "x-NAME" -> Compiler
    reports: tuple[Report, ...] = ()
    commands: tuple[Command, ...] = ()
    codes: Mapping[str, Any] = field(default_factory=dict)  # code -> engine.codes.Code


@cache
def installed() -> tuple[Protocol, ...]:
    """Every protocol, imported once, in ``BUILTIN`` order."""
    return tuple(importlib.import_module(name).PROTOCOL for name in BUILTIN)


def _merged(pick: Callable[[Protocol], Mapping[str, Any]], what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for protocol in installed():
        for name, value in pick(protocol).items():
            if name in out:  # a second protocol may not silently replace a row
                raise RuntimeError(f"two protocols both define the {what} '{name}'")
            out[name] = value
    return out


@cache
def formats() -> dict[str, Format]:
    """Input formats the protocols add, by name."""
    return _merged(lambda p: {f.name: f for f in p.formats}, "input format")


@cache
def primitives() -> dict[str, Primitive]:
    """Inspection types the protocols add, by ``type:`` name."""
    return _merged(lambda p: p.primitives, "inspection type")


@cache
def compilers() -> dict[str, Any]:
    """Parameter compilers the protocols add, by schema mark (``x-NAME``)."""
    return _merged(lambda p: p.compilers, "parameter mark")


@cache
def reports() -> dict[str, Report]:
    """Protocol reports, by the name a policy's ``spec.report`` gives."""
    return _merged(lambda p: {r.name: r for r in p.reports}, "report")


@cache
def commands() -> dict[str, Command]:
    """Subcommands the protocols add, by name."""
    return _merged(lambda p: {c.name: c for c in p.commands}, "command")
