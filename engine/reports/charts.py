"""The HTML report's inline SVG: one chart per category on an axis fitted to its values.

A fixed 0-1 axis puts a rate of 0.979 and a threshold of 0.98 half a pixel apart, so a near
miss cannot be seen. The axis is therefore fitted to the values a category shows (the rate,
its Wilson interval, the threshold, the minimum) and, when that still leaves what is gated
and the mark it is held to closer than MIN_GAP pixels, to those alone (the interval is then
cut at the axis ends, which say where it really ends). The range is written on the chart,
every tick is labelled, and a miss is drawn as a band between the value and its mark with
the shortfall in words."""

from __future__ import annotations

import math
from typing import Any

from markupsafe import escape

from engine.reports.text import fmt, gated_on

WIDTH, HEIGHT, LEFT, AXIS_END, AXIS_Y = 820, 70, 16, 640, 34
WHOLE = (0.0, 1.0, 0.25)  # the axis when nothing is measured or the values span most of it
WIDE = 0.5       # a fitted range wider than this shows the whole 0-1 scale instead
MIN_SPAN = 0.01  # the narrowest axis: a difference of 0.001 is then 62 pixels
MIN_GAP = 12     # pixels between a gated value and the mark it misses or meets, at least
STEPS = (0.25, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001)  # tick steps, widest first
# Each state is told by a symbol and a word, never by colour alone.
STATE_MARK = {"MET": "✓ met", "NOT_MET": "✗ NOT MET"}
Axis = tuple[float, float, float]  # low end, high end, tick step


def _fit(values: list[float]) -> Axis:
    """The narrowest range of whole tick steps (at least three) around ``values``, padded by
    a tenth of their span, at least MIN_SPAN wide; the whole 0-1 scale when wider than WIDE."""
    low, high = min(values), max(values)
    if high - low < MIN_SPAN:
        middle = (low + high) / 2
        low, high = middle - MIN_SPAN / 2, middle + MIN_SPAN / 2
    pad = (high - low) / 10
    low, high = max(0.0, low - pad), min(1.0, high + pad)
    if high - low > WIDE:
        return WHOLE
    step = next((s for s in STEPS if (high - low) / s >= 3), STEPS[-1])
    low = max(0.0, math.floor(round(low / step, 9)) * step)
    high = min(1.0, math.ceil(round(high / step, 9)) * step)
    return round(low, 6), round(high, 6), step


def _misses(cat: dict[str, Any]) -> list[tuple[float, float, str]]:
    """Each (value, mark, name) the gate compares: the gated statistic with the threshold,
    the rate with the mandatory minimum (engine/decide/categories.py)."""
    gated = cat["wilson_lower"] if cat.get("gate_on") == "wilson_lower" else cat["rate"]
    pairs = [(gated, cat["threshold"], "threshold"), (cat["rate"], cat.get("minimum"), "minimum")]
    return [(v, m, name) for v, m, name in pairs if v is not None and m is not None]


def axis_range(cat: dict[str, Any]) -> Axis:
    """The chart's axis for one category (low, high, tick step)."""
    interval = [v for v in (cat["wilson_lower"], cat["wilson_upper"]) if v is not None]
    marks = [v for v in (cat["rate"], cat["threshold"], cat.get("minimum")) if v is not None]
    if cat["rate"] is None and not interval:
        return WHOLE  # nothing measured: the marks alone on the whole scale
    every = _fit(marks + interval)
    if all(v == m or abs(_x(v, every) - _x(m, every)) >= MIN_GAP for v, m, _ in _misses(cat)):
        return every
    return _fit(marks + [v for v, _, _ in _misses(cat)])


def _x(v: float, axis: Axis) -> float:
    """The horizontal position of a value, held to the axis."""
    low, high, _ = axis
    return LEFT + (max(low, min(high, v)) - low) / (high - low) * (AXIS_END - LEFT)


def x(v: float, axis: Axis = WHOLE) -> str:
    """The horizontal position of a value, as the SVG writes it."""
    return f"{_x(v, axis):.1f}"


def ticks(axis: Axis) -> list[float]:
    """Every tick of the axis, both ends included."""
    low, high, step = axis
    count = round((high - low) / step)
    return [round(low + i * step, 6) for i in range(count + 1)]


def _axis(axis: Axis) -> list[str]:
    """The axis line, its ticks and their labels, and its range at the right."""
    low, high, _ = axis
    parts = [f'<line x1="{x(low, axis)}" y1="{AXIS_Y}" x2="{x(high, axis)}" y2="{AXIS_Y}" '
             'stroke="#999"/>']
    for t in ticks(axis):
        parts.append(f'<line x1="{x(t, axis)}" y1="{AXIS_Y - 3}" x2="{x(t, axis)}" '
                     f'y2="{AXIS_Y + 3}" stroke="#999"/>')
        parts.append(f'<text x="{x(t, axis)}" y="{HEIGHT - 18}" '
                     f'text-anchor="middle">{t:g}</text>')
    zoomed = "" if axis == WHOLE else " (zoomed)"
    parts.append(f'<text class="axis-range" x="{LEFT}" y="{HEIGHT - 4}">axis {low:g} to '
                 f'{high:g}{zoomed}</text>')
    return parts


def _mark(v: float, label: str, css: str, dash: str, axis: Axis) -> list[str]:
    """A vertical mark with its label above it: the threshold (T) or the minimum (M)."""
    at = x(v, axis)
    return [f'<line class="{css}" x1="{at}" y1="15" x2="{at}" y2="{AXIS_Y + 8}" '
            f'stroke="{"#b3261e" if css == "threshold" else "#6a1b9a"}" stroke-width="2"'
            + (f' stroke-dasharray="{dash}"' if dash else "") + "/>",
            f'<text class="{css}-label" x="{at}" y="11" text-anchor="middle">{label}</text>']


def _interval(cat: dict[str, Any], axis: Axis) -> list[str]:
    """The Wilson interval as a bar; an end beyond the axis is cut there and labelled."""
    lower, upper = cat["wilson_lower"], cat["wilson_upper"]
    parts = [f'<line class="interval" x1="{x(lower, axis)}" y1="{AXIS_Y}" '
             f'x2="{x(upper, axis)}" y2="{AXIS_Y}" stroke="#3465a4" stroke-width="6" '
             'stroke-opacity="0.6"/>']
    if lower < axis[0]:
        parts.append(f'<text class="cut" x="{LEFT}" y="{AXIS_Y - 7}">◂ {fmt(lower)}</text>')
    if upper > axis[1]:
        parts.append(f'<text class="cut" x="{AXIS_END}" y="{AXIS_Y - 7}" '
                     f'text-anchor="end">{fmt(upper)} ▸</text>')
    return parts


def _gaps(cat: dict[str, Any], axis: Axis) -> tuple[list[str], list[str]]:
    """A band from each value that misses its mark to the mark, and the shortfalls in words."""
    bands, words = [], []
    for v, mark, name in _misses(cat):
        if v < mark:
            bands.append(f'<line class="miss" x1="{x(v, axis)}" y1="{AXIS_Y}" '
                         f'x2="{x(mark, axis)}" y2="{AXIS_Y}" stroke="#b3261e" '
                         'stroke-width="12" stroke-opacity="0.35"/>')
            words.append(f"{name} short by {mark - v:.2g}")
    return bands, words


def _describe(cat: dict[str, Any], axis: Axis) -> str:
    """The chart in words, for screen readers and as its tooltip."""
    return escape(f"rate {fmt(cat['rate'])}, Wilson 95% [{fmt(cat['wilson_lower'])}, "
                  f"{fmt(cat['wilson_upper'])}], threshold {fmt(cat['threshold'])}, minimum "
                  f"{fmt(cat.get('minimum'))}, gated on {gated_on(cat)}: {cat['state']}; "
                  f"axis {axis[0]:g} to {axis[1]:g}")


def interval_svg(cat: dict[str, Any]) -> str:
    """The fitted axis with tick labels and its range, the Wilson interval, the rate, the
    threshold (T, solid) and the mandatory minimum (M, dashed); a miss is a band from the
    value to its mark with the shortfall written; a NOT_MET category is framed and says so."""
    state, axis = cat["state"], axis_range(cat)
    word = STATE_MARK.get(state, state.replace("_", " ").lower())
    bands, shortfalls = _gaps(cat, axis)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {state}" width="{WIDTH}" '
             f'height="{HEIGHT}" role="img" aria-label="{_describe(cat, axis)}">',
             f"<title>{_describe(cat, axis)}</title>"]
    if state == "NOT_MET":
        parts.append(f'<rect x="1" y="13" width="{WIDTH - 2}" height="{HEIGHT - 14}" '
                     'fill="#fdecec" stroke="#b3261e" stroke-width="2" stroke-dasharray="6 3"/>')
    parts += _axis(axis) + bands
    if cat["wilson_lower"] is not None:
        parts += _interval(cat, axis)
    if cat["rate"] is not None:
        parts.append(f'<circle cx="{x(cat["rate"], axis)}" cy="{AXIS_Y}" r="4.5" '
                     'fill="#1b1b1b"/>')
    if cat["threshold"] is not None:
        parts += _mark(cat["threshold"], "T", "threshold", "", axis)
    if cat.get("minimum") is not None:
        parts += _mark(cat["minimum"], "M", "minimum", "4 2", axis)
    parts.append(f'<text class="state" x="{AXIS_END + 14}" y="{AXIS_Y + 4}" '
                 f'font-weight="bold">{word}</text>')
    parts += [f'<text class="shortfall" x="{AXIS_END + 14}" y="{AXIS_Y + 18 + 13 * i}">'
              f"{escape(said)}</text>" for i, said in enumerate(shortfalls)]
    return "".join(parts) + "</svg>"
