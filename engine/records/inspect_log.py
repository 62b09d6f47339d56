"""inspect_ai eval logs -> one record per sample and epoch (docs/inspect.md).

inspect_ai writes a log in one of two forms, told apart here by their first bytes:

- ``.eval``: a zip whose ``samples/<id>_epoch_<n>.json`` entries each hold one sample, with
  ``header.json`` (or, for a run still going, ``_journal/start.json``) naming the task and
  model. The file's bytes are hashed as they are copied to a private temporary file, whose
  sample entries are then read one at a time (stored, deflate, or zstd, as inspect_ai
  writes them), so memory is bounded by one sample and what is read is what was hashed.
- ``.json``: one JSON document whose ``samples`` array holds the samples. It is framed
  element by element from a sliding buffer, never loaded whole.

Each sample is decoded by the strict record reader (NaN, duplicate keys, lone surrogates
and deep nesting are coded problems) and mapped to a record with ``id`` (``<sample
id>#<epoch>``), ``case_id`` (the sample id), ``trial`` (the epoch) and the sample's own data
under documented names. The reader only maps: a scorer's value stays the tool's value
(``"C"``, ``"I"``, a number ...) for an inspection to gate on.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import re
import struct
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from engine.records.clip import clip
from engine.records.formats import BadRecord, Record, mapped, parse_line
from engine.records.json_stream import MAX_VALUE, JsonStream, Stop
from engine.records.strict_json import NAN, JsonError, decode_value

CHUNK = 1 << 16
MAX_SAMPLE = MAX_VALUE  # one sample's JSON text, decompressed (64 MiB)
MAX_RATIO, UNPACKED_FLOOR = 100, 256 << 20  # samples unpack to at most 256 MiB + 100x file
ZIP_MAGIC = b"PK\x03\x04"
STORED, DEFLATED, ZSTD = 0, 8, 93
TRUNCATED = "INSPECT_LOG_TRUNCATED"
MALFORMED = "INSPECT_LOG_MALFORMED"


def read(path: Path, digest: Any = None) -> Iterator[Record | BadRecord]:
    """Stream the samples of an inspect_ai log (``.eval`` zip or ``.json``) as records."""
    with path.open("rb") as handle:
        head = b""
        while len(head) < 4:  # enough to tell a zip from JSON (a pipe may give less)
            more = handle.read1(4 - len(head))
            if not more:
                break
            head += more
        if head[:2] == b"PK":
            yield from _read_zip(handle, head, digest)
        else:
            stream = JsonStream(handle, digest, head, truncated=TRUNCATED)
            try:
                yield from _read_json(stream)
            finally:
                stream.drain()  # the input digest is always the whole file's


# ---------------------------------------------------------------- the .eval (zip) form


def _read_zip(source: Any, head: bytes, digest: Any) -> Iterator[Record | BadRecord]:
    """The zip is read at random places, so it is first copied, each byte hashed as it is
    copied, into a file of the reader's own (unlinked: no path names it): the samples read
    are the bytes hashed, even if the log is rewritten while it is read."""
    with tempfile.TemporaryFile() as handle:
        for chunk in itertools.chain([head], iter(lambda: source.read(CHUNK), b"")):
            if digest is not None:
                digest.update(chunk)
            handle.write(chunk)
        yield from _zip_records(handle)


def _zip_records(handle: IO[bytes]) -> Iterator[Record | BadRecord]:
    try:
        handle.seek(0)
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError,
            NotImplementedError, OverflowError, struct.error) as exc:
        yield BadRecord(1, TRUNCATED, "the .eval zip has no readable central directory: "
                        f"truncated or damaged ({exc})")
        return
    with archive:
        infos = archive.infolist()
        twice = _named_twice(infos)
        if twice is not None:  # which of two header.json counts would be the reader's guess
            yield BadRecord(1, "DUPLICATE_KEY", twice)
            return
        samples = [i for i in infos if i.filename.startswith("samples/")
                   and i.filename.endswith(".json") and not i.is_dir()]
        if not samples:
            yield BadRecord(1, MALFORMED, "the .eval zip holds no samples/*.json entry: "
                            "not an inspect_ai log, or one written without samples")
            return
        layout = _layout_problem(handle, infos, samples)
        if layout is not None:
            yield BadRecord(1, MALFORMED, layout)
            return
        names = {i.filename: i for i in infos}
        context: dict[str, Any] = {}
        for name in ("header.json", "_journal/start.json"):
            if name in names:
                raw, problem = _entry(archive, handle, names[name])
                why = problem[1] if problem is not None else None
                if why is None:
                    try:  # read as the .json form's header is: what is mapped, decoded
                        context = _header(JsonStream(io.BytesIO(raw)))
                    except Stop as exc:
                        why = str(exc)
                if why is not None:
                    yield BadRecord(1, MALFORMED, f"{name}: {why}")
                    return
                break
        problem_of = _header_problem(context) if "epochs" in context else \
            "no header (header.json or _journal/start.json with eval) bounds its samples"
        if problem_of is not None:
            yield BadRecord(1, MALFORMED, problem_of)
            return
        seen = _Seen()
        for index, info in enumerate(samples, start=1):
            raw, problem = _entry(archive, handle, info)
            if problem is not None:
                seen.bad = True
                yield BadRecord(index, problem[0], f"{info.filename}: {problem[1]}")
                continue
            unit = _unit(raw, parse_line(raw, index), context, info.filename, seen)
            if isinstance(unit, Record) and info.filename != \
                    f"samples/{unit.data['sample_id']}_epoch_{unit.data['epoch']}.json":
                unit = BadRecord(index, MALFORMED, f"{info.filename} holds sample "
                                 f"{clip(unit.data['sample_id'])} epoch {unit.data['epoch']}"
                                 ": an entry inspect_ai names by its sample and epoch")
            seen.bad = seen.bad or isinstance(unit, BadRecord)
            yield unit
        yield from seen.missing(context)


def _named_twice(infos: list[zipfile.ZipInfo]) -> str | None:
    """Why the zip's directory names one entry twice (inspect_ai writes each name once),
    else None: as a JSON object with a key given twice, the log says two things at once,
    whatever the two entries hold."""
    first: dict[str, int] = {}
    for position, info in enumerate(infos, start=1):
        if info.filename in first:
            return (f"the .eval zip names the entry {clip(info.filename)!r} twice (entries "
                    f"{first[info.filename]} and {position} of its directory): the log "
                    "contradicts itself, so nothing of it is read")
        first[info.filename] = position
    return None


def _layout_problem(handle: IO[bytes], infos: list[zipfile.ZipInfo],
                    samples: list[zipfile.ZipInfo]) -> str | None:
    """Why the zip is not laid out as a writer lays one out, before anything is
    decompressed: entries whose data overlap (one compressed text read as many samples, a
    zip bomb), a local header that names another entry, or more to decompress than
    ``MAX_RATIO`` bytes per byte of the file (beyond ``UNPACKED_FLOOR``)."""
    size = handle.seek(0, io.SEEK_END)
    unpacked = sum(i.file_size for i in samples)
    if unpacked > UNPACKED_FLOOR + MAX_RATIO * size:
        return (f"its samples unpack to {unpacked} bytes, more than {MAX_RATIO} times the "
                f"file's {size}: refused as a zip bomb")
    spans = []
    for info in infos:
        if not 0 <= info.header_offset <= size - 30:  # seeking there would fail, or read air
            return f"{info.filename}: the directory points outside the file"
        handle.seek(info.header_offset)
        local = handle.read(30)
        if len(local) < 30 or local[:4] != ZIP_MAGIC:
            return f"{info.filename}: no local file header where the directory points"
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        name = handle.read(name_len)
        if name != info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437",
                                             "replace"):
            return f"{info.filename}: its local header names another entry"
        spans.append((info.header_offset, info.header_offset + 30 + name_len + extra_len
                      + info.compress_size, info.filename))
    spans.sort()
    for (_, end, first), (start, _, second) in zip(spans, spans[1:], strict=False):
        if start < end:
            return f"entries {first} and {second} overlap: refused as a zip bomb"
    return None


Problem = tuple[str, str] | None  # (code, why) an entry cannot be read


def _entry(archive: zipfile.ZipFile, handle: IO[bytes],
           info: zipfile.ZipInfo) -> tuple[bytes, Problem]:
    """One entry's bytes, or why they cannot be read."""
    if info.file_size > MAX_SAMPLE:
        return b"", ("VALUE_TOO_LARGE", f"larger than {MAX_SAMPLE >> 20} MiB")
    try:
        if info.compress_type == ZSTD:
            raw = _zstd(handle, info)
        elif info.compress_type in (STORED, DEFLATED):
            with archive.open(info) as member:
                raw = member.read(info.file_size + 1)
        else:
            return b"", (MALFORMED, f"compression method {info.compress_type} is not one "
                         "inspect_ai writes")
    except _Unsupported as exc:
        return b"", (MALFORMED, str(exc))
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, RuntimeError,
            NotImplementedError, struct.error) as exc:
        return b"", (TRUNCATED, f"cannot be read: truncated or damaged "
                     f"({type(exc).__name__}: {exc})")
    return raw, None


class _Unsupported(Exception):
    """An entry the reader cannot decompress here (zstd without the zstandard package)."""


def _zstd(handle: IO[bytes], info: zipfile.ZipInfo) -> bytes:
    """A zstd-compressed entry (method 93, inspect_ai's default), from its raw bytes."""
    try:
        import zstandard
    except ImportError:
        raise _Unsupported("zstd compression needs the zstandard package "
                           "(pip install zstandard)") from None
    handle.seek(info.header_offset)
    local = handle.read(30)
    if len(local) < 30 or local[:4] != ZIP_MAGIC:
        raise zipfile.BadZipFile("bad local file header")
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    handle.seek(info.header_offset + 30 + name_len + extra_len)
    packed = handle.read(info.compress_size)
    if len(packed) < info.compress_size:
        raise EOFError("the entry's data ends early")
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(packed),
                                                            read_across_frames=True)
        raw = reader.read(info.file_size + 1)  # never more than the directory declares
    except zstandard.ZstdError as exc:
        raise ValueError(f"zstd: {exc}") from None
    if zlib.crc32(raw) != info.CRC or len(raw) != info.file_size:
        raise zipfile.BadZipFile("CRC or size mismatch")
    return raw


# ---------------------------------------------------------------- the .json form


def _read_json(stream: JsonStream) -> Iterator[Record | BadRecord]:
    index = 0  # samples framed so far
    try:
        opened = stream.peek()
        if not opened:
            raise Stop(TRUNCATED, "the log is empty")
        if opened != "{":
            raise Stop(MALFORMED, "not an inspect_ai log: neither a .eval zip nor a JSON "
                       "object")
        context: dict[str, Any] = {}
        seen_samples = False
        seen = _Seen()
        for key in stream.members("in the log"):
            if key == "samples":
                seen_samples = True
                problem = _header_problem(context) if "epochs" in context else \
                    "no header (eval) before the samples: no header bounds them"
                if problem is not None:
                    raise Stop(MALFORMED, problem)
                for raw, item in _samples(stream):
                    index += 1
                    unit = _unit(raw, item, context, f"sample {index}", seen)
                    seen.bad = seen.bad or isinstance(unit, BadRecord)
                    yield unit
            elif key == "eval" and seen_samples:
                raise Stop(MALFORMED, "the header (eval) follows the samples; inspect_ai "
                           "writes it first, and it bounds them")
            elif key in ("eval", "status") and not seen_samples:
                # the header is read as strictly as a .eval's header.json
                context.update(_context({key: stream.value(f"in the log's {key!r}")}))
            else:
                stream.skip(f"in the log's {key[:40]!r}")
        stream.end(MALFORMED)
        if not seen_samples:
            yield BadRecord(1, MALFORMED, "the log holds no samples array (written with "
                            "log_samples=False?): no sample can be gated")
        yield from seen.missing(context)
    except Stop as exc:
        if exc.code == TRUNCATED:
            yield BadRecord(index + 1, TRUNCATED, f"{exc}: the log is cut short "
                            f"(after {index} samples)")
        else:
            yield BadRecord(index + 1, exc.code, f"after {index} samples: {exc}")


def _samples(stream: JsonStream) -> Iterator[tuple[bytes, Record | BadRecord]]:
    """Each sample's text and its decoding."""
    if stream.peek() != "[":
        stream.expect("[", "for the samples array")
    for index in stream.items("in the samples array"):
        raw = stream.text(f"sample {index}").encode("utf-8")
        yield raw, parse_line(raw, index)


# ---------------------------------------------------------------- one sample -> one record


def _header_problem(context: dict[str, Any]) -> str | None:
    """Why a header (as ``_context`` read it) cannot bound the samples, else None."""
    epochs = context.get("epochs")
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        return (f"its header's eval.config.epochs ({clip(epochs)!r}) is not a whole number "
                ">= 1: the epochs a sample must have are unknown")
    return None


def _header(stream: JsonStream) -> dict[str, Any]:
    """A ``header.json`` as the context its samples carry: its ``eval`` and ``status``
    decoded strictly, the rest (``plan``, ``results``, ``stats``) framed only, as the
    ``.json`` form's members are (``Stop`` when it is not a JSON object)."""
    if stream.peek() != "{":
        raise Stop(MALFORMED, "the header is not a JSON object")
    context: dict[str, Any] = {}
    for key in stream.members("in the header"):
        if key in ("eval", "status"):
            context.update(_context({key: stream.value(f"in the header's {key!r}")}))
        else:
            stream.skip(f"in the header's {key[:40]!r}")
    stream.end(MALFORMED)
    return context


def _context(log: dict[str, Any]) -> dict[str, Any]:
    """What of the log's header each record carries: task, model, run id, status."""
    spec = _dict(log.get("eval"))
    out: dict[str, Any] = {}
    for key in ("task", "model", "run_id"):
        if isinstance(spec.get(key), str):
            out[key] = spec[key]
    if "eval" in log:  # how many epochs the run was asked for (inspect_ai's default: 1)
        epochs = _dict(spec.get("config")).get("epochs")
        out["epochs"] = 1 if epochs is None else epochs
        ids = _dict(spec.get("dataset")).get("sample_ids")
        if isinstance(ids, list):  # the samples the run had (after --limit)
            out["sample_ids"] = [i for i in ids if isinstance(i, str | int)
                                 and not isinstance(i, bool)]
    if isinstance(log.get("status"), str):
        out["log_status"] = log["status"]
    return out


class _Seen:
    """What the reader keeps across a log's samples: the sample uuids, and the epochs of
    each sample id with the place of its first sample (for what is missing at the end)."""

    def __init__(self) -> None:
        self.uuids: set[str] = set()
        self.bodies: set[bytes] = set()  # the digests of the samples' contents (_copy)
        self.epochs: dict[str, tuple[int, Any, set[int]]] = {}
        self.bad = False  # a sample was refused: the log is INCOMPLETE whatever is missing

    def note(self, sample_id: Any, epoch: int, line: int) -> None:
        key = json.dumps(sample_id)  # 1 and "1" are two samples
        self.epochs.setdefault(key, (line, sample_id, set()))[2].add(epoch)

    def missing(self, context: dict[str, Any]) -> Iterator[BadRecord]:
        """A sample lacking an epoch its run had (the header's ``eval.config.epochs``, else
        below its highest): a run left out of the log (run 3 epochs, keep the best 2).
        Nothing when a sample was refused (what it lacks is then that sample's problem)."""
        if self.bad:
            return
        for sample_id in context.get("sample_ids", []):
            if json.dumps(sample_id) not in self.epochs:
                yield BadRecord(1, "RUN_MISSING", f"sample {clip(sample_id)!r} of the run "
                                "(its header's eval.dataset.sample_ids) is not in the log")
        for line, sample_id, epochs in self.epochs.values():
            want = context["epochs"]  # a whole number >= 1 (_header_problem)
            have = sum(1 for e in epochs if e <= want)
            if have < want:
                first = next(e for e in range(1, have + 2) if e not in epochs)
                yield BadRecord(line, "RUN_MISSING", f"sample {clip(sample_id)} has {have} of "
                                f"the {want} epochs its run had (epoch {first} is not in the "
                                "log): a run left out is never replaced by another")


REFERENCES = ("attachment://", "tc://")  # inspect_ai's references into sample.attachments
# what a sample's text holds if a string of it may be a reference: a prefix, or an escape
# that could spell one (attachment:\/\/..., \u0061ttachment://...)
MAY_REFER = (b"attachment:", b"tc:", b"\\u")


def _unit(raw: bytes, parsed: Record | BadRecord, context: dict[str, Any], where: str,
          seen: _Seen) -> Record | BadRecord:
    """One sample (``raw``, decoded as ``parsed``) as a record."""
    if isinstance(parsed, BadRecord) and parsed.code == "NON_FINITE_NUMBER" and b"NaN" in raw:
        parsed = _unscored(raw, parsed)
    if isinstance(parsed, BadRecord):
        return BadRecord(parsed.line, parsed.code, f"{where}: {parsed.message}")
    sample, line = parsed.data, parsed.line
    sample_id, epoch = sample.get("id"), sample.get("epoch")
    if isinstance(sample_id, bool) or not isinstance(sample_id, str | int):
        return BadRecord(line, "BAD_VALUE", f"{where}: its id is not a string or an integer")
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
        return BadRecord(line, "BAD_VALUE", f"{where}: its epoch is not an integer >= 1")
    seen.note(sample_id, epoch, line)
    if epoch > context.get("epochs", epoch):
        return BadRecord(line, "BAD_VALUE", f"{where}: epoch {epoch} of a run of "
                         f"{context['epochs']} epochs (its header's eval.config.epochs)")
    copied = _copy(sample, raw, seen)
    if copied is not None:
        return BadRecord(line, copied[0], f"{where}: {copied[1]}")
    if sample.get("invalidation") is not None:
        return BadRecord(line, "INSPECT_SAMPLE_INVALIDATED", f"{where}: inspect_ai marks this "
                         "sample invalidated (its invalidation says by whom and why): not "
                         "evidence until it is run again")
    edited = _edited(sample.get("scores"))
    if edited is not None:
        return BadRecord(line, "INSPECT_SCORE_EDITED", f"{where}: its {clip(edited)!r} score "
                         "was edited after scoring (its history): a person's verdict, not "
                         "the scorer's")
    if any(r in raw for r in MAY_REFER):
        sample, unknown = _resolved(sample)
        if unknown is not None:
            return BadRecord(line, MALFORMED, f"{where}: it refers to attachment "
                             f"{clip(unknown)!r}, which its attachments lack")
    output = _dict(sample.get("output"))
    choices = output.get("choices")
    choice = _dict(choices[0]) if isinstance(choices, list) and choices else {}
    total, working = sample.get("total_time"), sample.get("working_time")
    events = _events(sample)
    usage, bad = _usage(sample.get("model_usage"), output.get("usage"), events,
                        sample.get("messages"))
    for name, value in (("total_time", total), ("working_time", working)):
        if value is not None and not _quantity(value):
            bad = bad or f"its {name} is not a number >= 0"
    if bad:  # a budget would read a negative, or skip what it cannot add
        return BadRecord(line, "BAD_VALUE", f"{where}: {bad}")
    error = sample.get("error")
    record = {
        "id": f"{sample_id}#{epoch}",
        "case_id": str(sample_id),
        "trial": epoch,
        "sample_id": sample_id,
        "epoch": epoch,
        "task": context.get("task"),
        "model": output.get("model") if isinstance(output.get("model"), str)
        else context.get("model"),
        "input": sample.get("input"),
        "input_text": _text(sample.get("input")),
        "target": sample.get("target"),
        "output": _completion(output, choice),
        "stop_reason": choice.get("stop_reason"),
        "scores": _scores(sample.get("scores")),
        "usage": usage,
        "model_usage": sample.get("model_usage"),
        "latency_s": total if _number(total) else None,
        "latency_ms": round(total * 1000, 3) if _number(total) else None,
        "working_time_s": working if _number(working) else None,
        "tool_calls": _tool_calls(sample.get("messages"), events),
        "error": _error(error),
        "limit": sample.get("limit"),
        "metadata": sample.get("metadata"),
        "run_id": context.get("run_id"),
        "log_status": context.get("log_status"),
    }
    return mapped(line, record, where)


# every "uuid" and "epoch" member of a sample's text (the sample's own, its events'): what
# a copy under another epoch changes, left out of the content a copy repeats
_RENUMBERED = re.compile(rb'"(?:uuid|epoch)"\s*:\s*(?:"[^"\\]*"|-?[0-9]+)')


def _copy(sample: dict[str, Any], raw: bytes, seen: _Seen) -> tuple[str, str] | None:
    """Why a sample is a copy of another of the log, else None. inspect_ai 0.3.70 and later
    give every sample of every epoch its own ``uuid``: one given twice is a copy. Earlier
    versions wrote none, and a log retried across 0.3.70 (``inspect eval-retry``) carries
    its earlier samples without one, so a missing uuid is no contradiction. Every sample is
    also told apart by its content, its uuids and epochs aside (its text, ``raw``, as the
    log holds it): a sample copied under another epoch repeats it (under a fresh uuid or
    none at all), where a real epoch differs at least in its times. A copy that was also
    edited is not seen (docs/inspect.md, the support matrix); sample id and epoch are
    checked by the caller."""
    uuid = sample.get("uuid")
    if "uuid" in sample:
        if not isinstance(uuid, str) or not uuid:
            return MALFORMED, "its uuid is not a string"
        if uuid in seen.uuids:
            return "DUPLICATE_ID", f"sample uuid {clip(uuid)!r} appears twice (a copied sample)"
        seen.uuids.add(uuid)
    # commas and white space left out too: a member taken out leaves no trace of where
    body = hashlib.sha256(_RENUMBERED.sub(b"", raw).translate(None, b", \t\r\n")).digest()
    if body in seen.bodies:
        return "DUPLICATE_ID", ("it repeats another sample of the log whole but for its epoch "
                                "and uuids (a copied sample)")
    seen.bodies.add(body)
    return None


def _unscored(raw: bytes, refused: BadRecord) -> Record | BadRecord:
    """A sample whose only NaNs are in score values: inspect_ai's unscored sentinel
    (``Score.unscored()``, a grader that found no grade, or one key of a dict value), read
    as ``null`` beside the score's ``reason``. A NaN anywhere else stays refused (a token
    count or a time)."""
    try:
        sample = decode_value(raw, nan=True)[0]
    except JsonError:
        return refused
    scores = sample.get("scores") if isinstance(sample, dict) else None
    for score in scores.values() if isinstance(scores, dict) else []:
        if isinstance(score, dict) and "value" in score:  # a value, or one key of a dict
            score["value"] = _without_nan(score["value"])  # value (unscored for that key)
    stack: list[Any] = [sample]
    while stack:  # any NaN left is not a score's
        item = stack.pop()
        if item is NAN:
            return refused
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return Record(refused.line, sample)


def _leaves(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """``value`` with ``leaf`` applied to each value that is not a dict or a list in it."""
    if isinstance(value, dict):
        return {k: _leaves(v, leaf) for k, v in value.items()}
    if isinstance(value, list):
        return [_leaves(v, leaf) for v in value]
    return leaf(value)


def _without_nan(value: Any) -> Any:
    """A score value with each NaN in it (the value, or one of a dict's or list's) null."""
    return _leaves(value, lambda v: None if v is NAN else v)


def _edited(scores: Any) -> Any:
    """The name of a score edited after scoring (inspect_ai's ``edit_score`` keeps the
    original and each edit in ``history``), else None."""
    if isinstance(scores, dict):
        for name, score in scores.items():
            if isinstance(score, dict) and score.get("history") not in (None, []):
                return name
    return None


RESOLVED = ("input", "messages", "events", "error_retries")  # what inspect_ai resolves
HASH = re.compile(r"[0-9a-f]{32}")  # the shape of inspect_ai's attachment keys


def _resolved(sample: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The sample with each reference in the parts inspect_ai resolves (its input, messages,
    events: a tool argument over 100 characters is one) replaced by the text its
    ``attachments`` hold under that key, as inspect_ai's ``resolve_sample_attachments``
    reads them; and the first reference of inspect_ai's shape (32 hex digits) that its
    attachments lack (else None): the text an inspection would read is not in the log. A
    string of another shape is text (a model may answer ``attachment://report.pdf``)."""
    attachments = _dict(sample.get("attachments"))
    unknown: list[str] = []

    def resolve(value: Any) -> Any:
        if isinstance(value, str):
            for prefix in REFERENCES:
                if value.startswith(prefix):
                    key = value[len(prefix):]
                    text = attachments.get(key)
                    if isinstance(text, str):
                        return text
                    if HASH.fullmatch(key):
                        unknown.append(value)
        return value

    out = {k: _leaves(v, resolve) if k in RESOLVED else v for k, v in sample.items()}
    return out, unknown[0] if unknown else None


def _error(error: Any) -> str | None:
    """The sample's error message; any error inspect_ai recorded is one, with or without a
    message (null only when there is none)."""
    if error is None:
        return None
    message = error.get("message") if isinstance(error, dict) else error
    return message if isinstance(message, str) and message else \
        "an error recorded without a message: " + json.dumps(clip(error), ensure_ascii=False)


def _quantity(value: Any) -> bool:
    """A number a budget may bound: not a boolean, not negative."""
    return _number(value) and value >= 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text(content: Any) -> str | None:
    """Text of a message's content, or of a list of messages (inspect_ai's input)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts = []
    for item in content:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict):
            if item.get("type") == "text" and isinstance(item.get("text"), str):
                parts.append(item["text"])
            elif "role" in item:  # a chat message
                text = _text(item.get("content"))
                if text:
                    parts.append(text)
    return "\n".join(parts)


def _completion(output: dict[str, Any], choice: dict[str, Any]) -> str | None:
    if isinstance(output.get("completion"), str):
        return str(output["completion"])
    return _text(_dict(choice.get("message")).get("content"))


def _scores(scores: Any) -> dict[str, Any]:
    """Each scorer's value as the tool recorded it, with its answer and explanation."""
    if not isinstance(scores, dict):
        return {}
    return {name: {key: score.get(key) for key in ("value", "answer", "explanation",
                                                    "reason")}
            for name, score in scores.items() if isinstance(score, dict)}


TOKENS = ("input_tokens", "output_tokens", "total_tokens", "input_tokens_cache_read",
          "input_tokens_cache_write", "reasoning_tokens")


def _events(sample: dict[str, Any]) -> Any:
    """The sample's events: ``events``, or ``transcript.events`` where inspect_ai wrote them
    before it had ``events`` (0.3.25 and its time; docs/inspect.md, the support matrix)."""
    if "events" in sample:
        return sample["events"]
    return _dict(sample.get("transcript")).get("events")


def _model_calls(events: Any) -> list[Any]:
    """The ``usage`` of every model call the sample's events record (nested ones too)."""
    found: list[Any] = []
    stack = [events] if isinstance(events, list) else []
    while stack:
        for event in stack.pop():
            if not isinstance(event, dict):
                continue
            if isinstance(event.get("events"), list):
                stack.append(event["events"])
            if event.get("event") == "model":  # inspect_ai leaves out a null usage
                found.append(_dict(event.get("output")).get("usage"))
    return found


def _usage(model_usage: Any, output_usage: Any, events: Any = None,
           messages: Any = None) -> tuple[dict[str, Any] | None, str]:
    """Tokens summed over every model the sample called (``model_usage``); where inspect_ai
    kept none (before 0.3.3x), over the model calls its events record; where it kept no
    event either, the final output's ``usage`` when the sample made one model call (one
    assistant message), else none: the last call's usage is not the sample's. ``cost_usd``
    from inspect_ai's ``total_cost`` where it has one. The second item says why a value
    cannot be summed (not a number >= 0), else ''."""
    if isinstance(model_usage, dict) and model_usage:
        usages = [u for u in model_usage.values() if isinstance(u, dict)]
    elif (calls := _model_calls(events)):
        usages = calls
        if not all(isinstance(u, dict) or u is None for u in calls):
            return None, "a model event's usage is not an object"
        usages = [u for u in calls if isinstance(u, dict)]
        if len(usages) < len(calls):  # a call whose usage is unknown: so is the sum
            return None, ""
    else:
        answers = [m for m in messages if isinstance(m, dict)
                   and m.get("role") == "assistant"] if isinstance(messages, list) else []
        usages = [output_usage] if isinstance(output_usage, dict) and len(answers) <= 1 \
            else []
    if not usages:
        return None, ""
    out: dict[str, Any] = {}
    for name in (*TOKENS, "total_cost"):
        values = [u[name] for u in usages if u.get(name) is not None]
        if not all(_quantity(v) for v in values):
            return None, f"its usage {name} is not a number >= 0"
        if values:
            out["cost_usd" if name == "total_cost" else name] = sum(values)
    unknown = False  # a model's total of 0 or none: inspect_ai's "not reported" (default)
    for usage in usages:  # a model's total is never below its parts when it is given
        parts = (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0)
        total = usage.get("total_tokens")
        unknown = unknown or bool(parts and not total)
        if total and total < parts:
            return None, ("its usage total_tokens is below input_tokens + output_tokens (a "
                          "budget on the total would read too little)")
    if unknown:  # the total is unknown, never the other models' alone
        out.pop("total_tokens", None)
    return out, ""


def _tool_calls(messages: Any, events: Any) -> list[dict[str, Any]]:
    """Every tool call the sample made, in order: name, arguments, id, and error where the
    call failed. The sample's events are the record of what ran (a sub-agent's or a
    handoff's calls are there, not in the sample's own messages); a call an assistant
    message asked for that no event records is added after them, so no call is missed.
    Tool events under inspect_ai's scoring span (a root span of type ``scorers``) are the
    scorer's, not the sample's."""
    calls = _event_calls(events)
    taken = {(c["id"], c["name"]) for c in calls
             if isinstance(c["id"], str) and isinstance(c["name"], str)}
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        calls_made = message.get("tool_calls")
        for call in calls_made if isinstance(calls_made, list) else []:
            if isinstance(call, dict) and not (
                    isinstance(call.get("id"), str) and isinstance(call.get("function"), str)
                    and (call["id"], call["function"]) in taken):
                calls.append({"id": call.get("id"), "name": call.get("function"),
                              "arguments": call.get("arguments")})
    return calls


def _event_calls(events: Any) -> list[dict[str, Any]]:
    """The tool calls an inspect_ai event list records (``ToolEvent``s, and those nested in
    any event's own ``events``, as older versions wrote a sub-agent's or a subtask's), each
    once."""
    if not isinstance(events, list):
        return []
    spans = {e["id"]: e for e in events if isinstance(e, dict)
             and e.get("event") == "span_begin" and isinstance(e.get("id"), str)}
    known: dict[str, bool] = {}  # span id -> under a scorer's span

    def scoring(span: Any) -> bool:
        chain: dict[str, None] = {}  # the spans walked, in order
        while isinstance(span, str) and span in spans and span not in known:
            if span in chain:  # a cycle of parents: no scorer above
                break
            chain[span] = None
            begin = spans[span]
            if begin.get("type") == "scorers" and begin.get("parent_id") is None:
                known[span] = True  # inspect_ai's own scoring span, a root: the solver's
                break  # code can open a span typed "scorer", but only below its own
            span = begin.get("parent_id")
        found = known.get(span, False) if isinstance(span, str) else False
        for each in chain:  # each span's answer once: linear in the spans
            known[each] = known.get(each, found)
        return found

    calls: list[dict[str, Any]] = []
    where: dict[str, int] = {}
    stack = [iter(events)]
    while stack:
        event = next(stack[-1], _END)
        if event is _END:
            stack.pop()
            continue
        if not isinstance(event, dict):  # a null or a string: no event (inspect_ai refuses
            continue  # it; the calls after it still count)
        if isinstance(event.get("events"), list):
            stack.append(iter(event["events"]))
        if event.get("event") != "tool" or scoring(event.get("span_id")):
            continue
        error = event.get("error")
        call = {"id": event.get("id"), "name": event.get("function"),
                "arguments": event.get("arguments")}
        if error is not None:
            call["error"] = _error(error)
        # one event recorded again as it ran: its uuid, function and arguments repeat (the
        # later one says how it ended); never merged by a call id, which a model may give
        # two calls, nor by a uuid alone, which a log may repeat for another call
        key = json.dumps([event.get("uuid"), call["name"], call["arguments"]]) \
            if isinstance(event.get("uuid"), str) else None
        if key is not None and key in where:
            calls[where[key]] = call
        else:
            if key is not None:
                where[key] = len(calls)
            calls.append(call)
    return calls


_END = object()  # the end of an event list (a None in it is an item)
