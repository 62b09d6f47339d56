"""The command line: the only package that prints or exits. One module per command holds
its options, help and what it prints (``add`` builds its parser, ``run`` runs it); this
one assembles the parser and turns every failure into a coded message and an exit code."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import Any

from engine._version import __version__
from engine.cli import (
    attest,
    calibrate,
    compare,
    diff,
    digests,
    history,
    init,
    keygen,
    policytests,
    protocol,
    run,
    sign_specs,
    validate,
    verify,
)
from engine.cli.common import EXIT_HELP, EXIT_INTERNAL, EXIT_SPEC, shown
from engine.errors import EngineError, SpecErrors

# in the order engine --help lists them; the protocols' commands come last
COMMANDS = (run, calibrate, validate, sign_specs, attest, verify, compare, history, keygen,
            policytests, diff, init, digests, protocol)


def parser() -> argparse.ArgumentParser:
    """The parser of the ``engine`` command, each command added by its module."""
    built = argparse.ArgumentParser(prog="engine", description="specgate: signed release "
                                    "gates for AI agents, driven by YAML specs",
                                    epilog=EXIT_HELP)
    built.add_argument("--version", action="version", version=f"specgate {__version__}")
    built.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = built.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add(sub)
    return built


class Terminated(BaseException):
    """SIGTERM arrived (a CI job cancelled): unwinds like Ctrl-C so staging is removed."""


def _terminated(signum: int, frame: Any) -> None:
    raise Terminated()


class _Stdout:
    """Standard output that may be closed or full (``engine run … | head``, ``>&-``,
    ``>/dev/full``): what cannot be written is dropped, so the exit code stays the
    decision's. The evidence is on disk before anything is printed; a write that fails for
    another reason than a reader gone is said once on stderr. No command writes a control
    character on stdout but the line break and the tab, so any other is escaped here,
    whatever a record or a file name carried into the text; each command escapes its
    values with ``shown`` as it puts them in, line breaks included, so only its own lines
    break."""

    def __init__(self, stream: Any) -> None:
        self.stream, self.closed_by_reader = stream, stream is None

    def write(self, text: str) -> int:
        if not self.closed_by_reader:
            safe = shown(text, keep_layout=True)
            try:
                try:
                    self.stream.write(safe)
                except UnicodeEncodeError:  # a stream that cannot hold the text (ascii)
                    encoding = getattr(self.stream, "encoding", None) or "ascii"
                    self.stream.write(safe.encode(encoding, "backslashreplace")
                                      .decode(encoding))
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
    args = parser().parse_args(argv)
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
        return int(args.handler(args))
    except SpecErrors as exc:
        for problem in exc.problems:  # one line each; may quote a file name or a value
            print(shown(problem), file=sys.stderr)
        print(f"{len(exc.problems)} problem(s); nothing was run", file=sys.stderr)
        return EXIT_SPEC
    except EngineError as exc:
        if args.debug:
            traceback.print_exc()
        print(shown(f"engine: {exc.code}: {exc}"), file=sys.stderr)  # one line
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
        print(f"engine: IO_ERROR: {shown(where)}{shown(exc.strerror or exc)}; evaluations "
              "already written "
              "are complete and nothing partial was kept", file=sys.stderr)
        return EXIT_SPEC
    except Exception as exc:  # noqa: BLE001 - a bug must not look like a PASS or a FAIL
        if args.debug:
            traceback.print_exc()
        print(f"engine: INTERNAL_ERROR: {type(exc).__name__}: {shown(exc)} (a bug in "
              "specgate; rerun "
              "with --debug for the traceback)", file=sys.stderr)
        return EXIT_INTERNAL



if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
