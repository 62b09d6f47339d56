"""`engine review` against a reviewer on loopback: blind check, narrative judge, binding."""

from __future__ import annotations

import json
import os
import re
import shutil
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main

from .conftest import ROOT
from .judge_server import Judge

SPEC = ROOT / "specs" / "finding-quality-discovery"
GROUP = "amazon_beauty_group_difference_toy"
GOOD_ROW = {"support": "supported", "task_fulfilled": True, "statistical_validity": 0.8,
            "evidence_entailment": 0.9, "analytical_depth": 0.75, "calibration": 0.8,
            "duplicate_of": None, "reference_match": None,
            "rationale": "Counts and quotes hold on the sample."}


def honest(body: dict[str, Any]) -> str:
    """Blind batches labelled from the text; the narrative grades every finding."""
    payload = json.loads(body["messages"][1]["content"])
    if payload.get("stage") == "blind_evidence_check":
        rows = []
        for doc in payload["documents"]:
            hit = next((s["s"] for s in doc["segments"] if "overheat" in s["text"]), None)
            pairs = [x for _ in payload["definitions"] for x in
                     (("positive", hit) if hit is not None else ("negative", None))]
            rows.append([doc["i"], *pairs])
        return json.dumps({"labels": rows})
    return json.dumps({"findings": [{"finding_id": f["finding_id"], **GOOD_ROW}
                                    for f in payload["submission"]["findings"]]})


@pytest.fixture
def judge() -> Iterator[Judge]:
    server = Judge()
    server.responder = honest
    yield server
    server.close()


def signing_env(tmp_path: Path, monkeypatch: Any) -> Path:
    """The protected job's signing key, in $SPECGATE_SIGNING_KEY as CI hands it over: the
    shipped package is a release, which takes a drawn audit seed only when the key derived
    from the run's signing key sealed it (so `engine review` and `engine run` share it)."""
    assert main(["keygen", "--out-dir", str(tmp_path / "protected")]) == 0
    key = tmp_path / "protected" / "private.pem"
    monkeypatch.setenv("SPECGATE_SIGNING_KEY", str(key))
    return key


@pytest.fixture(autouse=True)
def protected_key(tmp_path: Path, monkeypatch: Any) -> Path:
    return signing_env(tmp_path, monkeypatch)


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    folder = tmp_path / "finding-quality-discovery"
    shutil.copytree(SPEC, folder)
    shutil.rmtree(folder / "demo" / "reviews")
    judge_yaml = folder / "judge.yaml"  # quick retries, so failing endpoints fail fast
    judge_yaml.write_text(judge_yaml.read_text().replace("backoff_s: 1.0", "backoff_s: 0.01")
                          .replace("max_backoff_s: 30.0", "max_backoff_s: 0.05"))
    return folder


def review(spec: Path, judge: Judge, reviews: Path, model: str = "m1",
           capsys: Any = None, *extra: str) -> tuple[int, str]:
    code = main(["review", str(spec), "--reviews-dir", str(reviews), "--judge-base-url",
                 f"{judge.url}/v1", "--judge-model", model, "--audit-documents", "60", *extra])
    return code, capsys.readouterr().out if capsys else ""


def evaluate(spec: Path, reviews: Path, out: str, *extra: str) -> tuple[int, dict[str, Any]]:
    dest = spec.parent / out
    code = main(["run", str(spec), "--input", f"reviews={reviews}", "--out", str(dest), *extra])
    card = json.loads((dest / "scorecard.json").read_bytes()) if dest.exists() else {}
    return code, card


def test_review_then_evaluate_then_reuse(spec: Path, judge: Judge, tmp_path: Path,
                                         capsys: Any) -> None:
    reviews = tmp_path / "reviews"
    code, out = review(spec, judge, reviews, capsys=capsys)
    assert code == 0, out
    assert f"{GROUP}: reviewed" in out and "temporal_change_toy: abstained" in out
    config = json.loads((reviews / "judge_config.json").read_text())
    assert re.fullmatch(r"[0-9a-f]{64}", config["audit_seed"])
    assert config["audit_documents"] == 60 and config["model"] == "m1"
    calls = judge.calls()
    assert calls == 4  # 32 short documents: 3 blind batches of <= 12, then the narrative
    stored = json.loads((reviews / f"{GROUP}.json").read_text())
    assert stored["reviewer_method"] == f"{judge.url}/v1 / m1"
    assert stored["blind_check"]["seed"] == config["audit_seed"]
    assert len(stored["provider_receipts"]) == 4
    first = judge.received[0]["body"]
    blind = json.loads(first["messages"][1]["content"])
    assert set(blind) == {"stage", "definitions", "documents", "output_contract"}
    assert "claim" not in first["messages"][1]["content"]  # the checker never sees claims
    code, card = evaluate(spec, reviews, "out1")
    record = {r["task_id"]: r for r in card["report"]["task_scores"]}[GROUP]
    assert code == 0 and record["status"] == "scored" and record["quality"] == 83.5
    code, out = review(spec, judge, reviews, capsys=capsys)
    assert code == 0 and f"{GROUP}: reused" in out and judge.calls() == calls


def test_a_changed_submission_makes_the_review_stale(spec: Path, judge: Judge, tmp_path: Path,
                                                      capsys: Any) -> None:
    reviews = tmp_path / "reviews"
    review(spec, judge, reviews, capsys=capsys)
    path = spec / "demo" / "submissions" / f"{GROUP}.json"
    sub = json.loads(path.read_text())
    sub["findings"][0]["claim"] = "A different claim."
    path.write_text(json.dumps(sub, ensure_ascii=False))
    code, out = review(spec, judge, reviews, capsys=capsys)
    assert code == 1 and f"{GROUP}: error STALE_REVIEW" in out
    code, _ = evaluate(spec, reviews, "out2")
    assert code == 2 and "STALE_REVIEW" in capsys.readouterr().err


def test_one_repair_per_blind_batch(spec: Path, judge: Judge, tmp_path: Path,
                                    capsys: Any) -> None:
    replies = iter(['{"labels": []}'])  # the first blind reply is unusable

    def flaky(body: dict[str, Any]) -> str:
        return next(replies, None) or honest(body)

    judge.responder = flaky
    code, out = review(spec, judge, tmp_path / "reviews", capsys=capsys)
    assert code == 0, out
    repairs = [r["body"] for r in judge.received
               if "previous_response" in r["body"]["messages"][1]["content"]]
    assert len(repairs) == 1 and judge.calls() == 5  # 3 batches + 1 repair + the narrative
    repair = json.loads(repairs[0]["messages"][1]["content"])
    assert repair["previous_response"] == {"labels": []} and "validation_error" in repair
    assert "each row of length 3" in repairs[0]["messages"][0]["content"]


def test_a_blind_check_that_stays_invalid_writes_nothing(spec: Path, judge: Judge,
                                                         tmp_path: Path, capsys: Any) -> None:
    judge.responder = lambda body: '{"labels": [[0, "positive", null]]}'
    reviews = tmp_path / "reviews"
    code, out = review(spec, judge, reviews, capsys=capsys)
    assert code == 1 and f"{GROUP}: error BLIND_CHECK_FAILED" in out
    assert not (reviews / f"{GROUP}.json").exists()
    assert not (reviews / f"{GROUP}.blind.json").exists()


def test_an_invalid_narrative_keeps_the_blind_cache(spec: Path, judge: Judge, tmp_path: Path,
                                                    capsys: Any) -> None:
    def bad_narrative(body: dict[str, Any]) -> str:
        text = honest(body)
        return text.replace('"analytical_depth": 0.75', '"analytical_depth": 7.5')

    judge.responder = bad_narrative
    reviews = tmp_path / "reviews"
    code, out = review(spec, judge, reviews, capsys=capsys)
    assert code == 1 and f"{GROUP}: error JUDGE_OUTPUT_INVALID" in out
    assert (reviews / f"{GROUP}.blind.json").exists()
    assert not (reviews / f"{GROUP}.json").exists()
    code, _ = evaluate(spec, reviews, "out3")
    assert code == 3  # the task is pending review
    judge.responder = honest
    before = judge.calls()
    code, out = review(spec, judge, reviews, capsys=capsys)
    assert code == 0 and judge.calls() == before + 1  # only the narrative request again


def test_a_changed_judge_needs_a_fresh_review_directory(spec: Path, judge: Judge,
                                                        tmp_path: Path, capsys: Any) -> None:
    reviews = tmp_path / "reviews"
    review(spec, judge, reviews, capsys=capsys)
    code = main(["review", str(spec), "--reviews-dir", str(reviews), "--judge-base-url",
                 f"{judge.url}/v1", "--judge-model", "m2", "--audit-documents", "60"])
    assert code == 2 and "JUDGE_CONFIG_MISMATCH" in capsys.readouterr().err


def test_an_oversized_request_is_refused_before_sending(spec: Path, judge: Judge,
                                                        tmp_path: Path, capsys: Any) -> None:
    path = spec / "judge.yaml"
    path.write_text(path.read_text().replace("max_input_chars: 800000", "max_input_chars: 2000"))
    code, out = review(spec, judge, tmp_path / "reviews", capsys=capsys)
    assert code == 1 and "MODEL_INPUT_TOO_LARGE" in out and judge.calls() == 0


def test_a_transport_failure_is_reported(spec: Path, judge: Judge, tmp_path: Path,
                                         capsys: Any) -> None:
    judge.script["m1"] = [{"status": 500}]
    code, out = review(spec, judge, tmp_path / "reviews", capsys=capsys)
    assert code == 1 and f"{GROUP}: error MODEL_TRANSPORT" in out


@pytest.mark.parametrize("key", ["sk-canary-9d2e\r\nX-Evil: 1", "sk-canary-9d2é"])
def test_an_unusable_api_key_is_refused_and_never_printed(spec: Path, judge: Judge,
                                                          tmp_path: Path, capsys: Any,
                                                          monkeypatch: Any, key: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", key)
    code, _ = review(spec, judge, tmp_path / "reviews")
    printed = capsys.readouterr()
    assert code == 2 and "BAD_API_KEY" in printed.err and "$OPENAI_API_KEY" in printed.err
    assert "canary" not in printed.out + printed.err and "Traceback" not in printed.err
    assert judge.calls() == 0 and not (tmp_path / "reviews").exists()


def test_a_good_api_key_is_sent_and_never_printed_or_written(spec: Path, judge: Judge,
                                                             tmp_path: Path, capsys: Any,
                                                             monkeypatch: Any) -> None:
    canary = "sk-canary-4b7f0e2a"
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    judge.script["m1"] = [{}, {"status": 500}]  # one answer, then the endpoint fails
    code, out = review(spec, judge, tmp_path / "reviews", capsys=capsys)
    assert judge.received[0]["headers"]["authorization"] == f"Bearer {canary}"
    printed = out + capsys.readouterr().err
    assert code == 1 and "MODEL_TRANSPORT" in printed and canary not in printed
    for path in (tmp_path / "reviews").rglob("*"):
        assert not path.is_file() or canary.encode() not in path.read_bytes(), path


def test_a_transient_503_is_retried_by_the_judge_transport(spec: Path, judge: Judge,
                                                            tmp_path: Path, capsys: Any) -> None:
    judge.script["m1"] = [{"status": 503, "headers": {"retry-after": "0"}}, {}]
    reviews = tmp_path / "reviews"
    code, out = review(spec, judge, reviews, capsys=capsys)
    assert code == 0 and f"{GROUP}: reviewed" in out, out
    assert judge.calls() == 5  # the 4 requests of a clean review, one of them twice
    receipts = json.loads((reviews / f"{GROUP}.json").read_text())["provider_receipts"]
    assert sorted(r["attempts"] for r in receipts) == [1, 1, 1, 2]
    assert receipts[0]["usage"] == {"input_tokens": 11, "output_tokens": 7}


def test_an_endpoint_that_stays_down_is_tried_retries_plus_one_times(spec: Path, judge: Judge,
                                                                     tmp_path: Path,
                                                                     capsys: Any) -> None:
    judge.script["m1"] = [{"status": 503}]
    judge.responder = None
    code, out = review(spec, judge, tmp_path / "reviews", capsys=capsys)
    assert code == 1 and f"{GROUP}: error MODEL_TRANSPORT: HTTP 503 after 4 attempts" in out
    assert judge.calls() >= 4  # the failing batch: 1 + 3 retries (the others are cancelled)


def test_a_reviewer_slower_than_the_deadline_is_a_transport_error(spec: Path, judge: Judge,
                                                                   tmp_path: Path,
                                                                   capsys: Any) -> None:
    path = spec / "judge.yaml"
    path.write_text(path.read_text().replace("timeout_s: 180", "timeout_s: 0.3")
                    .replace("retries: 3", "retries: 0"))
    judge.script["m1"] = [{"delay": 1.5}]
    code, out = review(spec, judge, tmp_path / "reviews", capsys=capsys)
    assert code == 1 and "MODEL_TRANSPORT: no reply within 0.3 s after 1 attempts" in out, out


def test_a_review_reply_beyond_the_transport_bounds_is_a_transport_error(
        spec: Path, judge: Judge, tmp_path: Path, capsys: Any) -> None:
    # issue 26: reviews share the judges' bounded transport (a gzip bomb of 256 MiB from
    # 250 kB, and 9 MiB on the wire), so neither takes the memory of the runner
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb = b"".join(packer.compress(bytes(1 << 20)) for _ in range(256)) + packer.flush()
    for step in ({"body": bomb, "headers": {"Content-Encoding": "gzip"}},
                 {"raw": " " * (9 << 20) + '{"choices": []}'}):
        judge.script["m1"] = [step]
        code, out = review(spec, judge, tmp_path / f"reviews-{len(str(step))}",
                           capsys=capsys)
        assert code == 1 and f"{GROUP}: error MODEL_TRANSPORT" in out, out
        assert "Traceback" not in out


@pytest.mark.parametrize("raw", [
    # the reply chosen by whichever of two "choices" a lenient reader keeps
    '{"choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}],'
    ' "choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}]}',
    # a finish reason that is not text cannot say the reply is complete
    '{"choices": [{"message": {"content": "{}"}, "finish_reason": ["length"]}]}',
    # a lone surrogate anywhere in the body
    '{"id": "\\ud800", "choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}]}',
])
def test_a_reply_body_is_read_strictly(spec: Path, judge: Judge, tmp_path: Path, capsys: Any,
                                       raw: str) -> None:
    judge.script["m1"] = [{"raw": raw}]
    code, out = review(spec, judge, tmp_path / "reviews", capsys=capsys)
    assert code == 1 and f"{GROUP}: error MODEL_TRANSPORT" in out, out


def test_a_blind_cache_for_other_inputs_is_refused(spec: Path, judge: Judge, tmp_path: Path,
                                                   capsys: Any) -> None:
    def bad_narrative(body: dict[str, Any]) -> str:
        return honest(body).replace('"calibration": 0.8', '"calibration": 8')

    judge.responder = bad_narrative  # the blind cache is written, the review is not
    reviews = tmp_path / "reviews"
    review(spec, judge, reviews, capsys=capsys)
    cache = reviews / f"{GROUP}.blind.json"
    # a cache bound to another submission (a submission changed after the seed was drawn is
    # refused first, SEED_BEFORE_SUBMISSIONS): the binding is edited instead
    stored = json.loads(cache.read_text())
    stored["binding"]["submission_sha256"] = "0" * 64
    cache.write_text(json.dumps(stored))  # edited in the folder: its seal no longer verifies
    judge.responder = honest
    before = judge.calls()
    code, out = review(spec, judge, reviews, capsys=capsys)
    assert code == 1 and f"{GROUP}: error REVIEW_FILE_FOREIGN" in out
    # resealed by the job's own key (a cache this job made for other inputs)
    from engine.evidence.signing import derived_key, load_private
    from engine.protocols.discovery.seal import KEY_DOMAIN, seal_file
    key = derived_key(load_private(Path(os.environ["SPECGATE_SIGNING_KEY"])), KEY_DOMAIN)
    cache.write_text(json.dumps(seal_file({k: v for k, v in stored.items() if k != "seal"},
                                          key)))
    kept = cache.read_bytes()
    code, out = review(spec, judge, reviews, capsys=capsys)
    assert code == 1 and f"{GROUP}: error BLIND_CACHE_BINDING" in out
    assert judge.calls() == before  # nothing asked on a cache made for other inputs
    assert cache.read_bytes() == kept and not (reviews / f"{GROUP}.json").exists()


def test_a_run_manifest_for_another_inventory_stops_the_review(spec: Path, judge: Judge,
                                                               tmp_path: Path,
                                                               capsys: Any) -> None:
    manifest = {"tasks_sha256": "0" * 64, "command": ["agent"], "track": "task_only",
                "timeout_seconds": 60, "task_id": None, "limit": None,
                "difficulty": "discovery", "effective_tasks_sha256": "0" * 64}
    (spec / "demo" / "submissions" / "run.json").write_text(json.dumps(manifest))
    reviews = tmp_path / "reviews"
    code = main(["review", str(spec), "--reviews-dir", str(reviews), "--judge-base-url",
                 f"{judge.url}/v1", "--judge-model", "m1", "--audit-documents", "60"])
    assert code == 2 and "RUN_MANIFEST_MISMATCH" in capsys.readouterr().err
    assert judge.calls() == 0 and not reviews.exists()


def test_a_fresh_review_directory_evaluates_with_its_reviewer_named(spec: Path, judge: Judge,
                                                                    tmp_path: Path,
                                                                    capsys: Any) -> None:
    reviews = tmp_path / "reviews"
    review(spec, judge, reviews, model="m7", capsys=capsys)
    code, card = evaluate(spec, reviews, "named")
    # what `engine review` was given: the model, --audit-documents 60 and judge.yaml's
    # max_input_chars 800000; a seed the review drew itself
    assert code == 0 and card["report"]["reviewer"] == {
        "model": "m7", "base_url": f"{judge.url}/v1", "max_input_chars": 800000,
        "max_output_tokens": 6000, "audit_documents": 60, "audit_seed_origin": "derived"}
