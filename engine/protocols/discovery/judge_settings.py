"""The review stage's texts and limits (judge.yaml) and the judge configuration's fields
(§9.6), without the HTTP client: evaluation re-checks them and never calls a model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.canonical import digest
from engine.errors import Problem, SpecErrors
from engine.protocols.discovery import files
from engine.protocols.discovery.task import Package, reference_sha256
from engine.spec import opened


def judge_settings(folder: Path) -> tuple[str, str, dict[str, Any]]:
    """(system prompt, repair sentence, judge.yaml data); SpecErrors when they are bad."""
    problems: list[Problem] = []
    doc = files.read(folder / "judge.yaml", problems)
    if doc is None:
        raise SpecErrors(problems)
    data = doc.data
    texts = []
    for where, rel in [*((("system_prompt", i), p) for i, p in enumerate(data["system_prompt"])),
                       (("blind_repair",), data["blind_repair"])]:
        try:
            texts.append(opened.read_text(folder / rel).strip())
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(doc.problem(where, "BAD_DATA_FILE", f"'{rel}' is not readable: {exc}"))
    if problems:
        raise SpecErrors(problems)
    return "\n\n".join(texts[:-1]), texts[-1], dict(data)


def config_fields(pkg: Package, model: str, base_url: str, tasks: list[dict[str, Any]],
                  budget: int) -> dict[str, Any]:
    """Every field of judge_config.json (§9.6) but the seed, worked out afresh."""
    system, _, data = pkg.judge if pkg.judge is not None else judge_settings(pkg.folder)
    return {"model": model, "base_url": base_url, "system_sha256": digest(system),
            "reference_sha256": reference_sha256(pkg.benchmark_version, tasks),
            "tasks_sha256": digest(tasks), "effective_tasks_sha256": digest(tasks),
            "max_output_tokens": int(data["max_output_tokens"]),
            "max_input_chars": int(data["max_input_chars"]),
            "difficulty": pkg.discovery.difficulty, "audit_documents": budget,
            "evidence_protocol_sha256": pkg.blind.sha256}
