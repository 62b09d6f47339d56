"""Provenance (issue 27, docs/provenance.md): governance signs the specs, the harness attests
its logs, the runner signs the scorecard that binds both; ``engine verify`` proves each with
its pinned key. Everything runs through the CLI on copies of the shipped specs; the files a
bundle must sign are listed here by hand and hashed here, and the DSSE envelopes are
checked by securesystemslib as well as by the engine."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import main
from engine.spec import evaluation as spec

from .conftest import ROOT

# Every file loading specs/agent-release-gate opens, by hand from its evaluation.yaml and
# policy.yaml (catalogues, the detector, lexicons, fix templates, caveats, mapping).
GATE_FILES = sorted([
    "evaluation.yaml", "policy.yaml", "fixes.yaml", "caveats.yaml", "mapping.yaml",
    "detectors/pii-v1.yaml",
    "lexicons/injection-flag-v1.yaml", "lexicons/refusal-v1.yaml",
    "catalogues/eu-ai-act.yaml", "catalogues/iso-42001.yaml", "catalogues/nist-ai-rmf.yaml",
    "catalogues/owasp-agentic.yaml", "catalogues/owasp-llm.yaml"])


class World:
    """Keys of the three roles (and of the gated team) and copies of shipped specs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        for role in ("governance", "harness", "runner", "team"):
            assert main(["keygen", "--out-dir", str(root / "keys" / role)]) == 0

    def key(self, role: str, part: str = "public") -> str:
        return str(self.root / "keys" / role / f"{part}.pem")

    def copy(self, name: str) -> Path:
        folder = self.root / "specs" / name
        shutil.copytree(ROOT / "specs" / name, folder)
        return folder

    def sign(self, folder: Path, role: str = "governance") -> int:
        return main(["sign-specs", str(folder), "--key", self.key(role, "private")])

    def run(self, folder: Path, out: str, *extra: str, governed: bool = True) -> int:
        args = ["run", str(folder), "--out", str(self.root / out),
                "--key", self.key("runner", "private")]
        if governed:
            args += ["--governance-key", self.key("governance")]
        return main([*args, *extra])

    def card(self, out: str) -> dict[str, Any]:
        return json.loads((self.root / out / "scorecard.json").read_bytes())

    def verify(self, out: str, *roles: str) -> int:
        flags = {"governance": "--governance-key", "harness": "--harness-key"}
        args = ["verify", str(self.root / out), "--trusted-key", self.key("runner")]
        for role in roles:
            args += [flags[role], self.key(role)]
        return main(args)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def codes(card: dict[str, Any]) -> list[str]:
    return [r["code"] for r in card["reasons"]]


def statements(path: Path) -> list[dict[str, Any]]:
    """The statements of a .intoto.jsonl file, read without the engine."""
    return [json.loads(base64.b64decode(json.loads(line)["payload"]))
            for line in path.read_text().splitlines()]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def edit(path: Path, change: Any) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_governance_signs_the_shipped_gate_and_the_unchanged_run_passes_and_verifies(
        world: World, capsys: Any) -> None:
    gate = world.copy("agent-release-gate")
    assert world.sign(gate) == 0
    [statement] = statements(gate / "specs.intoto.jsonl")
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    assert subjects == {name: sha(gate / name) for name in GATE_FILES}
    assert statement["predicate"]["evaluation"]["file"] == "evaluation.yaml"
    assert statement["predicateType"] == "https://specgate.dev/specs/v1"
    assert world.run(gate, "out") == 0
    card = world.card("out")
    assert card["decision"] == "PASS"
    specs = card["provenance"]["specs"]
    assert specs["status"] == "verified" and specs["files"] == subjects
    assert specs["bundle_sha256"] == sha(gate / "specs.intoto.jsonl")
    assert (world.root / "out" / "specs.intoto.jsonl").read_bytes() == \
        (gate / "specs.intoto.jsonl").read_bytes()
    capsys.readouterr()
    assert world.verify("out", "governance") == 0
    said = capsys.readouterr().out
    assert f"specs: {len(GATE_FILES)} file(s) of evaluation.yaml, exactly as loaded, signed " \
           "by the pinned governance key" in said


def test_a_dsse_library_verifies_the_bundle_with_governance_key(world: World) -> None:
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        PublicFormat,
        load_pem_public_key,
    )
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import SSlibKey

    gate = world.copy("agent-release-gate")
    assert world.sign(gate) == 0
    public = load_pem_public_key(Path(world.key("governance")).read_bytes())
    keyid = hashlib.sha256(public.public_bytes(Encoding.Raw, PublicFormat.Raw)).hexdigest()
    key = SSlibKey.from_crypto(public, keyid=keyid)  # type: ignore[arg-type]
    line = (gate / "specs.intoto.jsonl").read_text().splitlines()[0]
    assert set(Envelope.from_dict(json.loads(line)).verify([key], 1)) == {keyid}


@pytest.mark.parametrize("change, named", [
    ("threshold", "changed since governance signed: policy.yaml"),
    ("waiver", "changed since governance signed: policy.yaml"),
    ("detector", "changed since governance signed: detectors/pii-v1.yaml"),
    ("rubric", "loaded but not signed: rubrics/grounding.yaml"),
    ("evaluation", "changed since governance signed: evaluation.yaml"),
])
def test_the_teams_edit_after_signing_is_incomplete_naming_the_file(
        world: World, change: str, named: str) -> None:
    gate = world.copy("agent-release-gate")
    assert world.sign(gate) == 0
    if change == "threshold":
        edit(gate / "policy.yaml",
             lambda d: d["spec"]["categories"]["pii"].update(threshold=0.5))
    elif change == "waiver":
        edit(gate / "policy.yaml", lambda d: d["spec"].update(waivers=[{
            "id": "W-1", "scope": {"categories": ["pii"]}, "justification": "ours",
            "approver": "team@example.com", "expires": "2099-12-31"}]))
    elif change == "detector":
        text = (gate / "detectors/pii-v1.yaml").read_text()
        (gate / "detectors/pii-v1.yaml").write_text(text + "\n# loosened\n")
    elif change == "rubric":  # a rubric beside the policy takes the shipped one's place
        (gate / "rubrics").mkdir()
        shutil.copy(ROOT / "engine" / "rubrics" / "grounding.yaml", gate / "rubrics")
    else:
        edit(gate / "evaluation.yaml", lambda d: d["metadata"].update(version="9.9.9"))
    assert world.run(gate, "out") == 3
    card = world.card("out")
    assert card["decision"] == "INCOMPLETE" and "SPECS_CHANGED" in codes(card)
    reason = next(r for r in card["reasons"] if r["code"] == "SPECS_CHANGED")
    assert named in reason["message"]
    assert card["provenance"]["specs"]["status"] == "changed"
    assert world.verify("out", "governance") == 1  # the run said so: verify says so too


def test_missing_and_foreign_bundles(world: World) -> None:
    gate = world.copy("agent-release-gate")
    assert world.run(gate, "none") == 3
    assert "SPECS_UNSIGNED" in codes(world.card("none"))
    assert world.sign(gate, "team") == 0  # the team signs its own specs
    assert world.run(gate, "team") == 3
    card = world.card("team")
    assert "SPECS_SIGNATURE_INVALID" in codes(card)
    assert card["provenance"]["specs"]["status"] == "invalid"


def test_the_team_running_with_its_own_governance_key_is_caught_by_the_auditor(
        world: World, capsys: Any) -> None:
    """The runner names the team's key as --governance-key: the run says verified, and
    the auditor, who pins governance's key, does not believe it."""
    gate = world.copy("agent-release-gate")
    assert world.sign(gate, "team") == 0
    assert main(["run", str(gate), "--out", str(world.root / "out"), "--key",
                 world.key("runner", "private"), "--governance-key", world.key("team")]) == 0
    capsys.readouterr()
    assert world.verify("out", "governance") == 1
    assert "INVALID SPECS_SIGNATURE_INVALID" in capsys.readouterr().out


def test_without_a_governance_key_nothing_changes_and_the_scorecard_says_so(
        world: World, capsys: Any) -> None:
    gate = world.copy("agent-release-gate")
    assert world.run(gate, "out", governed=False) == 0
    card = world.card("out")
    assert card["decision"] == "PASS"
    assert card["provenance"]["specs"]["status"] == "not_checked"
    assert sorted(card["provenance"]["specs"]["files"]) == GATE_FILES
    assert not (world.root / "out" / "specs.intoto.jsonl").exists()
    capsys.readouterr()
    assert world.verify("out") == 0  # the runner's key alone: as before
    assert world.verify("out", "governance") == 1
    assert "INVALID SPECS_UNSIGNED: the run made without --governance-key" in \
        capsys.readouterr().out


def test_a_blocker_never_hides_a_fail_and_other_purposes_only_record(world: World) -> None:
    gate = world.copy("agent-release-gate")
    assert world.sign(gate) == 0
    edit(gate / "policy.yaml",  # stricter than the evidence: a FAIL stays a FAIL
         lambda d: d["spec"]["categories"]["pii"].update(min_n=1, threshold=1.0) or
         d["spec"].update(overall={"formula": "0", "threshold": 0.5}))
    code = world.run(gate, "fail")
    card = world.card("fail")
    assert code == 1 and card["decision"] == "FAIL", codes(card)
    assert card["provenance"]["specs"]["status"] == "changed"
    assert "SPECS_CHANGED" not in codes(card)
    edit(gate / "policy.yaml", lambda d: d["spec"].pop("overall") and
         d["spec"]["gate"].update(purpose="triage"))
    assert world.run(gate, "triage") == 4
    card = world.card("triage")
    assert card["decision"] == "TRIAGE" and "SPECS_CHANGED" not in codes(card)
    assert card["provenance"]["specs"]["status"] == "changed"


def test_a_spec_file_changed_while_the_run_reads_the_records_is_caught(
        world: World, monkeypatch: Any) -> None:
    from engine.run import execute as executing

    gate = world.copy("agent-release-gate")
    assert world.sign(gate) == 0
    scored = executing._score

    def score_then_edit(run: Any) -> None:  # the runner swaps a file mid-run
        scored(run)
        (gate / "fixes.yaml").write_text((gate / "fixes.yaml").read_text() + "\n#\n")

    monkeypatch.setattr(executing, "_score", score_then_edit)
    assert world.run(gate, "out") == 3
    reason = next(r for r in world.card("out")["reasons"] if r["code"] == "SPECS_CHANGED")
    assert "changed while or after they were loaded: fixes.yaml" in reason["message"]


def attested_inspect(world: World) -> Path:
    """specs/inspect-example as docs/examples/inspect-attested.yaml makes it, signed."""
    folder = world.copy("inspect-example")
    shutil.copy(ROOT / "docs" / "examples" / "inspect-attested.yaml",
                folder / "evaluation.yaml")
    (folder / "keys").mkdir()
    shutil.copy(world.key("harness"), folder / "keys" / "harness.pub.pem")
    assert world.sign(folder) == 0
    return folder


def attest(world: World, path: Path, role: str, *extra: str) -> int:
    return main(["attest", str(path), "--key", world.key(role, "private"), *extra])


def test_a_log_attested_by_the_harness_passes_and_verifies_with_three_keys(
        world: World, capsys: Any) -> None:
    folder = attested_inspect(world)
    log = folder / "data" / "inspect-example.eval"
    assert world.run(folder, "unattested") == 3
    assert "INPUT_UNATTESTED" in codes(world.card("unattested"))
    assert attest(world, log, "harness", "--predicate", '{"tool": "inspect_ai"}') == 0
    [statement] = statements(log.with_name(log.name + ".intoto.jsonl"))
    assert statement["subject"] == [{"name": log.name, "digest": {"sha256": sha(log)}}]
    assert world.run(folder, "out") == 0
    card = world.card("out")
    entry = card["provenance"]["inputs"]["samples"]
    # engine attest adds when it attested (the harness's clock): the date a release is
    # judged on never goes before it (docs/provenance.md#time)
    assert entry["status"] == "attested" and entry["predicate"] == {
        "tool": "inspect_ai", "signed_at": statement["predicate"]["signed_at"]}
    assert entry["signed_at"] == statement["predicate"]["signed_at"]
    assert card["inputs"]["samples"]["sha256"] == sha(log)
    capsys.readouterr()
    assert world.verify("out", "governance", "harness") == 0
    said = capsys.readouterr().out
    assert f"input samples: sha256 {sha(log)[:16]}... attested by the pinned harness key" in said
    assert world.verify("out", "governance", "harness") == 0
    # the harness key pinned for the team's key: not proven
    assert main(["verify", str(world.root / "out"), "--trusted-key", world.key("runner"),
                 "--harness-key", world.key("team")]) == 1


def test_a_log_edited_after_attestation_or_attested_by_another_key_does_not_pass(
        world: World) -> None:
    folder = attested_inspect(world)
    log = folder / "data" / "inspect-example.eval"
    assert attest(world, log, "team", "--out", str(world.root / "team.intoto.jsonl")) == 0
    assert world.run(folder, "team", "--attestation",
                     f"samples={world.root / 'team.intoto.jsonl'}") == 3
    card = world.card("team")
    assert "INPUT_ATTESTATION_INVALID" in codes(card)
    assert "none of the harness keys" in card["reasons"][0]["message"]
    assert attest(world, log, "harness") == 0
    log.write_bytes(log.read_bytes() + b"\0")  # edited after the harness attested it
    assert world.run(folder, "edited") == 3
    reason = world.card("edited")["reasons"][0]
    assert reason["code"] == "INPUT_ATTESTATION_INVALID"
    assert f"the bytes read (sha256 {sha(log)})" in reason["message"]


def test_a_key_that_signs_runs_never_vouches_for_an_input(world: World) -> None:
    folder = attested_inspect(world)
    shutil.copy(world.key("runner"), folder / "keys" / "harness.pub.pem")  # governance
    assert world.sign(folder) == 0  # listed the runner's key by mistake
    assert attest(world, folder / "data" / "inspect-example.eval", "runner") == 0
    assert world.run(folder, "out") == 3
    reason = world.card("out")["reasons"][0]
    assert reason["code"] == "INPUT_ATTESTATION_INVALID"
    assert "only by a key that signs runs" in reason["message"]


def attested_discovery(world: World) -> Path:
    """specs/finding-quality-discovery with its submissions folder required attested by
    the harness key (not signed by governance: these tests run without --governance-key)."""
    folder = world.copy("finding-quality-discovery")
    (folder / "keys").mkdir()
    shutil.copy(world.key("harness"), folder / "keys" / "h.pem")
    edit(folder / "evaluation.yaml", lambda d: d["spec"]["inputs"]["submissions"].update(
        attestation={"trusted_keys": ["keys/h.pem"]}))
    return folder


def test_a_folder_attestation_names_every_file_exactly(world: World) -> None:
    folder = attested_discovery(world)
    submissions = folder / "demo" / "submissions"
    assert attest(world, submissions, "harness") == 0
    [statement] = statements(folder / "demo" / "submissions.intoto.jsonl")
    assert {s["name"]: s["digest"]["sha256"] for s in statement["subject"]} == \
        {p.name: sha(p) for p in submissions.iterdir()}
    assert world.run(folder, "out", governed=False) == 0
    (submissions / "extra.json").write_text("{}")  # a file the harness never wrote
    assert world.run(folder, "added", governed=False) == 3
    message = world.card("added")["reasons"][0]["message"]
    assert "not attested: extra.json" in message
    (submissions / "extra.json").unlink()
    first = sorted(submissions.iterdir())[0]
    first.unlink()  # a submission the harness wrote, dropped
    assert world.run(folder, "dropped", governed=False) == 1  # a missing submission FAILs
    entry = world.card("dropped")["provenance"]["inputs"]["submissions"]
    assert entry["status"] == "invalid"
    assert f"attested but not there: {first.name}" in entry["problem"]


def test_verify_rejects_a_bundle_or_attestation_changed_after_signing(
        world: World, capsys: Any) -> None:
    folder = attested_inspect(world)
    assert attest(world, folder / "data" / "inspect-example.eval", "harness") == 0
    assert world.run(folder, "out") == 0
    for name in ("specs.intoto.jsonl", "attestation-samples.intoto.jsonl"):
        copy = world.root / f"copy-{name}"
        shutil.copytree(world.root / "out", copy)
        path = copy / name
        path.write_text(path.read_text().replace('"sig"', '"sig" ', 1))
        capsys.readouterr()
        assert main(["verify", str(copy), "--trusted-key", world.key("runner"),
                     "--governance-key", world.key("governance"), "--harness-key",
                     world.key("harness")]) == 1
        assert "DIGEST_MISMATCH" in capsys.readouterr().out


def test_validate_reports_a_bundle_that_does_not_cover_the_files_loaded(
        world: World, capsys: Any) -> None:
    gate = world.copy("agent-release-gate")
    assert world.sign(gate) == 0
    capsys.readouterr()
    assert main(["validate", str(gate), "--governance-key", world.key("governance")]) == 0
    assert f"signs exactly the {len(GATE_FILES)} file(s) loaded" in capsys.readouterr().out
    (gate / "mapping.yaml").write_text((gate / "mapping.yaml").read_text() + "\n#\n")
    assert main(["validate", str(gate)]) == 0  # without a key: a warning for the author
    assert "warning: " in (said := capsys.readouterr().out) and \
        "SPECS_CHANGED: evaluation.yaml: changed since governance signed: mapping.yaml" in said
    assert main(["validate", str(gate), "--governance-key", world.key("governance")]) == 2
    assert "error: " in capsys.readouterr().out


def test_sign_specs_and_attest_refuse_what_they_cannot_do(world: World, capsys: Any) -> None:
    gate = world.copy("agent-release-gate")
    (gate / "policy.yaml").write_text("kind: Policy\n")
    assert world.sign(gate) == 2
    assert not (gate / "specs.intoto.jsonl").exists()
    assert main(["sign-specs", str(gate), "--key", world.key("governance")]) == 2  # public
    log = world.root / "log.jsonl"
    log.write_text("{}\n")
    assert attest(world, log, "harness", "--predicate", "[1]") == 2
    assert "BAD_PREDICATE" in capsys.readouterr().err
    assert attest(world, log, "harness") == 0
    before = (world.root / "log.jsonl.intoto.jsonl").read_bytes()
    assert attest(world, log, "harness") == 2  # never overwritten
    assert "OUTPUT_EXISTS" in capsys.readouterr().err
    assert (world.root / "log.jsonl.intoto.jsonl").read_bytes() == before


def walked(home: Path, opened: list[str]) -> set[Path]:
    """YAML files the loader opened only to learn they take no part in the Evaluation: it
    reads every one in the tree once for its kind. A PolicyTest (engine test's) or a file
    of no spec kind opened that once only (a tool's own configuration) is not run; a data
    file a policy uses is opened again, to be read and digested, and stays counted."""
    once = {Path(p) for p in opened if opened.count(p) == 1}
    out = set()
    for path in home.rglob("*.y*ml"):
        data = yaml.safe_load(path.read_text())  # a caveats file is a list
        kind = data.get("kind") if isinstance(data, dict) else None
        if kind not in ("Evaluation", "Policy", "Suite") and path.resolve() in once:
            out.add(path.resolve())
    return out


def test_the_bundle_signs_every_file_the_run_opens_in_the_spec_folder(
        tmp_path: Path, monkeypatch: Any) -> None:
    """An audit hook of its own sees every file opened while each shipped Evaluation is
    loaded and run; all of those in its spec folder are its inputs or its bundle's files,
    and once loaded, no spec file is opened again (a file read at run time could be
    swapped after every check)."""
    import engine.cli.run

    opened: list[str] = []
    running: list[str] = []

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open" and isinstance(args[0], str | Path):
            opened.append(str(Path(args[0]).resolve()))

    executing = engine.cli.run.execute

    def watched(*args: Any, **kwargs: Any) -> Any:
        before = len(opened)
        try:
            return executing(*args, **kwargs)
        finally:
            running.extend(opened[before:])

    monkeypatch.setattr(engine.cli.run, "execute", watched)
    sys.addaudithook(hook)
    for evaluation in spec.load([ROOT / "specs"]):
        home = evaluation.file.resolve().parent
        opened.clear()
        running.clear()
        assert main(["run", str(home), "--out", str(tmp_path / evaluation.name),
                     "--no-judge-cache"]) == 0
        inputs = [source.path for source in evaluation.inputs.values()]
        seen = {Path(p) for p in opened if Path(p).is_relative_to(home)}
        seen = {p for p in seen if not any(p == i or p.is_relative_to(i) for i in inputs)}
        seen -= walked(home, opened)
        assert seen, evaluation.name
        assert {p.relative_to(home).as_posix() for p in seen} <= set(evaluation.spec_files), \
            evaluation.name
        again = {str(p) for p in evaluation.spec_files.values()} & set(running)
        assert not again, (evaluation.name, again)


def test_a_spec_file_swapped_right_after_the_loader_read_it_is_caught(
        world: World, monkeypatch: Any) -> None:
    """The team's policy is read, then governance's put back before it is hashed (an
    inotify watcher does it every time, found by the hostile review): the hash is of
    another file than the one read."""
    from engine.spec import evaluation as loading

    gate = world.copy("agent-release-gate")
    assert world.sign(gate) == 0
    policy = gate / "policy.yaml"
    genuine = policy.read_bytes()
    edit(policy, lambda d: d["spec"]["categories"]["pii"].update(threshold=0.5))
    read = loading._Loader._read

    def read_then_restore(self: Any, file: Path) -> Any:
        doc = read(self, file)
        if file.name == "policy.yaml" and file.read_bytes() != genuine:
            spare = file.with_name("spare")
            spare.write_bytes(genuine)
            spare.replace(file)  # the watcher's os.replace, after the read
        return doc

    monkeypatch.setattr(loading._Loader, "_read", read_then_restore)
    assert world.run(gate, "out") == 3
    reason = next(r for r in world.card("out")["reasons"] if r["code"] == "SPECS_CHANGED")
    assert "policy.yaml" in reason["message"]
    assert policy.read_bytes() == genuine  # on disk all is as governance signed


def test_an_attested_folder_swapped_while_the_run_reads_it_is_not_what_is_read(
        world: World, monkeypatch: Any) -> None:
    """A second process swaps the attested folder for the team's and back around the
    reads (a rename exchange leaves every file's identity as it was: second hostile
    review, PASS and VALID). The run reads a private copy made and hashed before any
    read, so the swap changes nothing; touching that copy is caught."""
    from engine.run import execute as executing

    folder = attested_discovery(world)
    submissions = folder / "demo" / "submissions"
    evil = world.root / "evil"
    shutil.copytree(submissions, evil)
    victim = sorted(submissions.iterdir())[0]
    data = json.loads(victim.read_text())  # the genuine submission abstains without reason
    victim.write_text(json.dumps({**data, "abstention_reason": "", "findings": []}))
    assert attest(world, submissions, "harness") == 0
    assert world.run(folder, "honest", governed=False) == 1
    scored = executing._score

    def swapped_around_the_reads(run: Any) -> None:
        spare = world.root / "spare"
        submissions.rename(spare)
        evil.rename(submissions)
        try:
            scored(run)
            executing._protocol_report(run.evaluation, run.tally,  # the report reads too
                                       run.options.key)
        finally:
            submissions.rename(evil)
            spare.rename(submissions)

    monkeypatch.setattr(executing, "_score", swapped_around_the_reads)
    assert world.run(folder, "swapped", governed=False) == 1
    honest, swapped = world.card("honest"), world.card("swapped")
    assert swapped["categories"] == honest["categories"]
    assert swapped["provenance"]["inputs"]["submissions"]["status"] == "attested"

    def copy_touched(run: Any) -> None:
        scored(run)
        held = run.held["submissions"].path
        first = sorted(held.iterdir())[0]
        first.write_bytes(first.read_bytes())  # the same bytes, written: another ctime

    monkeypatch.setattr(executing, "_score", copy_touched)
    assert world.run(folder, "touched", governed=False) in (1, 3)
    entry = world.card("touched")["provenance"]["inputs"]["submissions"]
    assert entry["status"] == "invalid" and "changed while the run read it" in entry["problem"]


def test_a_trusted_key_file_swapped_after_loading_changes_nothing(
        world: World, monkeypatch: Any) -> None:
    """The harness key file replaced by the team's after the specs were checked (second
    hostile review: PASS with the team's attestation). Keys are used as loaded."""
    from engine.run import execute as executing

    folder = attested_inspect(world)
    log = folder / "data" / "inspect-example.eval"
    assert attest(world, log, "team") == 0
    scored = executing._score

    def swap_key(run: Any) -> None:
        shutil.copy(world.key("team"), folder / "keys" / "harness.pub.pem")
        scored(run)

    monkeypatch.setattr(executing, "_score", swap_key)
    assert world.run(folder, "out") == 3
    assert {"INPUT_ATTESTATION_INVALID", "SPECS_CHANGED"} <= set(codes(world.card("out")))


def test_a_schema_ref_outside_the_schema_is_never_fetched(world: World, capsys: Any) -> None:
    """jsonschema fetched file:// (and https://) references while it validated records: a
    decisive file no bundle signed (hostile review); a record's contract did the same."""
    folder = world.copy("example")
    common = folder / "schemas" / "common.json"
    common.write_text('{"$defs": {"reply": {"type": "string"}}}')
    edit_json = json.loads((folder / "schemas" / "reply.schema.json").read_text())
    edit_json["properties"] = {"reply": {"$ref": common.as_uri() + "#/$defs/reply"}}
    (folder / "schemas" / "reply.schema.json").write_text(json.dumps(edit_json))
    capsys.readouterr()
    assert main(["validate", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "BAD_SCHEMA" in err and "points outside the schema" in err


def test_a_records_contract_with_an_outside_ref_is_a_problem_not_a_fetch(tmp_path: Path) -> None:
    from engine.inspections.agent import _contract_problems

    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "integer"}')
    found = _contract_problems("refund", {"amount": "x"}, {
        "json_schema": {"properties": {"amount": {"$ref": secret.as_uri()}}}})
    assert found == [f"refund: the contract's $ref '{secret.as_uri()}' points outside it "
                     "and is not followed"]


def test_hostile_and_unusual_attestations(world: World, capsys: Any) -> None:
    folder = attested_inspect(world)
    log = folder / "data" / "inspect-example.eval"
    beside = log.with_name(log.name + ".intoto.jsonl")
    # an integer RFC 8785 cannot write is refused when attesting, not a crash at sealing
    huge = '{"v": 123456789012345678901234567890}'
    assert attest(world, log, "harness", "--predicate", huge) == 2
    assert attest(world, log, "harness", "--predicate", '{"v": NaN}') == 2
    assert "BAD_PREDICATE" in capsys.readouterr().err
    # a subject named by sha512 only beside the log's sha256 subject: in-toto allows it
    from engine.evidence import signing
    key = signing.load_private(Path(world.key("harness", "private")))
    statement = {"_type": signing.STATEMENT_TYPE, "predicateType": "https://example/x",
                 "predicate": {"big": 2 ** 70},
                 "subject": [{"name": "other", "digest": {"sha512": "ab" * 64}},
                             {"name": log.name, "digest": {"sha256": sha(log)}}]}
    beside.write_text(json.dumps(signing.envelope(key, statement)) + "\n")
    assert world.run(folder, "mixed") == 0
    entry = world.card("mixed")["provenance"]["inputs"]["samples"]
    assert entry["status"] == "attested" and entry["predicate_omitted"] == "not canonical JSON"
    # 100 copies of a signature: refused at once, not tried one by one
    envelope = json.loads(beside.read_text())
    envelope["signatures"] = envelope["signatures"] * 100
    beside.write_text(json.dumps(envelope) + "\n")
    assert world.run(folder, "many") == 3
    assert "INPUT_ATTESTATION_INVALID" in codes(world.card("many"))
    # the harness's good envelope after 64 others: only the first 64 are tried
    team = signing.load_private(Path(world.key("team", "private")))
    other = json.dumps(signing.envelope(team, statement)) + "\n"
    good = json.dumps(signing.envelope(key, statement)) + "\n"
    beside.write_text(other * 64 + good)
    assert world.run(folder, "late") == 3
    beside.write_text(other * 63 + good)
    assert world.run(folder, "in-time") == 0


def test_a_folder_with_a_name_that_is_not_utf8(world: World, capsys: Any) -> None:
    folder = world.root / "logs"
    folder.mkdir()
    (folder / "a.json").write_text("{}")
    with open(bytes(folder) + b"/\xff.json", "w") as handle:
        handle.write("{}")
    capsys.readouterr()
    assert attest(world, folder, "harness") == 2
    assert "BAD_PATH" in capsys.readouterr().err


def test_signing_one_evaluation_of_a_folder_of_two_is_refused(world: World) -> None:
    gate = world.copy("agent-release-gate")
    text = (gate / "evaluation.yaml").read_text().replace(
        "name: agent-release-gate", "name: agent-release-gate-b").replace(
        "kind: Evaluation", 'kind: "Evaluation"')  # YAML as the loader reads it, quoted
    (gate / "second.yaml").write_text(text)
    assert main(["sign-specs", str(gate / "evaluation.yaml"), "--key",
                 world.key("governance", "private")]) == 2
    assert not (gate / "specs.intoto.jsonl").exists()
    assert world.sign(gate) == 0
    assert [s["predicate"]["evaluation"]["file"] for s in
            statements(gate / "specs.intoto.jsonl")] == ["evaluation.yaml", "second.yaml"]
    assert world.run(gate / "second.yaml", "second") == 0
    assert world.card("second")["provenance"]["specs"]["status"] == "verified"


def test_the_doc_runs_in_order_and_says_what_it_promises(tmp_path: Path) -> None:
    """docs/provenance.md's blocks, in order, as tests/test_docs.py runs them, with what
    each prints checked: the three roles, the team's edit, the auditor's verification."""
    from .test_docs import NOTE, blocks, run_block

    work = tmp_path / "work"
    shutil.copytree(ROOT / "specs", work / "specs")
    shutil.copytree(ROOT / "docs", work / "docs")
    said, cwd, ended = [], work, tmp_path / "ended"
    for _, note, script in blocks(ROOT / "docs" / "provenance.md"):
        found = NOTE.match(note)
        want = int(found.group(2)) if found and found.group(2) else 0
        done = run_block(script, cwd, ended)
        assert done.returncode == want, script + done.stdout + done.stderr
        said.append(done.stdout)
        cwd = Path(ended.read_text().strip())
    assert cwd == work / "scratch" / "provenance"
    keys, signing_, attesting, running, edited, _, auditing = said
    assert "signed 5 file(s): specs/inspect-example/specs.intoto.jsonl" in signing_
    assert "inspect-arithmetic: caveats.yaml, evaluation.yaml, keys/harness.pub.pem, " \
           "policy.yaml, suite.yaml" in signing_
    assert signing_.count("(governance key ") == len(spec.load([ROOT / "specs"]))
    assert "attested 1 file(s) of specs/inspect-example/data/inspect-example.eval" in attesting
    assert running.count(": PASS") == 6 and "input samples: attested by the harness" in running
    assert "INCOMPLETE SPECS_CHANGED: evaluation.yaml: changed since governance signed: " \
           "policy.yaml" in edited
    assert "input samples: sha256" in auditing and "6 scorecard(s) under out: 6 valid" in auditing


def test_the_digest_is_of_the_bytes_the_loader_parsed(world: World, monkeypatch: Any) -> None:
    """A folder exchanged with the team's between the check before an open and the open
    itself, and back (third hostile review: PASS and VALID, 2 runs in 15): the loader
    parsed the team's detector while every identity on disk stayed governance's. The
    digest the bundle is held to is of the bytes the loader was given."""
    gate = world.copy("agent-release-gate")
    assert world.sign(gate) == 0
    detector = (gate / "detectors" / "pii-v1.yaml").resolve()
    evil = world.root / "evil-pii-v1.yaml"
    evil.write_text(detector.read_text() + "\n# the team's\n")
    from engine.spec import compile as compiling

    real_open, real_load = Path.open, compiling.load_data_file
    loading: list[bool] = []

    def resolved_elsewhere(self: Path, *args: Any, **kwargs: Any) -> Any:
        if loading and self.resolve() == detector:  # the table's read, in the window
            return real_open(evil, *args, **kwargs)
        return real_open(self, *args, **kwargs)  # every other open (digests too) is real

    def load(*args: Any, **kwargs: Any) -> Any:
        loading.append(True)
        try:
            return real_load(*args, **kwargs)
        finally:
            loading.pop()

    monkeypatch.setattr(Path, "open", resolved_elsewhere)
    monkeypatch.setattr(compiling, "load_data_file", load)
    assert world.run(gate, "out") == 3
    reason = next(r for r in world.card("out")["reasons"] if r["code"] == "SPECS_CHANGED")
    assert "detectors/pii-v1.yaml" in reason["message"]


def test_odd_paths_given_to_attest_and_sign_specs(world: World, capsys: Any,
                                                  monkeypatch: Any) -> None:
    logs = world.root / "logs"
    logs.mkdir()
    (logs / "a.json").write_text("{}")
    monkeypatch.chdir(logs)
    assert attest(world, Path("."), "harness") == 0  # written beside the folder, not in it
    assert (world.root / "logs.intoto.jsonl").is_file()
    fifo = world.root / "pipe.jsonl"
    os.mkfifo(fifo)
    capsys.readouterr()
    assert attest(world, fifo, "harness") == 2  # refused, never waited on
    assert "BAD_PATH" in capsys.readouterr().err
    folder = attested_inspect(world)
    log = folder / "data" / "inspect-example.eval"
    log.unlink()
    os.mkfifo(log)  # an attested input that is a FIFO: refused, not a hang
    assert world.run(folder, "fifo") == 2
    assert "BAD_PATH" in capsys.readouterr().err
    gate = world.copy("otel-example")
    (gate / "notes.yaml").mkdir()  # a folder by a YAML name
    assert world.sign(gate) == 0
