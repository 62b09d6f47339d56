"""Folder trees deeper than engine.folders.MAX_DEPTH (issue 36, lever 7; docs/verifying.md,
docs/authoring.md, docs/provenance.md). The gated team writes the evidence folder, the
spec checkout and the input folders: a tree 1,100 folders deep under any of them made every
recursive walk (pathlib's rglob and os.walk both recurse in Python 3.11) end in
INTERNAL_ERROR RecursionError. Each command now refuses it with PATH_TOO_DEEP and its usual
exit, leaving nothing half-written; a tree at the limit still works."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import folders
from engine.canonical import folder_manifest
from engine.cli import main
from engine.folders import MAX_DEPTH

from .conftest import GATE, Spec
from .test_provenance import World, attest, attested_discovery

LEVELS = 1100  # past Python's recursion limit (1,000 frames)
DIRECTORY = os.O_RDONLY | os.O_DIRECTORY


def deep(top: Path, levels: int, name: str = "d") -> None:
    """Nest ``levels`` folders named ``name`` under ``top``, each made relative to its
    parent's descriptor (the absolute path of the bottom may pass PATH_MAX), a file in
    the bottom one."""
    fd = os.open(top, DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def remove_deep(top: Path, name: str = "d") -> None:
    """Remove what ``deep`` made, going down and back up by relative names (shutil.rmtree
    recurses too, and holds a descriptor per level); the working folder is put back."""
    home = os.open(".", DIRECTORY)
    try:
        os.chdir(top)
        levels = 0
        while os.path.isdir(name):
            os.chdir(name)
            levels += 1
        if levels:
            os.unlink("bottom.txt")
        for _ in range(levels):
            os.chdir("..")
            os.rmdir(name)
    finally:
        os.fchdir(home)
        os.close(home)


@pytest.fixture(scope="module")
def stock(tmp_path_factory: Any) -> Iterator[Path]:
    """One tree LEVELS deep, made once (a second or two each way) and lent to each test."""
    home = tmp_path_factory.mktemp("stock")
    deep(home, LEVELS)
    yield home
    remove_deep(home)


class Trees:
    """The deep trees a test nests: the stock one moved in and back (a rename), others
    made and removed."""

    def __init__(self, stock: Path) -> None:
        self.stock = stock
        self.lent: list[Path] = []
        self.made: list[tuple[Path, str]] = []

    def nest(self, top: Path, levels: int = LEVELS, name: str = "d") -> None:
        if (levels, name) == (LEVELS, "d"):
            os.rename(self.stock / "d", top / "d")
            self.lent.append(top)
        else:
            deep(top, levels, name)
            self.made.append((top, name))

    def close(self) -> None:
        for top in self.lent:
            os.rename(top / "d", self.stock / "d")
        for top, name in self.made:
            if top.exists():
                remove_deep(top, name)


@pytest.fixture
def trees(stock: Path) -> Iterator[Trees]:
    made = Trees(stock)
    yield made
    made.close()


def nest(trees: Trees, top: Path, levels: int = LEVELS, name: str = "d") -> None:
    trees.nest(top, levels, name)


def refused(err: str, why: str = f"more than {MAX_DEPTH} folders deep") -> None:
    assert "PATH_TOO_DEEP" in err and "INTERNAL_ERROR" not in err, err
    assert why in err, err


def test_validate_test_and_sign_specs_refuse_a_spec_folder_too_deep(
        spec: Spec, keys: Path, trees: Any, capsys: Any) -> None:
    """keys sits beside the spec folder, under the root given: it is walked too."""
    nest(trees, spec.dir)
    capsys.readouterr()
    assert main(["validate", str(spec.root)]) == 2
    err = capsys.readouterr().err
    refused(err)
    assert f"{spec.dir}/d/d/...(61 more).../d:" in err and "nothing was run" in err
    for command in (["test"], ["sign-specs", "--key", str(keys / "private.pem")]):
        assert main([*command, str(spec.root)]) == 2, command
        refused(capsys.readouterr().err)
    assert not list(spec.dir.glob("*.intoto.jsonl"))


def test_validate_refuses_a_tree_of_long_names_before_its_path_is_too_long(
        spec: Spec, trees: Any, capsys: Any) -> None:
    """40 levels of 200-byte names, within the depth limit: the bottom's path is 8 kB,
    past PATH_MAX, which the old walk met as IO_ERROR 'File name too long' at level 20."""
    nest(trees, spec.dir, 40, name="x" * 200)
    capsys.readouterr()
    assert main(["validate", str(spec.root)]) == 2
    err = capsys.readouterr().err
    refused(err, "its path is longer than the 4,096 bytes the system opens")
    assert "x" * 41 not in err  # names clipped, the middle left out


def test_run_refuses_a_spec_folder_too_deep_and_writes_nothing(
        spec: Spec, keys: Path, trees: Any, capsys: Any) -> None:
    nest(trees, spec.dir)
    before = sorted(p.name for p in spec.root.iterdir())
    capsys.readouterr()
    code, dest = spec.run("--key", str(keys / "private.pem"))
    assert code == 2
    refused(capsys.readouterr().err)
    assert not dest.exists()
    assert sorted(p.name for p in spec.root.iterdir()) == before


def test_a_spec_folder_at_the_limit_still_runs(spec: Spec, keys: Path, trees: Any) -> None:
    nest(trees, spec.dir, MAX_DEPTH - 1)  # spec.dir is one folder below the root given
    code, dest = spec.run("--key", str(keys / "private.pem"))
    assert code == 0
    assert main(["verify", str(dest), "--trusted-key", str(keys / "public.pem")]) == 0


def test_verify_refuses_an_evidence_folder_holding_a_tree_too_deep(
        spec: Spec, keys: Path, trees: Any, capsys: Any) -> None:
    code, dest = spec.run("--key", str(keys / "private.pem"))
    assert code == 0
    public = str(keys / "public.pem")
    nest(trees, dest, MAX_DEPTH)  # at the limit: walked, nothing in it to check
    assert main(["verify", str(dest), "--trusted-key", public]) == 0
    remove_deep(dest)
    nest(trees, dest, MAX_DEPTH + 1)  # one past it
    assert main(["verify", str(dest), "--trusted-key", public]) == 1
    remove_deep(dest)
    nest(trees, dest)
    capsys.readouterr()
    assert main(["verify", str(dest), "--trusted-key", public]) == 1
    said = capsys.readouterr()
    refused(said.out + said.err)
    assert main(["verify", str(dest / "scorecard.json"), "--trusted-key", public]) == 0


def test_a_history_folder_too_deep_is_a_skipped_baseline_not_a_crash(
        spec: Spec, keys: Path, trees: Any, tmp_path_factory: Any) -> None:
    """The newest labelled run is still found beside a tree too deep, which is listed as
    skipped, with its code."""
    history = tmp_path_factory.mktemp("history")  # outside the spec tree
    spec.trust(keys / "public.pem")
    code, earlier = spec.run("--key", str(keys / "private.pem"), "--label", "main",
                             out="earlier")
    assert code == 0
    shutil.move(earlier, history / "earlier")
    nest(trees, history)
    code, _ = spec.run("--key", str(keys / "private.pem"), "--history", str(history),
                       "--baseline-label", "main")
    assert code == 0
    comparison = spec.scorecard()["comparison"]
    assert comparison["status"] == "comparable"
    assert comparison["baseline"]["scorecard_sha256"] == hashlib.sha256(
        (history / "earlier" / "scorecard.json").read_bytes()).hexdigest()
    [why] = comparison["selection"]["skipped_reasons"]
    assert "PATH_TOO_DEEP" in why and f"{history}/d/d/d/...(61 more).../d: a folder more " \
        f"than {MAX_DEPTH} folders deep" in why


def test_attest_refuses_a_folder_too_deep_and_writes_no_attestation(
        world: World, trees: Any, capsys: Any) -> None:
    folder = attested_discovery(world)
    submissions = folder / "demo" / "submissions"
    nest(trees, submissions)
    capsys.readouterr()
    assert attest(world, submissions, "harness") == 2
    refused(capsys.readouterr().err)
    assert not (folder / "demo" / "submissions.intoto.jsonl").exists()


def test_an_attested_folder_input_grown_too_deep_is_refused_and_nothing_kept(
        world: World, trees: Any, capsys: Any) -> None:
    """The harness attested the folder; the runner then nests a tree in it: the private
    copy the run would read is refused before a byte is copied."""
    folder = attested_discovery(world)
    outside = world.root / "inputs" / "submissions"
    shutil.copytree(folder / "demo" / "submissions", outside)
    assert attest(world, outside, "harness") == 0
    assert world.run(folder, "out", "--input", f"submissions={outside}",
                     governed=False) == 0
    nest(trees, outside)
    capsys.readouterr()
    assert world.run(folder, "deep", "--input", f"submissions={outside}",
                     governed=False) == 2
    refused(capsys.readouterr().err)
    assert not (world.root / "deep").exists()
    assert not [p for p in world.root.iterdir() if ".partial-" in p.name]


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    folder = tmp_path / "keys"
    assert main(["keygen", "--out-dir", str(folder)]) == 0
    return folder


def test_the_walk_gives_rglob_s_sorted_order_and_never_follows_a_link(tmp_path: Path) -> None:
    """The order folder digests hash in (written out here by hand) is the one
    ``sorted(rglob("*"))`` gave before, so no evidence digest changes; a link to a folder,
    even one looping back to the root, is listed and never walked into."""
    for folder in ("a/x/y", "a-b", "a.b", "B", "é"):
        (tmp_path / folder).mkdir(parents=True)
    for file in ("a/f", "a/x/y/1", "a-b/g", "zz", "é/q"):
        (tmp_path / file).write_text(file)
    (tmp_path / "loop").symlink_to(tmp_path)
    (tmp_path / "a" / "to-zz").symlink_to(tmp_path / "zz")
    walked = [p.relative_to(tmp_path).as_posix() for p in folders.paths(tmp_path)]
    assert walked == ["B", "a", "a/f", "a/to-zz", "a/x", "a/x/y", "a/x/y/1", "a-b", "a-b/g",
                      "a.b", "loop", "zz", "é", "é/q"]
    assert list(folders.paths(tmp_path)) == sorted(tmp_path.rglob("*"))
    # the manifest hashes files and links to files, as before; "loop" is not a file
    assert [name for name, _ in folder_manifest(tmp_path)] == \
        ["a/f", "a/to-zz", "a/x/y/1", "a-b/g", "zz", "é/q"]


def test_a_folder_input_too_deep_stops_the_run_with_nothing_kept(
        world: World, trees: Any, capsys: Any) -> None:
    """A folder input not required attested: its digest, recorded in the scorecard, is
    over every file in it."""
    folder = world.copy("finding-quality-discovery")
    outside = world.root / "inputs" / "submissions"
    shutil.copytree(folder / "demo" / "submissions", outside)
    nest(trees, outside)
    capsys.readouterr()
    assert world.run(folder, "deep", "--input", f"submissions={outside}",
                     governed=False) == 2
    refused(capsys.readouterr().err)
    assert not (world.root / "deep").exists()
    assert not [p for p in world.root.iterdir() if ".partial-" in p.name]


# Review b, attacks a2 to a5: what a run removes or copies, and the JSON files a spec
# names, were still walked or parsed by recursion, or met a name the engine never wrote.

def staging_name(out: str, pid: str) -> str:
    """The name a run writing ``--out .../out`` gives its staging folder on this host."""
    return f".{out}.partial-{os.uname().nodename}-{pid}-x"


def test_a_staging_folder_naming_no_possible_process_is_left_and_the_run_goes_on(
        spec: Spec, tmp_path: Path, capsys: Any) -> None:
    """Anyone who can write beside --out can plant a folder named like a killed run's:
    one whose "pid" no process can have (os.kill raised OverflowError; '²' passes
    str.isdigit but not int) was not made by the engine, so it is not removed, and the
    run neither fails nor is stopped by it; a dead pid's folder is removed as before,
    a link by that name is left and its target untouched."""
    gate = tmp_path / "gate"
    gate.mkdir()
    planted = [gate / staging_name("out", pid) for pid in ("99999999999999999999", "²")]
    for folder in planted:
        folder.mkdir()
        (folder / "kept.txt").write_text("not the engine's")
    dead = gate / staging_name("out", str(2**31 - 1))  # past Linux's pid_max: no process
    dead.mkdir()
    (dead / "partial.json").write_text("{}")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("keep")
    link = gate / staging_name("out", str(2**31 - 2))
    link.symlink_to(elsewhere)
    capsys.readouterr()
    assert main(["run", str(spec.dir), "--out", str(gate / "out")]) == 0
    err = capsys.readouterr().err
    assert "INTERNAL_ERROR" not in err
    assert (gate / "out" / "scorecard.json").is_file()
    for folder in planted:
        assert (folder / "kept.txt").read_text() == "not the engine's"
        assert f"warning: {folder}: named like a staging folder of a run, but no process " \
            "has that id" in err, err
    assert not dead.exists()
    assert link.is_symlink() and (elsewhere / "keep.txt").read_text() == "keep"
    assert f"warning: {link}: named like a staging folder, but not a folder" in err


def test_a_stale_staging_folder_holding_a_tree_too_deep_is_left_and_said(
        spec: Spec, tmp_path: Path, trees: Any, capsys: Any) -> None:
    """A planted staging folder of a dead pid holding a tree 1,100 deep: shutil.rmtree
    recursed (RecursionError, not an OSError that ignore_errors ignores) and the run
    ended INTERNAL_ERROR with no evidence. The tree is not the engine's: it is left, said
    on stderr, and the run writes its evidence."""
    gate = tmp_path / "gate"
    gate.mkdir()
    stale = gate / staging_name("out", str(2**31 - 1))
    stale.mkdir()
    (stale / "partial.json").write_text("{}")
    nest(trees, stale)
    capsys.readouterr()
    assert main(["run", str(spec.dir), "--out", str(gate / "out")]) == 0
    err = capsys.readouterr().err
    assert "INTERNAL_ERROR" not in err, err
    assert f"warning: {stale}: a folder more than {MAX_DEPTH} folders deep in it was left " \
        "where it is" in err, err
    assert (gate / "out" / "scorecard.json").is_file()
    assert not (stale / "partial.json").exists()  # what could be removed was
    assert (stale / "d").is_dir()


def test_the_remover_removes_a_tree_at_the_limit_and_never_follows_a_link(
        tmp_path: Path, trees: Any) -> None:
    """A tree MAX_DEPTH folders deep (the engine never makes a deeper one) goes entirely;
    a link inside goes, its target stays; a link given as the folder is not followed;
    one level more is left, with the folders above it, and said once."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    top = tmp_path / "top"
    top.mkdir()
    nest(trees, top, MAX_DEPTH)
    (top / "to-outside").symlink_to(outside)
    (top / "file").write_text("x")
    assert folders.remove(top) == []
    assert not top.exists() and (outside / "keep.txt").exists()
    link = tmp_path / "link"
    link.symlink_to(outside)
    [said] = folders.remove(link)
    assert "not removed" in said and (outside / "keep.txt").exists() and link.is_symlink()
    top.mkdir()
    nest(trees, top, MAX_DEPTH + 1)
    assert folders.remove(top) == [f"{top}: a folder more than {MAX_DEPTH} folders deep in "
                                   "it was left where it is, with the folders above it"]
    assert (top / "d").is_dir()


def deep_json(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


@pytest.mark.parametrize("levels", [3000, 65])
def test_a_spec_json_schema_nested_too_deep_is_spec_too_deep(
        spec: Spec, tmp_path: Path, capsys: Any, levels: int) -> None:
    """The json_schema inspection's schema_file nested 3,000 deep made validate and run
    end in INTERNAL_ERROR RecursionError (json.loads recurses in C); like YAML nested as
    deep, it is SPEC_TOO_DEEP at the key naming the file (policy.yaml line 58), past 64
    levels whether or not the decoder would have recursed that far."""
    (spec.dir / "schemas" / "reply.schema.json").write_text(deep_json(levels))
    capsys.readouterr()
    assert main(["validate", str(spec.dir)]) == 2
    err = capsys.readouterr().err
    assert f"{spec.dir}/policy.yaml:58:" in err and "SPEC_TOO_DEEP: spec.inspections[" in err
    assert "'schemas/reply.schema.json': arrays and objects nest deeper than 64" in err, err
    assert "INTERNAL_ERROR" not in err
    assert main(["run", str(spec.dir), "--out", str(tmp_path / "out")]) == 2
    assert "SPEC_TOO_DEEP" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_spec_json_schema_at_the_limit_still_validates(spec: Spec) -> None:
    (spec.dir / "schemas" / "reply.schema.json").write_text(deep_json(MAX_DEPTH - 1))
    assert main(["validate", str(spec.dir)]) == 0  # 63 objects and the one they are in


def test_a_discovery_submission_schema_nested_too_deep_is_spec_too_deep(
        world: World, capsys: Any) -> None:
    folder = world.copy("finding-quality-discovery")
    (folder / "schema" / "submission.schema.json").write_text(deep_json(3000))
    capsys.readouterr()
    assert main(["validate", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "schema/submission.schema.json:1:1: SPEC_TOO_DEEP" in err, err
    assert "INTERNAL_ERROR" not in err


def test_migrate_from_a_folder_holding_a_tree_too_deep_is_refused_and_writes_nothing(
        tmp_path: Path, trees: Any, capsys: Any) -> None:
    """migrate-assevra copied --from with shutil.copytree, which recurses: RecursionError.
    The copy now walks first and refuses, before --out or a staging folder is kept."""
    source = tmp_path / "rg"
    shutil.copytree(GATE, source)
    nest(trees, source)
    team = tmp_path / "team.yml"
    team.write_text("version: 1\njudge: {provider: none}\ngate:\n  enabled: true\n"
                    "  required_dimensions: [pii, tool_call]\n")
    out = tmp_path / "out" / "migrated"
    capsys.readouterr()
    assert main(["migrate-assevra", str(team), "--from", str(source), "--out", str(out)]) == 2
    refused(capsys.readouterr().err)
    assert not out.exists() and list((tmp_path / "out").iterdir()) == []
