"""Shared helpers: a private copy of the example spec that a test may edit."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import rfc8785
import yaml

from engine.cli import main

ROOT = Path(__file__).resolve().parent.parent
REQUIRE_TOOLS = "SPECGATE_REQUIRE_TOOLS"


def pytest_xdist_auto_num_workers(config: Any) -> int:
    """``-n auto`` (pyproject.toml): one test process per CPU, and one more, since many
    tests wait on a subprocess (an engine run, a real tool, OpenSSL). Measured on 2 cores
    (issue 28, the full suite with every tool, --dist worksteal): 3 processes 4 min 20 s,
    4 processes 4 min 39 s; 2 took 5 min 3 s (with an 18 s test since shortened)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return cpus + 1


def need_tool(*names: str, install: str = "") -> str:
    """The path of the first of ``names`` on PATH. A test that needs a system tool (chromium,
    openssl) is skipped, with the reason, when none is installed; with
    SPECGATE_REQUIRE_TOOLS=1 (as .ci/run sets) it fails instead, so CI never skips it."""
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    reason = f"needs {' or '.join(names)} on PATH ({install or 'apt-get install ' + names[0]})"
    if os.environ.get(REQUIRE_TOOLS) == "1":
        pytest.fail(f"{reason}; {REQUIRE_TOOLS}=1 says the tools are installed")
    pytest.skip(reason)


def need_module(name: str, install: str) -> Any:
    """The Python module ``name`` (an evaluation tool a test produces data with), imported;
    skipped with the reason when it is not installed, failed instead under
    SPECGATE_REQUIRE_TOOLS=1 (as .ci/run sets, after installing it)."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        reason = f"needs the Python package {install} (pip install {install})"
        if os.environ.get(REQUIRE_TOOLS) == "1":
            pytest.fail(f"{reason}; {REQUIRE_TOOLS}=1 says the tools are installed")
        pytest.skip(reason)


def _shipped() -> tuple[str, ...]:
    """The names of the Evaluations under specs/, in the order engine run takes them."""
    names = []
    for path in sorted((ROOT / "specs").glob("*/evaluation.yaml")):
        names.append(yaml.safe_load(path.read_text())["metadata"]["name"])
    return tuple(names)


SHIPPED = _shipped()  # every shipped Evaluation's name (its folder under --out)
EXAMPLE = ROOT / "specs" / "example"
GATE = ROOT / "specs" / "agent-release-gate"


def trust(folder: Path, *publics: Path) -> None:
    """The Evaluation's history.trusted_keys in ``folder``: copies of these public keys
    (none: the member removed). A release trusts baselines signed by these only."""
    path = folder / "evaluation.yaml"
    data = yaml.safe_load(path.read_text())
    history = data["spec"].setdefault("history", {})
    history.pop("trusted_keys", None)
    for i, public in enumerate(publics):
        (folder / "keys").mkdir(exist_ok=True)
        shutil.copy(public, folder / "keys" / f"trusted-{i}.pub.pem")
        history.setdefault("trusted_keys", []).append(f"keys/trusted-{i}.pub.pem")
    if not history:
        data["spec"].pop("history")
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def approve(folder: Path, evidence: Path | None, pin: bool = True) -> None:
    """Governance approves a baseline: a copy of the evidence folder as ``baseline/`` in
    the spec folder, named by the Evaluation's history.baseline and, with ``pin``, its
    digest in history.baseline_sha256 (None: none of these)."""
    path = folder / "evaluation.yaml"
    data = yaml.safe_load(path.read_text())
    history = data["spec"].setdefault("history", {})
    history.pop("baseline", None)
    history.pop("baseline_sha256", None)
    shutil.rmtree(folder / "baseline", ignore_errors=True)
    if evidence is not None:
        shutil.copytree(evidence, folder / "baseline")
        history["baseline"] = "baseline/scorecard.json"
        if pin:
            history["baseline_sha256"] = hashlib.sha256(
                (evidence / "scorecard.json").read_bytes()).hexdigest()
    if not history:
        data["spec"].pop("history")
    path.write_text(yaml.safe_dump(data, sort_keys=False))


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

    def trust(self, *publics: Path) -> None:
        """Declare these public keys in the Evaluation's history.trusted_keys."""
        trust(self.dir, *publics)

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


# Keys a row's suite part leaves out (agent-release-gate §10), written from the protocol.
MEASURED = {"agent_output", "agent_actions", "tool_calls", "observed_state", "usage",
            "cost_usd", "latency_ms", "duration_ms", "elapsed_ms", "latency_s", "trace_id",
            "span_id", "trial_id"}


def suite_sha256(rows: list[dict[str, Any]]) -> str:
    """The protocol's suite digest, computed here independently of the engine: the JCS bytes
    of every row's inputs and assertions (measured and '_' keys removed), sorted by id."""
    parts = [{k: v for k, v in r.items() if k not in MEASURED and not k.startswith("_")}
             for r in sorted(rows, key=lambda r: str(r.get("id", "")))]
    return hashlib.sha256(rfc8785.dumps(parts)).hexdigest()


class Gate:
    """A private copy of specs/agent-release-gate and helpers to run datasets through it.

    The copy is the protocol's generic form: no dimension is marked required (so every
    included one is), and each dataset run through it is pinned as the approved suite, as
    governance would pin it after review; ``run(..., pin=False)`` leaves the pin out."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / "agent-release-gate"
        shutil.copytree(GATE, self.dir)
        self.runs = 0

        policy = self.dir / "policy.yaml"  # edited as text: tests match its formatting
        generic = policy.read_text().replace("required: true\n      min_cases: 4\n",
                                             "required: false\n")
        assert "      required: true" not in generic
        policy.write_text(generic)

    def pin(self, digest: str | None) -> None:
        """Pin (or with None, unpin) the Evaluation's suite_sha256."""
        path = self.dir / "evaluation.yaml"
        data = yaml.safe_load(path.read_text())
        data["spec"].pop("suite_sha256", None)
        if digest is not None:
            data["spec"]["suite_sha256"] = digest
        path.write_text(yaml.safe_dump(data, sort_keys=False))

    def trust(self, *publics: Path) -> None:
        """Declare these public keys in the Evaluation's history.trusted_keys."""
        trust(self.dir, *publics)

    def approve(self, evidence: Path | None, pin: bool = True) -> None:
        """Governance's baseline: a copy of ``evidence`` named by history.baseline."""
        approve(self.dir, evidence, pin)

    def policy(self, change: Any) -> None:
        import yaml
        path = self.dir / "policy.yaml"
        data = yaml.safe_load(path.read_text())
        change(data["spec"])
        path.write_text(yaml.safe_dump(data, sort_keys=False))

    def run(self, rows: list[Any], *extra: str,
            pin: bool = True) -> tuple[int, dict[str, Any], Path]:
        self.runs += 1
        ids = [r.get("id") for r in rows if isinstance(r, dict)]
        whole = len(ids) == len(rows) and all(isinstance(i, str) for i in ids) and \
            len(set(ids)) == len(ids)
        self.pin(suite_sha256(rows) if pin and whole else None)
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


def unpinned_gate(tmp_path: Path) -> Path:
    """A copy of the release gate without its suite pin (generated data reaches a
    decision)."""
    copy = tmp_path / "gate"
    shutil.copytree(GATE, copy)
    text = (copy / "evaluation.yaml").read_text()
    (copy / "evaluation.yaml").write_text(
        "\n".join(x for x in text.splitlines() if not x.startswith("  suite_sha256:")) + "\n")
    return copy


def keep_full_rows(policy: Path) -> None:
    """Add ``evidence.passing_rows: full`` to a copy of a policy file (edited as text, so
    the rest of it stays as written)."""
    text = policy.read_text()
    if "\n  evidence:\n" in text:
        text = text.replace("\n  evidence:\n", "\n  evidence:\n    passing_rows: full\n", 1)
    else:
        assert text.count("\nspec:\n") == 1
        text = text.replace("\nspec:\n", "\nspec:\n  evidence:\n    passing_rows: full\n")
    policy.write_text(text)
