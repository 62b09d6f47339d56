"""A test's git repository: the folder committed as a base, its origin itself (for the
pull-request and merge-request recipes of docs/ci.md)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(work: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          cwd=work, check=True, capture_output=True, text=True).stdout


def base_commit(work: Path) -> str:
    """``work``'s specs committed as the base, origin the repository itself: the commit."""
    git(work, "init", "-q")
    git(work, "add", "specs")
    git(work, "commit", "-qm", "base")
    base = git(work, "rev-parse", "HEAD").strip()
    git(work, "remote", "add", "origin", str(work))
    return base
