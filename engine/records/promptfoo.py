"""``promptfoo-results``: the JSON that ``promptfoo eval -o results.json`` writes, one unit
per test result (docs/promptfoo.md).

The file is one JSON document, ``{"evalId": ..., "results": {"version": 3, "prompts": [...],
"results": [RESULT, ...], "stats": {...}}, "config": ...}``. It is streamed: the members
are framed on a sliding buffer and each element of ``results.results`` is decoded on its
own by the strict RECORD decoder, so memory is bounded by the largest result, not the file.

promptfoo numbers results by ``testIdx`` (each repeat of ``--repeat`` and each expanded
combination of vars is its own test index) and ``promptIdx`` (a prompt x provider column),
but writes no repeat index. The unit's ``trial`` is therefore the rank of its ``testIdx``
among the results of the same case, prompt and provider: the file is read twice, the first
pass (which hashes every byte) collecting those ranks, the second yielding the records; the
second pass hashes again and must find the same bytes (PROMPTFOO_CHANGED otherwise).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from bisect import bisect_left
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.records.formats import BadRecord, Record
from engine.records.json_stream import JsonStream, Stop

Element = tuple[int, Any, str | None, str]  # (1-based index, value, code, message)
_SCANNER = json.JSONDecoder()


def _elements(stream: JsonStream, ranking: bool,
              meta: dict[str, Any] | None = None) -> Iterator[Element]:
    """Each element of ``results.results``, then the rest of the document checked; a
    problem that stops the framing is raised as ``Stop``. The ranking pass frames only:
    its results are decoded by the C scanner alone, since what they rank only counts when
    the record pass, which decodes strictly, finds no problem (then both agree)."""
    found = False
    for name in stream.members("at the top level"):
        if name == "metadata" and meta is not None:  # promptfooVersion, from 0.121
            meta["file"] = _loose(stream.text("in the top-level member 'metadata'"))
            continue
        if name != "results":
            stream.skip(f"in the top-level member {name[:40]!r}")
            continue
        if stream.peek() != "{":
            raise Stop("PROMPTFOO_NOT_RESULTS", "'results' is not an object holding the "
                       "results list (write it with promptfoo eval -o results.json)")
        for inner in stream.members("in 'results'"):
            if inner in ("version", "prompts", "stats") and meta is not None:  # its tallies
                meta[inner] = _loose(stream.text(f"in results.{inner}"))
                continue
            if inner != "results":
                stream.skip(f"in results.{inner[:40]}")
                continue
            if stream.peek() != "[":
                raise Stop("PROMPTFOO_NOT_RESULTS", "results.results is not a list")
            found = True
            for index in stream.items("in results.results"):
                if ranking:
                    yield index, _loose(stream.text(f"in result {index}")), None, ""
                    continue
                parsed = stream.record(index, f"in result {index}")
                if isinstance(parsed, BadRecord):
                    yield index, None, parsed.code, parsed.message
                else:
                    yield index, parsed.data, None, ""
    stream.end()
    if not found:
        raise Stop("PROMPTFOO_NOT_RESULTS", "no results.results list: not the JSON of "
                   "promptfoo eval -o results.json")


def _loose(text: str) -> Any:
    try:
        return _SCANNER.decode(text)
    except (ValueError, RecursionError):  # the record pass says what is wrong with it
        return None


def _frame(handle: Any, digest: Any, ranking: bool = False,
           meta: dict[str, Any] | None = None) -> Iterator[Element]:
    """Every element, a framing problem as a last element with index -(count + 1);
    ``meta`` gets ``results.prompts`` and ``results.stats`` (decoded leniently)."""
    count = 0
    stream = JsonStream(handle, digest, truncated="PROMPTFOO_TRUNCATED")
    try:
        for element in _elements(stream, ranking, meta):
            count = element[0]
            yield element
    except Stop as stop:
        yield -(count + 1), None, stop.code, str(stop)
    finally:
        stream.drain()  # every byte of the file is hashed, even after a stop


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any) -> int | float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _case(result: dict[str, Any]) -> str:
    """The test case: its description, else a digest of its vars."""
    test = result.get("testCase")
    test = test if isinstance(test, dict) else {}
    description = test.get("description")
    if isinstance(description, str) and description:
        return description
    meta = test.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("testCaseId"), str) and \
            meta["testCaseId"]:
        return str(meta["testCaseId"])
    vars_ = json.dumps(result.get("vars"), sort_keys=True, ensure_ascii=True)
    return "vars-" + hashlib.sha256(vars_.encode()).hexdigest()[:16]


def _provider(result: dict[str, Any]) -> tuple[str | None, str | None]:
    provider = result.get("provider")
    if isinstance(provider, str):
        return provider, None
    if isinstance(provider, dict):
        return _text(provider.get("id")), _text(provider.get("label")) or None
    return None, None


def _problem(result: Any) -> tuple[str, str] | None:
    if not isinstance(result, dict):
        return "NOT_AN_OBJECT", "a result must be a JSON object"
    for name, kind in (("testIdx", "an integer"), ("promptIdx", "an integer"),
                       ("success", "true or false")):
        value = result.get(name)
        if name not in result:
            return "PROMPTFOO_FIELD", f"the result has no '{name}'"
        ok = isinstance(value, bool) if name == "success" else \
            isinstance(value, int) and not isinstance(value, bool) and value >= 0
        if not ok:
            return "PROMPTFOO_FIELD", f"'{name}' must be {kind}"
    if not isinstance(result.get("id"), str):  # promptfoo gives every result one
        return "PROMPTFOO_FIELD", "'id' must be a string"  # it is checked for copies
    disagree = _disagreement(result)
    if disagree is not None:
        return "PROMPTFOO_FIELD", disagree
    where, usage = _usage_of(result)
    measured = [("latencyMs", result.get("latencyMs")), ("cost", result.get("cost")),
                *((f"{where}.{k}", usage.get(k)) for k in TOKENS if isinstance(usage, dict))]
    for name, value in measured:  # what a budget bounds: a negative would pass any budget
        if value is not None and (_number(value) is None or value < 0):
            return "PROMPTFOO_FIELD", f"'{name}' must be a number >= 0"
    if isinstance(usage, dict):  # promptfoo writes the total: never below its parts
        parts = (usage.get("prompt") or 0) + (usage.get("completion") or 0)
        if parts and (usage.get("total") is None or usage["total"] < parts):
            return "PROMPTFOO_FIELD", (f"'{where}.total' is missing or below prompt + "
                                       "completion")
    return None


def _usage_of(result: dict[str, Any]) -> tuple[str, Any]:
    """Where the result's token usage is, and it: the result's own ``tokenUsage`` (promptfoo
    0.121.14 and later), else its ``response.tokenUsage``, where earlier versions keep it
    (docs/promptfoo.md, the support matrix); ``None`` when neither records it."""
    if result.get("tokenUsage") is not None:
        return "tokenUsage", result["tokenUsage"]
    response = result.get("response")
    if isinstance(response, dict) and response.get("tokenUsage") is not None:
        return "response.tokenUsage", response["tokenUsage"]
    return "tokenUsage", None


def _disagreement(result: dict[str, Any]) -> str | None:
    """Why a result's ``success`` disagrees with what promptfoo writes beside it (a pass has
    failureReason 0, no error and a grading that passed; a failure has failureReason 1, an
    assertion, 2, an error, or 0 with an error, as promptfoo marks a provider's empty
    output), else None."""
    reason, error = result.get("failureReason"), result.get("error")
    grading = result.get("gradingResult")
    passed = grading.get("pass") if isinstance(grading, dict) else None
    if result["success"]:
        if reason not in (None, 0) or error not in (None, "") or passed is False:
            return ("'success' is true, but its failureReason, error or gradingResult.pass "
                    "says it failed")
    elif reason not in (None, 0, 1, 2) or (reason in (None, 1) and passed is True) or (
            reason == 0 and error in (None, "")) or (  # 0 with an error: "No output"
            reason == 1 and not isinstance(grading, dict)):  # an assertion's, ungraded
        return "'success' is false, but its failureReason, error and gradingResult.pass do " \
            "not say why"
    return None


def _column(result: dict[str, Any], prompts: Any) -> str | None:
    """Why a result is not of the column its promptIdx names (results.prompts[promptIdx]
    ran another provider, or there is no results.prompts), else None."""
    if not isinstance(prompts, list):  # promptfoo writes it: taken out, no column is checked
        return "results.prompts is missing: the result's provider column cannot be checked"
    column = prompts[result["promptIdx"]] if result["promptIdx"] < len(prompts) else None
    want = column.get("provider") if isinstance(column, dict) else None
    if not isinstance(want, str):
        return f"promptIdx {result['promptIdx']} names no column of results.prompts"
    if want not in _provider(result):
        return (f"promptIdx {result['promptIdx']} is provider {want[:60]!r}, but the result "
                f"ran {str(_provider(result)[0])[:60]!r}")
    return None


def _tallies(counts: dict[str, int], stats: Any, modern: str | None = None,
             spent: _Spent | None = None) -> str | None:
    """Why the results disagree with promptfoo's own ``results.stats``, else None;
    ``modern`` says why the file must be of a version counting errors apart, ``spent`` is
    what the results' token usage adds up to (``results.stats.tokenUsage`` must agree)."""
    if not isinstance(stats, dict):
        return "results.stats is missing: promptfoo's own tallies cannot be checked"
    if "errors" not in stats and modern:
        return f"results.stats has no errors, which {modern} writes (0.110 and later)"
    if "errors" not in stats:  # before promptfoo counted errors apart, they were failures
        counts = {"successes": counts["successes"],
                  "failures": counts["failures"] + counts["errors"]}
    wrong = [f"{k} {stats.get(k)!r} (the results have {v})" for k, v in counts.items()
             if stats.get(k) != v]
    if spent is not None:
        wrong += spent.disagreement(stats.get("tokenUsage"))
    return "results.stats says " + ", ".join(wrong) if wrong else None


STATS_TOKENS = ("prompt", "completion", "total", "cached")  # every version's stats.tokenUsage


class _Spent:
    """What the results' token usage adds up to, as promptfoo sums it into
    ``results.stats.tokenUsage`` (docs/promptfoo.md, the support matrix).

    ``prompt``, ``completion``, ``total`` and ``cached`` are the sums of each result's usage
    where the reader reads it (``tokenUsage``, else ``response.tokenUsage``). Before results
    carried their own ``tokenUsage`` (0.121.14), promptfoo summed a usage it did not write,
    which some versions made of the provider's tokens and the grader's
    (``gradingResult.tokensUsed``): there, the sums with the graders' tokens added agree as
    well. ``numRequests`` is compared only where results carry their own ``tokenUsage``
    (each counts its ``numRequests``, 1 when it has none): before, promptfoo counted a
    request for a result whose usage it did not write, and some versions one per grading."""

    def __init__(self) -> None:
        self.usage: dict[str, int | float] = dict.fromkeys((*STATS_TOKENS, "numRequests"), 0)
        self.graders: dict[str, int | float] = dict.fromkeys(STATS_TOKENS, 0)
        self.own = False  # some result carries its own tokenUsage: promptfoo 0.121.14 on

    def add(self, result: dict[str, Any]) -> None:
        """Count one result read with no problem (its counts are numbers >= 0)."""
        where, usage = _usage_of(result)
        if isinstance(usage, dict):
            self.own = self.own or where == "tokenUsage"
            for key in STATS_TOKENS:
                self.usage[key] += usage.get(key) or 0
            self.usage["numRequests"] += 1 if usage.get("numRequests") is None \
                else usage["numRequests"]
        grading = result.get("gradingResult")
        used = grading.get("tokensUsed") if isinstance(grading, dict) else None
        if isinstance(used, dict):
            for key in STATS_TOKENS:
                self.graders[key] += _number(used.get(key)) or 0

    def disagreement(self, stats: Any) -> list[str]:
        """Each count of ``results.stats.tokenUsage`` the results contradict."""
        if not isinstance(stats, dict):
            return ["no tokenUsage, which every promptfoo version writes"]
        keys = [*STATS_TOKENS, "numRequests"] if self.own else list(STATS_TOKENS)
        plain = [k for k in keys if _number(stats.get(k)) != self.usage[k]]
        graded = [k for k in STATS_TOKENS
                  if _number(stats.get(k)) != self.usage[k] + self.graders[k]]
        if not plain or (not self.own and not graded):
            return []
        return [f"tokenUsage.{k} {stats.get(k)!r} (the results' {'own ' if self.own else ''}"
                f"token usage adds up to {self.usage[k]})" for k in plain]


def _modern(meta: dict[str, Any], top_level_tokens: bool) -> str | None:
    """What shows the file was written by promptfoo 0.110 or later, which writes every
    result's ``failureReason`` and ``results.stats.errors`` (so a file lacking them while
    showing a later version contradicts itself), else None: its ``metadata.promptfooVersion``
    (written from 0.121), or results carrying their own ``tokenUsage`` (from 0.121.14)."""
    file = meta.get("file")
    version = file.get("promptfooVersion") if isinstance(file, dict) else None
    version = version if isinstance(version, str) else ""
    found = re.match(r"([0-9]+)\.([0-9]+)\.([0-9]+)", version)
    if found and tuple(int(n) for n in found.groups()) >= (0, 110, 0):
        return f"promptfoo {version[:40]} (its metadata.promptfooVersion)"
    if top_level_tokens:
        return "the promptfoo that wrote results' own tokenUsage (0.121.14 and later)"
    return None


def _outcome(result: dict[str, Any]) -> str:
    """The tally of ``results.stats`` that counts the result."""
    return "successes" if result["success"] else "errors" \
        if result.get("failureReason") == 2 else "failures"


def _group(result: dict[str, Any]) -> tuple[str, int, str | None]:
    return _case(result), result["promptIdx"], _provider(result)[0]


TOKENS = {"prompt": "prompt", "completion": "completion", "total": "total",
          "cached": "cached", "numRequests": "num_requests"}  # promptfoo's -> ours


def _tokens(usage: Any) -> dict[str, Any] | None:
    if not isinstance(usage, dict):
        return None
    return {ours: usage[theirs] for theirs, ours in TOKENS.items() if theirs in usage}


def _assertion(component: Any) -> dict[str, Any]:
    if not isinstance(component, dict):
        return {"type": None, "pass": None, "score": None, "reason": None}
    assertion = component.get("assertion")
    assertion = assertion if isinstance(assertion, dict) else {}
    out = {"type": _text(assertion.get("type")), "value": assertion.get("value"),
           "metric": assertion.get("metric"),
           # promptfoo writes pass: true for a weight-0 assertion whatever it found
           "weight": _number(assertion.get("weight")) if "weight" in assertion else 1,
           "pass": component.get("pass") if isinstance(component.get("pass"), bool) else None,
           "score": _number(component.get("score")), "reason": component.get("reason")}
    return out


def unit(result: dict[str, Any], trial: int) -> dict[str, Any]:
    """One promptfoo result as a unit record (the mapping docs/promptfoo.md tabulates)."""
    test_idx, prompt_idx = result["testIdx"], result["promptIdx"]
    provider, provider_label = _provider(result)
    prompt = result.get("prompt")
    prompt = prompt if isinstance(prompt, dict) else {}
    response = result.get("response")
    response = response if isinstance(response, dict) else {}
    grading = result.get("gradingResult")
    grading = grading if isinstance(grading, dict) else {}
    components = grading.get("componentResults")
    assertions = [_assertion(c) for c in components] if isinstance(components, list) else []
    test = result.get("testCase")
    test = test if isinstance(test, dict) else {}
    return {
        "id": f"test-{test_idx}-prompt-{prompt_idx}",
        "case_id": _case(result),
        "trial": trial,
        "result_id": result.get("id"),
        "test_index": test_idx,
        "prompt_index": prompt_idx,
        "description": _text(test.get("description")),
        "provider": provider,
        "provider_label": provider_label,
        "prompt": prompt.get("raw"),
        "prompt_label": prompt.get("label"),
        "vars": result.get("vars"),
        "output": response.get("output"),
        "error": result.get("error"),
        "success": result["success"],
        "score": result.get("score"),
        "failure_reason": result.get("failureReason"),
        "latency_ms": result.get("latencyMs"),
        "cost": result.get("cost"),
        "cached": response.get("cached"),
        "tokens": _tokens(_usage_of(result)[1]),
        "named_scores": result.get("namedScores"),
        "grading": {"pass": grading.get("pass"), "score": grading.get("score"),
                    "reason": grading.get("reason")} if grading else None,
        "assertions": assertions,
        "assertions_passed": sum(1 for a in assertions if a["pass"] is True),
        "assertions_failed": sum(1 for a in assertions if a["pass"] is False),
    }


def read(path: Path, digest: Any = None) -> Iterator[Record | BadRecord]:
    """The units of a promptfoo results file, one per result, in file order.

    The file is read twice (see the module docstring) through one open handle: only a
    regular file can be, and the second pass must see the bytes the first one hashed, else
    nothing of it is used (a file rewritten between the passes is PROMPTFOO_CHANGED)."""
    with path.open("rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            yield BadRecord(1, "PROMPTFOO_CHANGED", f"{path.name} is not a regular file (a "
                            "pipe or a device): it cannot be read twice, so it is not read")
            return
        first, second = hashlib.sha256(), hashlib.sha256()
        ranks: dict[tuple[str, int, str | None], list[int]] = {}
        meta: dict[str, Any] = {}
        top_level_tokens = False  # a result's own tokenUsage: promptfoo 0.121.14 or later
        for _, value, code, _ in _frame(handle, _Both(digest, first), True, meta):
            top_level_tokens = top_level_tokens or (
                isinstance(value, dict) and value.get("tokenUsage") is not None)
            if code is None and _problem(value) is None:
                ranks.setdefault(_group(value), []).append(value["testIdx"])
        for group, indexes in ranks.items():  # a copied result (DUPLICATE_ID) takes no rank
            ranks[group] = sorted(set(indexes))
        modern = _modern(meta, top_level_tokens)
        version = meta.get("version")
        if isinstance(version, int) and not isinstance(version, bool) and version < 3:
            yield BadRecord(1, "PROMPTFOO_UNSUPPORTED", f"results.version {version}: written by "
                            "a promptfoo before 0.9x, whose results name no test or column "
                            "(testIdx, promptIdx); the reader reads version 3, promptfoo "
                            "0.90 and later (docs/promptfoo.md, the support matrix)")
            handle.seek(0)
            for _ in _frame(handle, second):  # hashed, to bind the digest, but not read
                pass
            if first.digest() != second.digest():
                yield BadRecord(1, "PROMPTFOO_CHANGED", f"{path.name} changed while it was "
                                "read: the records cannot be bound to the bytes hashed")
            return
        handle.seek(0)
        seen: set[tuple[int, int]] = set()
        uuids: set[str] = set()
        counts, bad, spent = {"successes": 0, "failures": 0, "errors": 0}, False, _Spent()
        for index, value, code, message in _frame(handle, second):
            if code is not None:
                bad = True
                yield BadRecord(abs(index), code, message)
                continue
            problem = _problem(value)
            if problem is None and modern and "failureReason" not in value:
                problem = "PROMPTFOO_FIELD", (f"the result has no 'failureReason', which "
                                              f"{modern} writes on every result (0.110 and "
                                              "later)")
            if problem is None and (column := _column(value, meta.get("prompts"))):
                problem = "PROMPTFOO_FIELD", column
            if problem is not None:
                bad = True
                yield BadRecord(index, *problem)
                continue
            counts[_outcome(value)] += 1
            pair = value["testIdx"], value["promptIdx"]
            if pair in seen:  # one result per test and prompt: a copy must not count twice
                bad = True
                yield BadRecord(index, "DUPLICATE_ID", f"a second result for testIdx "
                                f"{pair[0]}, promptIdx {pair[1]}")
                continue
            seen.add(pair)
            uuid = value["id"]  # a string (_problem)
            if uuid in uuids:  # a copy under another testIdx
                bad = True
                yield BadRecord(index, "DUPLICATE_ID", f"a second result with id {uuid[:60]!r}")
                continue
            uuids.add(uuid)
            spent.add(value)
            taken = ranks.get(_group(value), [])
            trial = bisect_left(taken, value["testIdx"]) + 1
            yield Record(index, unit(value, trial))
        tallies = None if bad else _tallies(counts, meta.get("stats"), modern, spent)
        if tallies is not None:  # a result added, dropped, flipped or its tokens edited
            yield BadRecord(1, "PROMPTFOO_STATS", tallies)
        if first.digest() != second.digest():
            yield BadRecord(1, "PROMPTFOO_CHANGED", f"{path.name} changed while it was read: "
                            "the records cannot be bound to the bytes hashed")


class _Both:
    """Two digests fed the same bytes."""

    def __init__(self, one: Any, two: Any) -> None:
        self.one, self.two = one, two

    def update(self, data: bytes) -> None:
        if self.one is not None:
            self.one.update(data)
        self.two.update(data)
