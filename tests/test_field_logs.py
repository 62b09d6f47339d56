"""Logs that the real tools wrote, at every version of the support matrix (issue 25).

Each fixture under tests/data/field/<tool>/ was written by the tool itself at the version
its MADE.json names, with the command that made it (bench/field/ regenerates them). The
expected values are MADE.json's ``expected``: worked out from the scripted scenario that
produced the file (the mock model's script, the loopback server's replies), never from
specgate's reading. Every genuine file must read with no record problem and give exactly
those units, scores, tokens and tool calls; each cut, emptied or edited copy must still be
refused with its code.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import main
from engine.records import support
from engine.records.formats import BadRecord, Record
from engine.records.inspect_log import read as read_inspect
from engine.records.otel import read as read_otel
from engine.records.promptfoo import read as read_promptfoo

from .conftest import ROOT

FIELD = ROOT / "tests" / "data" / "field"


def made(tool: str) -> list[dict[str, Any]]:
    """The fixtures of one tool, as MADE.json records them."""
    entries: list[dict[str, Any]] = json.loads((FIELD / tool / "MADE.json").read_text())
    return entries


def gate(spec: Path, name: str, path: Path, out: Path) -> tuple[int, dict[str, Any]]:
    """``engine run`` of a field gate on one file, through the CLI: exit code, scorecard."""
    code = main(["run", str(spec), "--input", f"{name}={path}", "--out", str(out)])
    return code, json.loads((out / "scorecard.json").read_bytes())


def problems(records: list[Record | BadRecord]) -> list[tuple[str, str]]:
    return [(r.code, r.message) for r in records if isinstance(r, BadRecord)]


# --- inspect_ai -----------------------------------------------------------------------------

INSPECT = made("inspect")


@pytest.mark.parametrize("entry", INSPECT, ids=lambda e: e["path"])
def test_inspect_ai_logs_of_every_version_read_as_the_scenario_says(
        entry: dict[str, Any]) -> None:
    records = list(read_inspect(FIELD / "inspect" / entry["path"]))
    assert problems(records) == []
    want = entry["expected"]
    found = {(r.data["sample_id"], r.data["epoch"]): r.data for r in records
             if isinstance(r, Record)}
    assert len(records) == len(found) == want["samples"]
    for unit in want["units"]:
        data = found[unit["id"], unit["epoch"]]
        assert data["scores"][want["scorer"]]["value"] == unit["score"]
        assert data["output"] == unit["output"]
        assert {k: data["usage"].get(k) for k in unit["tokens"]} == unit["tokens"]
        assert [(c["name"], c["arguments"]) for c in data["tool_calls"]] == \
            [(c["name"], c["arguments"]) for c in unit["tool_calls"]]
    assert sum(d["scores"][want["scorer"]]["value"] == "C" for d in found.values()) == \
        want["scores_correct"]


@pytest.mark.parametrize("entry", INSPECT, ids=lambda e: e["path"])
def test_inspect_ai_logs_of_every_version_pass_one_gate(entry: dict[str, Any],
                                                         tmp_path: Path) -> None:
    want = entry["expected"]
    code, card = gate(FIELD / "inspect" / "gate", "samples",
                      FIELD / "inspect" / entry["path"], tmp_path / "out")
    assert card["coverage"]["record_problems"] == {}
    assert card["coverage"]["records"] == want["samples"]
    correct = card["categories"]["correctness"]
    assert (correct["passed"], correct["n"]) == (want["scores_correct"], want["samples"])
    # every call within its contract, every sample within 75 tokens (3 calls of 25)
    assert card["categories"]["tools"]["passed"] == want["samples"]
    assert card["categories"]["efficiency"]["passed"] == want["samples"]
    assert (code, card["decision"]) == (0, "PASS")


def _json_log(entry: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIELD / "inspect" / entry["path"]).read_text())
    return doc


JSON_LOGS = [e for e in INSPECT if e["form"] == "json"]


@pytest.mark.parametrize("entry", JSON_LOGS, ids=lambda e: e["path"])
def test_a_genuine_log_cut_emptied_or_copied_into_is_still_refused(entry: dict[str, Any],
                                                                   tmp_path: Path) -> None:
    source = FIELD / "inspect" / entry["path"]
    text = source.read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(text[: len(text) * 2 // 3])
    assert "INSPECT_LOG_TRUNCATED" in {c for c, _ in problems(list(read_inspect(cut)))}

    doc = _json_log(entry)
    doc["samples"] = []  # the header alone: every sample of the run is missing
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps(doc))
    # the header names its samples (eval.dataset.sample_ids) from 0.3.3x on; before, the
    # Suite's cases are what is missing
    named = {c for c, _ in problems(list(read_inspect(empty)))}
    assert named == ({"RUN_MISSING"} if "sample_ids" in doc["eval"]["dataset"] else set())
    code, card = gate(FIELD / "inspect" / "gate", "samples", empty, tmp_path / "out")
    assert (code, card["decision"]) == (3, "INCOMPLETE")

    doc = _json_log(entry)
    samples = doc["samples"]
    first = samples[0]
    other = next(s for s in samples if s["id"] == first["id"] and s["epoch"] != first["epoch"])
    samples[samples.index(other)] = {**first, "epoch": other["epoch"]}  # a pass copied over
    copied = tmp_path / "copied.json"
    copied.write_text(json.dumps(doc))
    codes = [c for c, _ in problems(list(read_inspect(copied)))]
    assert codes == ["DUPLICATE_ID"], codes


@pytest.mark.parametrize("entry", JSON_LOGS, ids=lambda e: e["path"])
def test_a_copy_under_a_fresh_uuid_or_none_is_refused_a_retried_log_is_not(
        entry: dict[str, Any], tmp_path: Path) -> None:
    """A sample copied over another epoch is found by its content, whatever its uuid says
    (a fresh one, or none as before 0.3.70); a log whose header names 0.3.70 or later but
    whose samples have no uuid (``inspect eval-retry`` carries an earlier version's samples
    over as they were) is read."""
    for uuid in ("a-fresh-uuid", None):
        doc = _json_log(entry)
        samples = doc["samples"]
        first = samples[0]
        other = next(s for s in samples
                     if s["id"] == first["id"] and s["epoch"] != first["epoch"])
        copy = {**first, "epoch": other["epoch"], "uuid": uuid}
        if uuid is None:
            copy.pop("uuid")
        samples[samples.index(other)] = copy
        path = tmp_path / f"copied-{uuid}.json"
        path.write_text(json.dumps(doc))
        assert [c for c, _ in problems(list(read_inspect(path)))] == ["DUPLICATE_ID"]
    doc = _json_log(entry)
    doc["eval"]["packages"]["inspect_ai"] = "0.3.70"
    for sample in doc["samples"]:
        sample.pop("uuid", None)
    retried = tmp_path / "retried.json"
    retried.write_text(json.dumps(doc))
    assert problems(list(read_inspect(retried))) == []


# --- inspect_ai .eval: an entry named twice ---------------------------------------------------

EVAL_LOGS = [e for e in INSPECT if e["form"] == "eval"]


def _member(log: Path, name: str) -> bytes:
    """One entry of a genuine .eval, decompressed (deflate, or zstd as 0.3.285 writes it)."""
    with zipfile.ZipFile(log) as archive:
        info = archive.getinfo(name)
        if info.compress_type != 93:
            return archive.read(info)
    import zstandard

    with log.open("rb") as handle:
        handle.seek(info.header_offset + 26)
        skip = sum(int.from_bytes(handle.read(2), "little") for _ in range(2))
        handle.seek(info.header_offset + 30 + skip)
        packed = handle.read(info.compress_size)
    return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(packed),
                                                      read_across_frames=True).read()


@pytest.mark.parametrize("entry", EVAL_LOGS, ids=lambda e: e["path"])
def test_an_eval_naming_an_entry_twice_is_refused_whatever_the_entries_hold(
        entry: dict[str, Any], tmp_path: Path) -> None:
    """A .eval whose zip names header.json (or a sample's entry) twice was read silently, the
    last entry of the name winning, while a .json log with a key given twice is refused: the
    second name is DUPLICATE_KEY, whatever it holds, and nothing of the log is read."""
    source = FIELD / "inspect" / entry["path"]
    with zipfile.ZipFile(source) as archive:
        names = [i.filename for i in archive.infolist()]
    assert len(names) == len(set(names)), "inspect_ai wrote a name twice"
    header = json.loads(_member(source, "header.json"))
    header["eval"]["model"] = "another/model"  # a second header disagreeing with the first
    sample = next(n for n in names if n.startswith("samples/"))
    for name, data in (("header.json", json.dumps(header).encode()),
                       (sample, _member(source, sample))):  # an exact copy, too
        twice = tmp_path / f"twice-{name.replace('/', '-')}.eval"
        shutil.copy(source, twice)
        with pytest.warns(UserWarning, match="Duplicate name"), \
                zipfile.ZipFile(twice, "a", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(name, data)
        found = problems(list(read_inspect(twice)))
        assert [code for code, _ in found] == ["DUPLICATE_KEY"], found
        assert repr(name) in found[0][1]
    code, card = gate(FIELD / "inspect" / "gate", "samples", twice, tmp_path / "out")
    assert card["coverage"]["record_problems"] == {"DUPLICATE_KEY": 1}
    assert (code, card["decision"]) == (3, "INCOMPLETE")


# --- OpenTelemetry GenAI (and OpenInference) ----------------------------------------------

OTEL = json.loads((FIELD / "otel" / "MADE.json").read_text())["files"]
# which exports record tool-call arguments and message content where the reader reads them:
# the framework settings each was made with (MADE.json's settings and env), not what the
# reader finds. Google ADK's legacy schema records them only in its own gcp.vertex.agent.*
# attributes, which the reader does not read (docs/otel.md): not recorded here.
RECORDS = {("pydantic_ai", "content"): True, ("pydantic_ai", "no_content"): False,
           ("strands", "default"): True, ("strands", "latest"): True,
           ("strands", "latest_attributes"): True, ("openai_v2", "span_only"): True,
           ("openai_v2", "no_content"): False, ("openai_agents", "default"): True,
           ("openai_agents", "no_sensitive_data"): False,
           ("langgraph_openinference", "default"): True,
           ("langgraph_openinference", "hidden"): False,
           ("langgraph_traceloop", "default"): True,
           ("langgraph_traceloop", "no_content"): False,
           ("llama_index", "default"): True, ("llama_index", "hidden"): False,
           ("crewai", "default"): True, ("crewai", "hidden"): False,
           ("crewai", "crewai_only"): True, ("crewai", "event_listener"): True,
           ("google_adk", "default"): False, ("google_adk", "span_content"): True,
           ("google_adk", "legacy"): False, ("google_adk", "legacy_no_content"): False,
           ("autogen", "default"): False, ("autogen", "resource"): False,
           ("autogen", "bare"): False,
           ("smolagents", "default"): True, ("smolagents", "hidden"): False,
           ("logfire_openai", "default"): True, ("logfire_openai", "legacy"): False,
           ("semantic_kernel", "default"): True, ("semantic_kernel", "no_content"): False}
# exports recording no token usage the reader reads (AutoGen records none; CrewAI's own
# instrumentor writes no model-call spans), and those whose tool calls are recorded nowhere
# though the model asked for tools (Logfire's version=1 writes no GenAI messages)
NO_TOKENS = {("autogen", "default"), ("autogen", "resource"), ("autogen", "bare"),
             ("crewai", "crewai_only")}
NO_CALLS = {("logfire_openai", "legacy")}
UNNAMED = {("autogen", "bare")}  # nothing in it names a case: tested on its own
NAMED = [e for e in OTEL if (e["framework"], e["mode"]) not in UNNAMED]
# semantic-kernel names a tool PLUGIN-FUNCTION, the name the model calls (docs/otel.md)
QUALIFIED = {"semantic_kernel": "Refunds-"}
RECIPE = re.compile(r"<!-- otel-recipe: (\w+) -->\n```yaml\n(.*?)```", re.DOTALL)


def recipes() -> dict[str, dict[str, Any]]:
    """Each framework's input declaration, as docs/otel.md gives it."""
    page = (ROOT / "docs" / "otel.md").read_text()
    return {name: yaml.safe_load(text)["inputs"]["traces"]
            for name, text in RECIPE.findall(page)}


def otel_gate(tmp_path: Path, framework: str) -> Path:
    """The field gate with the framework's recipe from docs/otel.md as its input (and the
    Suite's tools under the names the framework gives them)."""
    spec = tmp_path / "gate"
    shutil.copytree(FIELD / "otel" / "gate", spec)
    prefix = QUALIFIED.get(framework)
    if prefix:
        suite = yaml.safe_load((spec / "suite.yaml").read_text())
        for case in suite["spec"]["cases"]:
            expected = case["expected"]
            expected["allowed_tools"] = [prefix + t for t in expected["allowed_tools"]]
            expected["tool_schemas"] = {prefix + t: c for t, c in
                                        expected["tool_schemas"].items()}
        (spec / "suite.yaml").write_text(yaml.safe_dump(suite))
    declared = recipes()[framework]
    (spec / "traces.jsonl").write_text("")  # the recipe's path; the test rebinds it
    evaluation = {"apiVersion": "specgate/v1", "kind": "Evaluation",
                  "metadata": {"name": f"otel-field-{framework.replace('_', '-')}",
                               "version": "1.0.0", "owner": "support-platform"},
                  "spec": {"policy": "policy.yaml", "suite": "suite.yaml",
                           "inputs": {"traces": declared},
                           "units": {"input": "traces", "id": "id", "case": "case_id"}}}
    (spec / "evaluation.yaml").write_text(yaml.safe_dump(evaluation))
    return spec


@pytest.mark.parametrize("declared, code, where", [
    ({"format": "otel-genai", "options": {"cas": "session.id"}}, "UNKNOWN_KEY", "cas"),
    ({"format": "otel-genai", "options": {"trial": 5}}, "BAD_TYPE", "trial"),
    ({"format": "otel-genai", "options": {"case": {"attribute": "metadata"}}},
     "MISSING_KEY", "case"),
    ({"format": "jsonl", "options": {"case": "x"}}, "UNKNOWN_KEY", "options"),
])
def test_bad_input_options_are_located_spec_errors(declared: dict[str, Any], code: str,
                                                   where: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    spec = otel_gate(tmp_path, "strands")
    evaluation = yaml.safe_load((spec / "evaluation.yaml").read_text())
    evaluation["spec"]["inputs"]["traces"] = {"path": "traces.jsonl", **declared}
    (spec / "evaluation.yaml").write_text(yaml.safe_dump(evaluation))
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "evaluation.yaml:" in err and f": {code}: " in err and where in err, err


def test_every_framework_has_a_recipe_and_a_record_of_what_it_records() -> None:
    assert set(recipes()) == {e["framework"] for e in OTEL}
    assert set(RECORDS) == {(e["framework"], e["mode"]) for e in OTEL}


def _id(entry: dict[str, Any]) -> str:
    return str(entry["path"].split("otel/")[1])


@pytest.mark.parametrize("entry", NAMED, ids=_id)
def test_framework_exports_read_as_the_script_says(entry: dict[str, Any]) -> None:
    key = entry["framework"], entry["mode"]
    options = recipes()[entry["framework"]].get("options", {})
    records = list(read_otel(ROOT / entry["path"], None, **options))
    assert problems(records) == []
    found = {(r.data["case_id"], r.data["trial"]): r.data for r in records
             if isinstance(r, Record)}
    runs = entry["expected"]["runs"]
    assert len(records) == len(found) == len(runs) == 6  # no create_agent, no model step
    prefix = QUALIFIED.get(entry["framework"], "")
    for run in runs:
        data = found[run["case"], run["trial"]]
        if key in NO_CALLS:  # asked for, recorded nowhere: unknown, never none
            assert "tool_calls" not in data and data["tool_calls_unrecorded"]
        else:
            assert [c["name"] for c in data["tool_calls"]] == \
                [prefix + c["name"] for c in run["tool_calls"]]
        if RECORDS[key]:
            assert [c["arguments"] for c in data["tool_calls"]] == \
                [c["arguments"] for c in run["tool_calls"]]
            assert data["output"].strip() == run["final_text"]  # strands ends it with "\n"
        else:  # not recorded is absent, never an empty value
            assert all("arguments" not in c for c in data.get("tool_calls", []))
            assert data["output"] is None
        if key in NO_TOKENS:
            assert data["usage"] == {}
        else:
            assert (data["usage"]["input_tokens"], data["usage"]["output_tokens"]) == \
                (run["input_tokens"], run["output_tokens"])
            assert data["inference_calls"] == run["model_calls"]  # calls, not spans


@pytest.mark.parametrize("entry", NAMED, ids=_id)
def test_framework_exports_fail_where_recorded_and_never_pass_where_not(
        entry: dict[str, Any], tmp_path: Path) -> None:
    """The big case refunds 80 and 42.5 against a limit of 40 and says "full refund
    approved": an export recording that FAILs; one that does not is INCOMPLETE."""
    key = entry["framework"], entry["mode"]
    spec = otel_gate(tmp_path, entry["framework"])
    code, card = gate(spec, "traces", ROOT / entry["path"], tmp_path / "out")
    assert card["coverage"]["record_problems"] == {}
    tools, answer = card["categories"]["tools"], card["categories"]["answer"]
    efficiency = card["categories"]["efficiency"]
    if key in NO_TOKENS:
        assert efficiency["errors"] == 6
    else:
        assert efficiency["passed"] == 6
    if RECORDS[key]:
        assert (tools["passed"], tools["failed"]) == (4, 2)
        assert (answer["passed"], answer["failed"]) == (4, 2)
        # a category with no evidence leaves the gate unresolved whatever else failed
        assert (code, card["decision"]) == ((3, "INCOMPLETE") if key in NO_TOKENS else
                                            (1, "FAIL"))
    else:
        if key in NO_CALLS:
            assert tools["errors"] == 6
        else:  # a refund's arguments unrecorded: its contract has no evidence (4 runs refund)
            assert (tools["passed"], tools["errors"]) == (2, 4)
        assert answer["errors"] == 6
        assert (code, card["decision"]) == (3, "INCOMPLETE")


def test_a_create_agent_span_is_never_a_run(tmp_path: Path) -> None:
    """AutoGen and Traceloop write a create_agent span when an agent is built, the root of
    a trace of its own: it was a unit of its own (with a resource naming the case, it took
    the run's case and trial, and the real run was refused as DUPLICATE_ID)."""
    for name in ("bare", "resource"):
        records = list(read_otel(FIELD / "otel" / "autogen" / f"{name}.jsonl"))
        assert problems(records) == []
        assert [r.data["operation"] for r in records] == ["invoke_agent"] * 6
    made = next(e for e in OTEL if e["path"].endswith("autogen/resource.jsonl"))
    code, card = gate(otel_gate(tmp_path, "autogen"), "traces", ROOT / made["path"],
                      tmp_path / "out")
    assert card["coverage"]["record_problems"] == {}
    assert (card["categories"]["tools"]["passed"], card["categories"]["tools"]["errors"]) \
        == (2, 4)


def _edited(path: Path, out: Path, change: Any) -> None:
    """``path``'s export with ``change(span)`` applied to every span."""
    lines = []
    for line in path.read_text().splitlines():
        request = json.loads(line)
        for resource in request["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    change(span)
        lines.append(json.dumps(request))
    out.write_text("\n".join(lines) + "\n")


def test_content_openinference_hides_is_not_recorded_never_its_placeholder(
        tmp_path: Path) -> None:
    """OPENINFERENCE_HIDE_INPUTS / _HIDE_OUTPUT_TEXT write "__REDACTED__" in place of the
    content: read as the arguments it was a contract FAIL on every call, read as the answer
    a must-not-contain PASS on text never shown (hostile review of issue 25)."""
    def hide(span: dict[str, Any]) -> None:
        for attribute in span.get("attributes", []):
            key, value = attribute["key"], attribute["value"]
            if key == "input.value" or re.fullmatch(
                    r"llm\.output_messages\.\d+\.message\.(content|tool_calls\.\d+\."
                    r"tool_call\.function\.arguments)", key):
                value["stringValue"] = "__REDACTED__"
    hidden = tmp_path / "hidden.jsonl"
    _edited(FIELD / "otel" / "openai_agents" / "default.jsonl", hidden, hide)
    code, card = gate(otel_gate(tmp_path, "openai_agents"), "traces", hidden, tmp_path / "out")
    tools, answer = card["categories"]["tools"], card["categories"]["answer"]
    assert (tools["passed"], tools["errors"], answer["errors"]) == (2, 4, 6)
    assert (code, card["decision"]) == (3, "INCOMPLETE")


def test_a_tool_span_of_a_convention_the_reader_does_not_read_is_refused(
        tmp_path: Path) -> None:
    """A tool call marked only by OpenLLMetry's traceloop.span.kind inside a GenAI run
    would be missing from the run's calls: the run is OTEL_NO_CONVENTION."""
    def relabel(span: dict[str, Any]) -> None:
        attributes = span.get("attributes", [])
        if any(a["key"] == "gen_ai.operation.name" and
               a["value"].get("stringValue") == "execute_tool" for a in attributes):
            span["name"] = "issue_refund.tool"
            span["attributes"] = [{"key": "traceloop.span.kind",
                                   "value": {"stringValue": "tool"}}] + [
                a for a in attributes if not a["key"].startswith("gen_ai.")]
    relabelled = tmp_path / "traceloop.jsonl"
    _edited(FIELD / "otel" / "strands" / "latest.jsonl", relabelled, relabel)
    code, card = gate(otel_gate(tmp_path, "strands"), "traces", relabelled, tmp_path / "out")
    assert card["coverage"]["record_problems"] == {"OTEL_NO_CONVENTION": 6}
    assert (code, card["decision"]) == (3, "INCOMPLETE")


def test_a_case_source_holding_no_json_object_is_refused_never_skipped(tmp_path: Path) -> None:
    """pydantic-ai's metadata written as text the strict reader refuses: the trial it holds
    is unknown, not absent (a NaN in it turned every trial null, silently)."""
    def broken(span: dict[str, Any]) -> None:
        for attribute in span.get("attributes", []):
            if attribute["key"] == "metadata":
                attribute["value"] = {"stringValue": '{"specgate.trial": 1, "x": NaN}'}
    path = tmp_path / "nan.jsonl"
    _edited(FIELD / "otel" / "pydantic_ai" / "content.jsonl", path, broken)
    options = recipes()["pydantic_ai"]["options"]
    assert {c for c, _ in problems(list(read_otel(path, None, **options)))} == {"OTEL_BAD_SPAN"}


def test_an_export_following_no_known_convention_is_never_an_empty_run(
        tmp_path: Path) -> None:
    """The OpenAI Agents SDK's OpenInference export with its span kinds taken off: no
    convention the reader knows. Each run is OTEL_NO_CONVENTION (it was read as a run with
    no tool calls, which passed an allow-list forbidding the refund it made)."""
    source = FIELD / "otel" / "openai_agents" / "default.jsonl"
    bare = tmp_path / "bare.jsonl"
    _edited(source, bare, lambda span: span.update(attributes=[
        a for a in span.get("attributes", []) if a["key"] != "openinference.span.kind"]))
    spec = otel_gate(tmp_path, "openai_agents")
    suite = spec / "suite.yaml"
    suite.write_text(suite.read_text().replace("[lookup_order, issue_refund, escalate]",
                                               "[lookup_order, escalate]"))
    code, card = gate(spec, "traces", bare, tmp_path / "out")
    assert card["coverage"]["record_problems"] == {"OTEL_NO_CONVENTION": 6}
    assert (code, card["decision"]) == (3, "INCOMPLETE")
    code, card = gate(spec, "traces", source, tmp_path / "genuine")  # read: the refund shows
    assert card["categories"]["tools"]["failed"] == 4
    assert (code, card["decision"]) == (1, "FAIL")


# --- promptfoo -------------------------------------------------------------------------------

PROMPTFOO = json.loads((FIELD / "promptfoo" / "MADE.json").read_text())["files"]
# files promptfoo wrote that the reader must refuse, and the code: promptfoo before 0.90
# writes results format version 2 (no testIdx, promptIdx); 0.120.27 and 0.121.1 to
# 0.121.11 with --no-write write an empty results list under full stats (a promptfoo bug)
REFUSED = {"0.80.3/results.json": "PROMPTFOO_UNSUPPORTED",
           "0.80.3/results-written.json": "PROMPTFOO_UNSUPPORTED",
           "0.121.1/results.json": "PROMPTFOO_STATS"}
READ = [e for e in PROMPTFOO if e["path"] not in REFUSED]


def test_every_promptfoo_file_is_read_or_refused_on_purpose() -> None:
    assert set(REFUSED) <= {e["path"] for e in PROMPTFOO}
    assert {e["promptfoo_version"] for e in READ} >= {"0.92.2", "0.121.13", "0.123.1"}


@pytest.mark.parametrize("entry", READ, ids=lambda e: e["path"])
def test_promptfoo_results_of_every_version_read_as_the_scenario_says(
        entry: dict[str, Any]) -> None:
    records = list(read_promptfoo(FIELD / "promptfoo" / entry["path"]))
    assert problems(records) == []
    want = entry["expected"]
    found = {r.data["test_index"]: r.data for r in records if isinstance(r, Record)}
    assert len(records) == len(found) == want["results"]
    assert sum(d["success"] for d in found.values()) == want["successes"]
    for result in want["per_result"]:
        data = found[result["testIdx"]]
        assert (data["case_id"], data["trial"]) == (result["description"], result["repeat"] + 1)
        assert data["success"] == result["success"]
        if result["tokens"] is None:  # the server answered 500: no usage was reported
            assert data["tokens"] is None or not data["tokens"].get("total")
        else:
            assert {k: data["tokens"][k] for k in result["tokens"]} == result["tokens"]
        if result["outcome"] != "error":
            assert data["output"] == result["output"]
            assert [(a["type"], a["pass"]) for a in data["assertions"]] == \
                [(a["type"], a["pass"]) for a in result["assertions"]]


@pytest.mark.parametrize("entry", PROMPTFOO, ids=lambda e: e["path"])
def test_promptfoo_results_of_every_version_gate_alike(entry: dict[str, Any],
                                                      tmp_path: Path) -> None:
    code, card = gate(FIELD / "promptfoo" / "gate", "results",
                      FIELD / "promptfoo" / entry["path"], tmp_path / "out")
    if entry["path"] in REFUSED:
        assert list(card["coverage"]["record_problems"]) == [REFUSED[entry["path"]]]
        assert (code, card["decision"]) == (3, "INCOMPLETE")
        return
    want = entry["expected"]
    assert card["coverage"]["record_problems"] == {}
    assertions = card["categories"]["assertions"]
    assert (assertions["passed"], assertions["n"]) == (want["successes"], want["results"])
    # each result of an answered case within 36 tokens, read wherever its version keeps
    # them: every result but the provider's errors
    efficiency = card["categories"]["efficiency"]
    assert efficiency["passed"] == efficiency["n"] == want["results"] - want["errors"]
    assert (code, card["decision"]) == (0, "PASS")


def _forged(entry: str, change: Any, out: Path) -> Path:
    doc = json.loads((FIELD / "promptfoo" / entry).read_text())
    change(doc)
    out.write_text(json.dumps(doc))
    return out


def test_a_later_promptfoo_file_dressed_as_an_earlier_one_is_refused(tmp_path: Path) -> None:
    """0.123.1's results with failureReason and stats.errors taken out, errors counted as
    failures, as before 0.110: a gate on failure_reason == 2 passed (second hostile review
    of issue 25). The file still names its version and carries results' own tokenUsage."""
    def dressed(doc: dict[str, Any]) -> None:
        stats = doc["results"]["stats"]
        stats["failures"] += stats.pop("errors")
        for result in doc["results"]["results"]:
            result.pop("failureReason")
    path = _forged("0.123.1/results.json", dressed, tmp_path / "dressed.json")
    assert {c for c, _ in problems(list(read_promptfoo(path)))} == {"PROMPTFOO_FIELD"}

    def unversioned(doc: dict[str, Any]) -> None:  # no version named: its tokens show it
        dressed(doc)
        doc["metadata"].pop("promptfooVersion")
    path = _forged("0.123.1/results.json", unversioned, tmp_path / "unversioned.json")
    assert {c for c, _ in problems(list(read_promptfoo(path)))} == {"PROMPTFOO_FIELD"}


def test_a_provider_error_relabelled_an_assertion_failure_is_refused(tmp_path: Path) -> None:
    """failureReason 2 turned 1 (stats moved to match): an assertion failure that nothing
    graded. Every genuine version grades a failureReason 1 (second hostile review)."""
    def relabelled(doc: dict[str, Any]) -> None:
        stats = doc["results"]["stats"]
        stats["failures"] += stats["errors"]
        stats["errors"] = 0
        for result in doc["results"]["results"]:
            if result["failureReason"] == 2:
                result["failureReason"] = 1
    for version in ("0.110.1", "0.123.1"):
        path = _forged(f"{version}/results.json", relabelled, tmp_path / f"{version}.json")
        assert [c for c, _ in problems(list(read_promptfoo(path)))] == ["PROMPTFOO_FIELD"] * 2


def test_promptfoo_token_usage_adds_up_to_its_own_stats_in_every_genuine_file() -> None:
    """promptfoo's results.stats.tokenUsage is the sum of its results' token usage, at every
    version (0.80.3, refused for its format, too): prompt 200, completion 46, total 246,
    cached 0, from the scenario's own counts (MADE.json). numRequests is 10, a request per
    result; the results' own numRequests add up to it only where they carry their own
    tokenUsage (0.121.14 on): before, promptfoo counted a request for the two failed calls
    whose usage it did not write."""
    for entry in PROMPTFOO:
        doc = json.loads((FIELD / "promptfoo" / entry["path"]).read_text())
        stats, results = doc["results"]["stats"]["tokenUsage"], doc["results"]["results"]
        spent = [r["tokens"] for r in entry["expected"]["per_result"] if r["tokens"]]
        want = {k: sum(t[k] for t in spent) for k in ("prompt", "completion", "total")}
        assert {k: stats[k] for k in want} == want == \
            {"prompt": 200, "completion": 46, "total": 246}, entry["path"]
        assert stats["cached"] == 0  # --no-cache
        if "numRequests" in stats:
            assert stats["numRequests"] == entry["expected"]["results"] == 10
        if results and "tokenUsage" in results[0]:
            assert sum(r["tokenUsage"]["numRequests"] for r in results) == 10
        if entry["path"] not in REFUSED:
            assert problems(list(read_promptfoo(FIELD / "promptfoo" / entry["path"]))) == []


def _lowered(doc: dict[str, Any]) -> None:
    """The three costliest answered results (testIdx 4, 6 and 7: 32, 36 and 36 tokens) made
    6 tokens cheaper wherever the version keeps their usage; results.stats left as written."""
    for result in doc["results"]["results"]:
        if result["testIdx"] in (4, 6, 7):
            for usage in (result.get("tokenUsage"), result["response"].get("tokenUsage")):
                if usage is not None:
                    usage["completion"] -= 6
                    usage["total"] -= 6


@pytest.mark.parametrize("entry", READ, ids=lambda e: e["path"])
def test_promptfoo_results_with_tokens_lowered_under_their_own_stats_are_refused(
        entry: dict[str, Any], tmp_path: Path) -> None:
    """A budget of 33 tokens a result: the genuine file FAILs it (two results spend 36);
    with three results' tokens lowered it PASSed, though promptfoo's own stats.tokenUsage
    still add up to the tokens spent. The file contradicts itself: PROMPTFOO_STATS."""
    spec = tmp_path / "gate"
    shutil.copytree(FIELD / "promptfoo" / "gate", spec)
    policy = spec / "policy.yaml"
    policy.write_text(policy.read_text().replace("limit: 36", "limit: 33"))
    source = FIELD / "promptfoo" / entry["path"]
    code, card = gate(spec, "results", source, tmp_path / "genuine")
    assert card["categories"]["efficiency"]["failed"] == 2
    assert (code, card["decision"]) == (1, "FAIL")
    lowered = _forged(entry["path"], _lowered, tmp_path / "lowered.json")
    found = problems(list(read_promptfoo(lowered)))
    assert [c for c, _ in found] == ["PROMPTFOO_STATS"], found
    assert "tokenUsage.total 246 (the results' " in found[0][1] and "adds up to 228" in found[0][1]
    code, card = gate(spec, "results", lowered, tmp_path / "out")
    assert card["coverage"]["record_problems"] == {"PROMPTFOO_STATS": 1}
    assert (code, card["decision"]) == (3, "INCOMPLETE")


def test_promptfoo_stats_token_usage_is_checked_as_each_version_sums_it(
        tmp_path: Path) -> None:
    """What each version writes: results' own numRequests add up (0.121.14 on) and a file
    without stats.tokenUsage contradicts every version; before 0.121.14 promptfoo summed a
    usage it did not write, in some versions with the graders' tokens
    (gradingResult.tokensUsed) added, so either sum agrees; from 0.121.14 graders' tokens
    are summed apart (stats.tokenUsage.assertions), so only the results' own agree."""
    def fewer_requests(doc: dict[str, Any]) -> None:
        for result in doc["results"]["results"][:3]:
            result["tokenUsage"]["numRequests"] = 0

    def no_usage(doc: dict[str, Any]) -> None:
        del doc["results"]["stats"]["tokenUsage"]

    def graded(doc: dict[str, Any]) -> None:  # an llm-rubric's 50 tokens, summed in
        first = doc["results"]["results"][0]
        first["gradingResult"]["tokensUsed"].update(prompt=40, completion=10, total=50)
        usage = doc["results"]["stats"]["tokenUsage"]
        usage.update(prompt=240, completion=56, total=296)

    cases = [("0.123.1", fewer_requests, ["PROMPTFOO_STATS"]),
             ("0.121.20", fewer_requests, ["PROMPTFOO_STATS"]),
             ("0.92.2", no_usage, ["PROMPTFOO_STATS"]),
             ("0.123.1", no_usage, ["PROMPTFOO_STATS"]),
             ("0.110.1", graded, []), ("0.121.13", graded, []),
             ("0.123.1", graded, ["PROMPTFOO_STATS"])]
    for index, (version, change, codes) in enumerate(cases):
        path = _forged(f"{version}/results.json", change, tmp_path / f"{index}.json")
        assert [c for c, _ in problems(list(read_promptfoo(path)))] == codes, \
            (version, change.__name__)


CUT = [("promptfoo", e["path"], "PROMPTFOO_TRUNCATED") for e in READ] + [
    ("otel", e["path"].split("otel/")[1], "INVALID_JSON") for e in OTEL
    if e["form"] in ("jsonl", "json")]


@pytest.mark.parametrize("tool, path, code", CUT, ids=lambda v: str(v))
def test_a_genuine_file_cut_short_is_refused_with_its_code(tool: str, path: str, code: str,
                                                           tmp_path: Path) -> None:
    text = (FIELD / tool / path).read_bytes()
    cut = tmp_path / Path(path).name
    end = len(text) * 2 // 3
    while text[end - 1:end] in (b"}", b"\n", b"]"):  # inside a value: a JSON Lines file cut
        end -= 1  # at a line's end is a shorter file, whose runs the Suite finds missing
    cut.write_bytes(text[:end])
    read = read_promptfoo if tool == "promptfoo" else read_otel
    assert code in {c for c, _ in problems(list(read(cut)))}


# --- the support matrix -----------------------------------------------------------------------

PACKAGES = {"pydantic_ai": "pydantic-ai-slim", "strands": "strands-agents",
            "openai_v2": "opentelemetry-instrumentation-openai-v2",
            "openai_agents": "openai-agents",
            "langgraph_openinference": "openinference-instrumentation-langchain",
            "langgraph_traceloop": "opentelemetry-instrumentation-langchain",
            "llama_index": "openinference-instrumentation-llama-index",
            "crewai": "openinference-instrumentation-crewai", "google_adk": "google-adk",
            "autogen": "autogen-agentchat",
            "smolagents": "openinference-instrumentation-smolagents",
            "logfire_openai": "logfire", "semantic_kernel": "semantic-kernel"}


def test_the_support_matrix_in_the_docs_is_current() -> None:
    for name, file in support.DOCS.items():
        page = (ROOT / "docs" / file).read_text()
        assert support.render(page, name) == page, \
            f"docs/{file}: stale support matrix, run python -m engine.records.support"


def test_every_version_the_matrix_names_as_tested_has_a_fixture_the_tool_wrote() -> None:
    formats = support.matrix()["formats"]
    assert set(formats["inspect-log"]["tested"]) == {e["inspect_ai"] for e in INSPECT}
    assert set(formats["promptfoo-results"]["tested"]) == \
        {e["promptfoo_version"] for e in PROMPTFOO}
    tested = " | ".join(formats["otel-genai"]["tested"])
    for entry in OTEL:
        package = PACKAGES[entry["framework"]]
        assert f"{package} {entry['versions'][package]}" in tested, entry["path"]


# --- issue 37: where a run's parts are read, each shape as its producer means it -----------

def _each_request(path: Path, out: Path, change: Any) -> None:
    """``path``'s export with ``change(request)`` applied to every request (line)."""
    requests = [json.loads(line) for line in path.read_text().splitlines()]
    for request in requests:
        change(request)
    out.write_text("".join(json.dumps(r) + "\n" for r in requests))


def _attribute(span: dict[str, Any], key: str) -> dict[str, Any] | None:
    return next((a["value"] for a in span.get("attributes", []) if a["key"] == key), None)


def test_the_delivered_answer_is_the_first_choice_not_the_last(tmp_path: Path) -> None:
    """Of two candidate answers, an application delivers the first: a promise written in
    the first went unseen when the last was read (a wrong PASS of the small runs)."""
    def two_choices(span: dict[str, Any]) -> None:
        value = _attribute(span, "gen_ai.output.messages")
        if value is not None and "Order small: refunded 25." in value["stringValue"]:
            second = json.loads(value["stringValue"])[0]
            first = {**second, "parts": [{"type": "text", "content":
                                          "Order small: full refund approved."}]}
            value["stringValue"] = json.dumps([first, second])
    edited = tmp_path / "choices.jsonl"
    _edited(FIELD / "otel" / "logfire_openai" / "default.jsonl", edited, two_choices)
    code, card = gate(otel_gate(tmp_path, "logfire_openai"), "traces", edited,
                      tmp_path / "out")
    answer = card["categories"]["answer"]
    assert (answer["passed"], answer["failed"]) == (2, 4)  # small and big, both trials
    assert code == 1


def test_tool_calls_recorded_twice_must_agree(tmp_path: Path) -> None:
    """A tool span whose arguments differ from the call the model asked for (a refund of
    80 shown as 8 where the contract reads it), or a forbidden call left out of the tool
    spans but in the model's output, is refused: which calls were made would be a guess."""
    def lower(span: dict[str, Any]) -> None:
        value = _attribute(span, "gen_ai.tool.call.arguments")
        if value is not None and '"amount":80' in value["stringValue"].replace(" ", ""):
            value["stringValue"] = value["stringValue"].replace("80", "8")
    lowered = tmp_path / "lowered.jsonl"
    _edited(FIELD / "otel" / "pydantic_ai" / "content.jsonl", lowered, lower)
    options = recipes()["pydantic_ai"].get("options", {})
    found = problems(list(read_otel(lowered, None, **options)))
    assert [code for code, _ in found] == ["OTEL_DISAGREE"], found
    assert "ran with {'order_id': 'big', 'amount': 8}" in found[0][1]

    def drop_refunds(request: dict[str, Any]) -> None:
        for resource in request["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                scope["spans"] = [s for s in scope["spans"]
                                  if s["name"] != "execute_tool issue_refund"]
    dropped = tmp_path / "dropped.jsonl"
    _each_request(FIELD / "otel" / "pydantic_ai" / "content.jsonl", dropped, drop_refunds)
    codes = [code for code, _ in problems(list(read_otel(dropped, None, **options)))]
    assert codes == ["OTEL_DISAGREE"] * 4  # the four runs that refund


def test_asked_for_tools_recorded_nowhere_are_unknown_never_none(tmp_path: Path) -> None:
    """Logfire's version=1 keeps the model's tool calls in its own request/response data:
    the model asked for tools (finish reason tool_calls) that no place the reader reads
    records, so the allow-list and contract were checked against no calls (PASS)."""
    made = next(e for e in OTEL if e["path"].endswith("logfire_openai/legacy.jsonl"))
    code, card = gate(otel_gate(tmp_path, "logfire_openai"), "traces", ROOT / made["path"],
                      tmp_path / "out")
    assert card["categories"]["tools"]["errors"] == 6
    assert card["categories"]["tools"]["passed"] == 0
    assert code == 3


def test_a_wrapper_of_a_producer_not_known_is_not_read_as_arguments(tmp_path: Path) -> None:
    """llama-index's {"kwargs": {...}} read as the arguments passed every contract without
    `required` (the refund of 80 hidden under "kwargs"). Under a producer the reader does
    not know, the shape is not read at all: the arguments are not recorded (ERROR), never
    the wrapper checked as an object."""
    def foreign(request: dict[str, Any]) -> None:
        for resource in request["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                scope["scope"] = {"name": "openinference.instrumentation.other"}
                for span in scope["spans"]:  # the model's own request not recorded either
                    span["attributes"] = [a for a in span.get("attributes", []) if not
                                          a["key"].startswith("llm.output_messages.")]
    path = tmp_path / "foreign.jsonl"
    _each_request(FIELD / "otel" / "llama_index" / "default.jsonl", path, foreign)
    options = recipes()["llama_index"].get("options", {})
    records = [r for r in read_otel(path, None, **options) if isinstance(r, Record)]
    assert len(records) == 6
    assert all("arguments" not in c for r in records for c in r.data["tool_calls"])
    code, card = gate(otel_gate(tmp_path, "llama_index"), "traces", path, tmp_path / "out")
    assert (card["categories"]["tools"]["passed"], card["categories"]["tools"]["errors"]) \
        == (2, 4)
    assert code == 3


# --- the hostile review of issue 37: exports mixing the shapes ----------------------------

def _spans_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [span for resource in request["resourceSpans"] for scope in resource["scopeSpans"]
            for span in scope["spans"]]


def _set(span: dict[str, Any], key: str, value: Any) -> None:
    """Set (or add) a span's attribute, as the OTLP/JSON value of ``value``."""
    kind = "intValue" if isinstance(value, int) else "stringValue"
    span["attributes"] = [a for a in span["attributes"] if a["key"] != key] + [
        {"key": key, "value": {kind: value}}]


def _big_runs(request: dict[str, Any]) -> bool:
    return '"big"' in json.dumps(request) or "Order big" in json.dumps(request)


def _gate_of(tmp_path: Path, framework: str, mode: str, change: Any) -> tuple[int, Any]:
    """The field gate on ``framework``'s ``mode`` export with ``change(request)`` applied to
    every request (one run each)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"{framework}-{mode}.jsonl"
    _each_request(FIELD / "otel" / framework / f"{mode}.jsonl", path, change)
    return gate(otel_gate(tmp_path, framework), "traces", path, tmp_path / "out")


def test_a_chat_span_wrapped_around_the_real_calls_is_refused(tmp_path: Path) -> None:
    """A benign chat span made the parent of a run's three real calls was read as the one
    call (its output, no tool calls): the refund and the promise went unseen, PASS."""
    def wrap(request: dict[str, Any]) -> None:
        if not _big_runs(request):
            return
        spans = _spans_of(request)
        chats = [s for s in spans if s.get("parentSpanId")]
        outer = json.loads(json.dumps(chats[0]))
        outer["spanId"] = "5f000000000000ee"
        outer["startTimeUnixNano"] = str(min(int(c["startTimeUnixNano"]) for c in chats) - 1)
        outer["endTimeUnixNano"] = str(max(int(c["endTimeUnixNano"]) for c in chats) + 1)
        outer["attributes"] = [a for a in outer["attributes"]
                               if not a["key"].startswith("gen_ai.usage")]
        _set(outer, "gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": "Nothing to refund."}]}]))
        _set(outer, "gen_ai.response.finish_reasons", '["stop"]')
        for chat in chats:
            chat["parentSpanId"] = outer["spanId"]
        request["resourceSpans"][0]["scopeSpans"][0]["spans"].insert(0, outer)
    code, card = _gate_of(tmp_path, "logfire_openai", "default", wrap)
    assert card["coverage"]["record_problems"] == {"OTEL_DISAGREE": 2}
    assert code == 3


def test_an_openinference_span_naming_another_operation_is_refused(tmp_path: Path) -> None:
    """An OpenInference TOOL or LLM span given a gen_ai.operation.name of no GenAI kind was
    left unread: the refund and the tokens of its call vanished, and with a benign agent
    output the gate PASSed."""
    def rename(request: dict[str, Any]) -> None:
        for span in _spans_of(request):
            if _attribute(span, "tool.name") == {"stringValue": "issue_refund"}:
                _set(span, "gen_ai.operation.name", "run_tool")
    code, card = _gate_of(tmp_path, "smolagents", "default", rename)
    # the span is refused, and without it the run's calls disagree with the model's
    assert card["coverage"]["record_problems"] == {"OTEL_BAD_SPAN": 4, "OTEL_DISAGREE": 4}
    assert code == 3


def test_a_message_cut_by_an_attribute_length_limit_is_no_answer(tmp_path: Path) -> None:
    """OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT cuts gen_ai.output.messages into text that is
    no JSON: read as the answer it passed "must not contain" on text never shown."""
    def cut(request: dict[str, Any]) -> None:
        for span in _spans_of(request):
            value = _attribute(span, "gen_ai.output.messages")
            if value is not None:
                value["stringValue"] = value["stringValue"][:80]
    code, card = _gate_of(tmp_path, "pydantic_ai", "content", cut)
    assert card["categories"]["answer"]["errors"] == 6
    assert code == 3


def test_a_model_call_asking_for_tools_with_no_tool_run_after_it_is_unknown(
        tmp_path: Path) -> None:
    """The big runs' second model call (the refund) with its output dropped but its finish
    reason kept: the run was read as having made only the lookup (tools PASS)."""
    def drop(request: dict[str, Any]) -> None:
        if not _big_runs(request):
            return
        chats = sorted((s for s in _spans_of(request) if s.get("parentSpanId")),
                       key=lambda s: int(s["startTimeUnixNano"]))
        chats[1]["attributes"] = [a for a in chats[1]["attributes"]
                                  if a["key"] != "gen_ai.output.messages"]
    code, card = _gate_of(tmp_path, "logfire_openai", "default", drop)
    tools = card["categories"]["tools"]
    assert (tools["passed"], tools["errors"]) == (4, 2)
    assert code == 3


def test_tool_spans_giving_one_call_id_twice_are_refused(tmp_path: Path) -> None:
    """The refund's tool span relabelled as a second lookup under the lookup's call id
    paired with the model's lookup twice, and the model's refund of 80 went unchecked."""
    def relabel(request: dict[str, Any]) -> None:
        spans = _spans_of(request)
        lookup = next((s for s in spans if s["name"] == "execute_tool lookup_order"), None)
        for span in spans:
            if span["name"] == "execute_tool issue_refund" and lookup is not None:
                span["name"] = "execute_tool lookup_order"
                _set(span, "gen_ai.tool.name", "lookup_order")
                _set(span, "gen_ai.tool.call.id",
                     _attribute(lookup, "gen_ai.tool.call.id")["stringValue"])  # type: ignore[index]
                span["attributes"] = [a for a in span["attributes"]
                                      if a["key"] != "gen_ai.tool.call.arguments"]
    code, card = _gate_of(tmp_path, "pydantic_ai", "content", relabel)
    assert card["coverage"]["record_problems"] == {"OTEL_DISAGREE": 4}
    assert code == 3


def test_smolagents_final_answer_is_the_answer_only_as_the_runs_last_call(
        tmp_path: Path) -> None:
    """The refund relabelled as smolagents' final_answer (its span FinalAnswerTool, the
    model's call final_answer, its arguments still the refund's) was dropped as the run's
    answer: tools PASS. Only a last call given nothing but the answer is the answer."""
    def relabel(request: dict[str, Any]) -> None:
        for span in _spans_of(request):
            if _attribute(span, "tool.name") == {"stringValue": "issue_refund"}:
                span["name"] = "FinalAnswerTool"
                _set(span, "tool.name", "final_answer")
            for attribute in span["attributes"]:
                if attribute["key"].endswith("tool_call.function.name") and \
                        attribute["value"] == {"stringValue": "issue_refund"}:
                    attribute["value"] = {"stringValue": "final_answer"}
    code, card = _gate_of(tmp_path, "smolagents", "default", relabel)
    tools = card["categories"]["tools"]
    assert (tools["passed"], tools["failed"]) == (2, 4)  # final_answer is no allowed tool
    assert code == 1


def test_two_token_counts_on_one_span_that_differ_are_refused(tmp_path: Path) -> None:
    """An OpenInference LLM span counting three times the tokens in llm.token_count.prompt
    with the GenAI name beside it holding the smaller count: the smaller one was read."""
    def double(request: dict[str, Any]) -> None:
        for span in _spans_of(request):
            value = _attribute(span, "llm.token_count.prompt")
            if value is not None:
                count = int(value["intValue"])
                value["intValue"] = str(3 * count)
                _set(span, "gen_ai.usage.input_tokens", count)
    code, card = _gate_of(tmp_path, "smolagents", "default", double)
    assert set(card["coverage"]["record_problems"]) == {"OTEL_BAD_SPAN"}
    assert code == 3


def test_answers_given_twice_must_agree_and_the_first_choice_is_the_first(
        tmp_path: Path) -> None:
    """A benign output.value on OpenAI Agents' root AGENT span beat the last model call's
    "full refund approved"; a gen_ai.choice event of index -1 sorted first; a first choice
    whose role was "Assistant" was skipped for a benign second one."""
    def agent_output(request: dict[str, Any]) -> None:
        for span in _spans_of(request):
            if not span.get("parentSpanId"):
                _set(span, "output.value", "Your order is settled.")
    code, card = _gate_of(tmp_path, "openai_agents", "default", agent_output)
    assert card["coverage"]["record_problems"] == {"OTEL_DISAGREE": 6}

    def minus_one(request: dict[str, Any]) -> None:
        for span in _spans_of(request):
            if span["name"].startswith("invoke_agent"):
                span["events"].append({"name": "gen_ai.choice", "timeUnixNano":
                                       span["endTimeUnixNano"], "attributes": [
                    {"key": "index", "value": {"intValue": "-1"}},
                    {"key": "message", "value": {"stringValue": "Settled."}}]})
    code, card = _gate_of(tmp_path / "h1", "strands", "default", minus_one)
    assert set(card["coverage"]["record_problems"]) >= {"OTEL_BAD_SPAN"}
    assert code == 3

    def role(request: dict[str, Any]) -> None:
        for span in _spans_of(request):
            value = _attribute(span, "gen_ai.output.messages")
            if value is not None and "full refund approved" in value["stringValue"]:
                first = json.loads(value["stringValue"])[0]
                benign = {**first, "parts": [{"type": "text", "content": "Settled."}]}
                value["stringValue"] = json.dumps([{**first, "role": "Assistant"}, benign])
    code, card = _gate_of(tmp_path / "r", "logfire_openai", "default", role)
    assert (card["categories"]["answer"]["passed"], card["categories"]["answer"]["failed"]) \
        == (4, 2)
    assert code == 1


# --- the second hostile review of issue 37 --------------------------------------------------

def _chats(request: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted((s for s in _spans_of(request) if _attribute(s, "gen_ai.operation.name")
                   == {"stringValue": "chat"}), key=lambda s: int(s["startTimeUnixNano"]))


def _without(span: dict[str, Any], *keys: str) -> None:
    span["attributes"] = [a for a in span["attributes"] if a["key"] not in keys]


def test_requests_known_beside_requests_unknown_must_still_have_run(tmp_path: Path) -> None:
    """The lookup's output dropped (its finish reason kept) and the refund's tool span
    deleted while the model's request of a refund of 80 stays: the tool spans stood for the
    calls unchecked, tools PASS."""
    def edit(request: dict[str, Any]) -> None:
        if _big_runs(request):
            _without(_chats(request)[0], "gen_ai.output.messages")
            for scope in request["resourceSpans"][0]["scopeSpans"]:
                scope["spans"] = [s for s in scope["spans"]
                                  if s["name"] != "execute_tool issue_refund"]
    code, card = _gate_of(tmp_path, "pydantic_ai", "content", edit)
    assert card["coverage"]["record_problems"] == {"OTEL_DISAGREE": 2}
    assert code == 3


def test_a_sub_agents_later_call_is_not_the_runs_answer(tmp_path: Path) -> None:
    """An output guardrail (an agent inside the run) whose model call ends after the run's
    last one, answering {"tripwire": false}: read as the run's answer, the delivered "full
    refund approved" went unchecked."""
    def guardrail(request: dict[str, Any]) -> None:
        if not _big_runs(request):
            return
        spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
        root = next(s for s in spans if not s.get("parentSpanId"))
        last = _chats(request)[-1]
        end = int(last["endTimeUnixNano"])
        agent = {"traceId": root["traceId"], "spanId": "6a00000000000001",
                 "parentSpanId": root["spanId"], "name": "invoke_agent guardrail",
                 "startTimeUnixNano": str(end + 1000), "endTimeUnixNano": str(end + 5000),
                 "attributes": [{"key": "gen_ai.operation.name",
                                 "value": {"stringValue": "invoke_agent"}}]}
        check = json.loads(json.dumps(last))
        check.update(spanId="6a00000000000002", parentSpanId=agent["spanId"],
                     startTimeUnixNano=str(end + 2000), endTimeUnixNano=str(end + 4000))
        _set(check, "gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": '{"tripwire": false}'}]}]))
        spans += [agent, check]
    code, card = _gate_of(tmp_path, "pydantic_ai", "content", guardrail)
    answer = card["categories"]["answer"]
    assert (answer["passed"], answer["failed"]) == (4, 2)
    assert code == 1


def test_a_call_whose_output_is_gone_asked_for_unknown_tools(tmp_path: Path) -> None:
    """smolagents (like four other producers) writes no finish reason saying a call asked
    for tools: with the refund call's output and its tool span removed, the call was read
    as asking nothing (tools PASS). A call recording no output asked for what is unknown."""
    def edit(request: dict[str, Any]) -> None:
        if not _big_runs(request):
            return
        for span in _spans_of(request):
            if _attribute(span, "tool.name") == {"stringValue": "issue_refund"}:
                span["attributes"] = []  # (dropped below)
            if any('"issue_refund"' in json.dumps(a) for a in span["attributes"]
                   if a["key"].startswith("llm.output_messages")):
                span["attributes"] = [a for a in span["attributes"]
                                      if not a["key"].startswith("llm.output_messages")]
        for scope in request["resourceSpans"][0]["scopeSpans"]:
            scope["spans"] = [s for s in scope["spans"] if s["attributes"]]
    code, card = _gate_of(tmp_path, "smolagents", "default", edit)
    tools = card["categories"]["tools"]
    assert (tools["passed"], tools["errors"]) == (4, 2)
    assert code == 3


def test_a_call_stripped_of_its_response_is_still_a_call(tmp_path: Path) -> None:
    """The refund's chat span with its output, finish reason, tokens and response id
    removed was no call at all: the refund and its tokens vanished (tools PASS)."""
    def edit(request: dict[str, Any]) -> None:
        if _big_runs(request):
            _without(_chats(request)[1], "gen_ai.output.messages", "gen_ai.response.id",
                     "gen_ai.response.finish_reasons", "gen_ai.usage.input_tokens",
                     "gen_ai.usage.output_tokens")
    code, card = _gate_of(tmp_path, "logfire_openai", "default", edit)
    tools, efficiency = card["categories"]["tools"], card["categories"]["efficiency"]
    assert (tools["passed"], tools["errors"]) == (4, 2)
    assert efficiency["errors"] == 2  # the tokens of that call are not known: no total
    assert code == 3


def test_a_call_counting_no_tokens_leaves_the_total_unknown(tmp_path: Path) -> None:
    """The last call of each run made heavy (over the 400 budget), then its counts
    removed: the run's total was the sum of the others, under the budget (PASS)."""
    def edit(request: dict[str, Any]) -> None:
        _without(_chats(request)[-1], "gen_ai.usage.input_tokens",
                 "gen_ai.usage.output_tokens")
    code, card = _gate_of(tmp_path, "pydantic_ai", "content", edit)
    assert card["categories"]["efficiency"]["errors"] == 6


def test_an_output_given_twice_by_details_events_is_refused(tmp_path: Path) -> None:
    """strands (latest) gives content on gen_ai.client.inference.operation.details events; a
    second one giving the output again, benign, replaced the first (answer PASS)."""
    benign = json.dumps([{"role": "assistant", "parts": [{"type": "text",
                                                          "content": "Order settled."}]}])

    def edit(request: dict[str, Any]) -> None:
        for span in _spans_of(request):
            events = span.get("events", [])
            if any("full refund approved" in json.dumps(e) for e in events):
                events.append({"name": "gen_ai.client.inference.operation.details",
                               "timeUnixNano": events[-1]["timeUnixNano"], "attributes": [
                                   {"key": "gen_ai.output.messages",
                                    "value": {"stringValue": benign}}]})
    code, card = _gate_of(tmp_path, "strands", "latest", edit)
    assert "OTEL_BAD_SPAN" in card["coverage"]["record_problems"]
    assert code == 3


def test_smolagents_answer_is_what_its_final_answer_was_given(tmp_path: Path) -> None:
    """smolagents' AGENT span's output.value changed to a benign text while its
    final_answer call gave "full refund approved": the benign text was read (answer PASS)."""
    def edit(request: dict[str, Any]) -> None:
        for span in _spans_of(request):
            if _attribute(span, "openinference.span.kind") == {"stringValue": "AGENT"}:
                _set(span, "output.value", "Order settled.")
    code, card = _gate_of(tmp_path, "smolagents", "default", edit)
    assert card["coverage"]["record_problems"] == {"OTEL_DISAGREE": 6}
    assert code == 3
