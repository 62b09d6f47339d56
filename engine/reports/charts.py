"""The HTML report's inline SVG: one chart per category on a labelled 0-1 axis."""

from __future__ import annotations

from typing import Any

from markupsafe import escape

from engine.reports.text import fmt, gated_on

WIDTH, HEIGHT, LEFT, AXIS_END, AXIS_Y = 740, 54, 16, 640, 30
TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
# Each state is told by a symbol and a word, never by colour alone.
STATE_MARK = {"MET": "✓ met", "NOT_MET": "✗ NOT MET"}


def x(v: float) -> str:
    """The horizontal position of a rate."""
    return f"{LEFT + max(0.0, min(1.0, v)) * (AXIS_END - LEFT):.1f}"


def _axis() -> list[str]:
    """The axis line, its ticks and their labels."""
    parts = [f'<line x1="{x(0)}" y1="{AXIS_Y}" x2="{x(1)}" y2="{AXIS_Y}" stroke="#999"/>']
    for t in TICKS:
        parts.append(f'<line x1="{x(t)}" y1="{AXIS_Y - 3}" x2="{x(t)}" y2="{AXIS_Y + 3}" '
                     'stroke="#999"/>')
        parts.append(f'<text x="{x(t)}" y="{HEIGHT - 4}" text-anchor="middle">{t:g}</text>')
    return parts


def _mark(v: float, label: str, css: str, dash: str) -> list[str]:
    """A vertical mark with its label above it: the threshold (T) or the minimum (M)."""
    return [f'<line class="{css}" x1="{x(v)}" y1="15" x2="{x(v)}" y2="{AXIS_Y + 8}" '
            f'stroke="{"#b3261e" if css == "threshold" else "#6a1b9a"}" stroke-width="2"'
            + (f' stroke-dasharray="{dash}"' if dash else "") + "/>",
            f'<text class="{css}-label" x="{x(v)}" y="11" text-anchor="middle">{label}</text>']


def _describe(cat: dict[str, Any]) -> str:
    """The chart in words, for screen readers and as its tooltip."""
    return escape(f"rate {fmt(cat['rate'])}, Wilson 95% [{fmt(cat['wilson_lower'])}, "
            f"{fmt(cat['wilson_upper'])}], threshold {fmt(cat['threshold'])}, minimum "
            f"{fmt(cat.get('minimum'))}, gated on {gated_on(cat)}: {cat['state']}")


def interval_svg(cat: dict[str, Any]) -> str:
    """The 0-1 axis with tick labels, the Wilson interval, the rate, the threshold (T, solid)
    and the mandatory minimum (M, dashed); a NOT_MET category is framed and says so."""
    state = cat["state"]
    word = STATE_MARK.get(state, state.replace("_", " ").lower())
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {state}" width="{WIDTH}" '
             f'height="{HEIGHT}" role="img" aria-label="{_describe(cat)}">',
             f"<title>{_describe(cat)}</title>"]
    if state == "NOT_MET":
        parts.append(f'<rect x="1" y="13" width="{WIDTH - 2}" height="{HEIGHT - 14}" '
                     'fill="#fdecec" stroke="#b3261e" stroke-width="2" stroke-dasharray="6 3"/>')
    parts += _axis()
    if cat["wilson_lower"] is not None:
        parts.append(f'<line x1="{x(cat["wilson_lower"])}" y1="{AXIS_Y}" '
                     f'x2="{x(cat["wilson_upper"])}" y2="{AXIS_Y}" stroke="#3465a4" '
                     'stroke-width="6" stroke-opacity="0.6"/>')
    if cat["rate"] is not None:
        parts.append(f'<circle cx="{x(cat["rate"])}" cy="{AXIS_Y}" r="4.5" fill="#1b1b1b"/>')
    if cat["threshold"] is not None:
        parts += _mark(cat["threshold"], "T", "threshold", "")
    if cat.get("minimum") is not None:
        parts += _mark(cat["minimum"], "M", "minimum", "4 2")
    parts.append(f'<text class="state" x="{AXIS_END + 14}" y="{AXIS_Y + 4}" '
                 f'font-weight="bold">{word}</text></svg>')
    return "".join(parts)
