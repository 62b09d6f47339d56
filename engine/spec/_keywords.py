"""Three jsonschema keywords' meaning, without jsonschema: ``format: date``, the equality
``enum`` and ``const`` use, and ``uniqueItems``. The generated checks (``_checks.py``) call
these; tests/test_schema_checks.py holds them to jsonschema's own answers."""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from typing import Any

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)


def date_format(instance: Any) -> bool:
    """jsonschema's ``format: date``: anything but text passes; text must be a real
    calendar date written YYYY-MM-DD (2027-02-30 is not one)."""
    if not isinstance(instance, str):
        return True
    try:
        return bool(_DATE.fullmatch(instance)) and bool(datetime.date.fromisoformat(instance))
    except ValueError:
        return False


_TRUE, _FALSE = object(), object()


def _unbool(value: Any) -> Any:
    return _TRUE if value is True else _FALSE if value is False else value


def json_equal(one: Any, two: Any) -> bool:
    """``enum`` / ``const`` equality: 1 == 1.0, but true is not 1, nor false 0, inside lists
    and mappings too."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(json_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(k in two and json_equal(v, two[k])
                                            for k, v in one.items())
    return bool(_unbool(one) == _unbool(two))


def unique_items(items: list[Any]) -> bool:
    """``uniqueItems``, the way jsonschema decides it: neighbours after sorting when the
    items sort, else every pair."""
    try:
        ordered = sorted(_unbool(i) for i in items)
        return not any(json_equal(a, b) for a, b in zip(ordered, ordered[1:], strict=False))
    except (NotImplementedError, TypeError):
        seen: list[Any] = []
        for item in map(_unbool, items):
            if any(json_equal(s, item) for s in seen):
                return False
            seen.append(item)
    return True
