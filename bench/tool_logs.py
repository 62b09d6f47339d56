"""How fast the evaluation-tool log formats are read, beside the engine's own JSONL reader.

``python -m bench.tool_logs [--mb 50]`` grows each shipped example log (inspect_ai ``.json``
and ``.eval``, promptfoo results, OTLP/JSON as JSON Lines and as one pretty-printed
document) to about ``--mb`` megabytes by repeating its units under new ids, then reads it
with its format's reader, hashing every byte as ``engine run`` does. Each reader runs in a
fresh process, so its peak RSS (VmHWM) is its own. The baseline named in every ratio: the values
the reader frames (each inspect_ai sample, each promptfoo result, each OTLP request line),
written one per line and read by the ``jsonl`` format (``records.formats.read_jsonl``), the
reader every other input goes through: the same JSON, decoded by the same strict reader,
without the tool's framing, unzipping or mapping. A ratio is the baseline's seconds over
the format's (1.00x = as fast; below 1, what framing and mapping cost).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"


def _grow_inspect(target: int, folder: Path) -> list[Path]:
    doc = json.loads((SPECS / "inspect-example" / "data" / "inspect-example.json").read_bytes())
    samples, size = doc["samples"], 0
    grown: list[dict[str, object]] = []
    rounds = 0
    while size < target:  # each round: every sample under a new id, each epoch kept
        rounds += 1
        for sample in samples:
            copy = {**sample, "id": f"{sample['id']}-{rounds}",
                    "uuid": f"{sample['uuid']}-{rounds}"}  # a sample of its own
            grown.append(copy)
            size += len(json.dumps(copy))
    doc["samples"] = grown
    doc["eval"]["dataset"]["sample_ids"] = sorted({str(s["id"]) for s in grown})
    as_json = folder / "inspect.json"
    as_json.write_text(json.dumps(doc, indent=2))
    _lines(folder / "inspect.json.lines", grown)
    _lines(folder / "inspect.eval.lines", grown)
    as_eval = folder / "inspect.eval"
    _zstd_zip(as_eval, [("header.json", json.dumps({k: v for k, v in doc.items()
                                                    if k != "samples"}).encode())] +
              [(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s).encode())
               for s in grown])
    return [as_json, as_eval]


def _zstd_zip(path: Path, entries: list[tuple[str, bytes]]) -> None:
    """A zip of zstd-compressed entries (method 93, which zipfile cannot write), as
    inspect_ai writes its .eval logs."""
    import zstandard
    packer = zstandard.ZstdCompressor()
    body, central = bytearray(), bytearray()
    for name, raw in entries:
        packed = packer.compress(raw)
        crc, offset, encoded = zlib.crc32(raw), len(body), name.encode()
        body += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 63, 0, 93, 0, 0, crc, len(packed),
                            len(raw), len(encoded), 0) + encoded + packed
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 63, 63, 0, 93, 0, 0, crc,
                               len(packed), len(raw), len(encoded), 0, 0, 0, 0, 0,
                               offset) + encoded
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(entries), len(entries),
                      len(central), len(body), 0)
    path.write_bytes(bytes(body + central + end))


def _grow_promptfoo(target: int, folder: Path) -> list[Path]:
    doc = json.loads((SPECS / "promptfoo-example" / "data" / "results.json").read_bytes())
    results, size = doc["results"]["results"], 0
    grown: list[dict[str, object]] = []
    while size < target:
        for result in results:
            copy = {**result, "testIdx": len(grown), "id": f"{result['id']}-{len(grown)}"}
            grown.append(copy)
            size += len(json.dumps(copy))
    doc["results"]["results"] = grown
    stats = doc["results"]["stats"]  # promptfoo's own tallies, as it would count them
    stats["successes"] = sum(1 for r in grown if r["success"])
    stats["errors"] = sum(1 for r in grown if r.get("failureReason") == 2)
    stats["failures"] = len(grown) - stats["successes"] - stats["errors"]
    path = folder / "results.json"
    path.write_text(json.dumps(doc, indent=2))
    _lines(folder / "results.json.lines", grown)
    return [path]


def _lines(path: Path, values: list[dict[str, object]]) -> None:
    """The baseline's input: the values the reader frames, one JSON object per line."""
    with path.open("w") as out:
        for value in values:
            out.write(json.dumps(value) + "\n")


def _grow_otel(target: int, folder: Path) -> list[Path]:
    lines = (SPECS / "otel-example" / "data" / "traces.jsonl").read_text().splitlines()
    out, size, copy = io.StringIO(), 0, 0
    while size < target:
        copy += 1
        for line in lines:  # a new trace id per copy: 007a<12 hex digits of the copy>...
            grown = line.replace('"007a00000000', f'"{copy:012x}')
            grown = CASE.sub(rf'\g<0>-{copy}', grown)  # and its own case ids
            out.write(grown + "\n")
            size += len(grown) + 1
    jsonl = folder / "traces.jsonl"
    jsonl.write_text(out.getvalue())
    (folder / "traces.jsonl.lines").write_text(out.getvalue())
    (folder / "traces.json.lines").write_text(out.getvalue())
    merged: dict[str, list[object]] = {"resourceSpans": []}
    for line in out.getvalue().splitlines():
        merged["resourceSpans"].extend(json.loads(line)["resourceSpans"])
    pretty = folder / "traces.json"
    pretty.write_text(json.dumps(merged, indent=2))
    return [jsonl, pretty]


CASE = re.compile(r'(?<="key":"specgate\.case_id","value":\{"stringValue":")[^"]*')


FORMATS: dict[str, tuple[str, Callable[[int, Path], list[Path]]]] = {
    "inspect-log": ("engine.records.inspect_log", _grow_inspect),
    "promptfoo-results": ("engine.records.promptfoo", _grow_promptfoo),
    "otel-genai": ("engine.records.otel", _grow_otel),
}

_CHILD = """
import hashlib, importlib, json, sys, time
from pathlib import Path
from engine.records.formats import Record
module, path = sys.argv[1], Path(sys.argv[2])
module, _, function = module.partition(":")
read = getattr(importlib.import_module(module), function or "read")
start = time.perf_counter()
records = problems = 0
for item in read(path, hashlib.sha256()):
    if isinstance(item, Record):
        records += 1
    else:
        problems += 1
seconds = time.perf_counter() - start
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across exec
status = Path("/proc/self/status").read_text()
peak = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM")))
print(json.dumps({"records": records, "problems": problems, "seconds": seconds, "kb": peak}))
"""


def _child(module: str, path: Path) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", _CHILD, module, str(path)],
                          capture_output=True, text=True, check=True, cwd=ROOT)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tool_logs", description=__doc__)
    parser.add_argument("--mb", type=float, default=50.0, help="size of each log (MB)")
    args = parser.parse_args(argv)
    target = int(args.mb * 1_000_000)
    print("| format | file | size MB | units | s | MB/s | peak RSS MB | baseline s | vs jsonl |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, (module, grow) in FORMATS.items():
            for path in grow(target, folder):
                got = _child(module, path)
                base = _child("engine.records.formats:read_jsonl", folder / f"{path.name}.lines")
                if got["problems"] or base["problems"]:
                    raise SystemExit(f"{path.name}: {got} / baseline {base}")
                size = path.stat().st_size / 1e6
                ratio = base["seconds"] / got["seconds"]
                print(f"| {name} | {path.suffix} | {size:.1f} | {int(got['records'])} | "
                      f"{got['seconds']:.2f} | {size / got['seconds']:.1f} | "
                      f"{got['kb'] / 1024:.0f} | {base['seconds']:.2f} | {ratio:.2f}x |",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
