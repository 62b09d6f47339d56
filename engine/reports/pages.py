"""What the self-contained pages of ``engine compare`` and ``engine history`` share: every
value escaped as it is put in, numbers to four decimals, and plain tables."""

from __future__ import annotations

from html import escape
from typing import Any


def cell(value: Any) -> str:
    """A value as escaped text; null as an en dash."""
    return escape("–" if value is None else str(value))


def decimal(value: Any) -> str:
    """A number to four decimals; anything else (null, a boolean) as an en dash."""
    return f"{value:.4f}" if isinstance(value, int | float) and not isinstance(value, bool) \
        else "–"


def table(head: list[str], rows: list[list[str]]) -> str:
    """A table of cells already escaped (``cell``); "none" when there are no rows."""
    if not rows:
        return '<p class="muted">none</p>'
    cells = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return ("<table><thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) +
            f"</tr></thead><tbody>{cells}</tbody></table>")
