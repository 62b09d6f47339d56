"""Where `engine review`'s audit seed comes from (issue 36, lever 4): the review draws it
itself after the submissions exist, seals the judge configuration it writes, and refuses
one it did not write; evaluation accepts only a sealed drawn seed (or one audit.yaml pins).

Each attack is mounted as the gated team would: it writes the reviews folder (and the
submissions) before the protected review job runs, or runs `engine review` itself with its
own key, but never holds the protected job's key file. The names issue 36 added are
imported inside the tests that use them, so each attack also runs against the old engine.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.protocols.discovery import sample
from engine.protocols.discovery.judge_settings import config_fields
from engine.protocols.discovery.task import load_package

from .judge_server import Judge
from .test_discovery_review import GROUP, SPEC, evaluate, honest, review, signing_env

TEMPORAL = "amazon_beauty_temporal_change_toy"
CHOSEN = "c" * 64  # the seed the gated team settled on offline


@pytest.fixture
def judge() -> Iterator[Judge]:
    server = Judge()
    server.responder = honest
    yield server
    server.close()


@pytest.fixture(autouse=True)
def protected_key(tmp_path: Path, monkeypatch: Any) -> Path:
    """The protected job's signing key, in $SPECGATE_SIGNING_KEY (test_discovery_review)."""
    return signing_env(tmp_path, monkeypatch)


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    """The shipped package with no recorded reviews (test_discovery_review's fixture)."""
    folder = tmp_path / "finding-quality-discovery"
    shutil.copytree(SPEC, folder)
    shutil.rmtree(folder / "demo" / "reviews")
    return folder


def _submission(spec: Path, task_id: str = GROUP) -> Path:
    return spec / "demo" / "submissions" / f"{task_id}.json"


def _plant(spec: Path, judge: Judge, reviews: Path, **extra: Any) -> dict[str, Any]:
    """A judge_config.json the gated team writes before the review job: every field the
    review works out (all public: the package, the inventory, the workflow's model, URL and
    budget), plus the seed it chose."""
    pkg = load_package(spec)
    tasks = json.loads((spec / "demo" / "tasks.json").read_text())
    planted = {**config_fields(pkg, "m1", f"{judge.url}/v1", tasks, 60),
               "audit_seed": CHOSEN, **extra}
    reviews.mkdir()
    (reviews / "judge_config.json").write_text(json.dumps(planted))
    return planted


def test_offline_seeds_choose_which_documents_the_audit_reads() -> None:
    # why the seed matters: over a corpus larger than the budget, trying seeds offline finds
    # one whose sample leaves out the document that would disprove a finding
    ids = [f"d{i:03}" for i in range(300)]
    params = load_package(Path("specs/finding-quality-discovery")).discovery.audit
    first = sample("0" * 64, 60, "t", ids, [], params)["document_ids"]
    target = first[0]  # a document the first seed audits
    misses = next(s for s in (f"{n:064x}" for n in range(1, 200))
                  if target not in sample(s, 60, "t", ids, [], params)["document_ids"])
    assert len(first) == 60 and misses  # 60 of 300: most seeds leave any one document out


def test_a_planted_judge_config_is_refused_and_nothing_is_asked(spec: Path, judge: Judge,
                                                               tmp_path: Path,
                                                               capsys: Any) -> None:
    reviews = tmp_path / "reviews"
    planted = _plant(spec, judge, reviews)
    code, _ = review(spec, judge, reviews)
    err = capsys.readouterr().err
    # before issue 36 the review took the planted seed: its blind check was made with CHOSEN
    review_file = reviews / f"{GROUP}.json"
    used = json.loads(review_file.read_text())["blind_check"]["seed"] \
        if review_file.exists() else None
    assert used != CHOSEN
    assert code == 2 and "REVIEW_CONFIG_FOREIGN" in err, err
    assert judge.calls() == 0 and sorted(p.name for p in reviews.iterdir()) == \
        ["judge_config.json"]
    assert json.loads((reviews / "judge_config.json").read_text()) == planted  # left as is


def _keygen(tmp_path: Path, name: str) -> Path:
    assert main(["keygen", "--out-dir", str(tmp_path / f"keys-{name}")]) == 0
    return tmp_path / f"keys-{name}" / "private.pem"


def _derived(key: Path) -> bytes:
    """The seal's key as the protected job derives it from its signing key, worked out here
    from the raw private key: HMAC-SHA256(raw key, the review seed's domain)."""
    import hmac

    from cryptography.hazmat.primitives import serialization

    from engine.evidence.signing import load_private
    raw = load_private(key).private_bytes(serialization.Encoding.Raw,
                                          serialization.PrivateFormat.Raw,
                                          serialization.NoEncryption())
    return hmac.new(raw, b"specgate.review-seed-seal/v1", "sha256").digest()


def _runner_key(tmp_path: Path, monkeypatch: Any) -> bytes:
    """The gated team writes the runner's judge cache key file and points
    $SPECGATE_CACHE_KEY at it: it knows the key (its bytes, as the engine reads them)."""
    path = tmp_path / "runner.key"
    path.write_text("ab" * 32 + "\n")
    path.chmod(0o600)
    monkeypatch.setenv("SPECGATE_CACHE_KEY", str(path))
    return bytes.fromhex("ab" * 32)


def test_a_config_sealed_with_another_key_is_refused(spec: Path, judge: Judge, tmp_path: Path,
                                                     capsys: Any, monkeypatch: Any) -> None:
    # the gated team runs engine review itself, with keys of its own, until the drawn seed
    # suits it, then hands over the folder: the protected job's key did not seal it
    reviews = tmp_path / "reviews"
    theirs = _keygen(tmp_path, "theirs")
    monkeypatch.setenv("SPECGATE_CACHE_KEY", str(tmp_path / "attacker.key"))
    assert review(spec, judge, reviews, "m1", None, "--key", str(theirs))[0] == 0
    code, card = evaluate(spec, reviews, "theirs", "--key", str(theirs))  # their seal holds
    assert code == 0 and card["report"]["reviewer"]["audit_seed_origin"] == "derived"
    monkeypatch.delenv("SPECGATE_CACHE_KEY")
    capsys.readouterr()
    code, _ = review(spec, judge, reviews)
    assert code == 2 and "REVIEW_CONFIG_FOREIGN" in capsys.readouterr().err
    code, card = evaluate(spec, reviews, "ours")
    assert code == 2 and card == {} and "REVIEW_CONFIG_FOREIGN" in capsys.readouterr().err


@pytest.mark.parametrize("how", ["--key", "env"])
def test_a_seed_sealed_with_the_runners_key_file_is_refused_by_the_protected_job(
        spec: Path, judge: Judge, tmp_path: Path, capsys: Any, monkeypatch: Any,
        protected_key: Path, how: str) -> None:
    # the gated team controls the runner: it writes the judge cache's key file (one it
    # tried offline until the seed derived under it gave a sample it likes), has its own
    # review made with it, all before the protected job runs with its signing key (given
    # as --key, or in $SPECGATE_SIGNING_KEY)
    from engine.protocols.discovery.seal import canonical_digests, derive

    key = _runner_key(tmp_path, monkeypatch)
    reviews = tmp_path / "reviews"
    tasks = json.loads((spec / "demo" / "tasks.json").read_text())
    chosen = derive(key, hashlib.sha256(_jcs(tasks)).hexdigest(),
                    canonical_digests(tasks, spec / "demo" / "submissions"), 32)
    monkeypatch.delenv("SPECGATE_SIGNING_KEY")  # the team's own review, without the key
    assert review(spec, judge, reviews)[0] == 0
    assert json.loads((reviews / f"{GROUP}.json").read_text())["blind_check"]["seed"] == chosen
    extra: tuple[str, ...] = ()
    if how == "env":
        monkeypatch.setenv("SPECGATE_SIGNING_KEY", str(protected_key))
    else:
        extra = ("--key", str(protected_key))
    capsys.readouterr()
    code, _ = review(spec, judge, reviews, "m1", None, *extra)
    err = capsys.readouterr().err
    assert code == 2 and "REVIEW_CONFIG_FOREIGN" in err and "signing key" in err, err
    code, card = evaluate(spec, reviews, "release", *extra)
    err = capsys.readouterr().err
    assert code == 2 and card == {} and "REVIEW_CONFIG_FOREIGN" in err, err


def test_an_unsigned_release_takes_no_drawn_seed(spec: Path, judge: Judge, tmp_path: Path,
                                                 capsys: Any, monkeypatch: Any) -> None:
    # reviewed and run without the signing key: the runner's key file sealed the seed, and
    # the release has no key of its own to check a seal with
    _runner_key(tmp_path, monkeypatch)
    monkeypatch.delenv("SPECGATE_SIGNING_KEY")
    reviews = tmp_path / "reviews"
    assert review(spec, judge, reviews)[0] == 0
    config = json.loads((reviews / "judge_config.json").read_text())
    assert config["audit_seed_origin"]["sealed_by"] == "runner_key"
    capsys.readouterr()
    code, card = evaluate(spec, reviews, "unsigned")
    err = capsys.readouterr().err
    assert code == 2 and card == {} and "REVIEW_CONFIG_FOREIGN" in err
    assert "unsigned release" in err, err


def test_a_triage_run_takes_the_runners_key_file(spec: Path, judge: Judge, tmp_path: Path,
                                                 capsys: Any, monkeypatch: Any) -> None:
    # not a release: nothing ships on it, so the key file's seal is enough, as before
    policy = spec / "policy.yaml"
    policy.write_text(policy.read_text().replace("purpose: release", "purpose: triage"))
    _runner_key(tmp_path, monkeypatch)
    monkeypatch.delenv("SPECGATE_SIGNING_KEY")
    reviews = tmp_path / "reviews"
    assert review(spec, judge, reviews)[0] == 0
    code, card = evaluate(spec, reviews, "triage")
    assert code == 4 and card["decision"] == "TRIAGE", capsys.readouterr().err
    assert card["report"]["reviewer"]["audit_seed_origin"] == "derived"


def test_the_signing_key_seals_the_seed_and_only_it_opens_it(
        spec: Path, judge: Judge, tmp_path: Path, capsys: Any, monkeypatch: Any,
        protected_key: Path) -> None:
    from engine.protocols.discovery.seal import sealed

    key = _runner_key(tmp_path, monkeypatch)
    monkeypatch.delenv("SPECGATE_SIGNING_KEY")  # --key alone, as engine run takes it
    reviews = tmp_path / "reviews"
    code, out = review(spec, judge, reviews, "m1", capsys, "--key", str(protected_key))
    assert code == 0 and f"{GROUP}: reviewed" in out, out
    config = json.loads((reviews / "judge_config.json").read_text())
    assert config["audit_seed_origin"]["sealed_by"] == "signing_key"
    assert sealed(config, _derived(protected_key)) and not sealed(config, key)
    code, out = review(spec, judge, reviews, "m1", capsys, "--key", str(protected_key))
    assert code == 0 and f"{GROUP}: reused" in out  # resumed under the same key
    code, card = evaluate(spec, reviews, "signed", "--key", str(protected_key))
    assert code == 0 and card["report"]["reviewer"]["audit_seed_origin"] == "derived"
    other = _keygen(tmp_path, "other")
    capsys.readouterr()
    code, card = evaluate(spec, reviews, "other", "--key", str(other))
    assert code == 2 and card == {} and "REVIEW_CONFIG_FOREIGN" in capsys.readouterr().err
    code, _ = review(spec, judge, reviews, "m1", None, "--key", str(other))
    assert code == 2 and "REVIEW_CONFIG_FOREIGN" in capsys.readouterr().err


def _jcs(value: Any) -> bytes:
    """RFC 8785 for the demo's values (strings, integers, objects, arrays: no floats)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode()


def _expand(key: bytes, message: bytes, n: int) -> str:
    """The seed as issue 36 specifies it, worked out here: HMAC-SHA256 counter-mode blocks
    under HMAC(key, the audit seed's domain), the first n bytes, lowercase hex."""
    import hmac

    k = hmac.new(key, b"specgate.review-audit-seed/v1", "sha256").digest()
    out = b"".join(hmac.new(k, i.to_bytes(4, "big") + message, "sha256").digest()
                   for i in range(1, 4))
    return out[:n].hex()


def test_a_clean_review_draws_a_seed_of_seed_bytes_after_the_submissions(
        spec: Path, judge: Judge, tmp_path: Path, capsys: Any, protected_key: Path) -> None:
    from engine.protocols.discovery.seal import sealed

    audit = spec / "audit.yaml"
    audit.write_text(audit.read_text().replace("seed_bytes: 32", "seed_bytes: 48"))
    reviews = tmp_path / "reviews"
    before = datetime.now().astimezone()
    code, out = review(spec, judge, reviews, capsys=capsys)
    assert code == 0, out
    config = json.loads((reviews / "judge_config.json").read_text())
    assert re.fullmatch(r"[0-9a-f]{96}", config["audit_seed"])  # 48 bytes, not 32
    origin = config["audit_seed_origin"]
    assert origin["how"] == "derived" and origin["seed_bytes"] == 48
    assert origin["sealed_by"] == "signing_key"  # $SPECGATE_SIGNING_KEY, as engine run reads it
    assert datetime.fromisoformat(origin["derived_at"]) >= before.replace(microsecond=0)
    from engine.canonical import digest  # RFC 8785 (the submissions hold floats)
    subs = {t: digest(json.loads(_submission(spec, t).read_bytes()))
            for t in (GROUP, TEMPORAL)}  # the files' canonical forms, not their bytes
    assert origin["submissions"] == subs
    tasks = json.loads((spec / "demo" / "tasks.json").read_text())
    message = _jcs({"tasks_sha256": hashlib.sha256(_jcs(tasks)).hexdigest(),
                    "submissions": subs, "seed_bytes": 48})
    assert config["audit_seed"] == _expand(_derived(protected_key), message, 48)
    assert sealed(config, _derived(protected_key))
    stored = json.loads((reviews / f"{GROUP}.json").read_text())
    assert stored["audit_seed_origin"] == origin  # recorded in the review too
    assert stored["blind_check"]["seed"] == config["audit_seed"]
    code, card = evaluate(spec, reviews, "out")
    assert code == 0 and card["report"]["reviewer"]["audit_seed_origin"] == "derived"


@pytest.mark.parametrize("edit", [
    lambda c: c | {"audit_seed": CHOSEN},  # the seed swapped, the seal kept
    lambda c: c | {"seal": "0" * 64},  # the seal itself edited
    lambda c: {k: v for k, v in c.items() if k != "seal"},  # the seal removed
])
def test_an_edited_config_is_refused_on_resume_and_at_evaluation(
        spec: Path, judge: Judge, tmp_path: Path, capsys: Any, edit: Any) -> None:
    reviews = tmp_path / "reviews"
    assert review(spec, judge, reviews)[0] == 0
    path = reviews / "judge_config.json"
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    calls = judge.calls()
    capsys.readouterr()
    code, card = evaluate(spec, reviews, "out")
    assert code == 2 and card == {} and "REVIEW_CONFIG_FOREIGN" in capsys.readouterr().err
    (reviews / f"{GROUP}.json").unlink()  # a review to redo under the edited seed
    code, _ = review(spec, judge, reviews)
    assert code == 2 and "REVIEW_CONFIG_FOREIGN" in capsys.readouterr().err
    assert judge.calls() == calls and not (reviews / f"{GROUP}.json").exists()


def test_a_submission_written_after_the_seed_was_drawn_is_refused(
        spec: Path, judge: Judge, tmp_path: Path, capsys: Any) -> None:
    # the gated team lets a first review run without its answer, reads the drawn seed from
    # the folder, then writes a submission fitted to that sample and has the review resumed
    reviews = tmp_path / "reviews"
    answer = _submission(spec).read_bytes()
    _submission(spec).unlink()
    code, out = review(spec, judge, reviews, capsys=capsys)
    assert code == 0 and f"{GROUP}: missing" in out
    _submission(spec).write_bytes(answer)
    code, out = review(spec, judge, reviews, capsys=capsys)
    assert code == 1 and f"{GROUP}: error SEED_BEFORE_SUBMISSIONS" in out
    assert judge.calls() == 0 and not (reviews / f"{GROUP}.json").exists()


def test_the_evaluation_refuses_a_review_whose_seed_origin_is_not_recorded(
        spec: Path, judge: Judge, tmp_path: Path, capsys: Any, protected_key: Path) -> None:
    from engine.protocols.discovery.seal import seal, seal_file

    reviews = tmp_path / "reviews"
    assert review(spec, judge, reviews)[0] == 0
    path = reviews / f"{GROUP}.json"
    kept = path.read_text()
    path.write_text(json.dumps(seal_file({k: v for k, v in json.loads(kept).items()
                                          if k not in ("audit_seed_origin", "seal")},
                                         _derived(protected_key))))  # a key holder's slip
    capsys.readouterr()
    code, card = evaluate(spec, reviews, "no-origin-in-review")
    assert code == 2 and card == {} and "AUDIT_SEED_ORIGIN" in capsys.readouterr().err
    path.write_text(kept)
    # a configuration this job sealed but whose origin says nothing of a draw (a key holder's
    # mistake, not the gated team's: it cannot seal) is refused all the same
    config_path = reviews / "judge_config.json"
    config = json.loads(config_path.read_text())
    key = _derived(protected_key)
    for origin in (None, {**config["audit_seed_origin"], "how": "fixed"},
                   {**config["audit_seed_origin"], "how": "drawn"},
                   {**config["audit_seed_origin"], "sealed_by": "runner_key"}):
        bare = {k: v for k, v in config.items() if k not in ("seal", "audit_seed_origin")}
        config_path.write_text(json.dumps(seal(bare | ({"audit_seed_origin": origin}
                                                       if origin else {}), key)))
        code, card = evaluate(spec, reviews, f"origin-{bool(origin)}")
        assert code == 2 and card == {} and "AUDIT_SEED_ORIGIN" in capsys.readouterr().err


def test_the_evaluation_refuses_a_submission_changed_after_the_seed(
        spec: Path, judge: Judge, tmp_path: Path, capsys: Any) -> None:
    reviews = tmp_path / "reviews"
    assert review(spec, judge, reviews)[0] == 0
    path = _submission(spec)
    path.write_text(json.dumps(json.loads(path.read_text()), indent=3))  # same value, new bytes
    capsys.readouterr()
    code, card = evaluate(spec, reviews, "out")
    # the seed is derived from the canonical form, which re-spacing leaves as it was: the
    # same submission, the same seed and sample, the same review
    assert code == 0, capsys.readouterr().err
    data = json.loads(path.read_text())
    data["findings"][0]["claim"] += " (revised)"  # a changed submission: a new one
    path.write_text(json.dumps(data))
    code, card = evaluate(spec, reviews, "changed")
    err = capsys.readouterr().err
    assert code == 2 and card == {} and ("STALE_REVIEW" in err
                                         or "SEED_BEFORE_SUBMISSIONS" in err), err


def test_a_seed_of_too_few_bytes_is_a_spec_error(spec: Path, capsys: Any) -> None:
    audit = spec / "audit.yaml"
    audit.write_text(audit.read_text().replace("seed_bytes: 32", "seed_bytes: 8"))
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr()
    text = err.out + err.err
    assert re.search(r"audit\.yaml:\d+:\d+: OUT_OF_RANGE: seed_bytes", text), text


def test_the_shipped_demo_is_pinned_for_its_own_submission_only() -> None:
    # the pin names the demo's seed, the digest of its tasks.json (as loaded) and the sha256
    # of the one scored task's submission file, worked out here from the shipped files
    import rfc8785
    import yaml

    root = Path("specs/finding-quality-discovery")
    [pin] = yaml.safe_load((root / "audit.yaml").read_text())["pinned_seeds"]
    config = json.loads((root / "demo" / "reviews" / "judge_config.json").read_text())
    tasks = json.loads((root / "demo" / "tasks.json").read_text())
    assert pin["seed"] == config["audit_seed"] == "0" * 63 + "1"
    assert pin["tasks_sha256"] == hashlib.sha256(rfc8785.dumps(tasks)).hexdigest()
    assert pin["submissions"] == {GROUP: hashlib.sha256(
        (root / "demo" / "submissions" / f"{GROUP}.json").read_bytes()).hexdigest()}


def test_a_pinned_seed_chooses_no_sample_for_another_submission(tmp_path: Path,
                                                                capsys: Any) -> None:
    # the gated team copies the demo's pinned seed and its review into a folder for its own
    # (reformatted, so other bytes) submission: the pin names the shipped bytes only
    folder = tmp_path / "fqd"
    shutil.copytree(Path("specs/finding-quality-discovery"), folder)
    path = _submission(folder)
    path.write_text(json.dumps(json.loads(path.read_text())))
    assert main(["run", str(folder), "--out", str(tmp_path / "out")]) == 2
    assert "REVIEW_CONFIG_FOREIGN" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_re_running_the_protected_review_derives_the_same_seed(
        spec: Path, judge: Judge, tmp_path: Path, capsys: Any) -> None:
    # issue 36 review C1: the gated team re-triggers the protected review job (a fresh
    # --reviews-dir each time) hoping for a sample that misses the disproving documents;
    # before, each run drew a new sealed seed and the signed release accepted every one
    seeds, samples = [], []
    for i in range(3):
        reviews = tmp_path / f"reviews{i}"
        assert review(spec, judge, reviews)[0] == 0
        seeds.append(json.loads((reviews / "judge_config.json").read_text())["audit_seed"])
        samples.append(json.loads((reviews / f"{GROUP}.json").read_text())
                       ["semantic_audit"]["document_ids"])
        code, _ = evaluate(spec, reviews, f"out{i}")
        assert code == 0, capsys.readouterr().err
    assert len(set(seeds)) == 1 and samples[0] == samples[1] == samples[2]


def test_rewritten_review_grades_are_refused(spec: Path, judge: Judge, tmp_path: Path,
                                            capsys: Any) -> None:
    # issue 36 review C2: after the protected review job, the gated team rewrites the
    # grades in <task>.json (the folder is its own), leaving seed, origin and digests as
    # they were; before, the signed release scored the rewritten grades
    reviews = tmp_path / "reviews"
    assert review(spec, judge, reviews)[0] == 0
    path = reviews / f"{GROUP}.json"
    data = json.loads(path.read_text())
    for row in data["findings"]:
        row.update(statistical_validity=1.0, evidence_entailment=1.0, analytical_depth=1.0,
                   calibration=1.0)
    path.write_text(json.dumps(data, indent=1))
    capsys.readouterr()
    code, card = evaluate(spec, reviews, "forged")
    assert code == 2 and card == {} and "REVIEW_FILE_FOREIGN" in capsys.readouterr().err
    # the same edit with the seal dropped, and a resume over it: refused, never redone
    del data["seal"]
    path.write_text(json.dumps(data))
    code, card = evaluate(spec, reviews, "unsealed")
    assert code == 2 and "REVIEW_FILE_FOREIGN" in capsys.readouterr().err
    calls = judge.calls()
    code, out = review(spec, judge, reviews, capsys=capsys)
    assert code == 1 and f"{GROUP}: error REVIEW_FILE_FOREIGN" in out
    assert judge.calls() == calls and json.loads(path.read_text()) == data  # left as is
