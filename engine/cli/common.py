"""What the commands share: exit codes, help texts, --input, the signing key, and the
judge options of engine run and engine calibrate."""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import UsageError
from engine.evidence import signing
from engine.judge import ALIASES, DEFAULT_KEYS, DEFAULT_URLS, PROVIDERS, JudgeConfig

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    pass


EXIT_SPEC = 2


EXIT_INTERNAL = 3  # no decision could be reached: like INCOMPLETE, never PASS or FAIL


KEY_VARIABLE = "SPECGATE_SIGNING_KEY"


DEFAULT_CACHE = Path(".specgate-cache") / "judgements"


PATHS_HELP = "spec files or folders; every Evaluation under them"


EXIT_HELP = ("exit codes: 0 PASS (or valid), 1 FAIL (or invalid evidence), 2 spec or usage "
             "error, 3 INCOMPLETE (or no decision), 4 TRIAGE or SELF_TEST; a run exits with "
             "the worst of its evaluations. docs/ci.md#exit-codes")
USAGE_EXIT = "2 a spec or usage error (a coded message on stderr)"


def described(exits: str, *examples: str) -> dict[str, Any]:
    """What ``add_parser`` shows under a command's options: its exit codes and examples
    (each example is parsed by tests/test_first_hour.py, so none can drift from the
    options)."""
    text = textwrap.fill(f"exit codes: {exits}", 79, break_on_hyphens=False)
    if examples:
        text += "\n\nexamples:\n" + "\n".join(f"  {e}" for e in examples)
    return {"epilog": text, "formatter_class": argparse.RawDescriptionHelpFormatter}


def overrides(pairs: list[str], option: str = "--input") -> dict[str, Path]:
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


def signing_key(args: argparse.Namespace) -> Any:
    """--key, else the key file ${KEY_VARIABLE} names, else None (unsigned)."""
    key_file = args.key or (Path(os.environ[KEY_VARIABLE]) if os.environ.get(KEY_VARIABLE)
                            else None)
    return signing.load_private(key_file) if key_file else None


def judge_options(parser: argparse.ArgumentParser) -> None:
    """The judge overrides and cache options ``engine run`` and ``engine calibrate`` share."""
    parser.add_argument("--judge-provider", choices=(*PROVIDERS, "openai"),
                        type=lambda name: ALIASES.get(name, name),
                        help="override the judge provider (openai is openai-compatible at "
                             "OpenAI's API)")
    parser.add_argument("--judge-base-url", help="override the judge endpoint")
    parser.add_argument("--judge-model", help="override the judge model")
    parser.add_argument("--judge-cache", type=Path, default=DEFAULT_CACHE,
                        help=f"judgement cache folder (default {DEFAULT_CACHE})")
    parser.add_argument("--no-judge-cache", action="store_true", help="neither read nor write it")


def judge_overrides(config: JudgeConfig, args: argparse.Namespace) -> JudgeConfig:
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


def judge_progress(done: int, total: int) -> None:
    """Judge progress on a terminal (never in CI logs)."""
    end = "\n" if done == total else ""
    print(f"\r  judging {done}/{total}", end=end, file=sys.stderr, flush=True)



# C0 and C1 controls, DEL, and the bidirectional controls that reorder what follows them
# (U+061C, U+200E-F, U+202A-E, U+2066-9), plus the line and paragraph separators: text a
# record or a file name carries must not move the cursor, clear a line or reverse the
# order of a verdict on the auditor's terminal. And the characters that print as nothing
# (soft hyphen U+00AD, U+034F, U+180E, zero-width space and joiners U+200B-D, U+2060-4,
# U+FEFF): a pattern or phrase a reviewer reads in `engine diff` must not look unchanged
# while a zero-width space inside it makes it match nothing.
CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u00ad\u034f\u061c\u180e\u200b-\u200f"
                      "\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def shown(text: object, keep_layout: bool = False) -> str:
    """``text`` with every control character escaped (``\\x1b``, ``\\u202e``), the line
    break too, so a name or value from a record or a file prints as what it is, on the
    line the command put it (a value holding ``\\n ok: ...`` cannot print a line of its
    own). ``keep_layout`` keeps line breaks and tabs: only for the whole text a command
    laid out itself, whose values were escaped as they were put in."""
    def escape(match: re.Match[str]) -> str:
        char = match.group()
        if keep_layout and char in "\n\t":
            return char
        return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    return CONTROLS.sub(escape, str(text))
