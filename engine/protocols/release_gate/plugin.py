"""agent-release-gate as a plug-in: Assevra 0.6 datasets as an input format, and
``engine migrate-assevra``, which turns an Assevra 0.6 config into a spec folder.

An ``assevra-jsonl`` file is read line by line like ``jsonl``; each row is validated by
Assevra's rules (:func:`assevra.classify`), and the rows derive the suite: their inputs and
assertions (everything but what the run measured), which the Evaluation's
``suite_sha256`` must pin before the suite counts as governance data.
"""

from __future__ import annotations

from typing import Any

from engine.protocols import Command, Protocol
from engine.protocols.release_gate import assevra, fused, migrate
from engine.protocols.release_gate.codes import CODES
from engine.records.formats import Format, Verdict, read_jsonl

# What a run measured, as opposed to the case's inputs and assertions.
MEASURED = frozenset({"agent_output", "agent_actions", "tool_calls", "observed_state", "usage",
                      "cost_usd", "latency_ms", "duration_ms", "elapsed_ms", "latency_s",
                      "trace_id", "span_id", "trial_id"})


def suite_part(row: dict[str, Any]) -> dict[str, Any]:
    """A record's inputs and assertions: measured keys and keys starting with '_' removed."""
    return FORMAT.part(row)


def validate(row: Any, seen: set[str], budgets: Any) -> Verdict:
    """Assevra's row classes; the validation report groups rows by their dimension."""
    verdict = assevra.classify(row, seen, budgets)
    dimension = row.get("dimension")
    verdict.group = dimension if isinstance(dimension, str) else ""
    return verdict


# the measured keys are also the ones an expectation or a guard may not read
FORMAT = Format("assevra-jsonl", read_jsonl, line_based=True, validate=validate,
                suite="evidence", measured=MEASURED, group="dimension", fused=fused.fused)

PROTOCOL = Protocol(
    name="agent-release-gate",
    formats=(FORMAT,),
    codes=CODES,
    commands=(Command("migrate-assevra", "convert an Assevra 0.6 config into a release-gate "
                      "spec folder", migrate.arguments, migrate.run, exits="0 written",
                      examples=("engine migrate-assevra docs/examples/assevra.yml --out "
                                "migrated/",)),),
)
