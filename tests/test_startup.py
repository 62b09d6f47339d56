"""What a run pays before it scores: shipped schemas are checked here, not on every run,
and a run that asks no judge never imports the HTTP client."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from engine.inspections import TABLE

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted([*(ROOT / "engine" / "schemas").glob("*.schema.json"),
                  *(ROOT / "engine" / "protocols").rglob("*.schema.json"),
                  *(ROOT / "schemas").glob("*.json")])


def test_shipped_schemas_are_found() -> None:
    names = {p.name for p in SHIPPED}
    assert {"policy.schema.json", "scorecard.schema.json", "gates.schema.json"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_schema_is_a_valid_json_schema(path: Path) -> None:
    jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text("utf-8")))


@pytest.mark.parametrize("name", sorted(TABLE))
def test_primitive_parameter_schema_is_a_valid_json_schema(name: str) -> None:
    jsonschema.Draft202012Validator.check_schema(TABLE[name].schema)


def test_a_broken_schema_would_be_caught() -> None:
    with pytest.raises(jsonschema.SchemaError):
        jsonschema.Draft202012Validator.check_schema({"type": "mapping"})


def modules_after(code: str) -> dict[str, Any]:
    """Which heavy modules a fresh interpreter holds after running ``code``."""
    heavy = "('httpx', 'asyncio', 'cryptography')"
    probe = (f"import sys\n{code}\nimport json\n"
             f"print(json.dumps({{m: m in sys.modules for m in {heavy}}}))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found


def test_the_shipped_runs_never_import_the_http_client_nor_cryptography(
        tmp_path: Path) -> None:
    code = ("from engine.cli import main\n"
            f"code = main(['run', 'specs', '--out', {str(tmp_path)!r}])\n"
            "assert code == 0, code")
    assert modules_after(code) == {"httpx": False, "asyncio": False, "cryptography": False}


def test_the_judge_names_still_resolve() -> None:
    code = "from engine.judge import Client, call, open_client\nassert callable(call)"
    assert modules_after(code)["httpx"] and modules_after(code)["asyncio"]


def test_a_signed_run_loads_cryptography_when_it_signs(tmp_path: Path) -> None:
    keys, out = tmp_path / "keys", tmp_path / "out"
    code = ("from engine.cli import main\n"
            f"assert main(['keygen', '--out-dir', {str(keys)!r}]) == 0\n"
            f"assert main(['run', 'specs', '--out', {str(out)!r}, '--key', "
            f"{str(keys / 'private.pem')!r}]) == 0\n"
            f"assert main(['verify', {str(out)!r}, '--trusted-key', "
            f"{str(keys / 'public.pem')!r}]) == 0")
    assert modules_after(code)["cryptography"]


def test_the_start_up_bench_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import startup

    assert startup.main(["--runs", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["import", "1k-row", "engine"]
    assert all("wall median" in line and "cpu median" in line for line in lines)
