"""Errors and their codes.

Exception tree::

    EngineError                 anything the engine reports instead of crashing
    ├── SpecErrors              one or more located spec problems (exit 2)
    ├── UsageError              bad command line, missing input file, bad key file (exit 2)
    │   └── PathTooDeep         a folder tree too deep (or a path too long) to walk
    ├── FormulaError            a formula problem found while evaluating (coded)
    └── VerifyError             evidence that does not verify (exit 1)

Every problem carries a stable upper-case ``code``. Located spec problems are
``Problem`` values, printed as ``file:line:col: CODE: json.path: message (hint)``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, order=True)
class Problem:
    """One located spec problem."""

    file: str
    line: int
    col: int
    code: str
    path: str
    message: str
    hint: str = ""
    rank: int = 0  # lower is more useful when several problems share a place

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.col}"
        text = f"{where}: {self.code}: {self.path or '$'}: {self.message}"
        return f"{text} ({self.hint})" if self.hint else text


def sort_problems(problems: Iterable[Problem]) -> list[Problem]:
    """Sort by place, most useful first at the same place; drop exact repeats."""
    unique = {(p.file, p.line, p.col, p.code, p.path, p.message): p for p in problems}
    return sorted(unique.values(), key=lambda p: (p.file, p.line, p.col, p.rank, p.code, p.path))


class EngineError(Exception):
    """Base of every error the engine reports on purpose."""

    code = "ENGINE_ERROR"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        if code:
            self.code = code


class SpecErrors(EngineError):
    """A spec that cannot run; carries every problem found."""

    code = "SPEC_INVALID"

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = sort_problems(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    def __reduce__(self) -> tuple[type[SpecErrors], tuple[list[Problem]]]:
        return SpecErrors, (self.problems,)  # a worker process's error reaches the driver


class UsageError(EngineError):
    """A command line, input file or key that cannot be used."""

    code = "USAGE"


class PathTooDeep(UsageError):
    """A folder more than engine.folders.MAX_DEPTH folders below the folder walked, or a
    path longer than the system opens; ``path`` is where the walk stopped."""

    code = "PATH_TOO_DEEP"

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


class FormulaError(EngineError):
    """A formula that cannot be compiled or evaluated; ``col`` is 1-based or 0 if unknown."""

    code = "FORMULA"

    def __init__(self, message: str, code: str, col: int = 0) -> None:
        super().__init__(message, code)
        self.col = col


class VerifyError(EngineError):
    """Evidence that fails verification."""

    code = "VERIFY"


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A 'did you mean' hint, or '' when nothing is close."""
    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else ""
