"""Review findings against engine/spec/translate.py (hostile review 29).

1. ``Writer.function`` remembers a subschema by ``json.dumps(schema, sort_keys=True)``, but
   jsonschema's ``additionalProperties`` joins the ``patternProperties`` keys *in the
   schema's order* into one regex, so two subschemas that differ only in that order can
   mean different things (a backreference numbers its groups across the joined pattern).
   The second one gets the first one's check: the generated check accepts what jsonschema
   rejects (a json_schema inspection PASSes a record jsonschema FAILs).
2. A spec schema whose ``default`` holds an outside ``$ref`` was refused at e63d915 (the
   outside-reference check ran after check_schema); compile_check accepts it and skips the
   check, so the same spec now loads (contracts.py keeps the old outcome with _mentions_ref).
"""

from __future__ import annotations

import jsonschema

from engine.spec.schema import outside_refs
from engine.spec.translate import STRICT, compile_check

from .test_schema_checks import written

FIRST = {"patternProperties": {"^(a)\\1$": {}, "^(c)$": {}}, "additionalProperties": False}
SECOND = {"patternProperties": {"^(c)$": {}, "^(a)\\1$": {}}, "additionalProperties": False}
SCHEMA = {"type": "object", "properties": {"meta": FIRST, "tags": SECOND}}


def test_pattern_order_is_part_of_a_subschemas_meaning() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    instance = {"tags": {"aa": 1}}
    assert not jsonschema.Draft202012Validator(SCHEMA).is_valid(instance)
    for dialect in ("plain", STRICT):
        fast = written(SCHEMA, dialect)
        assert fast is None or fast(instance) is False, dialect


def test_an_outside_ref_in_an_annotation_keeps_the_old_outcome() -> None:
    schema = {"type": "boolean", "default": {"$ref": "https://example.com/x.json"}}
    assert outside_refs(schema)  # e63d915 refused this schema (BAD_SCHEMA / RubricError)
    assert compile_check(schema) is None and written(schema) is None
