"""Findings: non-passing rows grouped by (category, case), with suggested fixes as data.

Fix texts are jinja2 templates from the policy's fixes file, rendered in a sandbox with
strict undefined variables; nothing is applied automatically.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jinja2
from jinja2 import meta

from engine.records.clip import clip
from engine.spec.templates import Deferred, Sandbox, TemplateRefused, printed_names

FIELDS = ("title", "action", "verification")
VARIABLES = frozenset({"category", "case", "worst_status", "rows", "statuses"})
WORST = ("ERROR", "ABSTAIN", "FAIL")  # worst first
MAX_LISTED, MAX_EVIDENCE, MAX_CHECKS = 20, 5, 3
_SAMPLE = {"category": "category", "case": "case", "worst_status": "FAIL", "rows": 1,
           "statuses": {"FAIL": 1}}
_ENV = Sandbox()


@dataclass(frozen=True)
class Fix:
    """Checked templates for one category (or for ERROR rows)."""

    title: jinja2.Template | Deferred
    action: jinja2.Template | Deferred
    verification: jinja2.Template | Deferred


def build_fixes(data: Any, categories: set[str]) -> dict[str, Fix]:
    """Check a fixes table; ValueError naming the entry when it is not one."""
    if not isinstance(data, dict):
        raise ValueError("a fixes file maps category names (and 'error') to templates")
    out = {}
    for key, entry in data.items():
        if key != "error" and key not in categories:
            raise ValueError(f"'{key}' is not a category of this policy")
        if not isinstance(entry, dict) or set(entry) != set(FIELDS):
            raise ValueError(f"{key}: give exactly {', '.join(FIELDS)}")
        out[key] = Fix(*(_template(f"{key}.{name}", str(entry[name])) for name in FIELDS))
    return out


def _template(where: str, source: str) -> jinja2.Template | Deferred:
    """One checked fix text; ValueError naming ``where`` when it is not one."""
    try:
        tree = _ENV.parse(source)
        names = printed_names(tree)
        unknown = (meta.find_undeclared_variables(tree) if names is None else names) - VARIABLES
        if unknown:
            raise ValueError(f"{where}: unknown variable '{sorted(unknown)[0]}' "
                             f"(known: {', '.join(sorted(VARIABLES))})")
        if names is not None:  # text and known names only: nothing can fail on rendering
            return Deferred(_ENV, source)
        template = _ENV.checked(source, tree)
        template.render(**_SAMPLE)  # sandbox violations surface now, not mid-run
        return template
    except jinja2.TemplateSyntaxError as exc:
        raise ValueError(f"{where}: template line {exc.lineno}: {exc.message}") from None
    except TemplateRefused as exc:
        raise ValueError(f"{where}: template {exc}") from None
    except (jinja2.TemplateError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: template cannot render: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - any failure on sample values is the spec's
        raise ValueError(f"{where}: template cannot render: "
                         f"{type(exc).__name__}: {str(exc)[:200]}") from None


def add(groups: dict[tuple[str, str], dict[str, Any]], category: str, case: str,
        row: dict[str, Any], trace: Any) -> None:
    """Count one non-passing agent row into its (category, case) group."""
    group = groups.setdefault((category, case), {"rows": [], "traces": [], "statuses": {},
                                                 "evidence": []})
    group["statuses"][row["status"]] = group["statuses"].get(row["status"], 0) + 1
    if len(group["rows"]) < MAX_LISTED:
        group["rows"].append(row["unit"])
    trace = clip(trace) if isinstance(trace, str) else None  # the record's: untrusted
    if trace is not None and trace not in group["traces"] and len(group["traces"]) < MAX_LISTED:
        group["traces"].append(trace)
    evidence = row.get("message") or row.get("code") or row["status"]
    if evidence not in group["evidence"] and len(group["evidence"]) < MAX_EVIDENCE:
        group["evidence"].append(evidence)
    _add_check(group.setdefault("checks", []), _check(row))


def _check(row: dict[str, Any]) -> dict[str, Any]:
    """What one inspection expected and observed on its first non-passing row (the row's
    masked, clipped evidence), so a report can show one against the other."""
    keys = ("inspection", "type", "unit", "status", "expected", "observed")
    return {k: row[k] for k in keys if k in row}


def _add_check(checks: list[dict[str, Any]], check: dict[str, Any]) -> None:
    """Keep the first check of each inspection, at most MAX_CHECKS."""
    if len(checks) < MAX_CHECKS and all(c.get("inspection") != check.get("inspection")
                                        for c in checks):
        checks.append(check)


def merge(mine: dict[tuple[str, str], dict[str, Any]],
          theirs: dict[tuple[str, str], dict[str, Any]]) -> None:
    """Add a later shard's groups into ``mine``, keeping first-appearance order."""
    for key, group in theirs.items():
        target = mine.setdefault(key, {"rows": [], "traces": [], "statuses": {},
                                       "evidence": []})
        for status, n in group["statuses"].items():
            target["statuses"][status] = target["statuses"].get(status, 0) + n
        for name, cap in (("rows", MAX_LISTED), ("traces", MAX_LISTED),
                          ("evidence", MAX_EVIDENCE)):
            for item in group[name]:
                if len(target[name]) < cap and (name == "rows" or item not in target[name]):
                    target[name].append(item)
        for check in group.get("checks", []):
            _add_check(target.setdefault("checks", []), check)


def render(fix: Fix | None, variables: dict[str, Any]) -> dict[str, str] | None:
    """The fix texts for one finding, or None when the policy gives none."""
    if fix is None:
        return None
    out = {}
    for name in FIELDS:
        try:
            out[name] = getattr(fix, name).render(**variables)
        except Exception as exc:  # noqa: BLE001 - a run's values may exceed what a fix may do
            out[name] = f"(this fix text could not be written: {str(exc)[:200]})"
    return out


def findings(order: list[str], groups: dict[tuple[str, str], dict[str, Any]],
             severity: dict[str, str], fixes: dict[str, Fix]) -> list[dict[str, Any]]:
    """Grouped findings, ordered by category, then by first appearance of the case."""
    out = []
    for category in order:
        for (cat, case), group in groups.items():
            if cat != category:
                continue
            worst = next(s for s in WORST if s in group["statuses"])
            case = clip(case)  # a derived suite's case ids come from the records
            blocker = worst in ("ERROR", "ABSTAIN") or severity.get(category) == "blocker"
            variables = {"category": category, "case": case, "worst_status": worst,
                         "rows": sum(group["statuses"].values()),
                         "statuses": dict(group["statuses"])}
            fix = fixes.get("error") if worst in ("ERROR", "ABSTAIN") else fixes.get(category)
            out.append({"id": f"{category}:{case}", "category": category, "case": case,
                        "severity": "blocker" if blocker else "high", "worst_status": worst,
                        "statuses": dict(sorted(group["statuses"].items())),
                        "rows": group["rows"], "traces": group["traces"],
                        "evidence": group["evidence"], "checks": group.get("checks", []),
                        "fix": render(fix, variables),
                        "automation": "human_review_required"})
    return out
