"""The formula problems of a Policy whose structure is invalid.

A Policy that breaks its schema is not compiled (compile_policy trusts the structure the
schema promises), so without this its formula problems would show only on the next run of
``engine validate``, after the structure is mended. Here each formula whose text is still
there (a string at a place the schema gives formulas) is compiled on its own and its
problems are reported with the structure's, all in one run. Nothing else of the Policy is
looked at, and nothing is assumed of it: a formula is skipped where its own value breaks
the schema, and where the names it may use cannot be known (the categories or an
inspection's bindings are themselves broken), every name is taken as bound and only the
formula's own text is checked (syntax, forbidden forms, functions, arity, literals).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from engine.errors import Problem
from engine.formula import ANY, BOOLEAN, NUMBER
from engine.inspections import TABLE
from engine.spec import schema as _schema
from engine.spec.compile import compile_checked_formula, condition_names
from engine.spec.model import COMMON_KEYS
from engine.spec.yaml import Document, Path, json_path

COMPARISON_NAMES = dict.fromkeys(("rate", "baseline_rate", "baseline_lower",
                                  "baseline_upper"), NUMBER)


class _AnyName(Mapping[str, str]):
    """Every name bound, of unknown type: for a formula whose names cannot be known."""

    def __getitem__(self, name: str) -> str:
        return ANY

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


ANY_NAME = _AnyName()

# (where, source, names, the type it must give) of one formula
Site = tuple[Path, Any, Mapping[str, str], str]


def formula_problems(doc: Document, structure: list[Problem]) -> list[Problem]:
    """Problems of every formula of ``doc`` (a Policy) that can be compiled on its own,
    leaving out those whose value is itself among the ``structure`` problems; and those of
    each inspection's parameters against its type's schema, which the Policy's schema
    leaves to the type (checked only when the Policy compiles, otherwise)."""
    out: list[Problem] = []
    spec = doc.data.get("spec") if isinstance(doc.data, dict) else None
    if not isinstance(spec, dict):
        return out
    params = _parameter_problems(doc, spec.get("inspections"))
    out.extend(params)
    broken = {p.path for p in structure + params}
    for where, source, names, want in _sites(spec):
        _compile(doc, where, source, names, want, broken, out)
    return out


def inspection_problems(doc: Document, where: Path, entry: dict[str, Any],
                        structure: list[Problem]) -> list[Problem]:
    """Problems of the formulas of one inspection whose parameters break its type's schema
    (``structure``), each that can be compiled on its own."""
    out: list[Problem] = []
    broken = {p.path for p in structure}
    for site, source, names, want in _inspection_sites(where, entry):
        _compile(doc, site, source, names, want, broken, out)
    return out


def _parameter_problems(doc: Document, inspections: Any) -> list[Problem]:
    """Each inspection's parameters (of a known type) against its type's schema."""
    out: list[Problem] = []
    for i, entry in enumerate(inspections if isinstance(inspections, list) else ()):
        kind = entry.get("type") if isinstance(entry, dict) else None
        primitive = TABLE.get(kind) if isinstance(kind, str) else None
        if primitive is not None:
            params = {k: v for k, v in entry.items() if k not in COMMON_KEYS}
            out += _schema.problems(doc, _schema.validator_for(primitive.schema), params,
                                    ("spec", "inspections", i))
    return out


def _compile(doc: Document, where: Path, source: Any, names: Mapping[str, str], want: str,
             broken: set[str], out: list[Problem]) -> None:
    """One formula's problems into ``out``, unless it is not text or its own value (or a
    part of it) is among the ``broken`` places."""
    path = json_path(where)
    if isinstance(source, str) and not any(
            b == path or b.startswith((path + ".", path + "[")) for b in broken):
        compile_checked_formula(doc, where, source, names, want, out)


def _sites(spec: dict[str, Any]) -> Iterator[Site]:
    """Every place of a Policy's ``spec`` that holds a formula, with the names it may use."""
    categories = spec.get("categories")
    known = isinstance(categories, dict)
    rates = dict.fromkeys(categories, NUMBER) if isinstance(categories, dict) else {}
    overall = spec.get("overall")
    if isinstance(overall, dict) and "formula" in overall:
        names = rates | {"weighted": NUMBER} if known else ANY_NAME
        yield ("spec", "overall", "formula"), overall["formula"], names, NUMBER
    conditions = spec.get("conditions")
    for i, cond in enumerate(conditions if isinstance(conditions, list) else ()):
        if isinstance(cond, dict) and "formula" in cond:
            yield ("spec", "conditions", i, "formula"), cond["formula"], \
                condition_names(rates) if known else ANY_NAME, BOOLEAN
    gate = spec.get("gate")
    comparison = gate.get("comparison") if isinstance(gate, dict) else None
    for status in ("regressed", "improved"):
        key = f"{status}_when"
        if isinstance(comparison, dict) and key in comparison:
            yield ("spec", "gate", "comparison", key), comparison[key], COMPARISON_NAMES, \
                BOOLEAN
    inspections = spec.get("inspections")
    for i, entry in enumerate(inspections if isinstance(inspections, list) else ()):
        yield from _inspection_sites(("spec", "inspections", i), entry)


def _inspection_sites(where: Path, entry: Any) -> Iterator[Site]:
    """The formula parameters of one inspection of a known type: over its ``bind`` and
    ``inputs`` names, or over any name when a rubric's verdict fields may be among them
    (a rubric is not read here) or those mappings are broken."""
    kind = entry.get("type") if isinstance(entry, dict) else None
    primitive = TABLE.get(kind) if isinstance(kind, str) else None
    if primitive is None:
        return
    props = primitive.schema.get("properties", {})
    maps = [entry.get(key, {}) for key in ("bind", "inputs")]
    required = primitive.schema.get("required", [])
    names: Mapping[str, str] = ANY_NAME  # a required mapping missing: its names unknown
    if all(isinstance(m, dict) for m in maps) and not any(
            key in required and key not in entry for key in ("bind", "inputs")) and not any(
            prop.get("x-rubric") for prop in props.values()):
        names = {name: ANY for m in maps for name in m}
    for key, prop in props.items():
        if prop.get("x-formula") and key in entry:
            yield where + (key,), entry[key], names, BOOLEAN
