"""engine history DIR...: every verified run under the folders as one page of trends."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from engine.cli.common import USAGE_EXIT, described, shown
from engine.errors import UsageError
from engine.evidence import history, signing
from engine.evidence.verify import write_whole

EXITS = ("0 the page written and every scorecard found verified, 1 the page written with "
         "some scorecards left out (each named on the page and here), " + USAGE_EXIT +
         ": no folder, no key, an existing --out")
EXAMPLES = ("engine history runs/ --trusted-key runner-signing.pub.pem --out history.html",
            "engine history runs/ --trusted-key runner-signing.pub.pem --governance-key "
            "governance.pub.pem --out history.html")


def add(sub: Any) -> None:
    """engine history: trends over verified runs, one self-contained page."""
    cmd = sub.add_parser("history", help="a page of every verified run under folders: "
                         "rates, bands, decisions, by evaluation and segment",
                         **described(EXITS, *EXAMPLES))
    cmd.add_argument("folders", type=Path, nargs="+", metavar="DIR",
                     help="folders holding runs' evidence (searched at any depth)")
    cmd.add_argument("--trusted-key", type=Path, required=True, metavar="PUB",
                     help="the runner's pinned public key: only runs it signed are shown")
    cmd.add_argument("--governance-key", action="append", default=[], type=Path,
                     metavar="PUB", help="only runs decided under specs this key signed "
                     "(repeatable)")
    cmd.add_argument("--out", type=Path, required=True, metavar="FILE.html",
                     help="the page (never over an existing file)")
    cmd.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.out.exists() or args.out.is_symlink():
        raise UsageError(f"{args.out} already exists: it is never overwritten", "OUTPUT_EXISTS")
    trusted = signing.load_public(args.trusted_key)
    governance = [signing.load_public(p) for p in args.governance_key]
    found = history.collect(args.folders, trusted, governance)
    from engine.reports.history_page import page

    if not write_whole(args.out, page(found, args.out.resolve().parent).encode()):
        raise UsageError(f"{args.out} already exists: it is never overwritten", "OUTPUT_EXISTS")
    total = sum(len(r) for r in found.runs.values())
    print(shown(f"{args.out}: {total} verified run(s) of {len(found.runs)} evaluation(s), "
                f"{sum(len(s) for s in found.segments.values())} segment(s)"))
    for refused in found.refused:
        print(shown(f"left out: {refused['path']}: {refused['code']}: {refused['message']}"))
    return 1 if found.refused else 0
