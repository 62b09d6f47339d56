"""The codes only the finding-quality-discovery plug-in emits: its rows of the engine's
table of codes (``engine.codes.table``)."""

from __future__ import annotations

from engine.codes import Code, block

CODES: dict[str, Code] = {}

_FQD = "protocol:finding-quality-discovery"
block(CODES, _FQD, "3 or -", "INCOMPLETE, or task invalid", """
BAD_TASK_ID: a task_id that cannot name a file (empty, a path, reserved characters)
""")

block(CODES, _FQD, "-", "submission invalid (FAIL row)", """
JSON_PARSE: G0: the submission is not strict JSON (duplicate key, extra data, too deep)
NONFINITE_JSON: G0: the submission holds NaN, an infinity or a number overflowing a double
SUBMISSION_FIELDS: G2.1: the top-level keys or the task_id are wrong
FINDING_COUNT: G2.2: more findings than the task allows
EMPTY_ANSWER: G2.3: no findings and no abstention reason
FINDING_FIELDS: G3: a finding lacks or adds keys
EVIDENCE_SPAN_LIMIT: G4.1: more evidence spans than the limit
POPULATION_SHAPE: G4.2: population is not an object holding only filters
FILTER_COUNT: G4.3: more filter rules than the limit
FILTER_FIELD: G4.4: a filter rule is not exactly {field, op, value}, or its field is not allowed
FILTER_OP: G4.5: a filter rule's operator is unknown or does not fit the field
FILTER_VALUES: G4.6: a filter rule's values are malformed for its operator
POPULATION_TOO_SMALL: G4.7: the selected population is below the task minimum
COMPARISON_NULL_REQUIRED: G4.8: a compound finding carries a comparison
COMPARISON_MISSING: G4.9: a comparative finding has no comparison object
GROUP_FIELD: G4.10: a group comparison's field is missing, extra or not allowed
GROUP_SHAPE: G4.11: groups is not the required number of arrays
GROUP_LISTS: G4.12: a group holds too few or too many scalar values
GROUP_VALUES: G4.13: group values repeat or overlap
TEMPORAL_FIELD: G4.14: a temporal comparison is not exactly {field: timestamp, cutoff}
CUTOFF_FORMAT: G4.15: the cutoff is not a valid YYYY-MM-DD date
ARM_TOO_SMALL: G4.16: a comparison arm is below the task minimum
DUPLICATE_FINDING_OR_KIND: G5.1: a finding_id repeats, or the kind is not the task's
EMPTY_TEXT: G5.2: finding_id, claim or scope is blank
CONDITION_COUNT: G5.3: the wrong number of definitions or assignments for the kind
DUPLICATE_CONDITION: G5.4: two definitions share a condition_id
CONDITION_MISMATCH: G5.5: assignment condition_ids differ from the definitions'
PARTITION: G6: an assignment does not partition the selected population exactly
SUPPORT_REQUIRED: G7.1: no evidence record is supporting
EVIDENCE_SOURCE_ROLE: G7.2: an evidence record's source or role is not allowed
EVIDENCE_OFFSET: G7.3: an evidence span's offsets or quote do not match the document
STATISTIC_MISMATCH: G8: a reported statistic differs from the recomputed one
SUPPORT_MINIMUM: G9.1: too few distinct supporting documents positive in every condition
COUNTEREXAMPLE: G9.2: a counterexample is missing or not from the counter pool
STATISTIC_KEYS: G9.3: the statistics keys differ from the expected set
DUPLICATE_SPAN: G9.4: two evidence records share a span
CORPUS_CHECKSUM: the corpus file is unreadable or its SHA-256 is not the task's
CORPUS_ROW: a corpus row is unreadable or lacks a string doc_id and text
CORPUS_LINE_COUNT: the corpus has another number of rows than the task says
CORPUS_DUPLICATE_ID: a doc_id appears twice in the corpus
""")

block(CODES, _FQD, "1", "the task's review fails (engine review)", """
AUDIT_BUDGET_RANGE: the audit budget is not an integer in the allowed range (exit 2 if given)
AUDIT_EVIDENCE_BUDGET: the findings cite more evidence documents than the cap
BLIND_CACHE_BINDING: the blind-check cache was made for other inputs
BLIND_CHECK_FAILED: the blind checker's reply fails its contract even after the repair
MODEL_INPUT_TOO_LARGE: a review request is longer than max_input_chars
MODEL_TRANSPORT: the review model's endpoint gave no usable reply
""")

block(CODES, _FQD, "2", "nothing reviewed", """
JUDGE_CONFIG_MISMATCH: the review folder was made with another judge configuration
""")

block(CODES, _FQD, "2", "nothing reviewed (engine review); the report is refused (engine run)", """
REVIEW_CONFIG_FOREIGN: judge_config.json (or a file beside it) was not written by this review job
AUDIT_SEED_ORIGIN: the audit seed is not the one the review derives from its submissions and key
SEED_BEFORE_SUBMISSIONS: the submissions changed after the audit seed was derived from them
""")

block(CODES, _FQD, "1 or 2", "the task's review fails (engine review); the report is refused "
      "(engine run)", """
REVIEW_FILE_FOREIGN: a review file or blind cache's seal does not verify with the review's key
""")

block(CODES, _FQD, "- or 2", "ERROR row; the report is refused", """
STALE_REVIEW: a stored review no longer matches the task, submission or scoring version
BLIND_PROTOCOL_MISMATCH: the stored blind check was made under another protocol record
BLIND_SEED_INVALID: the stored blind check's seed is not a non-empty string
BLIND_SAMPLE_MISMATCH: the annotated documents differ from the re-derived sample
BLIND_ANNOTATION_INVALID: a stored blind annotation fails the content checks
JUDGE_OUTPUT_INVALID: stored narrative-judge rows break the output contract
""")

block(CODES, _FQD, "-", "ERROR row", """
PENDING_REVIEW: a valid submission with findings has no review yet
UNRESOLVED: the review leaves the task's quality unresolved
""")

block(CODES, _FQD, "2", "report refused", """
PROFILE_MISMATCH: tasks of a difficulty profile this protocol version does not score
REVIEWER_METHOD_MIX: the reviews were made by different reviewer methods
JUDGE_CONFIG_MISSING: reviews were scored without their review directory's judge_config.json
RUN_MANIFEST_MISMATCH: run.json is for another inventory or profile (review: nothing runs)
RUN_MANIFEST_INVALID: run.json is not a run manifest of §12.4 (review: nothing runs)
TASK_NOT_SCORED: a task has no score record (its inspection failed), so no report
""")

block(CODES, _FQD, "2", "nothing runs", """
UNKNOWN_CHECK: a gate's check is not in the table of gate checks
GATE_PHASE: a submission check placed in phase A/B, or a finding check in phase submission
GATE_CODES: code given for a check that reports parts, or codes for one that does not
GATE_ORDER: a gate needs a fact no earlier gate establishes for some kind
DUPLICATE_GATE: two gates share an id
BAD_MESSAGE: a gate message field that is not a plain {name}
KIND_CONDITIONS: conditions_per_kind differs from the conditions the kind's arms read
UNKNOWN_SET: a statistics count uses a set name the kind does not provide
BAD_SET_EXPRESSION: a statistics count is not set names joined by the set operators
""")

block(CODES, _FQD, "-", "submission invalid (FAIL row)", """
TASK_KIND: the task's kind is not one the spec package defines
""")
