"""engine validate: specs checked without running them."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cli.common import (
    EXIT_SPEC,
    USAGE_EXIT,
    described,
    shown,
)
from engine.evidence import provenance, signing
from engine.spec import evaluation as spec

if TYPE_CHECKING:  # cryptography is imported only by what signs or verifies
    pass

EXITS = ("0 every spec is valid (warnings may be printed), "
         + USAGE_EXIT + ", or a bundle that does not verify under --governance-key")
EXAMPLES = (
    "engine validate specs/",
    "engine validate specs/ --governance-key keys/governance/public.pem",
)


def add(sub: Any) -> None:
    validate = sub.add_parser("validate", help="check specs without running them",
                              **described(EXITS, *EXAMPLES))
    validate.add_argument("paths", nargs="+", type=Path, help="spec files or folders")
    validate.add_argument("--governance-key", action="append", default=[], type=Path,
                          metavar="PUB", help="also check each bundle's signature")
    validate.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    keys = [signing.load_public(p) for p in args.governance_key]
    evaluations = spec.load(args.paths)
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")  # as engine run's clock reads it
    code, ended = 0, set[str]()
    for e in evaluations:
        print(shown(f"ok: {e.name} (policy {e.policy.name} {e.policy.version}, "
                    f"suite {e.suite.name} {e.suite.version})"))  # one line: values escaped
        for warning in e.warnings:
            print(shown(f"warning: {warning}"))
        for last_day, warning in e.policy.waiver_ends:  # a policy's once, however many use it
            if last_day < today and str(warning) not in ended:
                ended.add(str(warning))
                print(shown(f"warning: {warning}"))
        bundle = provenance.bundle_status(e, keys)
        where = shown(spec.display(e.file.resolve().parent / provenance.SPECS_FILE))
        if bundle is not None and bundle.code:
            print(f"{'error' if keys else 'warning'}: {where}: {bundle.code}: "
                  f"{shown(bundle.message)}")
            code = EXIT_SPEC if keys else code
        elif bundle is not None:
            signer = bundle.block.get("signer")
            print(f"  specs: {where} signs exactly the {len(e.spec_files)} file(s) loaded"
                  + (f" (governance key {signer[:16]})" if signer else
                     " (signature not checked: pass --governance-key)"))
    if not evaluations:
        print("ok: no Evaluation found (nothing to run)")
    return code

