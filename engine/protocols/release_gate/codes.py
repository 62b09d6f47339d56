"""The codes only the agent-release-gate plug-in emits: its rows of the engine's table of codes
(``engine.codes.table``)."""

from __future__ import annotations

from engine.codes import Code, block

CODES: dict[str, Code] = {}

_ARG = "protocol:agent-release-gate"
block(CODES, _ARG, "-", "INVALID record", """
MISSING_ID: an assevra row without a non-blank string id
MISSING_DIMENSION: an assevra row names no dimension
UNKNOWN_DIMENSION: an assevra row names a dimension that is not one of the nine
MISSING_FIELD: an assevra row lacks the field its dimension requires
UNUSABLE_SCHEMA: a tool contract's JSON Schema in a row cannot be used
CAPTURE_INCOMPLETE: the capture of this run failed (_capture_error)
""")

block(CODES, _ARG, "-", "UNLABELED record", """
MISSING_ANSWER_KEY: an assevra row has no answer key for its dimension
UNCONFIRMED_LABELS: the row's answer key was proposed by a model and not confirmed
""")

block(CODES, _ARG, "-", "warning", """
NO_OBSERVED_ACTIONS: an action_correctness row records no observed actions
INTEGRAL_FLOAT_IN_STATE: expected_state holds 1.0 where 1 is meant (matches only a float)
NO_INJECTION_RECORDED: an injection row does not record the planted text
WEAK_CANARY: a canary under 6 characters may appear by chance
""")

block(CODES, _ARG, "3", "INCOMPLETE", """
REQUIRED_DIMENSION_MISSING: the protocol's name for REQUIRED_CATEGORY_MISSING
DIMENSION_SKIPPED: the protocol's name for CATEGORY_SKIPPED
DIMENSION_UNRESOLVED: the protocol's name for CATEGORY_UNRESOLVED
NO_DIMENSIONS: the protocol's name for NO_CATEGORIES
""")

block(CODES, _ARG, "2", "nothing written", """
ASSEVRA_CONFIG_NOT_MAPPING: migrate-assevra: the Assevra config is not a mapping of settings
ASSEVRA_CONFIG_VALUE: migrate-assevra: a setting has a value Assevra 0.6 refuses (type, range)
BAD_REQUIRED_DIMENSIONS: migrate-assevra: required_dimensions is not a list of known dimensions
MIGRATION_ONE_CONFIG: migrate-assevra takes exactly one config file
MIGRATION_SOURCE_MISSING: migrate-assevra --from names no release-gate spec folder
MIGRATED_SPEC_INVALID: the converted spec does not validate (a bug in migrate-assevra)
""")
