"""engine compare A B: what changed from one verified run of an evaluation to another."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from engine.cli.common import USAGE_EXIT, described, shown
from engine.errors import UsageError, VerifyError
from engine.evidence import compare as comparing
from engine.evidence import signing
from engine.evidence.verify import write_whole

EXITS = ("0 nothing got worse, 1 something did (the decision, a category's state, or a "
         "category's paired test says it regressed), " + USAGE_EXIT + ": a missing path or "
         "a folder of several scorecards, 3 cannot say: a side does not verify, no "
         "--trusted-key, or the runs are not comparable (another evaluation, policy, suite "
         "or judge)")
EXAMPLES = ("engine compare before/support-agent after/support-agent "
            "--trusted-key runner-signing.pub.pem",
            "engine compare before/ after/ --trusted-key runner-signing.pub.pem --json",
            "engine compare before/ after/ --trusted-key runner-signing.pub.pem --out "
            "compare.html")


def add(sub: Any) -> None:
    """engine compare: two runs, each verified, side by side."""
    cmd = sub.add_parser("compare", help="what changed between two verified runs of an "
                         "evaluation", **described(EXITS, *EXAMPLES))
    cmd.add_argument("before", type=Path, metavar="A",
                     help="the earlier run: its scorecard.json or the folder holding it")
    cmd.add_argument("after", type=Path, metavar="B", help="the later run")
    cmd.add_argument("--trusted-key", type=Path, metavar="PUB",
                     help="the runner's pinned public key; without it the signatures are "
                     "checked only against the key shipped with each run, and the exit is 3")
    cmd.add_argument("--json", action="store_true", help="print the comparison as JSON")
    cmd.add_argument("--out", type=Path, metavar="FILE.html",
                     help="also write the comparison as one self-contained page (never "
                     "over an existing file)")
    cmd.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    trusted = signing.load_public(args.trusted_key) if args.trusted_key else None
    if args.out is not None and (args.out.exists() or args.out.is_symlink()):
        raise UsageError(f"{args.out} already exists: it is never overwritten",
                         "OUTPUT_EXISTS")
    sides = []
    for label, path in (("A", args.before), ("B", args.after)):
        try:
            sides.append(comparing.load(path, trusted))
        except VerifyError as exc:
            print(shown(f"{label} {path}: INVALID {exc.code}: {exc}; nothing was compared"))
            return 3
    result = comparing.compare(*sides)
    if args.out is not None:
        from engine.reports.compare_page import page

        if not write_whole(args.out, page(result).encode()):
            raise UsageError(f"{args.out} already exists: it is never overwritten",
                             "OUTPUT_EXISTS")
    if args.json:
        print(json.dumps(result, indent=1, sort_keys=True, ensure_ascii=True))
    else:
        for line in _text(result):
            print(shown(line))
    return int(result["exit"])


def _text(result: dict[str, Any]) -> list[str]:
    a, b, decision = result["a"], result["b"], result["decision"]
    lines = [f"A: {a['evaluation']} run {a['run_id']} ({a['generated_at']}), "
             f"decision {a['decision']}",
             f"B: {b['evaluation']} run {b['run_id']} ({b['generated_at']}), "
             f"decision {b['decision']}"]
    if not result["trusted"]:
        lines.append("AUTHORSHIP UNVERIFIED: checked only against the keys shipped with the "
                     "runs; pin the runner's key with --trusted-key")
    for reason in result["not_comparable"]:
        lines.append(f"NOT COMPARABLE: {reason} (the protocol forbids comparing across it)")
    lines.append(f"decision: {decision['a']} -> {decision['b']}" +
                 (" (worse)" if decision["worse"] else ""))
    for c in result["categories"]:
        p = c["paired"]
        rate = " -> ".join(f"{r:.4f}" if isinstance(r, int | float) else "–"
                           for r in (c["a"]["rate"], c["b"]["rate"]))
        test = f"pairs {p['pairs']}, {p['pass_to_fail']} PASS->FAIL, {p['fail_to_pass']} " \
               f"FAIL->PASS, mid-p {p['p_value']:.4f}" if p["p_value"] is not None \
            else "no pairs"
        lines.append(f"  {c['name']}: {rate}, state {c['a']['state']} -> {c['b']['state']}; "
                     f"{test}" + (f"; WORSE: {'; '.join(c['why'])}" if c["worse"] else ""))
    flips, found = result["flips"], result["findings"]
    lines.append(f"cases PASS->FAIL {flips['cases_to_fail_total']}, FAIL->PASS "
                 f"{flips['cases_to_pass_total']}; trials PASS->FAIL "
                 f"{flips['trials_to_fail_total']}, FAIL->PASS {flips['trials_to_pass_total']}")
    lines += [f"  to FAIL: {f['category']} case {f['case']}" for f in flips["cases_to_fail"][:20]]
    lines.append(f"findings new {found['new_total']}, gone {found['gone_total']}")
    verdict = {0: "nothing got worse", 1: "something got worse", 3: "cannot say"}
    lines.append(verdict[result["exit"]])
    return lines
