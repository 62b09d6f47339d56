"""Recomputed statistics (discovery protocol §6): counts of named sets, formulas over them
(spec data), and the stratified robustness audit (a code primitive with data parameters)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.errors import FormulaError, Problem, did_you_mean
from engine.formula import NUMBER, Formula, compile_formula, evaluate
from engine.protocols.discovery.corpus import MISSING, meta, strict_date
from engine.protocols.discovery.files import formula_problem
from engine.spec.yaml import Document

_TOKEN = re.compile(r"\s*([A-Za-z][A-Za-z0-9_+-]*|[&|\\])")
_OPS = frozenset("&|\\")


def set_expression(source: str, sets: Mapping[str, set[str]]) -> set[str]:
    """Evaluate ``A & B | C \\ D`` over named sets, left to right."""
    tokens = _TOKEN.findall(source)
    if "".join(tokens).replace(" ", "") != source.replace(" ", ""):
        raise ValueError(f"not a set expression: {source!r}")
    result = set(sets[tokens[0]])
    for op, name in zip(tokens[1::2], tokens[2::2], strict=True):
        other = sets[name]
        result = result & other if op == "&" else result | other if op == "|" else \
            result - other
    return result


@dataclass(frozen=True)
class KindStatistics:
    """The compiled statistics of one task kind: counts, formulas, key order."""

    counts: dict[str, str]
    keys: list[tuple[str, Formula]]


def set_problem(source: str, names: Iterable[str]) -> tuple[str, str, str]:
    """('', '', '') for a set expression over ``names``, else (code, message, hint)."""
    tokens = _TOKEN.findall(source)
    ops = tokens[1::2]
    if "".join(tokens).replace(" ", "") != source.replace(" ", "") or len(tokens) % 2 == 0 \
            or any(t not in _OPS for t in ops) or any(t in _OPS for t in tokens[::2]):
        return ("BAD_SET_EXPRESSION", f"'{source}' is not a set expression (names joined by "
                "&, | or \\)", "")
    for name in tokens[::2]:
        if name not in names:
            return ("UNKNOWN_SET", f"'{name}' is not a set this kind names",
                    did_you_mean(name, names))
    return "", "", ""


def compile_statistics(doc: Document, kinds: Mapping[str, Any],
                       problems: list[Problem]) -> dict[str, KindStatistics]:
    """Compile statistics.yaml per kind (named counts, key formulas); problems located."""
    data, out = doc.data, {}
    for kind, block in data["kinds"].items():
        if kind not in kinds:
            problems.append(doc.problem(("kinds", kind), "UNKNOWN_KIND", f"'{kind}' is not a "
                                        "task kind", did_you_mean(kind, kinds), key=True))
            continue
        source = block.get("same_as", kind)
        block = data["kinds"].get(source, {})
        if "counts" not in block:
            problems.append(doc.problem(("kinds", kind, "same_as"), "UNKNOWN_KIND", f"'{source}' "
                                        "is not a kind with its own counts and keys"))
            continue
        for name, expr in block["counts"].items():
            code, message, hint = set_problem(expr, kinds[kind]["sets"])
            if code:
                problems.append(doc.problem(("kinds", source, "counts", name), code,
                                            f"{message} (kind {kind})", hint))
        names = dict.fromkeys(block["counts"], NUMBER)
        rows = [(("kinds", source, "keys", i), r) for i, r in enumerate(block["keys"])] + \
            [(("population_keys", i), r) for i, r in enumerate(data["population_keys"])]
        keys = []
        for where, row in rows:
            try:
                keys.append((row["key"], compile_formula(str(row["expr"]), names)))
            except FormulaError as exc:
                problems.append(formula_problem(doc, where + ("expr",), exc))
        out[kind] = KindStatistics(dict(block["counts"]), keys)
    return out


def render(value: Any) -> str | None:
    """The stratum key of a raw metadata value (reference rendering), or None if missing."""
    if value is MISSING or value is None or isinstance(value, list | dict):
        return None
    text = str(value)  # ints, floats (4.0 stays '4.0'), booleans ('True') and strings
    return None if not text.strip() else text


def stratify(sel: list[str], rows: Mapping[str, dict[str, Any]],
             axis: str) -> tuple[dict[str, set[str]], set[str]]:
    """The strata of one axis (key -> doc ids) and the documents whose key is missing."""
    strata: dict[str, set[str]] = {}
    missing: set[str] = set()
    for doc_id in sel:
        doc = rows[doc_id]
        if axis == "report_year":
            day = strict_date(doc.get("timestamp"))
            key = None if day is None else str(day.year)
        else:
            key = render(meta(doc, axis))
        if key is None:
            missing.add(doc_id)
        else:
            strata.setdefault(key, set()).add(doc_id)
    return strata, missing


def _eff(x0: set[str], x1: set[str], outcome: set[str]) -> float | None:
    if not x0 or not x1:
        return None
    return 100 * (len(x1 & outcome) / len(x1) - len(x0 & outcome) / len(x0))


def robustness(sel: list[str], rows: Mapping[str, dict[str, Any]], k0: set[str], k1: set[str],
               outcome: set[str], axes: list[str], fields: list[str],
               min_known: int) -> dict[str, Any]:
    """The 47 robustness keys (§6.5) for one finding."""
    out: dict[str, Any] = {"robustness_known_arm0_n": len(k0), "robustness_known_arm1_n": len(k1)}
    known = k0 | k1
    support = outcome & known
    for axis in axes:
        strata, missing = stratify(sel, rows, axis)
        eligible = [(k, s) for k, s in sorted(strata.items())
                    if len(k0 & s) >= min_known and len(k1 & s) >= min_known]
        weights = [len(k0 & s) + len(k1 & s) for _, s in eligible]
        deltas = [_eff(k0 & s, k1 & s, outcome) for _, s in eligible]
        covered = sum(weights)
        cov = set().union(*(s for _, s in eligible)) if eligible else set()
        largest = min(strata.items(), key=lambda kv: (-len(kv[1]), kv[0]))[1] if strata else None
        r0 = k0 - (largest or set()) - missing
        r1 = k1 - (largest or set()) - missing
        support_known = support - missing
        values = {
            "strata_n": len(strata), "missing_metadata_n": len(missing),
            "eligible_strata_n": len(eligible), "covered_known_n": covered,
            "excluded_known_n": len(known) - covered,
            "standardized_delta_pp": (sum(w * d for w, d in zip(weights, deltas, strict=True)
                                          if d is not None) / covered) if covered else None,
            "covered_crude_delta_pp": _eff(k0 & cov, k1 & cov, outcome) if eligible else None,
            "min_stratum_delta_pp": min(deltas) if deltas else None,  # type: ignore[type-var]
            "max_stratum_delta_pp": max(deltas) if deltas else None,  # type: ignore[type-var]
            "drop_largest_n": len(largest) if largest is not None else 0,
            "drop_largest_arm0_n": len(r0), "drop_largest_arm1_n": len(r1),
            "drop_largest_delta_pp": _eff(r0, r1, outcome) if largest is not None and
            len(r0) >= min_known and len(r1) >= min_known else None,
            "support_missing_metadata_n": len(support & missing),
            # S' is empty when there are no strata (every document is then missing)
            "max_support_share": max(len(s & support_known) for s in strata.values()) /
            len(support_known) if support_known else None,
        }
        for name in fields:
            out[f"robustness_{axis}_{name}"] = values[name]
    return out


def expected(kind: KindStatistics, sets: Mapping[str, set[str]], robust: dict[str, Any],
             order: list[str]) -> dict[str, Any]:
    """Every expected statistic of a finding, in the protocol's key order."""
    counts = {name: len(set_expression(expr, sets)) for name, expr in kind.counts.items()}
    values = {key: evaluate(formula, counts) for key, formula in kind.keys}
    values |= robust
    return {key: values[key] for key in order}


def audit_details(sel: list[str], rows: Mapping[str, dict[str, Any]], k0: set[str],
                  k1: set[str], outcome: set[str], axes: list[str],
                  min_known: int) -> dict[str, Any]:
    """Per axis, the strata behind the robustness keys, for the narrative judge (§9.2)."""
    out: dict[str, Any] = {}
    for axis in axes:
        strata, missing = stratify(sel, rows, axis)
        eligible = [{"key": k, "arm0_known_n": len(k0 & s), "arm1_known_n": len(k1 & s),
                     "delta_pp": _eff(k0 & s, k1 & s, outcome)}
                    for k, s in sorted(strata.items())
                    if len(k0 & s) >= min_known and len(k1 & s) >= min_known]
        largest = min(strata.items(), key=lambda kv: (-len(kv[1]), kv[0])) if strata else None
        out[axis] = {"universe_n": len(sel), "missing_metadata_n": len(missing),
                     "eligible_strata": eligible,
                     "removed_stratum": {"key": largest[0], "n": len(largest[1])}
                     if largest else None}
    return out
