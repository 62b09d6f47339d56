"""engine test: a policy's unit tests (kind: PolicyTest)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cli.common import (
    USAGE_EXIT,
    described,
    shown,
)
from engine.errors import UsageError
from engine.spec import evaluation as spec

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    pass

EXITS = ("0 every case passed and rule coverage is at least the minimum, 1 a case failed or "
         "coverage is below it, "
         + USAGE_EXIT)
EXAMPLES = (
    "engine test specs/",
    "engine test specs/ --min-coverage 0.9",
)


def add(sub: Any) -> None:
    test = sub.add_parser("test", help="run policy unit tests (kind: PolicyTest)",
                          **described(EXITS, *EXAMPLES))
    test.add_argument("paths", nargs="+", type=Path,
                      help="spec files or folders; every PolicyTest under them")
    test.add_argument("--min-coverage", type=float, help="share of policy rules to exercise")
    test.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from engine.decide.policytest import run_file

    found = spec.load_policy_tests(args.paths)
    if not found:
        raise UsageError("no PolicyTest found under " + ", ".join(map(str, args.paths)),
                         "NO_TESTS")
    failed = False
    for file, data, policy in found:
        result = run_file(file, data, policy)
        print(shown(f"{spec.display(file)} (policy {result['policy']})"))
        for case in result["results"]:
            mark = "ok  " if case["ok"] else "FAIL"
            print(f"  {mark} {shown(case['name'])}: {shown(case['got']['decision'])} "
                  f"{shown(', '.join(case['got']['reasons']))}")  # a case's name is a file's
            if not case["ok"]:
                print(shown(f"       wanted {case['want']['decision']} "
                            f"{', '.join(case['want'].get('reasons', []))}"))
                failed = True
        floor = args.min_coverage if args.min_coverage is not None else result["min_coverage"]
        print(f"  rule coverage {result['coverage']:.0%}"
              + (f" (minimum {floor:.0%})" if floor is not None else ""))
        for path in result["uncovered"]:
            print(f"    not exercised: {shown(path)}")
        if floor is not None and result["coverage"] < floor:
            failed = True
    return 1 if failed else 0

