"""The public surface, the generated reference, and the README's promises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import engine
from engine.spec import reference

from .conftest import REQUIRE_TOOLS, ROOT


def test_public_names_are_pinned() -> None:
    assert engine.__all__ == sorted(engine.__all__)
    assert engine.__all__ == [
        "EngineError", "Evaluation", "FormulaError", "Problem", "Result", "RunOptions",
        "SpecErrors",
        "UsageError", "VerifyError", "__version__", "compile_formula", "execute", "load",
        "verify"]


def test_reference_is_up_to_date() -> None:
    on_disk = (ROOT / "docs" / "reference.md").read_text()
    assert on_disk == reference.render(), \
        "docs/reference.md is stale: python -m engine.spec.reference > docs/reference.md"


def test_reference_covers_every_inspection_type() -> None:
    text = reference.render()
    for name in engine.inspections.TABLE:
        assert f"### `{name}`" in text


def test_ci_runs_the_readme_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [line for line in readme.splitlines() if line.startswith("python3 -m venv")]
    assert len(commands) == 2 and "engine run specs/" in commands[0]
    assert "pytest" in commands[1]
    for command in commands:
        assert command in ci.splitlines()


def test_every_test_docs_security_cites_exists() -> None:
    import ast
    import re

    text = (ROOT / "docs" / "security.md").read_text()
    cited = re.findall(r"`(test_\w+\.py)::(test_\w+)`", text)
    bare = re.findall(r"\| `(test_\w+)` \|", text)  # fault rows name tests/test_faults.py
    assert len(cited) > 20 and len(bare) >= 6
    defined: dict[str, set[str]] = {}
    for path in (ROOT / "tests").glob("test_*.py"):
        tree = ast.parse(path.read_text())
        defined[path.name] = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    for module, name in cited + [("test_faults.py", b) for b in bare]:
        assert name in defined.get(module, set()), f"docs/security.md cites {module}::{name}"


def test_a_missing_system_tool_skips_unless_ci_requires_it(tmp_path: Path) -> None:
    # The browser test on a machine without chromium: PATH holds only a folder with no
    # tools (the interpreter is called by its absolute path). No -rs: the README's command
    # has none, and pyproject's addopts print each skip's reason.
    empty = tmp_path / "bin"
    empty.mkdir()
    base = {k: v for k, v in os.environ.items() if k != REQUIRE_TOOLS} | {"PATH": str(empty)}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0",
               "tests/test_browser.py"]
    fresh = subprocess.run(command, cwd=ROOT, env=base, capture_output=True, text=True)
    assert fresh.returncode == 0, fresh.stdout[-2000:]
    assert "SKIPPED" in fresh.stdout and "needs chromium or chromium-browser" in fresh.stdout
    ci = subprocess.run(command, cwd=ROOT, env=base | {REQUIRE_TOOLS: "1"},
                        capture_output=True, text=True)
    assert ci.returncode == 1 and f"{REQUIRE_TOOLS}=1 says the tools are installed" in \
        ci.stdout, ci.stdout[-2000:]


def test_ci_requires_the_tools_it_installs() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert f"export {REQUIRE_TOOLS}=1" in ci
    assert ci.index(f"export {REQUIRE_TOOLS}=1") < next(
        i for i, line in enumerate(ci) if "python -m pytest" in line)


def test_the_parity_run_is_opt_in() -> None:
    # it installs Assevra from the package registry: never part of the default run
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "--co",
               "tests/test_parity.py"]
    default = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert "no tests collected (1 deselected)" in default.stdout, default.stdout
    chosen = subprocess.run([*command, "-q", "-m", "parity"], cwd=ROOT, capture_output=True,
                            text=True)
    assert "tests/test_parity.py: 1" in chosen.stdout, chosen.stdout
