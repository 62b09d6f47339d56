"""Evidence: canonical bytes, schema, digests, mergeable aggregates, signatures."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import rfc8785
import yaml

from engine import VerifyError
from engine.cli import main
from engine.decide.decision import decide
from engine.evidence import scorecard as evidence
from engine.evidence.signing import load_public
from engine.evidence.verify import verify as verify_api
from engine.run import rows as runner
from engine.spec.evaluation import load

from .conftest import ROOT, Spec, need_tool

SCHEMA = json.loads((ROOT / "schemas" / "scorecard.schema.json").read_text())


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    folder = tmp_path / "keys"
    assert main(["keygen", "--out-dir", str(folder)]) == 0
    return folder


def signed_run(spec: Spec, keys: Path, out: str = "out") -> Path:
    code, dest = spec.run("--key", str(keys / "private.pem"), out=out)
    assert code == 0
    return dest


def test_scorecard_is_canonical_and_matches_its_schema(spec: Spec) -> None:
    code, out = spec.run()
    data = (out / "scorecard.json").read_bytes()
    assert data == rfc8785.dumps(json.loads(data)) and not data.endswith(b"\n")
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(data))
    rows = (out / "rows.jsonl").read_bytes()
    assert hashlib.sha256(rows).hexdigest() == json.loads(data)["rows_sha256"]
    for line in rows.splitlines():
        assert line == rfc8785.dumps(json.loads(line))


def test_incomplete_scorecard_matches_its_schema(spec: Spec) -> None:
    runs = spec.runs()
    del runs[0]["output"]["reply"]
    spec.write_runs(runs[:-2] + [{"id": "bad"}])
    assert spec.run()[0] == 3
    jsonschema.Draft202012Validator(SCHEMA).validate(spec.scorecard())


def test_fixed_top_level_names(spec: Spec) -> None:
    spec.run()
    card = spec.scorecard()
    for name in ("decision", "overall_pass", "policy_sha256", "suite_sha256", "categories",
                 "reasons", "rows_sha256"):
        assert name in card
    for cat in card["categories"].values():
        assert {"n", "passed", "failed", "errors", "abstained", "rate", "wilson_lower",
                "wilson_upper", "threshold", "met"} <= set(cat)


def independent_digest(path: Path) -> str:
    return hashlib.sha256(rfc8785.dumps(yaml.safe_load(path.read_text()))).hexdigest()


def policy_digest(folder: Path) -> str:
    """agent-release-gate §10: the digest of {policy, scoring_data, scoring_version}."""
    schema = json.loads((folder / "schemas" / "reply.schema.json").read_text())
    document = {"policy": yaml.safe_load((folder / "policy.yaml").read_text()),
                "scoring_data": {"schemas/reply.schema.json": hashlib.sha256(
                    rfc8785.dumps(schema)).hexdigest()},
                "scoring_version": "specgate-primitives/2"}  # compact PASS rows
    return hashlib.sha256(rfc8785.dumps(document)).hexdigest()


def test_spec_digests_ignore_format_and_follow_values(spec: Spec) -> None:
    spec.run(out="a")
    first = spec.scorecard("a")
    assert first["policy_sha256"] == policy_digest(spec.dir)
    assert first["policy_sha256"] == hashlib.sha256(
        rfc8785.dumps(first["policy_document"])).hexdigest()  # recomputable from the card
    assert first["suite_sha256"] == independent_digest(spec.dir / "suite.yaml")
    # Reformat: comments gone, flow style, keys reordered. Same meaning, same digest.
    data = spec.data("policy.yaml")
    (spec.dir / "policy.yaml").write_text(
        "# reformatted\n" + yaml.safe_dump(dict(reversed(list(data.items()))),
                                           default_flow_style=True, width=60))
    spec.run(out="b")
    assert spec.scorecard("b")["policy_sha256"] == first["policy_sha256"]
    # Any value change changes it.
    spec.edit("policy.yaml", lambda d: d["spec"]["categories"]["safety"].update(weight=0.31))
    spec.run(out="c")
    assert spec.scorecard("c")["policy_sha256"] != first["policy_sha256"]
    assert spec.scorecard("c")["suite_sha256"] == first["suite_sha256"]
    # Scoring data the policy reads is bound too: a changed schema file is a new policy.
    schema = json.loads((spec.dir / "schemas" / "reply.schema.json").read_text())
    schema["properties"]["reply"]["maxLength"] = 5000
    (spec.dir / "schemas" / "reply.schema.json").write_text(json.dumps(schema, indent=4))
    spec.run(out="d")
    assert spec.scorecard("d")["policy_sha256"] == policy_digest(spec.dir)
    assert spec.scorecard("d")["policy_sha256"] != spec.scorecard("c")["policy_sha256"]


def test_split_and_merged_aggregates_give_the_identical_scorecard(spec: Spec,
                                                                  tmp_path: Path) -> None:
    spec.write_runs(spec.runs()[:-1] + [{"id": "odd", "case_id": "nope"}])
    [evaluation] = load([spec.root])
    items = list(runner.records(evaluation))
    rows: list[bytes] = []

    def sink(row: dict[str, Any]) -> None:
        rows.append(rfc8785.dumps(row) + b"\n")

    whole = runner.run(evaluation, items, sink)
    whole_rows = b"".join(rows)
    rows.clear()
    merged = runner.run(evaluation, items[:7], sink).merge(runner.run(evaluation, items[7:], sink))
    assert b"".join(rows) == whole_rows
    inputs = {"runs": {"format": "jsonl", "sha256": "0" * 64, "records": len(items)}}
    sha = hashlib.sha256(whole_rows).hexdigest()
    cards = [evidence.canonical(evidence.scorecard(evaluation, tally, decide(evaluation, tally),
                                                  sha, inputs)) for tally in (whole, merged)]
    assert cards[0] == cards[1]
    assert json.loads(cards[0])["decision"] == "INCOMPLETE"


def test_keygen_modes_and_refusal(keys: Path, capsys: Any) -> None:
    assert stat.S_IMODE((keys / "private.pem").stat().st_mode) == 0o600
    assert b"BEGIN PRIVATE KEY" in (keys / "private.pem").read_bytes()
    assert b"BEGIN PUBLIC KEY" in (keys / "public.pem").read_bytes()
    before = (keys / "private.pem").read_bytes()
    assert main(["keygen", "--out-dir", str(keys)]) == 2
    assert "KEY_EXISTS" in capsys.readouterr().err
    assert (keys / "private.pem").read_bytes() == before


def test_signed_run_writes_the_evidence_set(spec: Spec, keys: Path) -> None:
    out = signed_run(spec, keys)
    assert sorted(p.name for p in out.iterdir()) == [
        "findings.jsonl", "junit.xml", "rows.jsonl", "scorecard.html", "scorecard.intoto.jsonl",
        "scorecard.json", "scorecard.json.sig", "scorecard.md", "signer.pub.pem"]
    assert len((out / "scorecard.json.sig").read_bytes()) == 64


def test_signing_key_from_the_environment(spec: Spec, keys: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("SPECGATE_SIGNING_KEY", str(keys / "private.pem"))
    code, out = spec.run()
    assert code == 0 and (out / "scorecard.json.sig").exists()


def test_openssl_verifies_the_raw_signature(spec: Spec, keys: Path) -> None:
    out = signed_run(spec, keys)
    command = [need_tool("openssl"), "pkeyutl", "-verify", "-pubin", "-inkey",
               str(keys / "public.pem"), "-rawin", "-in", str(out / "scorecard.json"), "-sigfile",
               str(out / "scorecard.json.sig")]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0 and "Signature Verified Successfully" in done.stdout
    data = bytearray((out / "scorecard.json").read_bytes())
    data[10] ^= 1
    (out / "scorecard.json").write_bytes(bytes(data))
    assert subprocess.run(command, capture_output=True).returncode != 0


def test_openssl_verifies_the_dsse_envelope(spec: Spec, keys: Path, tmp_path: Path) -> None:
    out = signed_run(spec, keys)
    envelope = json.loads((out / "scorecard.intoto.jsonl").read_text())
    body = base64.b64decode(envelope["payload"])
    kind = envelope["payloadType"].encode()
    assert kind == b"application/vnd.in-toto+json"
    pae = b"DSSEv1 " + str(len(kind)).encode() + b" " + kind + b" " + \
        str(len(body)).encode() + b" " + body
    (tmp_path / "pae").write_bytes(pae)
    (tmp_path / "sig").write_bytes(base64.b64decode(envelope["signatures"][0]["sig"]))
    done = subprocess.run([need_tool("openssl"), "pkeyutl", "-verify", "-pubin", "-inkey",
                           str(keys / "public.pem"), "-rawin", "-in", str(tmp_path / "pae"),
                           "-sigfile", str(tmp_path / "sig")], capture_output=True)
    assert done.returncode == 0
    statement = json.loads(body)
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    card = (out / "scorecard.json").read_bytes()
    assert subjects["scorecard.json"] == hashlib.sha256(card).hexdigest()
    assert subjects["rows.jsonl"] == json.loads(card)["rows_sha256"]
    assert statement["predicate"]["policy_sha256"] == json.loads(card)["policy_sha256"]


def test_a_dsse_library_verifies_the_envelope(spec: Spec, keys: Path) -> None:
    """securesystemslib's DSSE code (PAE, keyid matching, threshold) is a third path."""
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        PublicFormat,
        load_pem_public_key,
    )
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError
    from securesystemslib.signer import SSlibKey

    out = signed_run(spec, keys)
    public = load_pem_public_key((keys / "public.pem").read_bytes())
    raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
    keyid = hashlib.sha256(raw).hexdigest()  # the documented keyid, computed here
    key = SSlibKey.from_crypto(public, keyid=keyid)  # type: ignore[arg-type]
    line = (out / "scorecard.intoto.jsonl").read_text().splitlines()[0]
    envelope = Envelope.from_dict(json.loads(line))
    assert set(envelope.verify([key], 1)) == {keyid}
    statement = json.loads(envelope.payload)
    files = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    for name in ("scorecard.json", "rows.jsonl", "scorecard.md", "scorecard.html",
                 "junit.xml"):
        assert files[name] == hashlib.sha256((out / name).read_bytes()).hexdigest()
    tampered = json.loads(line)
    body = bytearray(base64.b64decode(tampered["payload"]))
    body[body.index(b"PASS")] = ord("F")
    tampered["payload"] = base64.b64encode(bytes(body)).decode()
    with pytest.raises(VerificationError):
        Envelope.from_dict(tampered).verify([key], 1)


def verify(out: Path, key: Path | None, capsys: Any) -> tuple[int, str]:
    args = ["verify", str(out / "scorecard.json")] + (["--trusted-key", str(key)] if key else [])
    capsys.readouterr()  # drop what earlier commands printed
    code = main(args)
    return code, capsys.readouterr().out


def test_verify_pinned_and_unpinned(spec: Spec, keys: Path, capsys: Any) -> None:
    out = signed_run(spec, keys)
    code, text = verify(out, keys / "public.pem", capsys)
    assert code == 0 and text.startswith("VALID")
    code, text = verify(out, None, capsys)
    assert code == 1 and "AUTHORSHIP UNVERIFIED" in text


def test_verify_fails_after_any_one_byte_change(spec: Spec, keys: Path, capsys: Any) -> None:
    out = signed_run(spec, keys)
    code, text = verify(out, keys / "public.pem", capsys)
    assert code == 0, text
    original = (out / "scorecard.json").read_bytes()
    pinned = load_public(keys / "public.pem")
    seen = set()
    for index in range(len(original)):  # every byte, each changed once
        data = bytearray(original)
        data[index] = ord("7") if data[index] != ord("7") else ord("8")
        (out / "scorecard.json").write_bytes(bytes(data))
        with pytest.raises(VerifyError) as caught:
            verify_api(out / "scorecard.json", pinned)
        seen.add(caught.value.code)
    # the digest is checked before the bytes are parsed: unsigned bytes are never read
    assert seen == {"DIGEST_MISMATCH"}


def test_bytes_the_signer_vouched_for_must_still_be_canonical(spec: Spec, keys: Path,
                                                               capsys: Any) -> None:
    # a signer that signs reformatted bytes (statement digest, raw .sig and all) is refused
    # after the signature checks: NOT_CANONICAL
    from engine.evidence import signing
    out = signed_run(spec, keys)
    data = json.dumps(json.loads((out / "scorecard.json").read_bytes()), indent=1).encode()
    envelope = json.loads((out / "scorecard.intoto.jsonl").read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]
                if s["name"] != "scorecard.json"}
    key = signing.load_private(keys / "private.pem")
    (out / "scorecard.json").write_bytes(data)
    for name, signed in signing.signed_files(key, "scorecard.json", data, subjects,
                                             statement["predicateType"],
                                             statement["predicate"]).items():
        (out / name).write_bytes(signed)
    code, text = verify(out, keys / "public.pem", capsys)
    assert code == 1 and text.startswith("INVALID NOT_CANONICAL:"), text


@pytest.mark.parametrize("tamper, code", [
    (lambda out: (out / "scorecard.json").write_bytes(
        json.dumps(json.loads((out / "scorecard.json").read_bytes()), indent=1).encode()),
     "DIGEST_MISMATCH"),
    (lambda out: (out / "rows.jsonl").write_bytes((out / "rows.jsonl").read_bytes() + b"{}\n"),
     "DIGEST_MISMATCH"),
    (lambda out: (out / "rows.jsonl").unlink(), "SUBJECT_MISSING"),
    (lambda out: (out / "findings.jsonl").write_bytes(
        b"\n".join((out / "findings.jsonl").read_bytes().splitlines()[1:]) + b"\n"),
     "DIGEST_MISMATCH"),
    (lambda out: (out / "findings.jsonl").unlink(), "SUBJECT_MISSING"),
    (lambda out: (out / "scorecard.json.sig").write_bytes(bytes(64)), "BAD_SIGNATURE"),
    (lambda out: (out / "scorecard.json.sig").unlink(), "UNSIGNED"),
    (lambda out: (out / "scorecard.intoto.jsonl").write_text("not json\n"), "BAD_ENVELOPE"),
])
def test_verify_codes(spec: Spec, keys: Path, capsys: Any, tamper: Any, code: str) -> None:
    out = signed_run(spec, keys)
    tamper(out)
    exit_code, text = verify(out, keys / "public.pem", capsys)
    assert exit_code == 1 and text.startswith(f"INVALID {code}:"), text
    assert len(text.strip().splitlines()) == 1


def test_verify_wrong_pinned_key(spec: Spec, keys: Path, tmp_path: Path, capsys: Any) -> None:
    out = signed_run(spec, keys)
    main(["keygen", "--out-dir", str(tmp_path / "other")])
    capsys.readouterr()
    code, text = verify(out, tmp_path / "other" / "public.pem", capsys)
    assert code == 1 and text.startswith("INVALID KEY_NOT_TRUSTED")


def test_verify_resigned_by_an_impostor(spec: Spec, keys: Path, tmp_path: Path,
                                        capsys: Any) -> None:
    """Someone re-runs with their own key and swaps the whole folder: not the pinned key."""
    impostor = tmp_path / "impostor"
    main(["keygen", "--out-dir", str(impostor)])
    out = signed_run(spec, impostor)
    capsys.readouterr()
    code, text = verify(out, keys / "public.pem", capsys)
    assert code == 1 and "KEY_NOT_TRUSTED" in text


def test_verify_envelope_naming_another_scorecard(spec: Spec, keys: Path, capsys: Any) -> None:
    first = signed_run(spec, keys, out="first")
    spec.edit("policy.yaml", lambda d: d["spec"]["overall"].update(threshold=0.95))
    second = signed_run(spec, keys, out="second")
    shutil.copy(first / "scorecard.intoto.jsonl", second / "scorecard.intoto.jsonl")
    code, text = verify(second, keys / "public.pem", capsys)
    assert code == 1 and "DIGEST_MISMATCH" in text


def test_verify_scorecard_with_a_large_integral_double(spec: Spec, keys: Path,
                                                        capsys: Any) -> None:
    """JCS writes 9.8e19 as an integer literal; the verifier must read it back as a double."""
    spec.edit("policy.yaml", lambda d: d["spec"]["overall"].update(formula="weighted * 1e+20",
                                                                   threshold=0.5))
    out = signed_run(spec, keys)
    assert b'"score":98333333333333330000' in (out / "scorecard.json").read_bytes()
    code, text = verify(out, keys / "public.pem", capsys)
    assert code == 0, text


def test_trusted_key_that_is_not_a_key(spec: Spec, keys: Path, capsys: Any) -> None:
    out = signed_run(spec, keys)
    (keys / "junk.pem").write_text("hello")
    assert main(["verify", str(out / "scorecard.json"), "--trusted-key",
                 str(keys / "junk.pem")]) == 2
    assert "BAD_KEY" in capsys.readouterr().err


def test_hash_command(spec: Spec, capsys: Any) -> None:
    assert main(["hash", str(spec.root)]) == 0
    text = capsys.readouterr().out
    assert policy_digest(spec.dir) in text
    assert independent_digest(spec.dir / "suite.yaml") in text


def test_state_moved_to_disk_gives_the_same_evidence(tmp_path: Path, monkeypatch: Any) -> None:
    """Row ids and case counts move to a temporary database past a limit (flat memory);
    with a limit of 7 entries a 3,000-row run, duplicate ids included, writes the same
    evidence as with everything in memory."""
    import json as json_

    from bench.assevra_data import rows as generated_rows
    from engine.decide import spill as _spill

    from .conftest import Gate, suite_sha256
    gate = Gate(tmp_path)  # the generic gate, with the clean dataset pinned as its suite
    gate.pin(suite_sha256(generated_rows(3000, seed=4)))
    lines = [json_.dumps(r) for r in generated_rows(3000, seed=4)]
    clean = tmp_path / "clean.jsonl"
    clean.write_text("\n".join(lines) + "\n")
    lines[2500] = lines[40]  # a duplicate id long after the spill
    duplicated = tmp_path / "duplicated.jsonl"
    duplicated.write_text("\n".join(lines) + "\n")
    for data, code in ((clean, 1), (duplicated, 3)):  # FAIL with pass^k; INCOMPLETE
        outs = []
        for limit in (10**9, 7):
            monkeypatch.setattr(_spill, "LIMIT", limit)
            outs.append(tmp_path / f"{data.stem}-{limit}")
            assert main(["run", str(gate.dir), "--input", f"runs={data}", "--out",
                         str(outs[-1]), "--as-of", "2026-11-29"]) == code
        files = [{p.name: p.read_bytes() for p in out.iterdir()} for out in outs]
        assert files[0] == files[1]
    assert b"DUPLICATE_ID" in files[1]["validation.json"]
    card = json.loads((tmp_path / "clean-7" / "scorecard.json").read_bytes())
    assert card["reliability"]["pii"]["repeated_cases"] > 7  # read back from the database
