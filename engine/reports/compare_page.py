"""The page of ``engine compare``: one self-contained HTML file (inline CSS, no script, no
font or image fetched), every value from the comparison's JSON, escaped; readable in
print. Tables only: each section has an anchor the summary links to."""

from __future__ import annotations

from html import escape
from typing import Any

from engine.reports.pages import cell as _e
from engine.reports.pages import decimal as _num
from engine.reports.pages import table as _table

_CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:70rem;color:#111}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}th,td{border:1px solid #bbb;
padding:.25rem .5rem;text-align:left;vertical-align:top}th{background:#eee}
.worse{color:#a00;font-weight:600}.better{color:#060}.muted{color:#666}
code{font-size:90%}@media print{a{color:inherit;text-decoration:none}}"""


def _sides(result: dict[str, Any]) -> str:
    keys = ("evaluation", "run_id", "generated_at", "decision", "policy", "policy_sha256",
            "suite_sha256", "judge_sha256", "scorecard_sha256", "signer", "trusted", "path")
    rows = [[_e(k), f"<code>{_e(result['a'].get(k))}</code>",
             f"<code>{_e(result['b'].get(k))}</code>"] for k in keys]
    return _table(["", "A (before)", "B (after)"], rows)


def _categories(result: dict[str, Any]) -> str:
    rows = []
    for c in result["categories"]:
        p = c["paired"]
        delta = c["delta"]
        cls = "worse" if c["worse"] else ("better" if isinstance(delta, float) and delta > 0
                                          else "")
        rows.append([_e(c["name"]), _num(c["a"]["rate"]), _num(c["b"]["rate"]),
                     f'<span class="{cls}">{_num(delta)}</span>', _e(c["a"]["state"]),
                     _e(c["b"]["state"]), _e(p["pairs"]), _e(p["pass_to_fail"]),
                     _e(p["fail_to_pass"]), _num(p["p_value"]),
                     f'<span class="worse">{_e("; ".join(c["why"]))}</span>' if c["worse"]
                     else "no"])
    return _table(["category", "rate A", "rate B", "delta", "state A", "state B", "pairs",
                   "PASS to FAIL", "FAIL to PASS", "mid-p", "worse"], rows)


def _listed(items: list[dict[str, str]], keys: tuple[str, ...], total: int) -> str:
    table = _table(list(keys), [[_e(i.get(k)) for k in keys] for i in items])
    more = f'<p class="muted">first {len(items)} of {total}</p>' if total > len(items) else ""
    return table + more


def page(result: dict[str, Any]) -> str:
    """The comparison as one HTML page."""
    flips, found = result["flips"], result["findings"]
    verdict = ("cannot say: " + "; ".join(result["not_comparable"] or
                                          ["authorship not verified (no --trusted-key)"])
               if result["exit"] == 3 else "something got worse" if result["worse"]
               else "nothing got worse")
    sections = [
        ("runs", "The two runs", _sides(result)),
        ("categories", "Categories", _categories(result)),
        ("cases-to-fail", f"Cases PASS to FAIL ({flips['cases_to_fail_total']})",
         _listed(flips["cases_to_fail"], ("category", "case"), flips["cases_to_fail_total"])),
        ("cases-to-pass", f"Cases FAIL to PASS ({flips['cases_to_pass_total']})",
         _listed(flips["cases_to_pass"], ("category", "case"), flips["cases_to_pass_total"])),
        ("trials-to-fail", f"Trials PASS to FAIL ({flips['trials_to_fail_total']})",
         _listed(flips["trials_to_fail"], ("category", "case", "unit"),
                 flips["trials_to_fail_total"])),
        ("trials-to-pass", f"Trials FAIL to PASS ({flips['trials_to_pass_total']})",
         _listed(flips["trials_to_pass"], ("category", "case", "unit"),
                 flips["trials_to_pass_total"])),
        ("findings-new", f"Findings new ({found['new_total']})",
         _listed(found["new"], ("category", "case", "title"), found["new_total"])),
        ("findings-gone", f"Findings gone ({found['gone_total']})",
         _listed(found["gone"], ("category", "case", "title"), found["gone_total"])),
    ]
    nav = " · ".join(f'<a href="#{a}">{escape(t)}</a>' for a, t, _ in sections)
    body = "".join(f'<h2 id="{a}">{escape(t)}</h2>{html}' for a, t, html in sections)
    title = f"{result['a'].get('evaluation')}: {result['a'].get('run_id')} against " \
            f"{result['b'].get('run_id')}"
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>'
            f"{escape(title)}</title><style>{_CSS}</style></head><body>"
            f"<h1>{escape(title)}</h1><p><strong>{escape(verdict)}</strong>: decision "
            f"{_e(result['decision']['a'])} then {_e(result['decision']['b'])}. Each run was "
            f"verified before it was read.</p><p>{nav}</p>{body}</body></html>\n")
