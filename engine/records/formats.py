"""Input formats -> records, streamed. A bad line becomes a located record problem."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import protocols
from engine.records.clip import clip
from engine.records.strict_json import JsonError, decode_value, out_of_range


@dataclass(frozen=True)
class Record:
    """One parsed record and the line it came from."""

    line: int
    data: Any
    # sure to be plain JSON for the C encoder (``canonical._plain``); not part of equality
    plain: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class BadRecord:
    """A line that is not a usable record."""

    line: int
    code: str
    message: str


def parse_line(raw: bytes, line: int) -> Record | BadRecord:
    """One JSONL line as a record (an object), or why it is not one."""
    if line == 1 and raw.startswith(b"\xef\xbb\xbf"):
        return BadRecord(line, "BYTE_ORDER_MARK", "starts with a byte-order mark")
    try:
        data, plain = decode_value(raw)
    except JsonError as exc:
        return BadRecord(line, exc.record_code, str(exc))
    if not isinstance(data, dict):
        return BadRecord(line, "NOT_AN_OBJECT", "a record must be a JSON object")
    return Record(line, data, plain)


def mapped(line: int, data: dict[str, Any], where: str = "") -> Record | BadRecord:
    """A record a format mapped from a tool's own data, checked like a JSONL line: a sum or
    product that left the range of JSON numbers is a problem, never a crash later."""
    problem = out_of_range(data)
    if problem is None:
        return Record(line, data)
    return BadRecord(line, problem[0], f"{where}: {problem[1]}" if where else problem[1])


def read_jsonl(path: Path, digest: Any = None) -> Iterator[Record | BadRecord]:
    """Stream the records of a JSONL file (blank lines skipped), hashing the bytes read."""
    return read_jsonl_part(path, digest, 0, None, 1)


def read_jsonl_part(path: Path, digest: Any, start: int, end: int | None,
                    first_line: int) -> Iterator[Record | BadRecord]:
    """The records of bytes ``start``..``end`` of a JSONL file (a shard that begins at a
    line start; ``first_line`` is that line's number in the whole file)."""
    if end is not None and end <= start:
        return
    with path.open("rb") as handle:
        handle.seek(start)
        left = end - start if end is not None else -1
        for number, raw in enumerate(handle, start=first_line):
            if digest is not None:
                digest.update(raw)
            if raw.strip():
                yield parse_line(raw, number)
            if left >= 0:
                left -= len(raw)
                if left <= 0:
                    return


LABELED, UNLABELED, INVALID = "LABELED", "UNLABELED", "INVALID"


@dataclass
class Verdict:
    """What a format's row validator found: the row's class and each error and warning."""

    klass: str  # LABELED (scored against its expectations), UNLABELED, INVALID (refused)
    messages: list[dict[str, str]] = field(default_factory=list)
    group: str = ""  # what the format groups rows by in the validation report

    def add(self, level: str, code: str, field_name: str, message: str, hint: str = "") -> None:
        """Record an error or a warning."""
        self.messages.append({"level": level, "code": code, "field": clip(field_name),
                              "message": clip(message), "hint": clip(hint)})

    @property
    def code(self) -> str:
        """The first error code, or the class for an unlabeled row."""
        errors = [m["code"] for m in self.messages if m["level"] == "error"]
        return errors[0] if errors else self.klass


Reader = Callable[..., Iterator[Record | BadRecord]]  # (path, digest, **options)
# (record, ids seen so far, policy budgets) -> Verdict
Validator = Callable[[Any, set[str], Any], Verdict]


@dataclass(frozen=True)
class Format:
    """An input format: how its records are read and what they may carry.

    ``suite`` says whether the unit records derive the Suite (no Suite file): ``None`` (they
    do not), ``"governance"`` (the file is governance's own, e.g. a task inventory) or
    ``"evidence"`` (the records are written by the evaluated party, so the derived suite is
    governance data only when the Evaluation pins its digest). ``measured`` names the record
    keys a run measured (its outputs), for a suite derived from the evidence: the rest, but
    keys starting with '_', is suite data (the case's inputs and assertions), hashed into
    ``suite_sha256`` and the only keys an expectation or a guard may read
    (engine/spec/expectations.py).
    ``group`` names what the row validator groups rows by: each validation row's key for it
    and the scorecard's ``validation.by_<group>``.
    """

    name: str
    read: Reader | None  # None: the input is not records (a folder a primitive reads)
    line_based: bool = False  # records are lines: a file splits at line starts into shards
    validate: Validator | None = None  # row validator, when the policy validates rows
    suite: str | None = None
    measured: frozenset[str] = frozenset()
    group: str = "group"  # what the validator's Verdict.group is called in the evidence
    # (case key, run number key) of the records, for a tool that numbers each case's runs
    # (inspect_ai's epochs): when the unit's case is the record's own case key, its run
    # number must be 1..the case's trials, each once (engine/run/rows.py admit)
    trial: tuple[str, str] | None = None
    # JSON Schema of the ``options`` an Evaluation may give this format's reader (passed to
    # ``read`` as keyword arguments); None: the format takes none
    options: dict[str, Any] | None = None
    # (group, inspection, budgets) -> a fused check of the rows of that group whose one
    # inspection it is, or None (engine/run/compiled.py's lanes): validation and inspection
    # in one pass, answering only for a row valid with no message whose inspection PASSes
    fused: Callable[[str, Any, Any], Any] | None = None

    def suite_key(self, key: str) -> bool:
        """Whether a record's top-level ``key`` is suite data: neither measured nor '_'."""
        return key not in self.measured and not key.startswith("_")

    def part(self, record: dict[str, Any]) -> dict[str, Any]:
        """What of a record is suite data: the keys :meth:`suite_key` admits."""
        measured = self.measured  # suite_key, inline: this runs once per record
        return {k: v for k, v in record.items() if k not in measured and not k.startswith("_")}


def _imported(module: str) -> Reader:
    """The ``read`` of ``module``, imported on first use: a tool's log format costs
    nothing to a run that does not read one."""
    def read(path: Path, digest: Any = None, **options: Any) -> Iterator[Record | BadRecord]:
        reader: Reader = importlib.import_module(module).read
        return reader(path, digest, **options)
    return read


# an attribute of a span (or of its resource) that names a run's case or trial: its key,
# or a key of the JSON object it holds (pydantic-ai's ``metadata``, OpenInference's)
# (each keyword applies to its own type only, so a problem is said plainly, not as a oneOf)
_SOURCE: dict[str, Any] = {
    "type": ["string", "object"], "minLength": 1, "required": ["attribute", "key"],
    "additionalProperties": False,
    "properties": {"attribute": {"type": "string", "minLength": 1},
                   "key": {"type": "string", "minLength": 1}}}
_SOURCES = {**_SOURCE, "type": ["string", "object", "array"], "minItems": 1, "items": _SOURCE}
OTEL_OPTIONS = {"type": "object", "additionalProperties": False,
                "properties": {"case": _SOURCES, "trial": _SOURCES}}


GENERIC = {"jsonl": Format("jsonl", read_jsonl, line_based=True),
           "folder": Format("folder", None),
           # the logs of evaluation tools teams already run (docs/inspect.md,
           # docs/promptfoo.md, docs/otel.md)
           "inspect-log": Format("inspect-log", _imported("engine.records.inspect_log"),
                                 trial=("case_id", "trial")),
           # a promptfoo trial is a rank within a case, prompt and provider, not the case
           "promptfoo-results": Format("promptfoo-results",
                                       _imported("engine.records.promptfoo")),
           "otel-genai": Format("otel-genai", _imported("engine.records.otel"),
                                trial=("case_id", "trial"), options=OTEL_OPTIONS)}


def named(name: str) -> Format:
    """The format called ``name``: the engine's own, else one a protocol adds."""
    return GENERIC.get(name) or protocols.formats()[name]


def of_units(evaluation: Any) -> Format:
    """The format of an Evaluation's unit input."""
    return named(evaluation.inputs[evaluation.unit_input].format)


def names() -> list[str]:
    """Every format name, the engine's own first."""
    return [*GENERIC, *protocols.formats()]
