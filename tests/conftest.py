"""Shared helpers: a private copy of the example spec that a test may edit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "specs" / "example"


class Spec:
    """A copy of specs/example under a temporary folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / "example"
        shutil.copytree(EXAMPLE, self.dir)

    def data(self, name: str) -> Any:
        return yaml.safe_load((self.dir / name).read_text())

    def edit(self, name: str, change: Any) -> None:
        """Load a YAML file, let ``change`` mutate it, write it back."""
        data = self.data(name)
        change(data)
        (self.dir / name).write_text(yaml.safe_dump(data, sort_keys=False))

    def runs(self) -> list[dict[str, Any]]:
        text = (self.dir / "data/runs.jsonl").read_text()
        return [json.loads(line) for line in text.splitlines()]

    def write_runs(self, runs: list[dict[str, Any]]) -> None:
        (self.dir / "data/runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))

    def run(self, *extra: str, out: str = "out") -> tuple[int, Path]:
        dest = self.root / out
        code = main(["run", str(self.root), "--out", str(dest), *extra])
        return code, dest

    def scorecard(self, out: str = "out") -> dict[str, Any]:
        return json.loads((self.root / out / "scorecard.json").read_bytes())


@pytest.fixture
def spec(tmp_path: Path) -> Spec:
    return Spec(tmp_path)
