"""The Agent Card catalogues (agent-release-gate §13): real titles of the edition, or none.

A catalogue entry either carries the official title of its edition or no title at all; a
locator dressed up as a title ("Govern 1, subcategory 1") is never shipped.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from . import refund
from .conftest import GATE, Gate

CATALOGUES = sorted((GATE / "catalogues").glob("*.yaml"))
# Words a stand-in title is made of; a real control title names the control.
STAND_IN = re.compile(r"(?i)\b(sub-?category|placeholder|todo|tbd|fixme|lorem|tba)\b|\?\?|xxx")


def placeholder_shaped(entry_id: str, title: str) -> bool:
    """A title that only restates its id's numbers, or is made of stand-in words.

    "Govern 1, subcategory 1" for "GOVERN 1.1" is both: its numbers are the id's
    numbers and 'subcategory' is a stand-in word.
    """
    numbers = re.findall(r"\d+", entry_id)
    repeats_id = bool(numbers) and re.findall(r"\d+", title) == numbers
    same_text = re.sub(r"\W", "", title).lower() == re.sub(r"\W", "", entry_id).lower()
    return repeats_id or same_text or bool(STAND_IN.search(title)) or not title.strip()


@pytest.mark.parametrize("title", ["Govern 1, subcategory 1", "GOVERN 1.1", "Govern-1.1",
                                   "TODO", "Placeholder title", "  "])
def test_the_placeholder_check_catches_locators(title: str) -> None:
    assert placeholder_shaped("GOVERN 1.1", title)


@pytest.mark.parametrize(("entry_id", "title"), [
    ("LLM01", "Prompt Injection"), ("Art. 9", "Risk management system"),
    ("A.2.2", "AI policy"), ("ASI01", "Agent Goal Hijack")])
def test_the_placeholder_check_passes_real_titles(entry_id: str, title: str) -> None:
    assert not placeholder_shaped(entry_id, title)


@pytest.mark.parametrize("path", CATALOGUES, ids=[p.stem for p in CATALOGUES])
def test_no_shipped_catalogue_entry_has_a_placeholder_title(path: Path) -> None:
    data = yaml.safe_load(path.read_text("utf-8"))
    assert data["entries"], path
    bad = [(e["id"], e["title"]) for e in data["entries"]
           if "title" in e and placeholder_shaped(str(e["id"]), str(e["title"]))]
    assert bad == []


def test_the_five_catalogues_are_all_checked() -> None:
    assert [p.stem for p in CATALOGUES] == ["eu-ai-act", "iso-42001", "nist-ai-rmf",
                                            "owasp-agentic", "owasp-llm"]


def test_an_entry_without_a_title_is_shown_by_its_id_alone(gate: Gate) -> None:
    code, card, out = gate.run(refund.rows(fixed=True))
    assert code == 0
    entries = {f"{e['catalogue']}:{e['id']}": e for e in card["agent_card"]["entries"]}
    assert "title" not in entries["nist-ai-rmf:MEASURE 1.1"]
    assert entries["owasp-llm:LLM02"]["title"] == "Sensitive Information Disclosure"
    html = (out / "scorecard.html").read_text("utf-8")
    assert "<td>nist-ai-rmf MEASURE 1.1</td>" in html
    assert "<td>owasp-llm LLM02 Sensitive Information Disclosure</td>" in html


@pytest.mark.parametrize("title", ["''", "'   '", "7", "[a, b]", "null"])
def test_a_title_that_is_not_a_non_empty_string_is_a_spec_error(gate: Gate, capsys: Any,
                                                                 title: str) -> None:
    path = gate.dir / "catalogues" / "owasp-llm.yaml"
    text = path.read_text("utf-8")
    path.write_text(text.replace("title: Supply Chain", f"title: {title}"), "utf-8")
    code, _, _ = gate.run(refund.rows(fixed=True))
    err = capsys.readouterr().err
    assert code == 2
    assert "BAD_DATA_FILE: spec.agent_card.catalogues[" in err
    assert "entry 2 ('LLM03'): a title is a non-empty string, or left out" in err
