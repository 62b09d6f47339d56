"""An Assevra 0.6 config (``.assevra.yml``, or its JSON ``policy.json``) read as edits to the
release-gate Policy and Evaluation (agent-release-gate §0, "Assevra configuration").

Every key the config holds ends in exactly one of four lists, so nothing is dropped in
silence: ``carried`` (written into the spec), ``replaced`` (a shipped setting that Assevra's
own default overrides), ``dropped`` (an Assevra setting specgate has no place for, with what
to do instead) and ``unknown`` (a key Assevra 0.6 does not know either). A value Assevra
itself would refuse is a located problem; nothing is written then.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.errors import Problem, did_you_mean
from engine.spec.yaml import Document

Key = tuple[str, ...]
Check = Callable[[Any], str | None]  # a value -> what is wrong with it, or None


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and \
        math.isfinite(value)


def boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def whole(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    return None if ok else "must be a whole number of at least 1"


def amount(value: Any) -> str | None:
    return None if is_number(value) and value >= 0 else "must be a number of at least 0"


def rate_check(value: Any) -> str | None:
    if is_number(value) and 0 <= value <= 1:
        return None
    if is_number(value) and 1 < value <= 100:
        return f"must be a rate between 0 and 1 (did you mean {value / 100:g}?)"
    return "must be a rate between 0 and 1"


def kappa_check(value: Any) -> str | None:
    return None if is_number(value) and -1 <= value <= 1 else \
        "must be a Cohen's kappa between -1 and 1"


def field_name(value: Any) -> str | None:
    return None if isinstance(value, str) and value.strip() else \
        "must be the name of a record field"


def one_of(*choices: str) -> Check:
    def check(value: Any) -> str | None:
        return None if value in choices else "must be one of " + ", ".join(choices)
    return check


# Config keys that keep their meaning, and where each goes in the Policy.
POLICY: dict[Key, tuple[Key, Check]] = {
    ("gate", "fail_on_regression"): (("gate", "comparison", "required"), boolean),
    ("validate", "strict"): (("validation", "strict"), boolean),
    ("validate", "on_run"): (("validation", "on_run"), boolean),
    ("reliability", "pass_k"): (("reliability", "pass_k"), whole),
    ("budgets", "cost_usd"): (("budgets", "cost_usd"), amount),
    ("budgets", "latency_ms"): (("budgets", "latency_ms"), amount),
    ("budgets", "price", "input_per_mtok"): (("budgets", "price", "input_per_mtok"), amount),
    ("budgets", "price", "output_per_mtok"): (("budgets", "price", "output_per_mtok"), amount),
    # §11: the judge is held to a signed calibration over these (engine calibrate)
    ("calibration", "kappa_bar"): (("judge", "calibration", "min_kappa"), kappa_check),
    ("calibration", "label_field"): (("judge", "calibration", "label_field"), field_name),
    # specgate's gate extensions (§7.4): not Assevra 0.6 keys, taken in specgate's words.
    ("gate", "gate_on"): (("gate", "gate_on"), one_of("point", "wilson_lower")),
    ("gate", "min_n"): (("gate", "min_n"), whole),
    ("gate", "min_cases"): (("gate", "min_cases"), whole),
    ("gate", "min_pass_hat_k"): (("gate", "min_pass_hat_k"), rate_check),
    ("gate", "min_consistency"): (("gate", "min_consistency"), rate_check),
    ("gate", "max_flaky_cases"): (("gate", "max_flaky_cases"), amount),
}
EXTENSIONS = {("gate", k) for k in ("gate_on", "min_n", "min_cases", "min_pass_hat_k",
                                    "min_consistency", "max_flaky_cases")}

# Assevra settings with no place in a specgate spec, and what to do instead.
DROPPED: dict[Key, str] = {
    ("version",): "the config format's version; the spec has its own apiVersion",
    ("dataset",): "pass it at run time: engine run DIR --input runs=DATASET (then pin its "
                  "suite_sha256 in evaluation.yaml after review)",
    ("out_dir",): "pass --out OUT to engine run",
    ("gate", "enabled"): "specgate always gates: any decision but PASS exits non-zero",
    ("attest", "enabled"): "specgate always writes the attestation when it signs (--key)",
    ("reports", "formats"): "specgate always writes scorecard.json, .md, .html and junit.xml",
    ("history", "path"): "Assevra history is unsigned and cannot be a baseline; a signed "
                         "specgate scorecard is (history.baseline or --baseline)",
    ("history", "label"): "pass --label NAME to a signed engine run; the scorecard records "
                          "it",
    ("history", "baseline"): "a label in Assevra's unsigned history cannot be a signed "
                             "baseline; label signed specgate runs (--label) and compare "
                             "with --baseline-label NAME --history DIR",
    ("signing", "key"): "pass --key at run time; a private key path is never written into "
                        "a spec",
    ("signing", "public_key"): "pin the signer's public key with --trusted-key (or copy it "
                               "into the spec and list it under history.trusted_keys)",
}

SECTIONS = {"judge", "gate", "validate", "thresholds", "budgets", "reliability", "history",
            "signing", "attest", "reports", "calibration"}


@dataclass
class Migration:
    """The spec data being edited, and what became of every config key."""

    doc: Document
    policy: dict[str, Any]  # the Policy's ``spec``
    evaluation: dict[str, Any]  # the Evaluation's ``spec``
    carried: list[tuple[str, Any, str]] = field(default_factory=list)  # key, value, target
    replaced: list[tuple[str, Any, Any]] = field(default_factory=list)  # setting, was, now
    dropped: list[tuple[str, Any, str]] = field(default_factory=list)  # key, value, why
    unknown: list[tuple[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def bad(self, key: Key, code: str, message: str, hint: str = "") -> None:
        """A located problem with the config value at ``key``."""
        self.problems.append(self.doc.problem(key, code, message, hint))

    def carry(self, key: Key, value: Any, target: Key, where: str = "policy") -> None:
        """Write ``value`` at ``target`` in the Policy (or Evaluation) spec."""
        node = self.policy if where == "policy" else self.evaluation
        for part in target[:-1]:
            node = node.setdefault(part, {})
        node[target[-1]] = value
        self.carried.append((dotted(key), value, f"{where}: spec." + dotted(target)))


def dotted(key: Key) -> str:
    """``("gate", "purpose")`` -> ``gate.purpose``."""
    return ".".join(key)


def walk(m: Migration, key: Key, node: dict[str, Any],
          handlers: dict[Key, Callable[[Migration, Key, Any], None]]) -> None:
    for name, value in node.items():
        here = (*key, str(name))
        if here in handlers:
            handlers[here](m, here, value)
        elif here in POLICY:
            _leaf(m, here, value)
        elif here in DROPPED:
            m.dropped.append((dotted(here), value, DROPPED[here]))
        elif isinstance(value, dict) and (here == ("budgets", "price") or
                                          (len(here) == 1 and here[0] in SECTIONS)):
            walk(m, here, value, handlers)
        elif here == ("budgets", "price") or (len(here) == 1 and here[0] in SECTIONS):
            if value is not None:  # null: an empty section, Assevra's defaults
                m.bad(here, "ASSEVRA_CONFIG_VALUE", f"{dotted(here)} must be a mapping")
        else:
            m.unknown.append((dotted(here), value))


def _leaf(m: Migration, key: Key, value: Any) -> None:
    target, check = POLICY[key]
    if value is None:  # Assevra reads null as "not set"
        m.dropped.append((dotted(key), None, "not set: the specgate default stays"))
        return
    problem = check(value)
    if problem is not None:
        m.bad(key, "ASSEVRA_CONFIG_VALUE", problem)
        return
    m.carry(key, value, target)
    if key in EXTENSIONS:
        m.carried[-1] = (m.carried[-1][0] + " (specgate extension, not an Assevra 0.6 key)",
                         *m.carried[-1][1:])


def assevra_defaults(m: Migration) -> dict[str, tuple[Any, Any]]:
    """Assevra has no per-dimension scope: its defaults replace the shipped refund release's
    (required dimensions, min_cases), so only the team's own settings apply. Returns the
    shipped values, for :func:`record_replaced`."""
    shipped = {}
    for name, category in m.policy["categories"].items():
        shipped[name] = (category.get("required", True), category.get("min_cases"))
        category["required"] = False
        category.pop("min_cases", None)
    return shipped


def record_replaced(m: Migration, shipped: dict[str, tuple[Any, Any]]) -> None:
    """List each shipped scope setting the migrated policy no longer has."""
    for name, (required, min_cases) in shipped.items():
        category = m.policy["categories"][name]
        if category["required"] != required:
            m.replaced.append((f"categories.{name}.required", required, category["required"]))
        if min_cases is not None:
            m.replaced.append((f"categories.{name}.min_cases", min_cases,
                               "removed: gate.min_cases applies"))


def thresholds(m: Migration, key: Key, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        m.bad(key, "ASSEVRA_CONFIG_VALUE", "thresholds must map dimensions to rates")
        return
    categories = m.policy["categories"]
    for name, rate in value.items():
        here = (*key, str(name))
        problem = rate_check(rate)
        if problem is not None:
            m.bad(here, "ASSEVRA_CONFIG_VALUE", problem)
        elif name not in categories:
            m.dropped.append((dotted(here), rate, f"the policy has no dimension '{name}' "
                              "(a third-party Assevra scorer); add a category for it"))
        else:
            m.carry(here, rate, ("categories", str(name), "threshold"))


def required(m: Migration, key: Key, value: Any) -> None:
    if value is None:
        return
    categories = m.policy["categories"]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        m.bad(key, "BAD_REQUIRED_DIMENSIONS", "required_dimensions must be a list of dimensions")
        return
    for index, name in enumerate(value):
        if name not in categories:
            m.bad((*key, index), "BAD_REQUIRED_DIMENSIONS",  # type: ignore[arg-type]
                  f"'{name}' is not a dimension of the policy",
                  did_you_mean(name, categories))
    if any(name not in categories for name in value):
        return
    for name in value:
        categories[name]["required"] = True
    m.carried.append((dotted(key), value, "policy: spec.categories.<each>.required: true"
                      if value else "policy: every included category required (none marked)"))


def purpose(m: Migration, key: Key, value: Any) -> None:
    if value is None:
        return
    problem = one_of("release", "scan", "self_test")(value)
    if problem is not None:
        m.bad(key, "ASSEVRA_CONFIG_VALUE", problem)
        return
    m.carry(key, "triage" if value == "scan" else value, ("gate", "purpose"))
