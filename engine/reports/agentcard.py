"""The Agent Card (agent-release-gate §13): evidence mapped to catalogue identifiers.

Each entry of every catalogue is `evidenced` (a full mapping whose evidence is present and
resolved), `partial` (only partial mappings have present evidence, or a full mapping's
evidence is unresolved) or `not evidenced`. The card is indicative evidence for review; it
is not a legal compliance determination or a certification, and says so.
"""

from __future__ import annotations

from typing import Any

from engine.decide.lattice import Decision, included

PROVENANCE = ("hashed_policy", "suite_and_input_digests", "pass_k_and_intervals",
              "calibration_and_controls", "pinned_signature", "decision")
DISCLAIMER = ("Indicative evidence for review. This card is not a legal compliance "
              "determination, an audit opinion or a certification.")


def _entry(index: int, data: Any) -> dict[str, str]:
    """One catalogue entry: its id and, when the catalogue gives one, its official title.

    A title is optional (a catalogue without the official text of its edition leaves titles
    out and reports show the id alone), but when present it is a non-empty string.
    """
    entry = {"id": str(data["id"])}
    if "title" in data:
        title = data["title"]
        if not isinstance(title, str) or not title.strip():
            raise ValueError(f"entry {index} ('{entry['id']}'): a title is a non-empty "
                             "string, or left out")
        entry["title"] = title
    return entry


def build_catalogue(data: Any) -> dict[str, Any]:
    """A catalogue file: id, name, edition and entries; ValueError if it is not one."""
    try:
        entries = [_entry(i, e) for i, e in enumerate(data["entries"])]
        return {"catalogue": str(data["catalogue"]), "name": str(data["name"]),
                "edition": str(data["edition"]), "entries": entries}
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a catalogue ({exc})") from None


def build_provenance(data: Any) -> dict[str, dict[str, list[str]]]:
    """The mapping of non-category evidence; ValueError names an unknown item."""
    if not isinstance(data, dict):
        raise ValueError("a provenance mapping maps evidence items to {full, partial}")
    for item in data:
        if item not in PROVENANCE:
            raise ValueError(f"'{item}' is not an evidence item (one of {', '.join(PROVENANCE)})")
    return {k: {"full": list(v.get("full", [])), "partial": list(v.get("partial", []))}
            for k, v in data.items()}


def _evidence(outcome: Decision, signed: bool) -> dict[str, tuple[bool, bool, str]]:
    """Evidence item -> (present, resolved, outcome shown beside it)."""
    out = {}
    for name, cat in outcome.categories.items():
        resolved = cat["state"] in ("MET", "NOT_MET")
        out[name] = (included(cat), resolved, cat["state"])
    any_resolved = any(v[1] for v in out.values())
    controls = outcome.controls
    caught = bool(controls and controls["total"] and controls["failed"] == 0)
    out |= {"hashed_policy": (True, True, "recorded"),
            "suite_and_input_digests": (True, True, "recorded"),
            "pass_k_and_intervals": (any_resolved, any_resolved, "reported"),
            "calibration_and_controls": (caught, caught, "controls caught" if caught else
                                         "no passing controls"),
            "pinned_signature": (signed, signed, "signed; pin the key to verify authorship"
                                 if signed else "unsigned"),
            "decision": (True, True, outcome.decision)}
    return out


def card(catalogues: list[dict[str, Any]], mappings: dict[str, dict[str, list[str]]],
         outcome: Decision, signed: bool) -> dict[str, Any]:
    """The Agent Card of one run."""
    evidence = _evidence(outcome, signed)
    links: dict[str, list[dict[str, Any]]] = {}
    for item, mapping in mappings.items():
        present, resolved, shown = evidence.get(item, (False, False, "absent"))
        for strength in ("full", "partial"):
            for ref in mapping.get(strength, []):
                links.setdefault(ref, []).append({"item": item, "strength": strength,
                                                  "present": present, "resolved": resolved,
                                                  "outcome": shown})
    entries, counts = [], {}
    for cat in catalogues:
        tally = {"evidenced": 0, "partial": 0, "not evidenced": 0}
        for entry in cat["entries"]:
            found = links.get(f"{cat['catalogue']}:{entry['id']}", [])
            if any(e["strength"] == "full" and e["present"] and e["resolved"] for e in found):
                status = "evidenced"
            elif any(e["present"] for e in found):
                status = "partial"
            else:
                status = "not evidenced"
            tally[status] += 1
            entries.append({"catalogue": cat["catalogue"], "id": entry["id"],
                            **({"title": entry["title"]} if "title" in entry else {}),
                            "status": status, "evidence": found})
        counts[cat["catalogue"]] = tally
    return {"disclaimer": DISCLAIMER,
            "catalogues": [{k: c[k] for k in ("catalogue", "name", "edition", "sha256")}
                           for c in catalogues],
            "counts": counts, "entries": entries}
