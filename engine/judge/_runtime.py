"""The judge runtime: requests, the content-addressed cache, replay, mock, panels.

A run that uses judges makes two passes over its records. The first only collects the
prompts judged inspections need; they are answered concurrently (from the cache, from a
replay file, or over HTTP); the second pass scores every row with the answers in hand.
Every answer becomes one line of ``judgements.jsonl`` that says where it came from: asked
in this run (``origin: fresh``) or taken from the cache (``reused``), and the run that asked
it (``obtained_by_run``); a replay keeps the lines it replays as they were recorded.

Under ``cache_reuse: all_or_none`` (a release's default) an Evaluation takes its live answers
from the cache only when all of them are there and of one draw, else it asks every prompt
again: whoever deletes the cache entries whose answers it dislikes must not get those
answers re-drawn alone (docs/judges.md).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.canonical import canonical, digest
from engine.judge._cache import Cache, key_path, load_key
from engine.judge._panel import Member, of_label
from engine.judge._replay import load as load_replay
from engine.judge._rubrics import Rubric, repair_prompt

if TYPE_CHECKING:  # the HTTP client (httpx, asyncio) is imported only by a run that calls
    from engine.judge._transport import Client, Endpoint, Reply

PROVIDERS = ("openai-compatible", "anthropic", "replay", "mock", "none")
_DRAW = re.compile(r"[0-9a-f]{32}", re.ASCII)


@dataclass(frozen=True)
class JudgeConfig:
    """The judge an Evaluation names (after command-line overrides)."""

    provider: str = "none"
    model: str = ""
    base_url: str = ""
    panel: tuple[str, ...] = ()  # member labels (engine.judge._panel)
    members: tuple[Member, ...] = ()  # the panel's members that have their own endpoint
    api_key_env: str | None = None
    temperature: float = 0.0
    seed: int | None = None
    max_tokens: int = 512
    timeout_s: float = 60.0
    concurrency: int = 4
    retries: int = 3
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    disagreement: str = "annotate"
    proxy: str | None = None  # judge.proxy: the HTTP proxy the Evaluation declares (recorded)
    replay: Path | None = None  # as named: a scorecard or its folder; once bound, its judgements
    cache: Path | None = None
    # the cache's MAC key when the run chooses it (a release: derived from its signing key);
    # None: the per-user key file (engine.judge._cache.key_path)
    cache_key: bytes | None = field(default=None, repr=False)
    # judge.cache_reuse as declared (None: all_or_none under purpose release, else partial)
    cache_reuse: str | None = None
    replay_sha256: str | None = None  # of the bound judgements.jsonl
    replayed_from: str | None = None  # sha256 of the verified scorecard they come from
    replay_signer: int | None = None  # which of the run's trusted keys verified the replay
    replayed_at: str = ""  # when that scorecard was signed: a time the run rests on
    replay_overridden: bool = False  # the replayed run's judge was chosen on its command line
    # the policy's judge.repeats and judge.min_agreement: each prompt asked ``repeats`` times
    repeats: int = 1
    min_agreement: float = 1.0

    @property
    def models(self) -> tuple[str, ...]:
        """The panel, or the single model."""
        return self.panel or (self.model,)

    def member(self, label: str) -> Member:
        """Where the panel member (or the single model) ``label`` is asked."""
        for m in self.members:
            if m.label == label:
                return m
        if not self.panel:  # a single model is sent as written
            return Member(label, self.provider, label, self.base_url, self.api_key_env)
        return of_label(label, (self.provider, self.base_url, self.api_key_env))

    @property
    def params(self) -> dict[str, Any]:
        """Sampling parameters that change what a judge answers."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens,
                "seed": self.seed}

    def identity(self, rubrics: dict[str, Rubric]) -> dict[str, Any]:
        """What judge_sha256 digests (the endpoint URL is recorded, not hashed)."""
        return {"provider": self.provider, "model": self.model,
                "panel": sorted(self.panel), "temperature": self.temperature,
                "max_tokens": self.max_tokens, "seed": self.seed,
                "rubrics": {n: r.sha256 for n, r in sorted(rubrics.items())}}


@dataclass
class Request:
    """One prompt for one panel member (and, under judge.repeats, one of its answers)."""

    key: str
    rubric: Rubric
    model: str
    prompt: str
    repeat: int = 0  # the answer's number, 1 to judge.repeats; 0 when each prompt is asked once


def request_key(config: JudgeConfig, rubric: Rubric, model: str, prompt: str,
                repeat: int = 0) -> str:
    """The content address of an answer: the whole identity, the member's endpoint and the
    prompt's digest, and under judge.repeats the answer's number, so k answers are k
    entries (one asked once keeps the address it always had)."""
    member = config.member(model)
    # the endpoint is part of the address: answers from another endpoint are another
    # judge's, and must never come back from the cache as the declared one's
    return digest({"provider": member.provider, "model": member.model,
                   "base_url": member.base_url, "parameters": config.params,
                   "rubric": rubric.sha256,
                   "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest(),
                   **({"repeat": repeat} if repeat else {})})


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def record(config: JudgeConfig, req: Request, reply: Reply | None, error: str,
           attempts: int, repaired: bool = False) -> dict[str, Any]:
    """One line of judgements.jsonl."""
    verdict, why = (req.rubric.verdict(reply.text) if reply else (None, error))
    member = config.member(req.model)
    return {"key": req.key, "provider": member.provider, "model": member.model,
            "parameters": config.params,
            "rubric": {"name": req.rubric.name, "version": req.rubric.version,
                       "sha256": req.rubric.sha256},
            "prompt_sha256": _sha(req.prompt),
            "response": reply.text if reply else None,
            "response_sha256": _sha(reply.text) if reply else None,
            "verdict": verdict, "error": None if verdict is not None else why,
            "usage": reply.usage if reply else None,
            "latency_ms": reply.latency_ms if reply else None,
            "attempts": attempts, "repaired": repaired,
            **({"repeat": req.repeat} if req.repeat else {})}


def _trusted(rec: Any, req: Request) -> dict[str, Any] | None:
    """A stored record usable for ``req``: same key, response matching its digest, and the
    verdict re-derived from the response (a stored verdict is never taken on trust)."""
    if not isinstance(rec, dict) or rec.get("key") != req.key:
        return None
    response = rec.get("response")
    if isinstance(response, str):
        if rec.get("response_sha256") != _sha(response):
            return None
        verdict, why = req.rubric.verdict(response)
        return {**rec, "verdict": verdict, "error": None if verdict is not None else why}
    return rec if rec.get("verdict") is None and isinstance(rec.get("error"), str) else None


def _sealed(rec: Any, req: Request) -> dict[str, Any] | None:
    """A cache entry usable for ``req``: a fresh answer as its run recorded it, naming that
    run and its draw (both sealed with it), then checked as any recorded answer."""
    if not isinstance(rec, dict) or rec.get("origin") != "fresh" or \
            not isinstance(rec.get("draw"), str) or not _DRAW.fullmatch(rec["draw"]) or \
            not isinstance(rec.get("obtained_by_run"), str | None):
        return None
    return _trusted(rec, req)


def _mock_verdict(rubric: Rubric) -> str:
    schema = rubric.validator.schema
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    out: dict[str, Any] = {}
    for name, prop in props.items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        out[name] = {"integer": prop.get("maximum", 5) if isinstance(prop, dict) else 5,
                     "number": 1, "boolean": False, "string": "mock verdict"}.get(
            str(kind), None)
    return json.dumps(out)


@dataclass
class Runtime:
    """Collects requests, answers them, and serves answers to the judge primitive."""

    config: JudgeConfig
    rubrics: dict[str, Rubric]
    collecting: bool = True
    requests: dict[str, Request] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=lambda: {
        "calls": 0, "cache_hits": 0, "cache_rejected": 0, "cache_set_aside": 0,
        "replayed": 0, "fresh": 0, "reused": 0, "errors": 0})
    progress: Callable[[int, int], None] | None = None
    run_id: str | None = None  # the engine run asking (None: a run made without one)
    # this Evaluation's draw in this run: sealed into every entry it writes to the cache
    draw: str = field(default_factory=lambda: secrets.token_hex(16))

    def _fresh(self, rec: dict[str, Any]) -> dict[str, Any]:
        """A line asked (or made) in this run."""
        return {**rec, "origin": "fresh", "obtained_by_run": self.run_id}

    def ask(self, rubric: Rubric, values: dict[str, Any]) -> list[list[str]]:
        """The keys of one judged row's requests: per answer (one, or judge.repeats of
        them), one per panel member."""
        prompt = rubric.render(values)
        k = self.config.repeats
        out = []
        for repeat in range(1, k + 1) if k > 1 else (0,):
            keys = []
            for model in self.config.models:
                key = request_key(self.config, rubric, model, prompt, repeat)
                if self.collecting and key not in self.requests:
                    self.requests[key] = Request(key, rubric, model, prompt, repeat)
                keys.append(key)
            out.append(keys)
        return out

    def answer_all(self) -> None:
        """Answer every collected request (replay, mock, or the cache, then HTTP)."""
        self.collecting = False
        pending = []
        replayed = load_replay(self.config) if self.config.replay else {}
        for req in self.requests.values():
            if self.config.replay is not None:
                rec = _trusted(replayed.get(req.key), req)
                self.answers[req.key] = rec or self._fresh(record(
                    self.config, req, None, "no recorded judgement for this prompt", 0))
                self.stats["replayed"] += rec is not None
            elif self.config.provider == "mock":
                from engine.judge._transport import Reply

                reply = Reply(_mock_verdict(req.rubric), {}, 0, 1)
                self.answers[req.key] = self._fresh(record(self.config, req, reply, "", 1))
            else:
                pending.append(req)
        cache = self._cache() if pending else None
        still = self._reuse(pending, cache) if cache else pending
        self.stats["cache_rejected"] = cache.rejected if cache else 0
        if still:
            import asyncio

            from engine.judge._transport import check_key

            for variable in sorted({self.config.member(r.model).api_key_env or ""
                                    for r in still}):
                check_key(variable or None)  # before any request: a coded refusal
            asyncio.run(self._call_all(still, cache))
        self.stats["cache_unwritten"] = cache.unwritten if cache else 0
        self.stats["errors"] = sum(1 for a in self.answers.values() if a["verdict"] is None)
        self.stats["fresh"] = len(self.answers) - self.stats["reused"] - self.stats["replayed"]

    def _reuse(self, pending: list[Request], cache: Cache) -> list[Request]:
        """Take what the cache holds for ``pending`` as the reuse rule allows; return the
        requests still to ask. Under all_or_none the hits count only when every request has
        one and all are of one draw: else all are set aside and every prompt is asked, so
        deleting (or putting back) some entries never re-draws some answers alone."""
        hits = {}
        for req in pending:
            hit = cache.get(req.key, partial(_sealed, req=req))
            if hit is not None:
                hits[req.key] = hit
        if self.config.cache_reuse != "partial" and (
                len(hits) < len(pending) or len({h["draw"] for h in hits.values()}) > 1):
            self.stats["cache_set_aside"] = len(hits)
            return pending
        for key, hit in hits.items():
            line = {k: v for k, v in hit.items() if k != "draw"}  # the draw stays sealed
            self.answers[key] = {**line, "origin": "reused"}
        self.stats["cache_hits"] = self.stats["reused"] = len(hits)
        return [req for req in pending if req.key not in hits]

    def _cache(self) -> Cache | None:
        """The sealed cache, when one is configured (its key is made on first use)."""
        if self.config.cache is None:
            return None
        key = self.config.cache_key
        return Cache(self.config.cache,
                     key if key is not None else load_key(key_path(), self.config.cache))

    async def _call_all(self, pending: list[Request], cache: Cache | None) -> None:
        import asyncio

        from engine.judge._transport import Endpoint, open_client

        c = self.config
        endpoints = {label: Endpoint(m.provider, m.base_url, m.api_key_env, c.timeout_s,
                                     c.retries, c.backoff_s, c.max_backoff_s)
                     for label in c.models for m in (c.member(label),)}
        gate = asyncio.Semaphore(self.config.concurrency)
        done = 0
        async with open_client(self.config.concurrency, self.config.timeout_s,
                               self.config.proxy) as client:
            async def one(req: Request) -> None:
                nonlocal done
                async with gate:
                    rec = self._fresh(await self._call(client, endpoints[req.model], req))
                self.answers[req.key] = rec
                if cache:  # replaces any entry set aside: the cache then holds this draw
                    cache.put({**rec, "draw": self.draw})
                done += 1
                if self.progress:
                    self.progress(done, len(pending))

            await asyncio.gather(*(one(req) for req in pending))

    async def _call(self, client: Client, endpoint: Endpoint,
                    req: Request) -> dict[str, Any]:
        from engine.judge._transport import CallFailed, call

        self.stats["calls"] += 1
        try:
            reply = await call(client, endpoint, self.config.member(req.model).model,
                               req.prompt, self.config.params)
        except CallFailed as exc:
            return record(self.config, req, None, f"JUDGE_CALL_FAILED: {exc}", exc.attempts)
        rec = record(self.config, req, reply, "", reply.attempts)
        if rec["verdict"] is None and req.rubric.repair:
            self.stats["calls"] += 1
            fixed = Request(req.key, req.rubric, req.model,
                            repair_prompt(req.prompt, reply.text, rec["error"]), req.repeat)
            try:
                again = await call(client, endpoint, self.config.member(req.model).model,
                                   fixed.prompt, self.config.params)
            except CallFailed as exc:
                return {**rec, "error": f"{rec['error']}; repair failed: {exc}"}
            repaired = record(self.config, req, again, "", reply.attempts + again.attempts,
                              repaired=True)
            return repaired if repaired["verdict"] is not None else {
                **rec, "error": f"{rec['error']}; the repaired reply failed too"}
        return rec

    def lines(self) -> list[bytes]:
        """judgements.jsonl, in the order requests were first made."""
        return [canonical(self.answers[key]) + b"\n" for key in self.requests]


def combine(records: list[dict[str, Any]], disagreement: str) -> tuple[dict[str, Any] | None,
                                                                       str, str]:
    """A panel's verdict: median for numbers, strict majority for booleans.

    Returns (verdict, error code, note); a verdict of None comes with its error code.
    """
    if any(r["verdict"] is None for r in records):
        bad = next(r for r in records if r["verdict"] is None)
        code = "INCOMPLETE_PANEL" if len(records) > 1 else (
            "JUDGE_CALL_FAILED" if str(bad["error"]).startswith("JUDGE_CALL_FAILED") else
            "INVALID_VERDICT")
        return None, code, str(bad["error"])
    verdicts = [r["verdict"] for r in records]
    if len(verdicts) == 1:
        return verdicts[0], "", ""
    if any(set(v) != set(verdicts[0]) for v in verdicts):
        return None, "PANEL_FIELDS_DIFFER", "panel members answered with different fields"
    out: dict[str, Any] = {}
    notes = []
    for name in verdicts[0]:
        values = [v[name] for v in verdicts]
        if all(isinstance(x, bool) for x in values):
            yes = sum(values)
            if yes * 2 == len(values):
                return None, "PANEL_TIED", f"the panel is tied on {name}"
            out[name] = yes * 2 > len(values)
            if 0 < yes < len(values):
                notes.append(f"split vote on {name}")
        elif all(isinstance(x, int | float) and not isinstance(x, bool) for x in values):
            out[name] = statistics.median(values)
            if max(values) - min(values) >= 2:
                notes.append(f"{name} spread {min(values)}-{max(values)}")
        else:
            out[name] = values[0]
    note = "; ".join(notes)
    if note and disagreement == "error":
        return None, "PANEL_DISAGREED", note
    return out, "", note
