"""finding-quality-discovery: the conformance kit of §16, vectors worked from the document."""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from engine.protocols.discovery import (
    AuditError,
    JsonError,
    LoadError,
    check_submission,
    load_corpus,
    load_protocol,
    loads,
    rank,
    sample,
)
from engine.protocols.discovery.stats import robustness
from engine.records import strict_json
from engine.records.strict_json import LexFloat

from . import discovery_kit as kit
from .conftest import ROOT

PACKAGE = load_protocol(ROOT / "specs" / "finding-quality-discovery")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("discovery")
    rows = kit.corpus_rows()
    path, sha = kit.write_corpus(folder, rows)
    task = kit.task(sha)
    return {"rows": rows, "path": path, "sha": sha, "task": task,
            "corpus": load_corpus(path, sha, 32),
            "submission": kit.submission(rows, task["task_id"])}


def category(world: dict[str, Any], sub: Any, task: dict[str, Any] | None = None,
             package: Any = PACKAGE) -> str:
    raw = sub if isinstance(sub, bytes) else json.dumps(sub, ensure_ascii=False).encode()
    result = check_submission(package, task or world["task"], world["corpus"], raw)
    if result["valid"]:
        return "VALID"
    error = result["error"]
    return f"{error['code']}:{error['key']}" if error["code"] == "STATISTIC_MISMATCH" else \
        error["code"]


def test_the_kit_submission_is_valid(world: dict[str, Any]) -> None:
    result = check_submission(PACKAGE, world["task"], world["corpus"],
                              json.dumps(world["submission"]).encode())
    assert result["valid"] is True and result["findings"] == 1
    assert result["corpus_sha256"] == world["sha"]
    assert len(world["submission"]["findings"][0]["statistics"]) == 64


def test_an_abstention_is_valid_and_a_blank_one_is_not(world: dict[str, Any]) -> None:
    task_id = world["task"]["task_id"]
    assert category(world, {"task_id": task_id, "findings": [],
                            "abstention_reason": "No robust pattern."}) == "VALID"
    assert category(world, {"task_id": task_id, "findings": [],
                            "abstention_reason": " \t"}) == "EMPTY_ANSWER"


def finding(sub: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = sub["findings"][0]
    return result


def stat(key: str, value: Any) -> Any:
    return lambda s: finding(s)["statistics"].__setitem__(key, value)


def emoji_utf16(s: dict[str, Any]) -> None:
    finding(s)["evidence"][0].update(start=16, end=28)


def float_offset(s: dict[str, Any]) -> None:
    finding(s)["evidence"][0]["start"] = 15.0


def drop_negative(s: dict[str, Any]) -> None:
    finding(s)["assignments"][0]["negative_doc_ids"].pop()


def round_delta(s: dict[str, Any]) -> None:
    stats = finding(s)["statistics"]
    stats["delta_known_pp"] = round(stats["delta_known_pp"], 2)


def second_condition(s: dict[str, Any]) -> None:
    f = finding(s)
    f["definitions"].append({**f["definitions"][0], "condition_id": "other"})
    f["assignments"].append({**f["assignments"][0], "condition_id": "other"})


MUTATIONS: list[tuple[str, Any, str]] = [
    ("schema: extra finding key", lambda s: finding(s).__setitem__("notes", "x"), "SCHEMA"),
    ("schema: doc_id repeated in a list",
     lambda s: finding(s)["assignments"][0]["positive_doc_ids"].append("d03"), "SCHEMA"),
    ("schema: boolean statistic", stat("group0_total_n", True), "SCHEMA"),
    ("wrong task_id", lambda s: s.__setitem__("task_id", "other"), "SUBMISSION_FIELDS"),
    ("4 findings > 3", lambda s: s["findings"].extend([finding(s)] * 3), "FINDING_COUNT"),
    ("population missing", lambda s: finding(s).pop("population"), "FINDING_FIELDS"),
    ("16 evidence spans", lambda s: finding(s)["evidence"].extend(
        [finding(s)["evidence"][4]] * 11), "EVIDENCE_SPAN_LIMIT"),
    ("population extra key", lambda s: finding(s)["population"].__setitem__("x", 1),
     "POPULATION_SHAPE"),
    ("filter on title", lambda s: finding(s)["population"].__setitem__(
        "filters", [{"field": "title", "op": "eq", "value": "x"}]), "FILTER_FIELD"),
    ("in with 21 values", lambda s: finding(s)["population"].__setitem__(
        "filters", [{"field": "store", "op": "in", "value": [f"s{i}" for i in range(21)]}]),
     "FILTER_VALUES"),
    ("eq with a list", lambda s: finding(s)["population"].__setitem__(
        "filters", [{"field": "store", "op": "eq", "value": ["north"]}]), "FILTER_VALUES"),
    ("population 15 < 20", lambda s: finding(s)["population"].__setitem__(
        "filters", [{"field": "store", "op": "eq", "value": "north"}]), "POPULATION_TOO_SMALL"),
    ("comparison null", lambda s: finding(s).__setitem__("comparison", None),
     "COMPARISON_MISSING"),
    ("group on timestamp", lambda s: finding(s)["comparison"].__setitem__("field", "timestamp"),
     "GROUP_FIELD"),
    ("one group", lambda s: finding(s)["comparison"].__setitem__("groups", [["north"]]),
     "GROUP_SHAPE"),
    ("an empty group", lambda s: finding(s)["comparison"].__setitem__("groups",
                                                                      [["north"], []]),
     "GROUP_LISTS"),
    ("1 and 1.0 collide", lambda s: finding(s)["comparison"].update(
        field="rating", groups=[[1], [1.0]]), "GROUP_VALUES"),
    ("west arm of 1 < 10", lambda s: finding(s)["comparison"].__setitem__(
        "groups", [["north"], ["west"]]), "ARM_TOO_SMALL"),
    ("kind differs from the task", lambda s: finding(s).__setitem__("kind", "temporal_change"),
     "DUPLICATE_FINDING_OR_KIND"),
    ("blank claim", lambda s: finding(s).__setitem__("claim", " "), "EMPTY_TEXT"),
    ("two conditions on a group task", second_condition, "CONDITION_COUNT"),
    ("assignment for another condition",
     lambda s: finding(s)["assignments"][0].__setitem__("condition_id", "other"),
     "CONDITION_MISMATCH"),
    ("a population document left out", drop_negative, "PARTITION"),
    ("no supporting record", lambda s: [e.__setitem__("role", "context")
                                        for e in finding(s)["evidence"]], "SUPPORT_REQUIRED"),
    ("unknown role", lambda s: finding(s)["evidence"][4].__setitem__("role", "quote"),
     "EVIDENCE_SOURCE_ROLE"),
    ("UTF-16 offsets after an emoji", emoji_utf16, "EVIDENCE_OFFSET"),
    ("a 5.0 offset", float_offset, "EVIDENCE_OFFSET"),
    ("quote with a curly apostrophe", lambda s: finding(s)["evidence"][0].__setitem__(
        "quote", "It overheat\u2019"), "EVIDENCE_OFFSET"),
    ("delta rounded to 2 decimals", round_delta, "STATISTIC_MISMATCH:delta_known_pp"),
    ("a count off by one", stat("group1_positive_n", 11), "STATISTIC_MISMATCH:group1_positive_n"),
    ("a statistic missing", lambda s: finding(s)["statistics"].pop("group0_total_n"),
     "STATISTIC_MISMATCH:group0_total_n"),
    ("two supporting records only", lambda s: finding(s)["evidence"][2].__setitem__(
        "role", "context"), "SUPPORT_MINIMUM"),
    ("supporting document not positive", lambda s: finding(s)["evidence"].append(
        {"doc_id": "d04", "start": 0, "end": 5, "quote": "Dryer", "role": "supporting"}),
     "SUPPORT_MINIMUM"),
    ("no counterexample with a non-empty pool", lambda s: finding(s)["evidence"].pop(3),
     "COUNTEREXAMPLE"),
    ("counterexample from a positive document", lambda s: finding(s)["evidence"][3].update(
        doc_id="d06", start=0, end=5, quote="Dryer"), "COUNTEREXAMPLE"),
    ("an extra statistic", stat("chi_square", 1.5), "STATISTIC_KEYS"),
    ("the same span twice", lambda s: finding(s)["evidence"].append(
        {**finding(s)["evidence"][4], "role": "context", "quote": "dries well"}),
     "DUPLICATE_SPAN"),
]


@pytest.mark.parametrize("name, change, want", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_single_mutations(world: dict[str, Any], name: str, change: Any, want: str) -> None:
    assert category(world, kit.mutated(world["submission"], change)) == want


def test_a_number_where_null_is_expected(world: dict[str, Any]) -> None:
    stats = world["submission"]["findings"][0]["statistics"]
    key = next(k for k, v in stats.items() if v is None)
    assert category(world, kit.mutated(world["submission"], stat(key, 0.0))) == \
        f"STATISTIC_MISMATCH:{key}"
    # expected null and the key absent passes G8 and is caught by G9.3
    assert category(world, kit.mutated(world["submission"],
                                       lambda s: finding(s)["statistics"].pop(key))) == \
        "STATISTIC_KEYS"


def test_counts_may_be_written_as_floats_and_rates_to_9_places(world: dict[str, Any]) -> None:
    def change(s: dict[str, Any]) -> None:
        stats = finding(s)["statistics"]
        stats["group0_total_n"] = 15.0
        stats["delta_known_pp"] = round(stats["delta_known_pp"], 9)

    assert category(world, kit.mutated(world["submission"], change)) == "VALID"


def test_json_reading_codes(world: dict[str, Any]) -> None:
    text = json.dumps(world["submission"])
    assert category(world, text.replace('"group0_total_n": 15', '"group0_total_n": NaN',
                                        1).encode()) == "NONFINITE_JSON"
    assert category(world, text.replace('"group0_total_n": 15', '"group0_total_n": 1e400',
                                        1).encode()) == "NONFINITE_JSON"
    assert category(world, text[:-2].encode()) == "JSON_PARSE"
    assert category(world, b"\xef\xbb\xbf" + text.encode()) == "JSON_PARSE"
    dup = text.replace('"claim":', '"claim": "x", "claim":', 1)
    assert category(world, dup.encode()) == "JSON_PARSE"
    # §2.7 rule 5: the first problem in document order decides, inside one object too
    stats = '"group0_total_n": 15'
    assert category(world, text.replace(stats, stats + ', "group0_total_n": NaN', 1).encode()
                    ) == "JSON_PARSE"  # the name given twice comes before the NaN
    assert category(world, text.replace(stats, '"group0_total_n": NaN, ' + stats, 1).encode()
                    ) == "NONFINITE_JSON"  # the NaN comes before the name given twice


@pytest.mark.parametrize("text, code", [
    ('{"a": 1, "a": NaN}', "JSON_PARSE"),
    ('{"a": NaN, "a": 1}', "NONFINITE_JSON"),
    ('{"a": 1e400, "a": 1}', "NONFINITE_JSON"),
    ('{"b": "\\ud800", "c": NaN}', "JSON_PARSE"),  # a lone surrogate, then NaN
    ('{"c": -Infinity, "b": "\\ud800"}', "NONFINITE_JSON"),
    ('{"x": {"a": 1, "a": 2, "z": 1e400}}', "JSON_PARSE"),
    ('{"x": [1, "a", "a", NaN]}', "NONFINITE_JSON"),  # strings in an array are not names
    ('{"a": {"k": 1}, "b": {"k": 1}, "c": NaN}', "NONFINITE_JSON"),  # one name per object
    ('{"q\\"a": 1, "q\\"a": Infinity}', "JSON_PARSE"),
    ("[" * 65 + "NaN" + "]" * 65, "JSON_PARSE"),  # nested too deep before the NaN
    ("[" * 64 + "NaN" + "]" * 64, "NONFINITE_JSON"),
])
def test_the_first_problem_in_document_order_decides(text: str, code: str) -> None:
    with pytest.raises(JsonError) as refused:
        strict_json.loads(text.encode())
    assert refused.value.code == code


def test_phase_a_runs_every_finding_before_phase_b(world: dict[str, Any]) -> None:
    """Finding 1 would fail SUPPORT_MINIMUM (phase B); finding 2 fails PARTITION (phase A)."""
    def change(s: dict[str, Any]) -> None:
        first = finding(s)
        first["evidence"][2]["role"] = "context"
        second = json.loads(json.dumps(first))
        second["finding_id"] = "f2"
        second["evidence"][2]["role"] = "supporting"
        second["assignments"][0]["negative_doc_ids"].pop()
        s["findings"].append(second)

    result = check_submission(PACKAGE, world["task"], world["corpus"],
                              json.dumps(kit.mutated(world["submission"], change)).encode())
    assert result["error"]["code"] == "PARTITION" and result["error"]["finding_index"] == 1
    assert result["error"]["finding_id"] == "f2"


def compound_task(world: dict[str, Any]) -> dict[str, Any]:
    return {**world["task"], "kind": "compound_association"}


def test_compound_only_codes(world: dict[str, Any]) -> None:
    def compound(s: dict[str, Any]) -> None:
        finding(s)["kind"] = "compound_association"

    assert category(world, kit.mutated(world["submission"], compound),
                    compound_task(world)) == "COMPARISON_NULL_REQUIRED"

    def duplicate_condition(s: dict[str, Any]) -> None:
        compound(s)
        second_condition(s)
        finding(s)["comparison"] = None
        finding(s)["definitions"][1]["condition_id"] = "overheats"

    assert category(world, kit.mutated(world["submission"], duplicate_condition),
                    compound_task(world)) == "DUPLICATE_CONDITION"


def test_temporal_only_codes(world: dict[str, Any]) -> None:
    temporal = {**world["task"], "kind": "temporal_change"}

    def comparison(value: dict[str, Any]) -> Any:
        def change(s: dict[str, Any]) -> None:
            finding(s).update(kind="temporal_change", comparison=value)
        return change

    sub = world["submission"]
    assert category(world, kit.mutated(sub, comparison({"field": "store", "cutoff":
                                                        "2024-01-01"})),
                    temporal) == "TEMPORAL_FIELD"
    for bad in ("2024-02-30", "2023-1-1", "2024-01-01T00", "2024-W01-1"):
        assert category(world, kit.mutated(sub, comparison({"field": "timestamp",
                                                            "cutoff": bad})),
                        temporal) == "CUTOFF_FORMAT", bad


def test_defence_in_depth_codes_fire_when_the_schema_is_relaxed(world: dict[str, Any]) -> None:
    schema = json.loads((ROOT / "specs/finding-quality-discovery/schema/"
                         "submission.schema.json").read_text())
    filters = schema["properties"]["findings"]["items"]["properties"]["population"][
        "properties"]["filters"]
    filters.pop("maxItems")
    filters["items"]["properties"]["op"].pop("enum")
    relaxed = replace(PACKAGE, protocol=replace(
        PACKAGE.protocol, schema=jsonschema.Draft202012Validator(schema)))
    rule = {"field": "store", "op": "in", "value": ["north", "south"]}
    four = kit.mutated(world["submission"], lambda s: finding(s)["population"].__setitem__(
        "filters", [rule] * 4))
    assert category(world, four, package=relaxed) == "FILTER_COUNT"
    ne = kit.mutated(world["submission"], lambda s: finding(s)["population"].__setitem__(
        "filters", [{**rule, "op": "ne"}]))
    assert category(world, ne, package=relaxed) == "FILTER_OP"


@pytest.mark.parametrize("damage, code", [
    (lambda raw, rows: (raw + b"x", None), "CORPUS_CHECKSUM"),
    (lambda raw, rows: (None, rows[:5] + ['{"doc_id": 7, "text": "x"}'] + rows[5:]),
     "CORPUS_ROW"),
    (lambda raw, rows: (None, rows[:-1]), "CORPUS_LINE_COUNT"),
    (lambda raw, rows: (None, rows[:-1] + [rows[0]]), "CORPUS_DUPLICATE_ID"),
])
def test_corpus_loading_codes(tmp_path: Path, damage: Any, code: str) -> None:
    rows = [json.dumps(r) for r in kit.corpus_rows()]
    raw = gzip.compress("\n".join(rows).encode(), mtime=0)
    new_raw, new_rows = damage(raw, rows)
    data = new_raw if new_raw is not None else gzip.compress("\n".join(new_rows).encode(),
                                                             mtime=0)
    path = tmp_path / "c.jsonl.gz"
    path.write_bytes(data)
    want_sha = hashlib.sha256(raw if code == "CORPUS_CHECKSUM" else data).hexdigest()
    with pytest.raises(LoadError) as caught:
        load_corpus(path, want_sha, 32)
    assert caught.value.code == code


def test_an_uncompressed_corpus_loads_and_blank_lines_are_ignored(tmp_path: Path) -> None:
    data = ("\n \n".join(json.dumps(r) for r in kit.corpus_rows()) + "\n").encode()
    path = tmp_path / "c.jsonl"
    path.write_bytes(data)
    corpus = load_corpus(path, hashlib.sha256(data).hexdigest(), 32)
    assert corpus.ids[:2] == ["d01", "d02"] and len(corpus.ids) == 32


def test_reading_keeps_integer_and_float_classes() -> None:
    value = loads(b'{"a": 5, "b": 5.0, "c": 5e0, "d": -0}')
    assert type(value["a"]) is int and isinstance(value["b"], LexFloat)
    assert isinstance(value["c"], LexFloat) and value["d"] == 0
    with pytest.raises(JsonError) as caught:
        loads(b'["\\ud800"]')
    assert caught.value.code == "JSON_PARSE"


def test_robustness_worked_example_of_section_6_7() -> None:
    """One axis: e1 holds 20 (K0 8 with 3 in O, K1 8 with 6), e2 12 (K0 6 with 1, K1 5 with 2),
    e3 4 (K0 2 with 1, K1 2 with 1), M 4 (K0 1 with 1, K1 2 with 1)."""
    rows: dict[str, dict[str, Any]] = {}
    k0: set[str] = set()
    k1: set[str] = set()
    outcome: set[str] = set()
    sel: list[str] = []

    def add(stratum: str | None, arm0: int, pos0: int, arm1: int, pos1: int, other: int) -> None:
        for arm, n, pos, bucket in ((0, arm0, pos0, k0), (1, arm1, pos1, k1), (2, other, 0, None)):
            for i in range(n):
                doc_id = f"{stratum}-{arm}-{i}"
                rows[doc_id] = {"entity_id": stratum}
                sel.append(doc_id)
                if bucket is not None:
                    bucket.add(doc_id)
                    if i < pos:
                        outcome.add(doc_id)

    add("e1", 8, 3, 8, 6, 4)
    add("e2", 6, 1, 5, 2, 1)
    add("e3", 2, 1, 2, 1, 0)
    add(None, 1, 1, 2, 1, 1)
    out = robustness(sel, rows, k0, k1, outcome, ["entity_id"],
                     list(PACKAGE.protocol.robustness["fields"]), 5)
    got = {k.removeprefix("robustness_entity_id_"): v for k, v in out.items()}
    assert (out["robustness_known_arm0_n"], out["robustness_known_arm1_n"]) == (17, 17)
    assert (got["strata_n"], got["missing_metadata_n"], got["eligible_strata_n"]) == (3, 4, 2)
    assert (got["covered_known_n"], got["excluded_known_n"]) == (27, 7)
    assert got["standardized_delta_pp"] == pytest.approx(31.7283950617284, abs=1e-12)
    assert got["covered_crude_delta_pp"] == pytest.approx(100 * (8 / 13 - 4 / 14), abs=1e-12)
    assert got["min_stratum_delta_pp"] == pytest.approx(23.333333333333336, abs=1e-12)
    assert got["max_stratum_delta_pp"] == 37.5
    assert (got["drop_largest_n"], got["drop_largest_arm0_n"], got["drop_largest_arm1_n"]) == (
        20, 8, 7)
    assert got["drop_largest_delta_pp"] == pytest.approx(17.857142857142854, abs=1e-12)
    assert got["support_missing_metadata_n"] == 2
    assert got["max_support_share"] == pytest.approx(9 / 14, abs=1e-15)


def test_rank_hash_definition() -> None:
    want = hashlib.sha256("seed\u0000cell\u0000d01".encode()).digest()
    assert rank("seed", "cell", "d01") == want


def test_sampling_worked_example_and_determinism(world: dict[str, Any]) -> None:
    """§7.4: 32 documents, B = 60, |E| = 6, 3 cells -> quota 9; the whole corpus is sampled."""
    sub = world["submission"]
    params = PACKAGE.audit
    evidence_ids = {e["doc_id"] for e in finding(sub)["evidence"]}
    extra = [{"doc_id": d, "start": 0, "end": 5, "quote": "Dryer", "role": "context"}
             for d in ("d04", "d07")]  # make |E| = 6 (d01, d02, d03, d16, d17 + d04 ... -1)
    six = kit.mutated(sub, lambda s: finding(s)["evidence"].extend(extra[:6 - len(evidence_ids)]))
    got = sample("seed-a", 60, "t", world["corpus"].ids, six["findings"], params)
    assert got["evidence_documents"] == 6 and got["cells"] == 3 and got["quota"] == 9
    assert got["document_ids"] == world["corpus"].ids  # 32 < 60: everything, in corpus order
    # B = 160 with one finding of 3 cells and |E| = 6: quota = (160 - 6) // 6 = 25
    assert sample("s", 160, "t", world["corpus"].ids, six["findings"], params)["quota"] == 25


def test_sampling_on_a_larger_corpus_is_seeded(world: dict[str, Any]) -> None:
    ids = [f"x{i:04d}" for i in range(500)]
    findings = [{"finding_id": "f1", "evidence": [{"doc_id": "x0007"}], "assignments": [
        {"condition_id": "c", "positive_doc_ids": ids[:40], "negative_doc_ids": ids[40:400],
         "unknown_doc_ids": []}]}]
    params = PACKAGE.audit
    a = sample("seed-1", 60, "t", ids, findings, params)["document_ids"]
    assert a == sample("seed-1", 60, "t", ids, findings, params)["document_ids"]
    assert a != sample("seed-2", 60, "t", ids, findings, params)["document_ids"]
    assert len(a) == 60 and "x0007" in a and a == sorted(a)  # ids sort in corpus order here
    quota = (60 - 1) // (2 * 2)  # two non-empty cells
    positives = sorted(ids[:40], key=lambda d: rank("seed-1", "f1/c/positive", d))[:quota]
    assert set(positives) <= set(a)
    with pytest.raises(AuditError) as caught:
        sample("s", 59, "t", ids, findings, params)
    assert caught.value.code == "AUDIT_BUDGET_RANGE"
    many = [{"finding_id": "f1", "assignments": [], "evidence": [{"doc_id": d} for d in ids[:31]]}]
    with pytest.raises(AuditError) as caught:
        sample("s", 60, "t", ids, many, params)
    assert caught.value.code == "AUDIT_EVIDENCE_BUDGET"


def test_segmentation_of_section_8_3() -> None:
    from engine.protocols.discovery.blind import segments

    assert segments(kit.EMOJI_TEXT, 600, 300) == ["Great \U0001f600 dryer.", "It overheats fast."]
    # newline included in its segment; whitespace between sentences dropped; '?' and '!' end
    assert segments("Line one\n  Really? Yes!  Done", 600, 300) == [
        "Line one\n", "Really?", "Yes!", "Done"]
    # a '.' not followed by whitespace does not end a sentence; the first character never does
    assert segments(".5 kg. v1.2 ok", 600, 300) == [".5 kg.", "v1.2 ok"]
    # 700 characters without a terminator: split at the last space in [s+300, s+600)
    words = ("abcd " * 140).rstrip()  # 699 characters, spaces every 5th
    parts = segments(words, 600, 300)
    assert "".join(parts) == words and len(parts[0]) == 599 and parts[1].startswith(" ")
    # no space in the window: a hard split at 600
    solid = "x" * 1300
    assert [len(p) for p in segments(solid, 600, 300)] == [600, 600, 100]


def test_batching_of_section_8_4() -> None:
    from engine.protocols.discovery.blind import batches

    ids = [f"d{i}" for i in range(32)]
    sizes = dict.fromkeys(ids, 40)
    assert [len(b) for b in batches(ids, sizes, 12, 24000)] == [12, 12, 8]  # §7.4's example
    sizes = {"a": 10, "b": 30000, "c": 23990, "d": 20}
    assert batches(["a", "b", "c", "d"], sizes, 12, 24000) == [["a"], ["b"], ["c"], ["d"]]
    assert batches(["a", "d"], sizes, 12, 24000) == [["a", "d"]]


def test_blind_output_validation_both_passes() -> None:
    from engine.protocols.discovery.blind import validate

    docs = [["It overheats.", "Fine."], ["Works."]]
    texts = ["It overheats. Fine.", "Works."]
    ok, why = validate({"labels": [[1, "negative", None], [0, "positive", 0]]}, docs, texts, 1)
    assert why == "" and ok == [{"states": ["positive"], "quotes": ["It overheats."]},
                                {"states": ["negative"], "quotes": [""]}]
    for bad in ({"labels": [[0, "positive", None], [1, "negative", None]]},   # no segment
                {"labels": [[0, "negative", None]]},                          # a row missing
                {"labels": [[True, "negative", None], [1, "negative", None]]},  # bool index
                {"labels": [[0, "maybe", 1], [1, "negative", None]]},         # unknown state
                {"labels": [[0, "negative", 5], [1, "negative", None]]},      # no segment 5
                {"labels": [], "extra": 1}):
        rows, why = validate(bad, docs, texts, 1)
        assert rows is None and why, bad
