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
GATE = ROOT / "specs" / "agent-release-gate"


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


class Gate:
    """A private copy of specs/agent-release-gate and helpers to run datasets through it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / "agent-release-gate"
        shutil.copytree(GATE, self.dir)
        self.runs = 0

    def policy(self, change: Any) -> None:
        import yaml
        path = self.dir / "policy.yaml"
        data = yaml.safe_load(path.read_text())
        change(data["spec"])
        path.write_text(yaml.safe_dump(data, sort_keys=False))

    def run(self, rows: list[Any], *extra: str) -> tuple[int, dict[str, Any], Path]:
        self.runs += 1
        data = self.root / f"rows-{self.runs}.jsonl"
        data.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                                for r in rows))
        out = self.root / f"out-{self.runs}"
        code = main(["run", str(self.dir), "--input", f"runs={data}", "--out", str(out),
                     *extra])
        card = json.loads((out / "scorecard.json").read_bytes()) if out.exists() else {}
        return code, card, out


@pytest.fixture
def gate(tmp_path: Path) -> Gate:
    return Gate(tmp_path)
