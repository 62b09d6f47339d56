"""Nothing we ship installs specgate by a bare name from the package index: the name
`specgate` there is another project's (issue 38), and a job holding the signing key that
installs it runs someone else's code. Every pip install of ours in the README, docs/,
action.yml and templates/ installs this checkout, a path, or this repository at a full
commit."""

from __future__ import annotations

import re
import shlex
import tomllib

from .conftest import ROOT

OURS = re.compile(r"^(specgate|specgate-engine|specgate_engine)(\[[\w,-]+\])?([=<>!~].*)?$",
                  re.I)
PINNED = re.compile(r"^git\+https://\S+@[0-9a-f]{40}$")


def shipped() -> list[tuple[str, str]]:
    files = [ROOT / "README.md", ROOT / "action.yml", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "templates").iterdir())]
    return [(f.name, line) for f in files for line in f.read_text().splitlines()]


def test_the_distribution_is_not_the_index_projects_name() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "specgate-engine"
    assert project["scripts"] == {"engine": "engine.cli:main"}


def test_no_shipped_file_installs_specgate_by_name_from_the_index() -> None:
    found = []
    for name, line in shipped():
        for command in re.findall(r"pip install ([^#\n]*)", line):
            try:
                words = shlex.split(command)
            except ValueError:
                words = command.split()
            found += [(name, w) for w in words if OURS.match(w)]
        if re.search(r"SPECGATE_INSTALL:\s*\"?specgate", line):
            found.append((name, line.strip()))
    assert found == []


def test_the_git_installs_shown_are_pinned_to_a_commit() -> None:
    # (the GitLab template's, built from its inputs: tests/test_action.py)
    shown = [w for name, line in shipped() if name != "specgate.gitlab-ci.yml"
             for w in re.findall(r"git\+https://[^\s\"'`]+", line)]
    assert shown, "docs/ci.md shows how to install this repository at a commit"
    for url in shown:
        assert PINNED.match(url) or url.endswith("@COMMIT"), url
