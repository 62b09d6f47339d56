"""Write specs/promptfoo-example/data/results.json with promptfoo itself (docs/promptfoo.md).

    python -m bench.make_promptfoo_example [--promptfoo PATH]

promptfoo (npm ``promptfoo@0.123.1``, Node.js 22) runs the config in
``specs/promptfoo-example/tool/promptfooconfig.yaml`` with its offline ``echo`` provider
(the reply is the rendered prompt), 6 tests x ``--repeat 2``. Telemetry, update checks,
sharing and remote generation are off, and promptfoo's home and config folder are a
scratch folder, so the run touches no network and nothing outside it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "specs" / "promptfoo-example"
CONFIG = EXAMPLE / "tool" / "promptfooconfig.yaml"
VERSION = "0.123.1"
QUIET = {"PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1",
         "PROMPTFOO_DISABLE_SHARING": "1", "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
         "PROMPTFOO_DISABLE_REDTEAM_REMOTE_GENERATION": "1", "PROMPTFOO_CACHE_ENABLED": "false",
         "NO_COLOR": "1", "CI": "true"}


def binary() -> str | None:
    """promptfoo: $SPECGATE_PROMPTFOO, else the one on PATH."""
    return os.environ.get("SPECGATE_PROMPTFOO") or shutil.which("promptfoo")


def run(promptfoo: str, config: Path, out: Path,
        repeat: int = 2) -> subprocess.CompletedProcess[str]:
    """``promptfoo eval`` of ``config`` offline, its results written to ``out``."""
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, **QUIET, "HOME": home,
               "PROMPTFOO_CONFIG_DIR": str(Path(home) / ".promptfoo")}
        return subprocess.run(
            [promptfoo, "eval", "-c", config.name, "--repeat", str(repeat), "-o",
             os.path.relpath(out, config.parent),
             "--no-cache", "--no-write", "--no-progress-bar", "--no-table"],
            cwd=config.parent, env=env, capture_output=True, text=True, timeout=300)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--promptfoo", default=binary(), help="the promptfoo executable")
    args = parser.parse_args()
    if not args.promptfoo:
        print(f"promptfoo not found: npm install promptfoo@{VERSION}, or --promptfoo PATH",
              file=sys.stderr)
        return 2
    out = EXAMPLE / "data" / "results.json"
    done = run(args.promptfoo, CONFIG, out)
    # promptfoo exits 100 when a test fails (as this example's do on purpose)
    if done.returncode not in (0, 100) or not out.exists():
        print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
        return 1
    print(f"wrote {out.relative_to(ROOT)} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
