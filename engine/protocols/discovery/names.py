"""Task ids name files (``<task_id>.json`` among the submissions and reviews): a task id
that is a path would read or write outside those folders, so it is refused before any
file is touched."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from engine.protocols.discovery.corpus import LoadError

# a plain file name: no separator, no leading dot (so never '.' or '..'), no drive letter
_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def task_problem(task: Any) -> str | None:
    """Why the task's ``task_id`` cannot name its files, or None when it can."""
    task_id = task.get("task_id") if isinstance(task, dict) else None
    if isinstance(task_id, str) and _TASK_ID.fullmatch(task_id):
        return None
    shown = task_id[:80] if isinstance(task_id, str) else task_id
    return (f"task_id {shown!r} is not a plain file name (1-200 letters, digits, '.', '_' "
            "or '-', starting with a letter or digit)")


def task_file(folder: Path, task: dict[str, Any], suffix: str) -> Path:
    """``folder/<task_id><suffix>``; LoadError BAD_TASK_ID when the id is not a plain name."""
    problem = task_problem(task)
    if problem is not None:
        raise LoadError("BAD_TASK_ID", problem)
    return folder / f"{task['task_id']}{suffix}"


def usable_tasks(path: Path) -> list[dict[str, Any]]:
    """The tasks of an inventory file that a run evaluates: the others are record problems
    (``engine.records.read_json_array``), and so is a file that is not a JSON array."""
    from engine.records.strict_json import JsonError, loads, too_deep

    try:
        tasks = loads(path.read_bytes())
    except JsonError:
        return []
    if not isinstance(tasks, list):
        return []
    return [t for t in tasks if isinstance(t, dict) and not too_deep(t)
            and task_problem(t) is None]
