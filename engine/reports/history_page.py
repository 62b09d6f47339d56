"""The page of ``engine history``: one self-contained HTML file (inline SVG and CSS, no
script, nothing fetched), every value from verified scorecards, escaped; a table behind
every chart; readable in print.

Per evaluation, per category: the rate of each run and its Wilson band, the threshold and
minimum, a strip of each run's decision, a mark where waivers were active, and a break
between segments (a change of policy, suite or judge: points are never joined across it).
"""

from __future__ import annotations

import math
import os
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from engine.evidence.history import History, Run
from engine.reports import unique_anchors
from engine.reports.pages import cell as _e
from engine.reports.pages import decimal as _num
from engine.reports.pages import table as _table

_CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:72rem;color:#111}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;font-size:13px}th,td{border:1px solid
#bbb;padding:.2rem .45rem;text-align:left;vertical-align:top}th{background:#eee}
details{margin:.25rem 0 1rem}svg{display:block;margin:.5rem 0}.muted{color:#555}
code{font-size:90%}.h{word-break:break-all}@media print{details{display:block}
details>*{display:block}a{color:inherit;text-decoration:none}h2{break-before:page}}"""
W, H, LEFT, RIGHT, TOP, STRIP = 760, 190, 48, 12, 12, 14
COLOURS = {"PASS": "#2e7d32", "FAIL": "#c62828", "INCOMPLETE": "#ef6c00"}
TICKS = 8  # at most this many run labels under a chart


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


class _Axes:
    """Where a run and a rate are drawn in one chart."""

    def __init__(self, runs: list[Run], name: str) -> None:
        self.count = len(runs)
        values = [v for r in runs for k in ("rate", "wilson_lower", "threshold", "minimum")
                  if (v := _number(r.categories.get(name, {}).get(k))) is not None]
        # the axis starts a tenth below the lowest value's tenth (never below 0), so no
        # point, band or line sits on its edge
        self.low = max(0.0, math.floor(min(values, default=0.0) * 10) / 10 - 0.1)

    def x(self, i: int) -> float:
        """The centre of run ``i``'s slot (each run has an equal slot of the width)."""
        return LEFT + (W - LEFT - RIGHT) * (i + 0.5) / max(1, self.count)

    def y(self, rate: float) -> float:
        return TOP + (H - TOP) * (1 - (rate - self.low) / ((1 - self.low) or 1))


def _segment_marks(runs: list[Run], name: str, axes: _Axes) -> str:
    """Band, line, points, threshold and minimum of each segment; the breaks between."""
    out: list[str] = []
    for seg in sorted({r.segment for r in runs}):
        idx = [i for i, r in enumerate(runs) if r.segment == seg]
        cats = [(i, runs[i].categories.get(name, {})) for i in idx]
        band = [(i, _number(c.get("wilson_lower")), _number(c.get("wilson_upper")))
                for i, c in cats]
        band = [b for b in band if b[1] is not None and b[2] is not None]
        if band:
            pts = [f"{axes.x(i):.1f},{axes.y(u):.1f}" for i, _, u in band if u is not None] + \
                  [f"{axes.x(i):.1f},{axes.y(lo):.1f}" for i, lo, _ in reversed(band)
                   if lo is not None]
            out.append(f'<polygon points="{" ".join(pts)}" fill="#90caf9" opacity=".45"/>')
        line = [(i, r) for i, c in cats if (r := _number(c.get("rate"))) is not None]
        if len(line) > 1:
            path = " ".join(f"{axes.x(i):.1f},{axes.y(r):.1f}" for i, r in line)
            out.append(f'<polyline points="{path}" fill="none" stroke="#1565c0"/>')
        for i, r in line:
            run = runs[i]
            out.append(f'<circle cx="{axes.x(i):.1f}" cy="{axes.y(r):.1f}" r="2.5" '
                       f'fill="#1565c0"><title>{_e(run.run_id)} {_e(run.signed_at)}: rate '
                       f"{r:.4f}</title></circle>")
        for key, dash in (("threshold", "6 3"), ("minimum", "2 3")):
            level = _number(cats[0][1].get(key)) if cats else None
            if level is not None and axes.low <= level <= 1:
                out.append(f'<line x1="{axes.x(idx[0]) - 4:.1f}" x2="{axes.x(idx[-1]) + 4:.1f}" '
                           f'y1="{axes.y(level):.1f}" y2="{axes.y(level):.1f}" stroke="#444" '
                           f'stroke-dasharray="{dash}"><title>{key} {level}</title></line>')
        if seg:
            x = (axes.x(idx[0] - 1) + axes.x(idx[0])) / 2
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{H + STRIP + 4}" '
                       f'stroke="#6a1b9a" stroke-width="2"><title>new segment</title></line>')
    return "".join(out)


def _chart(runs: list[Run], name: str, label: str) -> str:
    axes = _Axes(runs, name)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H + STRIP + 40}" '
             f'role="img" aria-label="{escape(label)}">']
    for level in (axes.low, (axes.low + 1) / 2, 1.0):
        y = axes.y(level)
        parts.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
                     f'stroke="#ddd"/><text x="{LEFT - 6}" y="{y + 4:.1f}" font-size="10" '
                     f'text-anchor="end">{level:.2f}</text>')
    parts.append(_segment_marks(runs, name, axes))
    step = max(1, (len(runs) + TICKS - 1) // TICKS)
    width = (W - LEFT - RIGHT) / max(1, len(runs))
    for i, run in enumerate(runs):
        colour = COLOURS.get(run.decision, "#757575")
        parts.append(f'<rect x="{axes.x(i) - width / 2:.1f}" y="{H + 4}" width="{width:.1f}" '
                     f'height="{STRIP}" fill="{colour}"><title>{_e(run.run_id)}: '
                     f"{_e(run.decision)}</title></rect>")
        if run.waivers:
            parts.append(f'<text x="{axes.x(i):.1f}" y="{H + 2}" font-size="9" '
                         f'text-anchor="middle">W<title>waivers active: '
                         f'{_e(", ".join(run.waivers))}</title></text>')
        if i % step == 0:
            parts.append(f'<text x="{axes.x(i):.1f}" y="{H + STRIP + 18}" font-size="9" '
                         f'text-anchor="middle">{_e(run.label or run.signed_at[:10])}</text>'
                         f'<text x="{axes.x(i):.1f}" y="{H + STRIP + 30}" font-size="9" '
                         f'text-anchor="middle" fill="#555">{_e(run.run_id[:8])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _href(page: Path, here: Path) -> str:
    """A relative link to ``page`` that can only be that file: every folder name the
    evidence chose is percent-encoded (no scheme such as ``javascript:``, no ``%2e%2e``,
    ``#`` or ``?`` read as anything but a name) and the link starts with ``./`` or ``../``."""
    parts = Path(os.path.relpath(page, here)).parts
    encoded = "/".join(quote(p, safe="") for p in parts)
    return encoded if parts and parts[0] == ".." else "./" + encoded


def _runs_table(runs: list[Run], name: str, here: Path) -> str:
    rows = []
    for i, run in enumerate(runs):
        c = run.categories.get(name, {})
        page = run.path.parent / "scorecard.html"
        link = f'<a href="{escape(_href(page, here))}">scorecard</a>' \
            if page.exists() else "–"
        rows.append([str(i + 1), _e(run.signed_at), f"<code>{_e(run.run_id)}</code>",
                     _e(run.label), _e(run.decision), str(run.segment + 1), _num(c.get("rate")),
                     f"{_num(c.get('wilson_lower'))} – {_num(c.get('wilson_upper'))}",
                     _e(c.get("n")), _e(c.get("threshold")), _e(c.get("minimum")),
                     _e(c.get("state")), _e(c.get("waived")), _e(", ".join(run.waivers)), link])
    return _table(["#", "signed", "run", "label", "decision", "segment", "rate",
                   "Wilson band", "n", "threshold", "minimum", "state", "waived rows",
                   "waivers active", "evidence"], rows)


def _evaluation(name: str, history: History, here: Path, ids: dict[str, str]) -> str:
    """One evaluation's part of the page; ``ids``: the page's anchor of the evaluation and
    of each ``EVALUATION/CATEGORY``."""
    runs = history.runs[name]
    segs = history.segments[name]
    seg_rows = [[str(n + 1), str(s["first"] + 1), _e(", ".join(s["changed"]) or "first run"),
                 *(f"<code class=\"h\">{_e(s['digests'].get(k))}</code>" for k in
                   ("policy_sha256", "suite_sha256", "judge_sha256"))]
                for n, s in enumerate(segs)]
    html = [f'<h2 id="{ids[name]}">{escape(name)}</h2>',
            f"<p>{len(runs)} verified runs, {len(segs)} segment(s).</p>",
            _table(["segment", "from run", "what changed", "policy", "suite", "judge"],
                   seg_rows)]
    for cat in _categories(runs):
        html.append(f'<h3 id="{ids[f"{name}/{cat}"]}">{escape(cat)}</h3>')
        if any(_number(r.categories.get(cat, {}).get("rate")) is not None for r in runs):
            html.append(_chart(runs, cat, f"{name}: {cat}, rate per run"))
        else:
            html.append('<p class="muted">no run measured a rate here (no chart)</p>')
        html.append(f"<details open><summary>The table behind the chart</summary>"
                    f"{_runs_table(runs, cat, here)}</details>")
    return "".join(html)


def _categories(runs: list[Run]) -> list[str]:
    return sorted({c for r in runs for c in r.categories})


def page(history: History, here: Path) -> str:
    """The history as one HTML page; links to each run's scorecard.html are relative to
    the folder ``here`` the page is written in."""
    names = [part for name in sorted(history.runs) for part in
             (name, *(f"{name}/{cat}" for cat in _categories(history.runs[name])))]
    ids = dict(zip(names, unique_anchors("ev-", names), strict=True))  # each its own
    body, nav = [], []
    for name in sorted(history.runs):
        body.append(_evaluation(name, history, here, ids))
        nav.append(f'<a href="#{ids[name]}">{escape(name)}</a>')
    left = _table(["scorecard", "code", "why"],
                  [[f"<code>{_e(r['path'])}</code>", _e(r["code"]), _e(r["message"])]
                   for r in history.refused]) if history.refused else \
        '<p class="muted">none: every scorecard found verified</p>'
    return ('<!doctype html><html lang="en"><head><meta charset="utf-8"><title>History'
            f"</title><style>{_CSS}</style></head><body><h1>History</h1><p>Every run below "
            "was verified with the pinned key before it was read; a change of policy, suite "
            "or judge starts a new segment, and no line joins two segments. "
            f'{" · ".join(nav)} · <a href="#left-out">left out</a></p>{"".join(body)}'
            f'<h2 id="left-out">Left out ({len(history.refused)})</h2>{left}</body></html>\n')
