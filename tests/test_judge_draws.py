"""Re-drawn judge answers (issue 36, lever 3): a signed release reuses its sealed cache only
as one whole draw, and every judgement says whether it was asked in this run or reused.

The gated team cannot forge a cache entry, but it can delete the entries whose answers it
dislikes (or put back entries kept from another run). With a noisy judge, a run that asked
only the missing prompts again re-drew each bad answer alone until it came back good. The
judge here is noisy by a rule worked out by hand: grounding row ``gI`` answers 1/5 on its
K-th ask when I + K is even, else 5/5. So every whole draw of g1, g2, g3 has a bad answer
(draw 1: g1 and g3; draw 2: g2), while each bad answer asked again alone comes back good.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import rfc8785
import yaml

from . import refund
from .conftest import Gate
from .judge_server import Judge
from .test_judge import cache_key, configure, entries, grounding, judge, judgements, signer

__all__ = ["cache_key", "judge"]  # fixtures, used by name

ROWS = refund.rows(fixed=True) + [grounding(1), grounding(2), grounding(3)]
GOOD, BAD = '{"score": 5}', '{"score": 1}'


def noisy(judge: Judge) -> Counter[int]:
    """Script the noisy judge; returns how often each grounding row was asked."""
    asked: Counter[int] = Counter()

    def step(body: dict[str, Any]) -> dict[str, Any]:
        found = re.search(r"Order A-(\d+) ships", json.dumps(body["messages"]))
        if found is None:  # not a grounding prompt: always good
            return {"verdict": GOOD}
        row = int(found.group(1))
        asked[row] += 1  # the server holds its lock here
        return {"verdict": BAD if (row + asked[row]) % 2 == 0 else GOOD}

    judge.script["m1"] = step
    return asked


def stored(entry: Path) -> dict[str, Any]:
    """A cache entry's record (a MAC line, then its RFC 8785 bytes)."""
    return dict(json.loads(entry.read_bytes().split(b"\n", 1)[1]))


def bad_entries(cache: Path) -> list[Path]:
    return [e for e in entries(cache) if stored(e)["response"] == BAD]


def statuses(out: Path) -> dict[str, str]:
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    return {r["unit"]: r["status"] for r in rows if r.get("unit", "").startswith("g")}


def release(gate: Gate, cache: Path, sign: list[str], run_id: str) -> tuple[int, dict[str, Any],
                                                                           Path]:
    return gate.run(ROWS, "--judge-cache", str(cache), *sign, "--run-id", run_id)


def test_deleting_the_bad_answers_makes_a_release_ask_every_prompt_again(
        gate: Gate, judge: Judge, tmp_path: Path, capsys: Any) -> None:
    configure(gate, judge)
    asked = noisy(judge)
    cache, sign = tmp_path / "cache", signer(tmp_path)
    code, card, out = release(gate, cache, sign, "release-1")
    assert statuses(out) == {"g1": "FAIL", "g2": "PASS", "g3": "FAIL"}
    assert card["decision"] == "FAIL" and judge.calls() == 3
    first, first_out = card, out

    # the attack: delete only the entries whose answers were bad (g1's and g3's)
    doomed = bad_entries(cache)
    assert len(doomed) == 2
    for entry in doomed:
        entry.unlink()
    capsys.readouterr()
    code, card, out = release(gate, cache, sign, "release-2")
    # every prompt asked again (draw 2), not only the two deleted: g2 now comes back bad
    assert judge.calls() == 6 and asked == Counter({1: 2, 2: 2, 3: 2})
    assert statuses(out) == {"g1": "PASS", "g2": "FAIL", "g3": "PASS"}
    assert (code, card["decision"]) == (1, "FAIL")
    lines = judgements(first_out)
    assert [(j["origin"], j["obtained_by_run"]) for j in lines] == [("fresh", "release-1")] * 3
    assert (first["judge"]["fresh"], first["judge"]["reused"]) == (3, 0)
    assert first["judge"]["cache_reuse"] == "all_or_none"
    lines = judgements(out)
    assert [(j["origin"], j["obtained_by_run"]) for j in lines] == [("fresh", "release-2")] * 3
    assert (card["judge"]["fresh"], card["judge"]["reused"]) == (3, 0)
    said = capsys.readouterr().out
    assert "judge: 3 call(s), 0 from the cache" in said and "3 fresh, 0 reused" in said
    assert "1 cached answer(s) set aside" in said  # g2's draw-1 entry
    # the fresh answers replaced every entry: the cache holds draw 2 whole
    assert len(entries(cache)) == 3 and len(bad_entries(cache)) == 1

    # a run with every entry intact reuses all of them and says whose they are
    code, card, out = release(gate, cache, sign, "release-3")
    assert judge.calls() == 6 and card["decision"] == "FAIL"
    lines = judgements(out)
    assert [(j["origin"], j["obtained_by_run"]) for j in lines] == [("reused", "release-2")] * 3
    assert (card["judge"]["fresh"], card["judge"]["reused"]) == (0, 3)
    assert all(j["attempts"] == 1 for j in lines)


def test_answers_kept_from_two_draws_are_not_reused_together(gate: Gate, judge: Judge,
                                                             tmp_path: Path) -> None:
    """The team keeps each run's cache and builds one of good answers only, g1 and g3 from
    one draw and g2 from another: every entry present and sealed, but two draws."""
    configure(gate, judge)
    noisy(judge)
    sign = signer(tmp_path)
    first, second = tmp_path / "cache-1", tmp_path / "cache-2"
    release(gate, first, sign, "release-1")  # draw 1: g1, g3 bad
    release(gate, second, sign, "release-2")  # draw 2 (an empty cache): g2 bad
    assert judge.calls() == 6
    [g2_bad] = bad_entries(second)
    shutil.copy(first / g2_bad.relative_to(second), g2_bad)
    assert not bad_entries(second) and len(entries(second)) == 3  # good answers only
    _, card, out = release(gate, second, sign, "release-3")
    assert judge.calls() == 9  # not reused: asked again whole (draw 3: g1 and g3 bad)
    assert statuses(out) == {"g1": "FAIL", "g2": "PASS", "g3": "FAIL"}
    assert card["decision"] == "FAIL"
    assert [j["origin"] for j in judgements(out)] == ["fresh"] * 3


def test_the_run_an_entry_names_is_sealed_with_it(gate: Gate, judge: Judge, tmp_path: Path,
                                                  capsys: Any) -> None:
    configure(gate, judge)
    noisy(judge)
    cache, sign = tmp_path / "cache", signer(tmp_path)
    release(gate, cache, sign, "release-1")
    # the team rewrites the run an entry names (to pass it off as another run's), MAC kept
    entry = entries(cache)[0]
    mac, body = entry.read_bytes().split(b"\n", 1)
    rec = json.loads(body)
    assert rec["obtained_by_run"] == "release-1" and re.fullmatch("[0-9a-f]{32}", rec["draw"])
    entry.write_bytes(mac + b"\n" + rfc8785.dumps({**rec, "obtained_by_run": "release-0"}))
    capsys.readouterr()
    _, card, out = release(gate, cache, sign, "release-2")
    assert judge.calls() == 6  # not believed, so nothing of draw 1 is reused
    said = capsys.readouterr().out
    assert "1 entry failed the MAC check" in said and "2 cached answer(s) set aside" in said
    assert {j["obtained_by_run"] for j in judgements(out)} == {"release-2"}
    # nor can its draw be changed to join it to another
    entry = entries(cache)[0]
    mac, body = entry.read_bytes().split(b"\n", 1)
    entry.write_bytes(mac + b"\n" + rfc8785.dumps({**json.loads(body), "draw": "0" * 32}))
    release(gate, cache, sign, "release-3")
    assert judge.calls() == 9


def test_an_entry_of_the_earlier_format_is_asked_again(gate: Gate, judge: Judge,
                                                       tmp_path: Path) -> None:
    """Entries sealed before answers named their run carry no draw: never believed."""
    import hmac

    from engine.run.execute import CACHE_KEY_DOMAIN
    configure(gate, judge)
    noisy(judge)
    cache, sign = tmp_path / "cache", signer(tmp_path)
    release(gate, cache, sign, "release-1")
    from cryptography.hazmat.primitives import serialization

    from engine.evidence import signing
    raw = signing.load_private(Path(sign[1])).private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
        serialization.NoEncryption())
    key = hmac.new(raw, CACHE_KEY_DOMAIN, "sha256").digest()
    for entry in entries(cache):  # sealed as the version before wrote them (domain v2)
        rec = {k: v for k, v in stored(entry).items()
               if k not in ("origin", "obtained_by_run", "draw")}
        body = rfc8785.dumps(rec)
        mac = hmac.new(key, b"specgate.judgement-cache/v2\n" + body, "sha256").hexdigest()
        entry.write_bytes(mac.encode() + b"\n" + body)
    release(gate, cache, sign, "release-2")
    assert judge.calls() == 6


def test_governance_may_choose_partial_reuse_and_the_evidence_says_so(
        gate: Gate, judge: Judge, tmp_path: Path) -> None:
    configure(gate, judge, cache_reuse="partial")
    asked = noisy(judge)
    cache, sign = tmp_path / "cache", signer(tmp_path)
    release(gate, cache, sign, "release-1")
    for entry in bad_entries(cache):
        entry.unlink()
    code, card, out = release(gate, cache, sign, "release-2")
    # what partial allows, as docs/judges.md says: the deleted answers alone are re-drawn
    assert judge.calls() == 5 and asked == Counter({1: 2, 2: 1, 3: 2})
    assert card["decision"] == "PASS"
    assert card["judge"]["cache_reuse"] == "partial"
    assert (card["judge"]["fresh"], card["judge"]["reused"]) == (2, 1)
    origins = {j["prompt_sha256"]: (j["origin"], j["obtained_by_run"])
               for j in judgements(out)}
    assert sorted(origins.values()) == [("fresh", "release-2"), ("fresh", "release-2"),
                                        ("reused", "release-1")]


def test_cache_reuse_takes_only_its_two_values(gate: Gate, capsys: Any) -> None:
    from engine.cli import main
    path = gate.dir / "evaluation.yaml"
    data = yaml.safe_load(path.read_text())
    data["spec"]["judge"] = {"provider": "mock", "cache_reuse": "some"}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["validate", str(gate.dir)]) == 2
    said = capsys.readouterr()
    assert "spec.judge.cache_reuse" in said.out + said.err
