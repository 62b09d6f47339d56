"""A Ctrl-C that arrives while the engine's modules are still being imported.

Python 3.11 turns an exception raised inside a class's ``__set_name__`` (every dataclass
field has one) into ``RuntimeError("Error calling __set_name__ ...")`` with the original as
its cause, so a SIGINT that lands during the import of a dataclass left the process with
exit 1, which CI reads as a FAIL decision (found by tests/test_faults.py once runs got
fast enough for the signal to land in the imports). ``interruptible`` gives the
interruption back as itself: the interpreter then exits as interrupted (SIGINT).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def interruptible() -> Iterator[None]:
    """Re-raise a KeyboardInterrupt that an import wrapped in another exception."""
    try:
        yield
    except Exception as exc:
        cause = exc
        while cause is not None and not isinstance(cause, KeyboardInterrupt):
            cause = cause.__cause__ or cause.__context__  # type: ignore[assignment]
        if cause is not None:
            raise KeyboardInterrupt from None
        raise
