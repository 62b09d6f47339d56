"""Checks the spec package against the engine's tables before anything runs.

``gates.yaml`` against the check table (``gates.CHECKS``): every ``check:`` is a known
check in a phase that fits it, with ``code`` or ``codes`` as its parts ask, and every
``protocol.yaml`` parameter it reads is there; then, for each task kind, the gates in the
order they run (submission, then A on every finding, then B) must establish what each
check ``needs`` before it. The kinds of ``statistics.yaml``, ``protocol.yaml`` and the gates
against ``kinds.yaml``. Every finding is a located problem in the file that holds it.
"""

from __future__ import annotations

import string
from collections.abc import Iterator, Mapping
from typing import Any

from engine.errors import Problem, did_you_mean
from engine.protocols.discovery.gates import CHECKS, PHASES
from engine.spec.yaml import Document

PHASE_SUBJECT = {"submission": "submission", "A": "finding", "B": "finding"}


def check_gates(gates: Document, protocol: Document, kinds: Mapping[str, Any]) -> list[Problem]:
    """Every problem of the gate list against the check table and protocol.yaml."""
    out: list[Problem] = []
    params = protocol.data["gates"]
    for i, gate in enumerate(gates.data["gates"]):
        at = ("gates", i)
        check = CHECKS.get(gate["check"])
        if check is None:
            out.append(gates.problem(at + ("check",), "UNKNOWN_CHECK",
                                     f"'{gate['check']}' is not a known gate check",
                                     did_you_mean(gate["check"], CHECKS)))
            continue
        if PHASE_SUBJECT[gate["phase"]] != check.subject:
            out.append(gates.problem(at + ("phase",), "GATE_PHASE",
                                     f"check '{gate['check']}' runs on a {check.subject}, "
                                     f"not in phase {gate['phase']}"))
        out.extend(_codes(gates, at, gate, check.parts))
        out.extend(protocol.problem(("gates",), "MISSING_KEY",
                                    f"'{key}' is required by check '{gate['check']}' (gate "
                                    f"{gate['id']} in gates.yaml)", key=True)
                   for key in check.params if key not in params)
        out.extend(gates.problem(at + ("kinds", j), "UNKNOWN_KIND",
                                 f"'{kind}' is not a task kind", did_you_mean(kind, kinds))
                   for j, kind in enumerate(gate.get("kinds", ())) if kind not in kinds)
        out.extend(_message(gates, at, gate["message"]))
    out.extend(_duplicate_ids(gates))
    return out


def _codes(doc: Document, at: tuple[str | int, ...], gate: Mapping[str, Any],
           parts: tuple[str, ...]) -> Iterator[Problem]:
    if not parts:
        if "codes" in gate:
            yield doc.problem(at + ("codes",), "GATE_CODES", f"check '{gate['check']}' "
                              "reports one code: give `code`, not `codes`", key=True)
        return
    if "codes" not in gate:
        yield doc.problem(at + ("code",), "GATE_CODES", f"check '{gate['check']}' reports a "
                          f"code per part: give `codes` for {list(parts)}", key=True)
        return
    for part in parts:
        if part not in gate["codes"]:
            yield doc.problem(at + ("codes",), "MISSING_KEY", f"'{part}' is required here "
                              f"(check '{gate['check']}' reports it)")
    for part in gate["codes"]:
        if part not in parts:
            yield doc.problem(at + ("codes", part), "UNKNOWN_KEY", f"check '{gate['check']}' "
                              f"has no part '{part}'", did_you_mean(part, parts), key=True)


def _message(doc: Document, at: tuple[str | int, ...], message: str) -> Iterator[Problem]:
    """Message templates may only use simple {names}."""
    try:
        fields = list(string.Formatter().parse(message))
    except ValueError as exc:
        yield doc.problem(at + ("message",), "BAD_MESSAGE", f"not a message template: {exc}")
        return
    for _, name, spec, conversion in fields:
        if name is not None and (not name.isidentifier() or spec or conversion):
            yield doc.problem(at + ("message",), "BAD_MESSAGE",
                              f"message field {{{name}}} must be a plain name")


def _duplicate_ids(doc: Document) -> Iterator[Problem]:
    seen: set[str] = set()
    for i, gate in enumerate(doc.data["gates"]):
        if gate["id"] in seen:
            yield doc.problem(("gates", i, "id"), "DUPLICATE_GATE",
                              f"gate id '{gate['id']}' appears more than once")
        seen.add(gate["id"])


def check_order(gates: Document, kinds: Mapping[str, Any], used: list[str]) -> list[Problem]:
    """For each kind in use, each gate's needs are established by gates that run before it."""
    missing: dict[int, dict[str, list[str]]] = {}
    listed = list(enumerate(gates.data["gates"]))
    for kind in used:
        established: set[str] = set()
        for phase in PHASES:
            for i, gate in listed:
                if gate["phase"] != phase or kind not in gate.get("kinds", [kind]):
                    continue
                needs = CHECKS[gate["check"]].needs
                if kinds[kind]["arms"] == "conditions":  # its arms are read from its labels
                    needs = (needs - {"arms"}) | ({"labels"} if "arms" in needs else set())
                for fact in sorted(needs - established):
                    missing.setdefault(i, {}).setdefault(fact, []).append(kind)
                established |= CHECKS[gate["check"]].provides
    out = []
    for i, facts in sorted(missing.items()):
        for fact, which in facts.items():
            by = sorted(name for name, c in CHECKS.items() if fact in c.provides)
            gate = gates.data["gates"][i]
            out.append(gates.problem(("gates", i, "check"), "GATE_ORDER",
                                     f"gate {gate['id']} (check '{gate['check']}') needs "
                                     f"'{fact}', which no gate before it establishes for "
                                     f"{', '.join(sorted(which))}",
                                     f"place a gate with check {' or '.join(by)} before it"))
    return out


def check_conditions(protocol: Document, kinds: Mapping[str, Any],
                     used: list[str]) -> list[Problem]:
    """``conditions_per_kind`` names each kind in use with the conditions its arms read."""
    counts = protocol.data["gates"].get("conditions_per_kind")
    if counts is None:
        return []  # required only by the condition_count check, which says so
    at = ("gates", "conditions_per_kind")
    out = [protocol.problem(at + (kind,), "UNKNOWN_KIND", f"'{kind}' is not a task kind",
                            did_you_mean(kind, kinds), key=True)
           for kind in counts if kind not in kinds]
    for kind in used:
        if kind not in counts:
            out.append(protocol.problem(at, "MISSING_KEY", f"'{kind}' is required here (a kind "
                                        "statistics.yaml defines)"))
        elif counts[kind] != kinds[kind]["conditions"]:
            out.append(protocol.problem(at + (kind,), "KIND_CONDITIONS",
                                        f"kind '{kind}' forms its arms from "
                                        f"{kinds[kind]['conditions']} condition(s), not "
                                        f"{counts[kind]}"))
    return out
