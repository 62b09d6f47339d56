"""What a run pays before it scores: shipped schemas are checked here, not on every run,
and a run that asks no judge never imports the HTTP client."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
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


JSON_SCHEMA = ("jsonschema", "referencing", "jsonschema_specifications", "attrs", "rpds")
# Record tool contracts outside engine/inspections/contracts.py's subset (a $ref, a format)
# are the one use of jsonschema left in a run of valid documents.
CONTRACTS = {"_validator", "_schema_problem"}


def first_importers(argv: list[str]) -> dict[str, str]:
    """For each JSON Schema module a fresh ``engine`` process imports while running
    ``argv``, the engine function whose import statement loaded it first."""
    probe = textwrap.dedent(f"""
        import json, sys, traceback
        watch, found = {JSON_SCHEMA!r}, {{}}
        class Finder:
            def find_spec(self, name, path=None, target=None):
                top = name.partition(".")[0]
                if top in watch and top not in found:
                    frames = [f for f in traceback.extract_stack() if "/engine/" in f.filename]
                    found[top] = frames[-1].name if frames else "?"
        sys.meta_path.insert(0, Finder())
        from engine.cli import main
        assert main({argv!r}) in (0, 1, 3)
        print(json.dumps(found))
        """)
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    found: dict[str, str] = json.loads(done.stdout.splitlines()[-1])
    return found


@pytest.mark.parametrize("spec", ["example", "finding-quality-discovery", "inspect-example",
                                  "promptfoo-example"])
def test_a_shipped_spec_runs_without_json_schema_machinery(spec: str, tmp_path: Path) -> None:
    assert first_importers(["run", f"specs/{spec}", "--out", str(tmp_path / "out")]) == {}


def test_the_release_gate_on_compact_contracts_runs_without_json_schema(tmp_path: Path) -> None:
    from bench import assevra_data
    rows = assevra_data.write(tmp_path / "rows.jsonl", 1000, compact=True)
    assert first_importers(["run", "specs/agent-release-gate", "--input", f"runs={rows}",
                            "--out", str(tmp_path / "out")]) == {}


@pytest.mark.parametrize("compact", [False, True])
def test_the_shipped_runs_and_the_release_gate_need_no_json_schema(tmp_path: Path,
                                                                   compact: bool) -> None:
    from bench import assevra_data
    rows = assevra_data.write(tmp_path / "rows.jsonl", 1000, compact=compact)
    for argv in (["run", "specs", "--out", str(tmp_path / "all")],
                 ["run", "specs/agent-release-gate", "--input", f"runs={rows}", "--out",
                  str(tmp_path / "gate")]):
        assert first_importers(argv) == {}, argv


def test_a_contract_outside_the_subset_still_reaches_json_schema(tmp_path: Path) -> None:
    from bench import assevra_data
    rows = [json.loads(line) for line in
            assevra_data.write(tmp_path / "rows.jsonl", 90).read_text().splitlines()]
    for row in rows:
        for contract in (row.get("tool_schemas") or {}).values():
            contract.get("json_schema", {})["properties"] = {
                "amount": {"type": "number", "format": "float", "minimum": 0}}
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    found = first_importers(["run", "specs/agent-release-gate", "--input",
                             f"runs={tmp_path / 'rows.jsonl'}", "--out", str(tmp_path / "o")])
    assert found and set(found.values()) <= CONTRACTS, found


def test_engine_validate_imports_no_json_schema(tmp_path: Path) -> None:
    assert first_importers(["validate", "specs"]) == {}


def test_a_small_run_loads_no_pool_no_database_and_no_socket(tmp_path: Path) -> None:
    """A pull request's gate (1,000 records, under the 1 MiB that starts worker processes,
    under the 100k entries that move state to disk) loads none of what it does not use."""
    from bench import assevra_data
    rows = assevra_data.write(tmp_path / "rows.jsonl", 1000)
    probe = ("import sys\nfrom engine.cli import main\n"
             f"assert main(['run', 'specs/agent-release-gate', '--input', 'runs={rows}', "
             f"'--out', {str(tmp_path / 'out')!r}]) in (0, 1, 3)\n"
             "print(sorted(m for m in ('sqlite3', 'concurrent.futures', 'multiprocessing', "
             "'socket') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"
