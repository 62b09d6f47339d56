"""Every shell block in README.md and docs/ runs as written, so a doc cannot drift from the CLI.

A fenced ``sh`` block is run with bash (``set -euo pipefail``) in a copy of the checkout
(``specs/`` and ``docs/``), the blocks of one page in order as one reader's shell session:
each starts in the folder the one before ended in, so a page that begins with
``cd scratch/PAGE`` goes on there. A page writes only under ``scratch/PAGE/`` (PAGE its
file name without ``.md``; README.md's is ``scratch/readme/``) and names that folder: every
other file of the checkout is byte for byte what it was, so the pages can be followed in
one checkout, in any order, without colliding. A block must exit 0, unless an HTML comment
on the line before the fence says otherwise:

- ``<!-- doc-test: exits N -->``: the block must exit N (e.g. a FAIL shown on purpose);
- ``<!-- doc-test: covered by tests/FILE.py::NAME -->``: that test runs it (it must exist);
- ``<!-- doc-test: not run: REASON -->``: a template with placeholders, or a step that
  installs packages or runs for minutes; the reason is required and shown in the report.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(sh|bash)\s*$")
NOTE = re.compile(r"^<!-- doc-test: (exits (\d+)|covered by (\S+)|not run: (.+)) -->$")


def blocks(page: Path) -> list[tuple[int, str, str]]:
    """(line, note, script) for each shell block of ``page``; note is '' when unmarked."""
    lines = page.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            previous = lines[i - 1].strip() if i else ""
            note = previous if NOTE.match(previous) else ""
            out.append((i + 1, note, "\n".join(lines[i + 1:end])))
            i = end
        i += 1
    return out


def shown(page: Path) -> dict[int, list[str]]:
    """The output a page shows for a block: a ``text`` block after a shell block, with only
    prose between (no other fence, no heading), by the shell block's line; its lines must
    be lines the block prints, in that order."""
    lines, out, last = page.read_text().splitlines(), {}, None
    starts = {line: script for line, _, script in blocks(page)}
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            if lines[i].strip() == "```text" and last is not None:
                out[last] = [x for x in lines[i + 1:end] if x.strip()]
            last = i + 1 if i + 1 in starts else None
            i = end
        elif lines[i].startswith("#"):
            last = None
        i += 1
    return out


def in_order(wanted: list[str], printed: list[str]) -> list[str]:
    """The lines of ``wanted`` not found in ``printed`` in their order (each line once)."""
    rest = iter(printed)
    return [line for line in wanted if not any(line == x for x in rest)]


def run_block(script: str, cwd: Path, ended: Path | None = None
              ) -> subprocess.CompletedProcess[str]:
    """One block as a reader would type it: bash, stopping at the first failing command,
    with this interpreter's ``engine`` first on PATH and no SPECGATE_* variables; the
    folder it ends in is written to ``ended`` (the next block of the page starts there)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECGATE_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)  # `python -m bench...` as from the repository root
    if ended is not None:  # a reader's own home and temporary folder, beside the checkout
        for name, folder in (("HOME", "home"), ("TMPDIR", "tmp")):
            env[name] = str(ended.parent / folder)
            (ended.parent / folder).mkdir(exist_ok=True)
    trap = f"trap 'pwd -P > {shlex.quote(str(ended))}' EXIT\n" if ended else ""
    return subprocess.run(["bash", "-c", f"set -euo pipefail\n{trap}{script}"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)


def scratch(page: Path) -> str:
    """The one folder a page may write to."""
    return f"scratch/{page.stem.lower()}/"


def files(top: Path, mine: str, aside: tuple[str, ...] = ()) -> dict[str, Any]:
    """Everything under ``top`` outside the page's scratch folder (and the folders
    ``aside``): each file with its mode and bytes, each folder with its mode, each symbolic
    link with its target."""
    out: dict[str, Any] = {}
    for path in sorted(top.rglob("*")):
        name = path.relative_to(top).as_posix()
        if name.startswith(mine) or mine.startswith(name + "/") or \
                name.split("/")[0] in aside:  # the folder, the folders it is in, and aside
            continue
        info = path.lstat()
        out[name] = (os.readlink(path) if path.is_symlink() else
                     (info.st_mode, None if path.is_dir() else path.read_bytes()))
    return out


def _id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def follow(page: Path, work: Path) -> list[str]:
    """Run the page's blocks in ``work`` as one reader's session, each checked for its exit
    code; the files outside the page's scratch folder it changed, added or removed."""
    mine, top = scratch(page), work.parent  # the checkout and what is beside it
    aside = ("home", "tmp", f"{page.stem}.ended")  # the reader's own, not the checkout
    before = files(top, f"{work.name}/{mine}", aside)
    cwd, ended = work, top / f"{page.stem}.ended"
    for line, note, script in blocks(page):
        found = NOTE.match(note)
        if found and (found.group(3) or found.group(4)):
            continue  # covered elsewhere (checked below) or not run (reason given)
        want = int(found.group(2)) if found and found.group(2) else 0
        done = run_block(script, cwd, ended)
        assert done.returncode == want, \
            f"{page.name}:{line}: exit {done.returncode}, want {want}\n{script}\n" \
            f"{done.stdout[-1500:]}\n{done.stderr[-1500:]}"
        printed = (done.stdout + done.stderr).splitlines()
        missing = in_order(shown(page).get(line, []), printed)
        assert missing == [], f"{page.name}:{line}: shown but not printed: {missing}\n" \
            f"{done.stdout[-1500:]}\n{done.stderr[-1500:]}"
        cwd = Path(ended.read_text().strip())
        assert cwd.is_relative_to(work.resolve()), \
            f"{page.name}:{line}: left the checkout for {cwd}"
    after = files(top, f"{work.name}/{mine}", aside)
    inside = f"{work.name}/"  # named from the checkout: what is beside it as ../NAME
    return sorted(name.removeprefix(inside) if name.startswith(inside) else f"../{name}"
                  for name in before.keys() | after.keys() if before.get(name) != after.get(name))


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)], ids=_id)
def test_every_shell_block_of_the_page_runs_as_written(page: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copytree(ROOT / "specs", work / "specs")
    shutil.copytree(ROOT / "docs", work / "docs")  # the files the pages name
    # a checkout: a block goes where it runs with `cd "$(git rev-parse --show-toplevel)..."`
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    mine = scratch(page)
    assert follow(page, work) == [], f"{_id(page)} wrote outside {mine}"
    if (work / mine).exists():
        assert mine in page.read_text(), f"{_id(page)} does not name {mine}"


GOES = 'cd "$(git rev-parse --show-toplevel)'


@pytest.mark.parametrize("name", ["inspect.md", "promptfoo.md", "otel.md"])
def test_each_block_goes_where_it_runs(name: str, tmp_path: Path) -> None:
    # Read in order, a block after one that entered the page's scratch folder starts there;
    # so each goes to its place first (the repository root, or the scratch folder) and
    # gets there from either.
    page = ROOT / "docs" / name
    work = tmp_path / "work"
    (work / "scratch" / page.stem).mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    for line, note, script in blocks(page):
        if "a template" in note:
            continue  # the reader's own project, not this repository
        first = script.splitlines()[0]
        assert first.startswith(GOES), f"{name}:{line}: {first}"
        place = first.split("#")[0].strip()
        want = work / "scratch" / page.stem if "/scratch/" in place else work
        for start in (work, work / "scratch" / page.stem):
            went = subprocess.run(["bash", "-c", f"cd {start} && {place} && pwd -P"],
                                  capture_output=True, text=True, check=True, cwd=work)
            assert went.stdout.strip() == str(want.resolve()), f"{name}:{line}"


def test_a_page_writing_outside_its_scratch_folder_is_caught(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "specs").mkdir(parents=True)
    (work / "specs" / "kept.yaml").write_text("a: 1\n")
    (work / "specs" / "mode.yaml").write_text("a: 1\n")
    page = tmp_path / "page.md"
    page.write_text("```sh\nmkdir -p scratch/page && cd scratch/page && touch fine\n```\n"
                    "```sh\ntouch also-fine && echo b >> ../../specs/kept.yaml\n```\n"
                    "```sh\ncd ../.. && mkdir out empty && touch out/stray\n```\n"
                    "```sh\necho x > ../beside.txt && ln -s /tmp specs/link\n"
                    "chmod 600 specs/mode.yaml && echo y > \"$HOME/mine\"\n```\n")
    assert follow(page, work) == ["../beside.txt", "empty", "out", "out/stray",
                                  "specs/kept.yaml", "specs/link", "specs/mode.yaml"]
    assert (tmp_path / "home" / "mine").exists()  # a reader's own home is theirs to write
    assert sorted(p.name for p in (work / "scratch" / "page").iterdir()) == \
        ["also-fine", "fine"]  # the second block went on where the first ended
    page.write_text("```sh\necho one && echo two\n```\n\n```text\ntwo\n```\n"
                    "```sh\necho three\n```\nWhat it prints:\n```text\nfour\n```\n")
    with pytest.raises(AssertionError, match=r"page.md:8: shown but not printed: \['four'\]"):
        follow(page, work)
    page.write_text("```sh\necho one && echo two\n```\n```text\ntwo\none\n```\n")
    with pytest.raises(AssertionError, match=r"shown but not printed: \['one'\]"):
        follow(page, work)  # in the order printed


def test_a_block_not_run_here_says_why_and_a_covering_test_exists() -> None:
    for page in PAGES:
        for line, note, _ in blocks(page):
            found = NOTE.match(note)
            if found and found.group(3):
                file, _, name = found.group(3).partition("::")
                assert f"def {name}(" in (ROOT / file).read_text(), f"{_id(page)}:{line}"
            if found and found.group(4):
                assert len(found.group(4).split()) >= 3, f"{_id(page)}:{line}: say why"


def test_the_runner_sees_a_failing_block(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("text\n```sh\nengine validate nowhere/\n```\n"
                    "<!-- doc-test: exits 2 -->\n```sh\nengine run nowhere/\n```\n")
    found = blocks(page)
    assert [(line, bool(note)) for line, note, _ in found] == [(2, False), (6, True)]
    assert run_block(found[0][2], tmp_path).returncode == 2  # a wrong command fails
    assert run_block("engine validate nowhere/ || true\nfalse", tmp_path).returncode == 1


def test_the_pages_name_only_inspection_types_that_exist() -> None:
    # `type: NAME` or a backticked snake_case word right after "use" names a primitive
    from engine.inspections import TABLE
    for page in PAGES:  # (a conformance case shown as an example misspells on purpose)
        text = re.sub(r"```yaml\n(?:(?!```).)*?\nwant:.*?```", "", page.read_text(),
                      flags=re.S)
        for name in re.findall(r"\btype: ([a-z_]+)\b", text) + \
                re.findall(r"\buse `([a-z]+_[a-z_]+)`", text):
            assert name in TABLE or name in {"object", "string", "number", "array",
                                             "boolean", "integer"}, f"{_id(page)}: {name}"
