"""`engine verify --trusted-key` binds every file the signed statement names.

Each run kind writes its own files (the release gate validation.json, a judged run
judgements.jsonl, discovery report.json / report.md). The expected digests are taken with
OpenSSL, independently of the engine; the attacks edit a file after signing and expect
`engine verify` to fail and name it.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import main
from engine.evidence import signing

from . import refund
from .conftest import ROOT, Gate, Spec, need_tool
from .judge_server import Judge

SIGNATURE_FILES = {"scorecard.json.sig", "scorecard.intoto.jsonl", "signer.pub.pem"}
PROJECTIONS = {"scorecard.md", "scorecard.html", "junit.xml"}


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    assert main(["keygen", "--out-dir", str(tmp_path / "keys")]) == 0
    return tmp_path / "keys"


@pytest.fixture
def judge() -> Iterator[Judge]:
    server = Judge()
    yield server
    server.close()


def plain(tmp_path: Path, keys: Path, judge: Judge, monkeypatch: Any) -> Path:
    spec = Spec(tmp_path)
    return spec.run("--key", str(keys / "private.pem"))[1]


def release_gate(tmp_path: Path, keys: Path, judge: Judge, monkeypatch: Any) -> Path:
    """The refund fixture before its fix: the gate says FAIL."""
    return Gate(tmp_path).run(refund.rows(fixed=False), "--key", str(keys / "private.pem"))[2]


def judged(tmp_path: Path, keys: Path, judge: Judge, monkeypatch: Any) -> Path:
    """The release gate with a judge on loopback grading two grounding rows."""
    gate = Gate(tmp_path)
    monkeypatch.setenv("SPECGATE_TEST_KEY", "k-123")
    path = gate.dir / "evaluation.yaml"
    data = yaml.safe_load(path.read_text())
    data["spec"]["judge"] = {"provider": "openai-compatible", "model": "m1",
                             "base_url": f"{judge.url}/v1", "api_key_env": "SPECGATE_TEST_KEY",
                             "timeout_s": 2, "retries": 0}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    judge.script["m1"] = [{"verdict": '{"score": 4, "reason": "supported"}'}]
    rows = [{"id": f"g{i}", "case_id": f"g{i}", "dimension": "grounding",
             "context": f"Order A-{i} ships Monday.", "agent_output": "It ships Monday."}
            for i in (1, 2)]
    return gate.run(refund.rows(fixed=True) + rows, "--no-judge-cache", "--key",
                    str(keys / "private.pem"))[2]


def discovery(tmp_path: Path, keys: Path, judge: Judge, monkeypatch: Any) -> Path:
    folder = tmp_path / "finding-quality-discovery"
    shutil.copytree(ROOT / "specs" / "finding-quality-discovery", folder)
    main(["run", str(folder), "--out", str(tmp_path / "out"), "--key",
          str(keys / "private.pem")])
    return tmp_path / "out"


KINDS: dict[str, Callable[[Path, Path, Judge, Any], Path]] = {
    "plain": plain, "release_gate": release_gate, "judged": judged, "discovery": discovery}


def statement(out: Path) -> dict[str, Any]:
    envelope = json.loads((out / "scorecard.intoto.jsonl").read_text().splitlines()[0])
    return dict(json.loads(base64.b64decode(envelope["payload"])))


def openssl_sha256(path: Path) -> str:
    done = subprocess.run([need_tool("openssl"), "dgst", "-sha256", "-r", str(path)],
                          capture_output=True, text=True, check=True)
    return done.stdout.split()[0]


def verify(out: Path, key: Path | None, capsys: Any) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["verify", str(out / "scorecard.json")] +
                (["--trusted-key", str(key)] if key else []))
    return code, capsys.readouterr().out


@pytest.mark.parametrize("kind, own", [
    ("plain", set()), ("release_gate", {"validation.json"}),
    ("judged", {"validation.json", "judgements.jsonl"}),
    ("discovery", {"report.json", "report.md"})])
def test_every_file_a_run_writes_is_a_subject_with_its_openssl_digest(
        tmp_path: Path, keys: Path, judge: Judge, monkeypatch: Any, capsys: Any, kind: str,
        own: set[str]) -> None:
    out = KINDS[kind](tmp_path, keys, judge, monkeypatch)
    files = {p.name for p in out.iterdir()}
    assert own <= files
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement(out)["subject"]}
    local = {n for n in subjects if not n.startswith("inputs/")}
    assert files - SIGNATURE_FILES == local  # every evidence file is signed, and only those
    for name in local:
        assert subjects[name] == openssl_sha256(out / name), name
    code, text = verify(out, keys / "public.pem", capsys)
    assert code == 0 and text.startswith("VALID"), text
    assert "NOT COVERED" not in text and set(re.findall(r"[\w.]+", text)) >= local


def flip_banner(data: bytes) -> bytes:
    """The HTML and Markdown of a FAIL, edited to read PASS."""
    assert data.count(b"FAIL") >= 1
    return data.replace(b"FAIL", b"PASS")


EDITS = [  # kind, file, edit
    ("release_gate", "scorecard.html", flip_banner),
    ("release_gate", "scorecard.md", flip_banner),
    ("release_gate", "junit.xml", lambda d: re.sub(rb'failures="\d+"', b'failures="0"', d)),
    ("release_gate", "validation.json", lambda d: d.replace(b'"LABELED":36', b'"LABELED":360')),
    ("judged", "judgements.jsonl", lambda d: d.replace(b'"score":4', b'"score":5')),
    ("discovery", "report.json", lambda d: d.replace(b"83.5", b"99.5")),
    ("discovery", "report.md", lambda d: d + b"\nAll findings supported.\n"),
    ("plain", "findings.jsonl", lambda d: d + b"{}\n"),
]


@pytest.mark.parametrize("kind, name, edit", EDITS, ids=[f"{k}-{n}" for k, n, _ in EDITS])
def test_an_edited_signed_file_is_named(tmp_path: Path, keys: Path, judge: Judge,
                                        monkeypatch: Any, capsys: Any, kind: str, name: str,
                                        edit: Callable[[bytes], bytes]) -> None:
    out = KINDS[kind](tmp_path, keys, judge, monkeypatch)
    code, text = verify(out, keys / "public.pem", capsys)
    assert code == 0 and text.startswith("VALID"), text
    before = (out / name).read_bytes()
    (out / name).write_bytes(edit(before))
    assert (out / name).read_bytes() != before
    code, text = verify(out, keys / "public.pem", capsys)
    assert code == 1 and text.startswith(f"INVALID DIGEST_MISMATCH: {name} changed"), text
    assert len(text.splitlines()) == 1


def test_the_flipped_banner_is_what_an_auditor_would_see(tmp_path: Path, keys: Path,
                                                          judge: Judge, monkeypatch: Any,
                                                          capsys: Any) -> None:
    out = release_gate(tmp_path, keys, judge, monkeypatch)
    html = (out / "scorecard.html").read_bytes()
    assert b"Decision: FAIL" in html
    (out / "scorecard.html").write_bytes(html.replace(b"Decision: FAIL", b"Decision: PASS"))
    code, text = verify(out, keys / "public.pem", capsys)
    assert code == 1 and "scorecard.html" in text and "DIGEST_MISMATCH" in text


@pytest.mark.parametrize("name, code", [
    ("validation.json", "SUBJECT_MISSING"), ("rows.jsonl", "SUBJECT_MISSING"),
    ("findings.jsonl", "SUBJECT_MISSING")])
def test_a_deleted_subject_fails(tmp_path: Path, keys: Path, judge: Judge, monkeypatch: Any,
                                 capsys: Any, name: str, code: str) -> None:
    out = release_gate(tmp_path, keys, judge, monkeypatch)
    (out / name).unlink()
    exit_code, text = verify(out, keys / "public.pem", capsys)
    assert exit_code == 1 and text.startswith(f"INVALID {code}: {name}"), text


def test_a_deleted_judgements_file_fails(tmp_path: Path, keys: Path, judge: Judge,
                                         monkeypatch: Any, capsys: Any) -> None:
    out = judged(tmp_path, keys, judge, monkeypatch)
    (out / "judgements.jsonl").unlink()
    code, text = verify(out, keys / "public.pem", capsys)
    assert code == 1 and text.startswith("INVALID SUBJECT_MISSING: judgements.jsonl"), text


def test_a_deleted_projection_is_reported_not_fatal(tmp_path: Path, keys: Path, judge: Judge,
                                                    monkeypatch: Any, capsys: Any) -> None:
    out = plain(tmp_path, keys, judge, monkeypatch)
    (out / "scorecard.html").unlink()
    (out / "junit.xml").unlink()
    code, text = verify(out, keys / "public.pem", capsys)
    assert code == 0 and text.startswith("VALID"), text
    assert "projections not present (not checked): junit.xml, scorecard.html" in text


def test_a_file_no_signature_covers_is_said(tmp_path: Path, keys: Path, judge: Judge,
                                            monkeypatch: Any, capsys: Any) -> None:
    out = plain(tmp_path, keys, judge, monkeypatch)
    (out / "approval.html").write_text("<h1>Decision: PASS</h1>")
    code, text = verify(out, keys / "public.pem", capsys)
    assert code == 0 and "NOT COVERED by the signature, do not rely on: approval.html" in text


def resign(out: Path, impostor: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """What the evaluated party can do without the signing key: a new statement signed with
    their own key (and the scorecard's raw signature), their public key in signer.pub.pem."""
    body = statement(out)
    change(body)
    key = signing.load_private(impostor / "private.pem")
    line = json.dumps(signing.envelope(key, body), sort_keys=True) + "\n"
    (out / "scorecard.intoto.jsonl").write_text(line)
    (out / "scorecard.json.sig").write_bytes(key.sign((out / "scorecard.json").read_bytes()))
    shutil.copy(impostor / "public.pem", out / "signer.pub.pem")


def test_an_edited_projection_resigned_by_an_impostor(tmp_path: Path, keys: Path,
                                                      judge: Judge, monkeypatch: Any,
                                                      capsys: Any) -> None:
    out = release_gate(tmp_path, keys, judge, monkeypatch)
    main(["keygen", "--out-dir", str(tmp_path / "impostor")])
    html = (out / "scorecard.html")
    html.write_bytes(flip_banner(html.read_bytes()))
    sha = openssl_sha256(html)

    def rebind(body: dict[str, Any]) -> None:
        for s in body["subject"]:
            if s["name"] == "scorecard.html":
                s["digest"]["sha256"] = sha
    resign(out, tmp_path / "impostor", rebind)
    code, text = verify(out, keys / "public.pem", capsys)
    assert code == 1 and text.startswith("INVALID KEY_NOT_TRUSTED"), text
    code, text = verify(out, None, capsys)  # the impostor's own key: integrity only
    assert code == 1 and "AUTHORSHIP UNVERIFIED" in text


def test_a_swapped_signer_key_does_not_matter_with_a_pinned_key(tmp_path: Path, keys: Path,
                                                                judge: Judge, monkeypatch: Any,
                                                                capsys: Any) -> None:
    out = plain(tmp_path, keys, judge, monkeypatch)
    main(["keygen", "--out-dir", str(tmp_path / "other")])
    shutil.copy(tmp_path / "other" / "public.pem", out / "signer.pub.pem")
    code, text = verify(out, keys / "public.pem", capsys)
    assert code == 0 and text.startswith("VALID"), text
    (out / "signer.pub.pem").write_text("not a key")
    code, text = verify(out, keys / "public.pem", capsys)
    assert code == 0 and text.startswith("VALID"), text


@pytest.mark.parametrize("name", ["../outside.txt", "/etc/hostname", "sub/rows.jsonl", "",
                                  "inputs/../x", "x" * 1000, "\u00e9" * 200, "a\u0000b",
                                  "a\nb"])
def test_a_subject_that_is_not_a_file_name_is_refused(tmp_path: Path, keys: Path,
                                                      judge: Judge, monkeypatch: Any,
                                                      capsys: Any, name: str) -> None:
    out = plain(tmp_path, keys, judge, monkeypatch)
    main(["keygen", "--out-dir", str(tmp_path / "impostor")])
    resign(out, tmp_path / "impostor",
           lambda body: body["subject"].append({"name": name, "digest": {"sha256": "0" * 64}}))
    code, text = verify(out, None, capsys)
    assert code == 1 and text.startswith("INVALID BAD_ENVELOPE"), text


def test_unpinned_output_never_says_to_trust_the_key_beside_the_evidence(
        tmp_path: Path, keys: Path, judge: Judge, monkeypatch: Any, capsys: Any) -> None:
    out = plain(tmp_path, keys, judge, monkeypatch)
    code, text = verify(out, None, capsys)
    assert code == 1 and "AUTHORSHIP UNVERIFIED" in text
    assert "--trusted-key runner-signing.pub.pem" in text
    assert "--trusted-key signer.pub.pem" not in text


def test_footers_pin_a_key_obtained_out_of_band(tmp_path: Path, keys: Path, judge: Judge,
                                                monkeypatch: Any) -> None:
    out = plain(tmp_path, keys, judge, monkeypatch)
    for name in ("scorecard.html", "scorecard.md"):
        text = (out / name).read_text()
        assert "--trusted-key runner-signing.pub.pem" in text, name
        assert "signer.pub.pem" not in text and "--trusted-key KEY" not in text, name
    docs = {p.name: p.read_text() for p in (ROOT / "docs").glob("*.md")}
    for name, text in docs.items():
        assert "--trusted-key signer.pub.pem" not in text, name


def sh_block(doc: str, heading: str, index: int = 0) -> str:
    """The ``index``-th sh code block under a Markdown heading of a file in docs/."""
    text = (ROOT / "docs" / doc).read_text()
    section = text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, re.S)[index]


def test_the_documented_commands_run(tmp_path: Path) -> None:
    """getting-started.md's; docs/verifying.md's run in tests/test_verifying_doc.py."""
    import os
    import sys

    shutil.copytree(ROOT / "specs" / "example", tmp_path / "specs" / "example")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    script = sh_block("getting-started.md", "## Sign and verify")
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "VALID: sha256" in done.stdout and "--trusted-key runner-signing" in script


DEEP = "[" * 200000 + "]" * 200000


@pytest.mark.parametrize("name, content, code", [
    ("scorecard.intoto.jsonl", DEEP, "BAD_ENVELOPE"),
    ("scorecard.json", DEEP, "DIGEST_MISMATCH"),  # never parsed: no signature vouches
    ("scorecard.intoto.jsonl", None, "NOT_A_FILE"),
    ("scorecard.json.sig", None, "NOT_A_FILE"),
    # a folder in place of a signed file (second review of issue 36: IO_ERROR, exit 2)
    ("scorecard.intoto.jsonl", "folder", "NOT_A_FILE"),
    ("scorecard.json.sig", "folder", "NOT_A_FILE"),
])
def test_a_hostile_signed_file_is_a_coded_failure_never_a_crash_or_a_hang(
        tmp_path: Path, keys: Path, judge: Judge, monkeypatch: Any, capsys: Any, name: str,
        content: str | None, code: str) -> None:
    # Nesting deeper than Python's recursion limit, or a FIFO that would block a reader
    # for ever, in place of a signed file.
    out = plain(tmp_path, keys, judge, monkeypatch)
    (out / name).unlink()
    if content is None:
        os.mkfifo(out / name)
    elif content == "folder":
        (out / name).mkdir()
    else:
        (out / name).write_text(content)
    status, printed = verify(out, keys / "public.pem", capsys)
    assert status == 1 and code in printed, printed


def test_a_fifo_named_scorecard_json_under_a_folder_is_refused(
        tmp_path: Path, keys: Path, judge: Judge, monkeypatch: Any, capsys: Any) -> None:
    out = plain(tmp_path, keys, judge, monkeypatch)
    (out / "planted").mkdir()
    os.mkfifo(out / "planted" / "scorecard.json")
    capsys.readouterr()
    assert main(["verify", str(out), "--trusted-key", str(keys / "public.pem")]) == 1
    printed = capsys.readouterr().out
    assert "NOT_A_FILE" in printed and "1 valid" in printed, printed
