"""Governance templates are checked at load and compiled once, or on first render when
they only print text and names; what they render and every error stay as compiling them."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
import yaml
from jinja2 import meta

from engine.decide import findings
from engine.spec.templates import Deferred, Sandbox, printed_names

ROOT = Path(__file__).resolve().parent.parent
VALUES = {"category": "pii", "case": "c-<1>", "worst_status": "FAIL", "rows": 3,
          "statuses": {"FAIL": 3}}
PLAIN = ["", "just text", "{{ case }}", "a {{ case }} b {{ rows }}\n", "x\r\n{{ case }}\r\n",
         "{# note #}{{ statuses }}", "{% raw %}{{ x }}{% endraw %} {{ category }}",
         "{{case}}{{ case }}", "line\n\n"]
MORE = ["{{ case.upper() }}", "{{ case | upper }}", "{{ 'lit' }}", "{{ rows + 1 }}",
        "{% for s in statuses %}{{ s }}{% endfor %}", "{% set x = case %}{{ x }}",
        "{% if rows %}{{ case }}{% endif %}", "{{ statuses['FAIL'] }}", "{{ case ~ '' }}"]


@pytest.mark.parametrize("source", PLAIN)
def test_a_template_that_only_prints_names_is_read_as_jinja2_reads_it(source: str) -> None:
    env = Sandbox()
    tree = env.parse(source)
    assert printed_names(tree) == meta.find_undeclared_variables(env.parse(source))
    deferred = Deferred(env, source)
    assert deferred.render(**VALUES) == env.from_string(source).render(**VALUES)


@pytest.mark.parametrize("source", MORE)
def test_a_template_that_does_more_is_not_read_as_plain(source: str) -> None:
    assert printed_names(Sandbox().parse(source)) is None


def test_a_deferred_template_fails_on_a_missing_value_as_the_compiled_one() -> None:
    env = Sandbox()
    with pytest.raises(jinja2.UndefinedError) as deferred:
        Deferred(env, "{{ case }}").render()
    with pytest.raises(jinja2.UndefinedError) as compiled:
        env.from_string("{{ case }}").render()
    assert str(deferred.value) == str(compiled.value)


def test_the_same_source_compiles_once_per_environment() -> None:
    env = Sandbox()
    assert env.compiled("{{ case }}!") is env.compiled("{{ case }}!")
    assert env.checked("{{ case }}!") is env.compiled("{{ case }}!")
    assert env.compiled("{{ case }}?") is not env.compiled("{{ case }}!")


def test_the_shipped_fixes_load_without_compiling_and_render_as_before() -> None:
    data = yaml.safe_load((ROOT / "specs" / "agent-release-gate" / "fixes.yaml").read_text())
    fixes = findings.build_fixes(data, set(data) - {"error"})
    env = Sandbox()
    for key, fix in fixes.items():
        for name in findings.FIELDS:
            template = getattr(fix, name)
            assert isinstance(template, Deferred), f"{key}.{name}"
            assert template.render(**VALUES) == env.from_string(str(data[key][name])).render(
                **VALUES)


def test_a_fix_that_does_more_is_still_tried_on_sample_values_at_load() -> None:
    fix = {"title": "{{ case | upper }}", "action": "a", "verification": "v"}
    built = findings.build_fixes({"pii": fix}, {"pii"})["pii"]
    assert isinstance(built.title, jinja2.Template) and isinstance(built.action, Deferred)
    bad = {**fix, "title": "{{ rows | int // 0 }}"}
    with pytest.raises(ValueError, match="pii.title: template cannot render"):
        findings.build_fixes({"pii": bad}, {"pii"})
