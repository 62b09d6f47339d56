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

EXITS = ("0 every case passed and rule and inspection coverage are at least their minimums, "
         "1 a case failed or a coverage is below its minimum, "
         + USAGE_EXIT)
EXAMPLES = (
    "engine test specs/",
    "engine test specs/ --min-coverage 0.9",
    "engine test specs/ --min-inspection-coverage 1",
)


def add(sub: Any) -> None:
    test = sub.add_parser("test", help="run policy unit tests (kind: PolicyTest)",
                          **described(EXITS, *EXAMPLES))
    test.add_argument("paths", nargs="+", type=Path,
                      help="spec files or folders; every PolicyTest under them")
    test.add_argument("--min-coverage", type=float, help="share of policy rules to exercise")
    test.add_argument("--min-inspection-coverage", type=float,
                      help="share of inspection outcomes (each inspection PASS, and FAIL or "
                           "ERROR) the record-level cases must exercise")
    test.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from engine.decide.policytest import run_file

    found = spec.load_policy_tests(args.paths)
    if not found:
        raise UsageError("no PolicyTest found under " + ", ".join(map(str, args.paths)),
                         "NO_TESTS")
    failed = False
    for test in found:
        result = run_file(test)
        print(shown(f"{spec.display(test.file)} (policy {result['policy']})"))
        for case in result["results"]:
            failed = _case(case) or failed
        floor = args.min_coverage if args.min_coverage is not None else result["min_coverage"]
        print(f"  rule coverage {result['coverage']:.0%}"
              + (f" (minimum {floor:.0%})" if floor is not None else ""))
        for path in result["uncovered"]:
            print(f"    not exercised: {shown(path)}: {shown(result['hints'][path])}")
        if floor is not None and result["coverage"] < floor:
            failed = True
        least = args.min_inspection_coverage if args.min_inspection_coverage is not None \
            else result["min_inspection_coverage"]
        done, total = result["inspection_counts"]
        print(f"  inspection coverage {result['inspection_coverage']:.0%} ({done} of {total} "
              "outcomes)" + (f" (minimum {least:.0%})" if least is not None else "")
              + ("" if result["records"] else ": no case gives records"))
        for (iid, side), hint in result["unexercised"]:
            print(f"    not exercised: {shown(iid)} {side}: {shown(hint)}")
        if least is not None and result["inspection_coverage"] < least:
            failed = True
    return 1 if failed else 0


def _case(case: dict[str, Any]) -> bool:
    """Print one case's result; True when it failed."""
    mark = "ok  " if case["ok"] else "FAIL"
    got, want = case["got"], case["want"]
    print(f"  {mark} {shown(case['name'])}: {shown(got['decision'])} "
          f"{shown(', '.join(got['reasons']))}")  # a case's name is a file's
    if got["decision"] != want["decision"] or (
            "reasons" in want and sorted(want["reasons"]) != got["reasons"]):
        print(shown(f"       wanted {want['decision']} {', '.join(want.get('reasons', []))}"))
    for iid, (wanted, have) in case["wrong_rows"].items():
        wanted = f"every row {wanted}" if isinstance(wanted, str) else \
            ", ".join(wanted) or "no row"
        print(shown(f"       rows of {iid}: wanted {wanted}, "
                    f"got {', '.join(have) or 'no row'}"))
    for problem in case["problems"]:
        print(shown(f"       record refused: {problem}"))
    return not case["ok"]
