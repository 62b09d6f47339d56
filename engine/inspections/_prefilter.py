"""What a regular expression cannot match without: a cheap test that rules texts out.

``needs(pattern)`` reads Python's own parse of a pattern and returns a one-character class
such that every match of the pattern contains a character of that class (for
``\\d{3}-\\d{4}``: ``\\d``; for an e-mail pattern: ``@``), or None when it cannot say. A
text without any such character cannot match, and searching a text for one character
class is many times faster than trying an alternation of patterns with look-behinds at
every position. The class is written back in the pattern's own syntax and compiled by
the same engine with the same flags, so ``\\d`` keeps meaning every Unicode digit.
Anything unusual (flags that change inside the pattern, back-references, ...) answers
None, and the caller then searches with the whole pattern as before.
"""

from __future__ import annotations

import re
from typing import Any

try:  # the parser of the re module (named sre_parse before Python 3.11)
    from re import _constants as _c  # type: ignore[attr-defined]
    from re import _parser as _p  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

# Weights say how common a class's characters are in text, so the rarest need is chosen:
# letters and spaces are everywhere, digits and punctuation are not.
_COMMON = 50
_CATEGORIES = {_c.CATEGORY_DIGIT: (r"\d", 10), _c.CATEGORY_NOT_DIGIT: (r"\D", 1 << 20),
               _c.CATEGORY_SPACE: (r"\s", 6 * _COMMON), _c.CATEGORY_NOT_SPACE: (r"\S", 1 << 20),
               _c.CATEGORY_WORD: (r"\w", 63 * _COMMON), _c.CATEGORY_NOT_WORD: (r"\W", 1 << 20)}
_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", _c.MAX_REPEAT)}
_ZERO_WIDTH = {_c.AT, _c.ASSERT, _c.ASSERT_NOT}
Need = tuple[str, int]  # a character class in re syntax, and about how many characters


def needs(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """A compiled one-character class every match of ``pattern`` contains, or None."""
    try:
        parsed = _p.parse(pattern.pattern, pattern.flags)
    except Exception:  # noqa: BLE001 - unknown to this reader: the caller searches as before
        return None
    if parsed.state.flags & ~(re.UNICODE | re.ASCII):
        return None  # ignorecase, verbose, ...: not worth reasoning about
    found = _sequence(list(parsed))
    return None if found is None else re.compile(found[0], pattern.flags)


def either(patterns: list[re.Pattern[str]]) -> re.Pattern[str] | None:
    """One class search ruling out texts none of ``patterns`` can match, or None."""
    wanted = [needs(p) for p in patterns]
    if not wanted or any(w is None for w in wanted):
        return None
    return re.compile("|".join(w.pattern for w in wanted if w is not None))


def _sequence(items: list[Any]) -> Need | None:
    """The smallest class some item of a sequence needs (any one of them will do)."""
    found = [n for n in (_item(op, av) for op, av in items) if n is not None]
    return min(found, key=lambda n: n[1]) if found else None


def _item(op: Any, av: Any) -> Need | None:  # noqa: PLR0911 - one answer per kind of node
    if op is _c.LITERAL:
        return re.escape(chr(av)), _weight(av, av)
    if op is _c.IN:
        return _charset(av)
    if op in _REPEATS:
        low, _, sub = av
        return _sequence(list(sub)) if low >= 1 else None
    if op is _c.SUBPATTERN:
        _, add, remove, sub = av
        return None if add or remove else _sequence(list(sub))
    if op is _c.BRANCH:
        alternatives = [_sequence(list(alt)) for alt in av[1]]
        if any(a is None for a in alternatives):
            return None
        return "|".join(a[0] for a in alternatives if a), sum(  # type: ignore[index]
            a[1] for a in alternatives if a)  # type: ignore[index]
    return None  # anchors, look-arounds, any character, back-references: no need


def _charset(items: list[Any]) -> Need | None:
    """A class node written back as ``[...]`` (None for a negated one)."""
    parts, size = [], 0
    for op, av in items:
        if op is _c.LITERAL:
            parts.append(re.escape(chr(av)))
            size += _weight(av, av)
        elif op is _c.RANGE:
            parts.append(f"{re.escape(chr(av[0]))}-{re.escape(chr(av[1]))}")
            size += _weight(*av)
        elif op is _c.CATEGORY and av in _CATEGORIES:
            parts.append(_CATEGORIES[av][0])
            size += _CATEGORIES[av][1]
        else:
            return None  # negated sets and anything unusual
    return (f"[{''.join(parts)}]", size) if parts else None


def _weight(low: int, high: int) -> int:
    """How common the characters ``low``..``high`` are (letters and spaces count more)."""
    if high - low > 256:
        return 1 << 20
    return sum(_COMMON if chr(c).isalpha() or chr(c).isspace() else 1
               for c in range(low, high + 1))
