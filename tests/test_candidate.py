"""Issue 36, levers 5 and 6: a release names the build it judges, a deploy job asks "did
this build pass?", and nothing a record or a file name holds can rewrite what engine verify
prints.

The candidate (``engine run --subject NAME@sha256:HEX``) is a subject of the signed
statement and of an SLSA Verification Summary beside the scorecard; both are checked here
with securesystemslib's DSSE code, a verifier independent of the engine's. Expected
digests are made up in the test, never read from the engine.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main

from . import refund
from .conftest import Gate, Spec

BUILD = "ghcr.io/acme/support-agent"
DIGEST = hashlib.sha256(b"the agent image under review").hexdigest()
OTHER = hashlib.sha256(b"another build of the agent").hexdigest()
VSA_TYPE = "https://slsa.dev/verification_summary/v1"


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    assert main(["keygen", "--out-dir", str(tmp_path / "keys")]) == 0
    return tmp_path / "keys"


def dsse_key(public: Path) -> Any:
    """The runner's public key as securesystemslib sees it, keyid computed here."""
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        PublicFormat,
        load_pem_public_key,
    )
    from securesystemslib.signer import SSlibKey

    pub = load_pem_public_key(public.read_bytes())
    keyid = hashlib.sha256(pub.public_bytes(Encoding.Raw, PublicFormat.Raw)).hexdigest()
    return SSlibKey.from_crypto(pub, keyid=keyid)  # type: ignore[arg-type]


def opened(line: str, public: Path) -> dict[str, Any]:
    """The statement of one DSSE envelope, verified by securesystemslib with the key."""
    from securesystemslib.dsse import Envelope

    key = dsse_key(public)
    envelope = Envelope.from_dict(json.loads(line))
    assert set(envelope.verify([key], 1)) == {key.keyid}
    return dict(json.loads(envelope.payload))


def verify(out: Path, keys: Path, capsys: Any, *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["verify", str(out), "--trusted-key", str(keys / "public.pem"), *extra])
    return code, capsys.readouterr().out


def test_the_candidate_is_a_signed_subject_and_verify_asks_for_it(
        spec: Spec, keys: Path, capsys: Any) -> None:
    code, out = spec.run("--key", str(keys / "private.pem"),
                         "--subject", f"{BUILD}@sha256:{DIGEST}")
    assert code == 0
    assert spec.scorecard()["candidates"] == [{"name": BUILD, "sha256": DIGEST}]
    line = (out / "scorecard.intoto.jsonl").read_text().splitlines()[0]
    statement = opened(line, keys / "public.pem")
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    assert subjects[f"candidates/{BUILD}"] == DIGEST
    # the deploy job's question, about this build: yes
    code, said = verify(out, keys, capsys, "--subject", f"{BUILD}@sha256:{DIGEST}",
                        "--require-decision", "PASS")
    assert code == 0, said
    assert f"candidate: {BUILD}@sha256:{DIGEST}" in said
    assert "vsa.intoto.jsonl" in said.split("signed files checked:")[1].splitlines()[0]
    # about another build of the same agent: this PASS is not its evidence
    code, said = verify(out, keys, capsys, "--subject", f"{BUILD}@sha256:{OTHER}")
    assert code == 1 and "INVALID CANDIDATE_MISMATCH" in said, said
    code, said = verify(out, keys, capsys, "--subject", f"ghcr.io/acme/other@sha256:{DIGEST}")
    assert code == 1 and "CANDIDATE_MISMATCH" in said


def test_an_earlier_pass_naming_no_build_is_refused_for_this_one(
        spec: Spec, keys: Path, capsys: Any) -> None:
    # the gated team hands the deploy job last week's validly signed PASS, run before
    # this build existed (or with no --subject): it must not admit this build
    code, out = spec.run("--key", str(keys / "private.pem"), out="last-week")
    assert code == 0
    assert verify(out, keys, capsys)[0] == 0  # valid evidence, of no build
    code, said = verify(out, keys, capsys, "--subject", f"{BUILD}@sha256:{DIGEST}",
                        "--require-decision", "PASS")
    assert code == 1 and "names no candidate" in said, said
    assert not (out / "vsa.intoto.jsonl").exists()  # nothing to admit without a build
    # the folder form (a run's --out) asks the same of every scorecard
    code, said = verify(out, keys, capsys, "--subject",
                        f"{BUILD}@sha256:{DIGEST}")
    assert code == 1 and "INVALID CANDIDATE_MISMATCH" in said


def test_the_vsa_verifies_with_an_independent_dsse_library(
        tmp_path: Path, keys: Path, capsys: Any) -> None:
    gate = Gate(tmp_path)
    subject = ("--subject", f"{BUILD}@sha256:{DIGEST}",
               "--subject", f"{BUILD}-tools@sha256:{OTHER}")
    for fixed, result in ((True, "PASSED"), (False, "FAILED")):
        code, card, out = gate.run(refund.rows(fixed=fixed), "--key",
                                   str(keys / "private.pem"), *subject)
        assert code == (0 if fixed else 1), card["reasons"]
        lines = (out / "vsa.intoto.jsonl").read_text().splitlines()
        assert len(lines) == 2  # one summary per candidate, the file convention's lines
        sha = hashlib.sha256((out / "scorecard.json").read_bytes()).hexdigest()
        seen = {}
        for line in lines:
            statement = opened(line, keys / "public.pem")
            assert statement["_type"] == "https://in-toto.io/Statement/v1"
            assert statement["predicateType"] == VSA_TYPE
            [subject_] = statement["subject"]
            seen[subject_["name"]] = subject_["digest"]["sha256"]
            vsa = statement["predicate"]
            assert vsa["verificationResult"] == result
            assert vsa["resourceUri"] == "oci://" + subject_["name"]  # a registry's name
            assert vsa["verifier"]["id"].startswith("https://")
            assert set(vsa["verifier"]["version"]) == {"specgate"}
            assert vsa["policy"] == {"uri": "specgate:policy/agent-release-gate@1.0.0",
                                     "digest": {"sha256": card["policy_sha256"]}}
            [signed] = [ln for ln in (out / "scorecard.intoto.jsonl").read_text().splitlines()]
            run_id = opened(signed, keys / "public.pem")["predicate"]["run"]["id"]
            assert vsa["inputAttestations"] == [{
                "name": f"specgate:run/{run_id}/evaluation/agent-release-gate",
                "uri": "scorecard.json", "digest": {"sha256": sha}}]
            # SLSA VSA v1.0: the highest level verified, or FAILED when verification failed
            assert vsa["verifiedLevels"] == (["SPECGATE_GATE_PASSED"] if fixed else ["FAILED"])
            assert vsa["slsaVersion"] == "1.0"
            assert len(vsa["timeVerified"]) == 20 and vsa["timeVerified"].endswith("Z")
        assert seen == {BUILD: DIGEST, f"{BUILD}-tools": OTHER}
        if fixed:
            passed = out
    # the PASS run's VSA swapped in beside the FAIL: both signed by the runner, and
    # engine verify names the one that is not this scorecard's
    (out / "vsa.intoto.jsonl").write_bytes((passed / "vsa.intoto.jsonl").read_bytes())
    code, said = verify(out, keys, capsys)
    assert code == 1 and "INVALID VSA_MISMATCH" in said, said
    # removed: the scorecard still verifies, and says the summary is not there
    (out / "vsa.intoto.jsonl").unlink()
    code, said = verify(out, keys, capsys)
    assert code == 0 and "not present (not checked): vsa.intoto.jsonl" in said


def test_require_decision_pass_refuses_a_validly_signed_fail(
        tmp_path: Path, keys: Path, capsys: Any) -> None:
    code, card, out = Gate(tmp_path).run(refund.rows(fixed=False), "--key",
                                         str(keys / "private.pem"),
                                         "--subject", f"{BUILD}@sha256:{DIGEST}")
    assert code == 1 and card["decision"] == "FAIL"
    assert verify(out, keys, capsys, "--subject", f"{BUILD}@sha256:{DIGEST}")[0] == 0
    code, said = verify(out, keys, capsys, "--subject", f"{BUILD}@sha256:{DIGEST}",
                        "--require-decision", "PASS")
    assert code == 1
    assert ("INVALID DECISION_REFUSED: the scorecard of 'agent-release-gate' "
                           "decided FAIL, not PASS") in said, said
    code, said = verify(out, keys, capsys, "--require-decision", "PASS")  # as a folder
    assert code == 1 and "INVALID DECISION_REFUSED" in said


def test_a_release_whose_policy_requires_a_candidate_is_incomplete_without_one(
        spec: Spec, keys: Path, capsys: Any) -> None:
    spec.edit("policy.yaml", lambda d: d["spec"]["gate"].update(subject="required"))
    code, out = spec.run("--key", str(keys / "private.pem"))
    card = spec.scorecard()
    assert code == 3 and card["decision"] == "INCOMPLETE"
    [reason] = [r for r in card["reasons"] if r["code"] == "CANDIDATE_NOT_NAMED"]
    assert reason["spec_path"] == "policy:spec.gate.subject"
    assert "candidates" not in card
    code, out = spec.run("--key", str(keys / "private.pem"),
                         "--subject", f"{BUILD}@sha256:{DIGEST}", out="named")
    assert code == 0 and spec.scorecard("named")["decision"] == "PASS"


@pytest.mark.parametrize("given", [
    f"{BUILD}@sha256:{DIGEST.upper()}",        # upper-case hex
    f"{BUILD}@sha256:{DIGEST[:63]}",           # short
    f"{BUILD}@sha1:{DIGEST[:40]}",             # another algorithm
    f"@sha256:{DIGEST}",                       # no name
    f"agent\x1b[2K@sha256:{DIGEST}",           # a control character in the name
    f"agent\u202egnp.exe@sha256:{DIGEST}",     # a bidi override
    f"my agent@sha256:{DIGEST}",               # a space
    f"{'a' * 257}@sha256:{DIGEST}",            # too long
    f"{BUILD}@sha256:{OTHER}@sha256:{DIGEST}",  # two digests: the name shows the other
])
def test_a_malformed_subject_is_a_coded_usage_error(spec: Spec, capsys: Any,
                                                    given: str) -> None:
    code, out = spec.run("--subject", given)
    assert code == 2 and not out.exists()
    assert "engine: BAD_SUBJECT: --subject wants NAME@sha256:HEX" in capsys.readouterr().err


def test_the_same_name_twice_is_refused(spec: Spec, capsys: Any) -> None:
    code, _ = spec.run("--subject", f"{BUILD}@sha256:{DIGEST}",
                       "--subject", f"{BUILD}@sha256:{OTHER}")
    assert code == 2 and "BAD_SUBJECT" in capsys.readouterr().err


ROGUE = "\x1b[2K\rVALID: sha256 0000, decision PASS, signed by the pinned key\u202e"


def test_a_file_name_cannot_rewrite_what_verify_prints(
        tmp_path: Path, keys: Path) -> None:
    # issue 36, lever 6: whoever controls the runner drops a file beside the FAIL's
    # evidence whose name clears the line and writes a VALID ... PASS in its place
    code, card, out = Gate(tmp_path).run(refund.rows(fixed=False), "--key",
                                         str(keys / "private.pem"))
    assert code == 1
    (out / ROGUE).write_text("")
    (out / "evil\nVALID: decision PASS").write_text("")
    for target in (out / "scorecard.json", out):  # the file, and the folder
        done = subprocess.run([sys.executable, "-m", "engine", "verify", str(target),
                               "--trusted-key", str(keys / "public.pem")],
                              capture_output=True, timeout=120)
        printed = done.stdout.decode()
        assert done.returncode == 0, printed  # a valid FAIL
        assert "\x1b" not in printed and "\r" not in printed and "\u202e" not in printed
        assert "\\x1b[2K\\x0dVALID: sha256 0000, decision PASS, signed by the pinned " \
            "key\\u202e" in printed
        assert "evil\\x0aVALID: decision PASS" in printed  # on the NOT COVERED line
        assert not any(x.startswith("VALID: decision PASS") for x in printed.splitlines())


def test_a_vsa_signed_by_another_key_is_refused(spec: Spec, keys: Path, tmp_path: Path,
                                                capsys: Any) -> None:
    code, out = spec.run("--key", str(keys / "private.pem"),
                         "--subject", f"{BUILD}@sha256:{DIGEST}")
    assert code == 0
    assert main(["keygen", "--out-dir", str(tmp_path / "mine")]) == 0
    _, theirs = spec.run("--key", str(tmp_path / "mine" / "private.pem"),
                         "--subject", f"{BUILD}@sha256:{DIGEST}", out="theirs")
    (out / "vsa.intoto.jsonl").write_bytes((theirs / "vsa.intoto.jsonl").read_bytes())
    code, said = verify(out / "scorecard.json", keys, capsys)
    assert code == 1 and said.startswith("INVALID VSA_MISMATCH: vsa.intoto.jsonl: "), said


@pytest.mark.parametrize("given", [f"{BUILD}@sha256:{DIGEST[:-1]}G", f"{BUILD}"])
def test_verify_refuses_a_malformed_subject_as_a_usage_error(spec: Spec, keys: Path,
                                                             capsys: Any, given: str) -> None:
    code, out = spec.run("--key", str(keys / "private.pem"))
    assert code == 0
    capsys.readouterr()
    code = main(["verify", str(out), "--trusted-key", str(keys / "public.pem"),
                 "--subject", given])
    assert code == 2 and "engine: BAD_SUBJECT: --subject" in capsys.readouterr().err


def two_evaluations(root: Path) -> Path:
    """The reviewer's run (attacks/a1): one build, two Evaluations under one policy;
    ``support-agent`` PASSes, ``support-agent-b`` FAILs on records that no longer resolve."""
    from .conftest import EXAMPLE

    specs = root / "m"
    shutil.copytree(EXAMPLE, specs / "good")
    shutil.copytree(EXAMPLE, specs / "bad")
    evaluation = specs / "bad" / "evaluation.yaml"
    text = evaluation.read_text()
    assert "\n  name: support-agent\n" in text
    evaluation.write_text(text.replace("\n  name: support-agent\n",
                                       "\n  name: support-agent-b\n"))
    runs_file = specs / "bad" / "data" / "runs.jsonl"
    rows = [json.loads(line) for line in runs_file.read_text().splitlines()]
    for row in rows:
        row["output"]["resolved"] = False
        row["metrics"]["latency_ms"] = 99999
    runs_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return specs


def vsa_lines(path: Path, public: Path) -> list[dict[str, Any]]:
    return [opened(line, public) for line in path.read_text().splitlines()]


def test_a_run_that_failed_signs_no_passed_summary_for_the_build(
        tmp_path: Path, keys: Path, capsys: Any) -> None:
    # issue 36 review: the PASSing evaluation's own VSA said PASSED for a build whose run
    # failed, and an admission tool reading it admitted the build
    build = f"{BUILD}@sha256:{DIGEST}"
    out = tmp_path / "out"
    code = main(["run", str(two_evaluations(tmp_path)), "--out", str(out), "--key",
                 str(keys / "private.pem"), "--run-id", "R1", "--subject", build])
    assert code == 1
    cards = {n: json.loads((out / n / "scorecard.json").read_bytes())
             for n in ("support-agent", "support-agent-b")}
    assert {n: c["decision"] for n, c in cards.items()} == {
        "support-agent": "PASS", "support-agent-b": "FAIL"}
    assert not list(out.glob("*/vsa.intoto.jsonl"))  # no evaluation speaks for the run
    [statement] = vsa_lines(out / "vsa.intoto.jsonl", keys / "public.pem")
    vsa = statement["predicate"]
    assert statement["subject"] == [{"name": BUILD, "digest": {"sha256": DIGEST}}]
    assert vsa["verificationResult"] == "FAILED" and vsa["verifiedLevels"] == ["FAILED"]
    summary_sha = hashlib.sha256((out / "summary.json").read_bytes()).hexdigest()
    assert vsa["inputAttestations"] == [
        {"name": "specgate:run/R1", "uri": "summary.json",
         "digest": {"sha256": summary_sha}},
        *({"name": f"specgate:run/R1/evaluation/{n}", "uri": f"{n}/scorecard.json",
           "digest": {"sha256": hashlib.sha256(
               (out / n / "scorecard.json").read_bytes()).hexdigest()}}
          for n in ("support-agent-b", "support-agent"))]  # by path: '-' sorts before '/'
    assert vsa["policy"] == {"uri": "specgate:policy/support-agent-release@1.0.0",
                             "digest": {"sha256": cards["support-agent"]["policy_sha256"]}}
    # the deploy job asks one PASSing scorecard of the run: refused, told to ask the run
    code, said = verify(out / "support-agent" / "scorecard.json", keys, capsys, "--run-id",
                        "R1", "--subject", build, "--require-decision", "PASS")
    assert code == 1 and said.startswith(
        "INVALID PART_OF_RUN: the scorecard of 'support-agent' is one of run R1's 2 "
        "evaluations (also support-agent-b)"), said
    assert f"verify the run's folder (engine verify {out} ...)" in said
    code, said = verify(out / "support-agent" / "scorecard.json", keys, capsys)
    assert code == 0, said  # without the deploy's question it is valid evidence
    code, said = verify(out, keys, capsys, "--run-id", "R1", "--subject", build,
                        "--require-decision", "PASS")
    assert code == 1 and "DECISION_REFUSED" in said
    code, said = verify(out, keys, capsys, "--run-id", "R1", "--subject", build)
    assert code == 0, said  # the run's FAILED summary is its true summary
    assert "vsa.intoto.jsonl" in said.split("summary.json: VALID")[1].split(
        "signed files checked:")[1].splitlines()[0]


def test_a_run_whose_every_evaluation_passed_has_one_passed_summary(
        tmp_path: Path, keys: Path, capsys: Any) -> None:
    build = f"{BUILD}@sha256:{DIGEST}"
    specs = two_evaluations(tmp_path)
    shutil.copy(specs / "good" / "data" / "runs.jsonl", specs / "bad" / "data" / "runs.jsonl")
    out = tmp_path / "out"
    assert main(["run", str(specs), "--out", str(out), "--key", str(keys / "private.pem"),
                 "--run-id", "R2", "--subject", build]) == 0
    [statement] = vsa_lines(out / "vsa.intoto.jsonl", keys / "public.pem")
    assert statement["predicate"]["verificationResult"] == "PASSED"
    assert statement["predicate"]["verifiedLevels"] == ["SPECGATE_GATE_PASSED"]
    assert [a["uri"] for a in statement["predicate"]["inputAttestations"]] == [
        "summary.json", "support-agent-b/scorecard.json", "support-agent/scorecard.json"]
    code, said = verify(out, keys, capsys, "--run-id", "R2", "--subject", build,
                        "--require-decision", "PASS")
    assert code == 0, said
    # the FAILED run's summary (same key, same build) swapped in: caught
    failed = tmp_path / "failed"
    other = two_evaluations(tmp_path / "again")
    assert main(["run", str(other), "--out", str(failed), "--key",
                 str(keys / "private.pem"), "--run-id", "R2", "--subject", build]) == 1
    (out / "vsa.intoto.jsonl").write_bytes((failed / "vsa.intoto.jsonl").read_bytes())
    code, said = verify(out, keys, capsys, "--subject", build)
    assert code == 1 and "summary.json: INVALID VSA_MISMATCH" in said, said
    # an evaluation's own PASSED summary (a single run of it) dropped into the run: caught
    assert main(["run", str(specs / "good"), "--out", str(tmp_path / "alone"), "--key",
                 str(keys / "private.pem"), "--run-id", "R2", "--subject", build]) == 0
    (out / "vsa.intoto.jsonl").unlink()
    shutil.copy(tmp_path / "alone" / "vsa.intoto.jsonl", out / "support-agent")
    code, said = verify(out, keys, capsys, "--subject", build)
    assert code == 1 and "INVALID VSA_MISMATCH: vsa.intoto.jsonl beside the scorecard of " \
        "one of run R2's 2 evaluations" in said, said
    (out / "support-agent" / "vsa.intoto.jsonl").unlink()
    code, said = verify(out, keys, capsys, "--subject", build)  # the run's VSA removed
    assert code == 0 and "  not present (not checked): vsa.intoto.jsonl" in said, said


def test_several_evaluations_with_a_subject_need_out(tmp_path: Path, keys: Path,
                                                     capsys: Any,
                                                     monkeypatch: Any) -> None:
    # without --out each evaluation lands in its own folder: no top for the run's VSA
    monkeypatch.chdir(tmp_path)
    code = main(["run", str(two_evaluations(tmp_path)), "--key", str(keys / "private.pem"),
                 "--subject", f"{BUILD}@sha256:{DIGEST}"])
    assert code == 2
    assert "engine: SUBJECT_NEEDS_OUT: --subject with several Evaluations needs --out" in \
        capsys.readouterr().err
    assert not (tmp_path / ".specgate").exists() and not list(tmp_path.glob("*/*/vsa*"))


@pytest.mark.parametrize(("name", "uri"), [
    ("ghcr.io/acme/agent", "oci://ghcr.io/acme/agent"),
    ("localhost:5000/agent", "oci://localhost:5000/agent"),  # a port, not a scheme
    ("pkg:docker/acme/agent", "pkg:docker/acme/agent"),
    ("https://example.com/agent-1.2.tar.gz", "https://example.com/agent-1.2.tar.gz"),
    ("agent<é>", "oci://agent%3C%C3%A9%3E"),  # what a URI may not hold, percent-encoded
    ("agent:latest", "oci://agent:latest"),  # a tag, not a scheme (second review)
    ("urn:example:agent", "urn:example:agent"),
])
def test_the_resource_uri_of_a_candidate_is_a_uri(spec: Spec, keys: Path, name: str,
                                                  uri: str) -> None:
    code, out = spec.run("--key", str(keys / "private.pem"),
                         "--subject", f"{name}@sha256:{DIGEST}")
    assert code == 0
    [statement] = vsa_lines(out / "vsa.intoto.jsonl", keys / "public.pem")
    assert statement["predicate"]["resourceUri"] == uri
    assert statement["subject"][0]["name"] == name


def test_a_summary_beside_a_scorecard_that_names_no_build_is_refused(
        spec: Spec, keys: Path, capsys: Any) -> None:
    # second review of issue 36: an earlier run's genuine PASSED summary copied beside a
    # run that named no build was only "not covered" (exit 0), and an admission tool
    # reading the folder found a PASSED summary signed by the runner's key
    code, old = spec.run("--key", str(keys / "private.pem"), "--subject",
                         f"{BUILD}@sha256:{DIGEST}", out="old")
    assert code == 0 and (old / "vsa.intoto.jsonl").exists()
    code, new = spec.run("--key", str(keys / "private.pem"), out="new")
    assert code == 0 and not (new / "vsa.intoto.jsonl").exists()
    shutil.copy(old / "vsa.intoto.jsonl", new / "vsa.intoto.jsonl")
    code, said = verify(new, keys, capsys)
    assert code == 1 and "VSA_MISMATCH" in said and "names no candidate" in said, said


def test_one_scorecard_of_a_run_without_out_does_not_speak_for_the_run(
        tmp_path: Path, keys: Path, capsys: Any, monkeypatch: Any) -> None:
    # second review of issue 36: without --out each scorecard named only its own
    # evaluation as its run, so a deploy checking --run-id and --require-decision PASS
    # admitted one PASSing evaluation of a run whose other evaluation FAILed
    monkeypatch.chdir(tmp_path)
    code = main(["run", str(two_evaluations(tmp_path)), "--key", str(keys / "private.pem"),
                 "--run-id", "R2"])
    assert code == 1
    [passing] = (tmp_path / "specgate-out" / "support-agent").glob("*/scorecard.json")
    card = json.loads(passing.read_bytes())
    assert card["decision"] == "PASS"
    code, said = verify(passing, keys, capsys, "--run-id", "R2", "--require-decision", "PASS")
    assert code == 1 and "PART_OF_RUN" in said and "also support-agent-b" in said, said
    code, said = verify(passing, keys, capsys, "--run-id", "R2")
    assert code == 0, said  # without the deploy's question it is valid evidence
