"""Every code the engine can emit, once: what it means, where it arises, what it does.

``CODES`` maps a code to a ``Code``: the stage that emits it (``spec records inspection
judge run decide evidence verify cli``; a protocol's own codes, kept in its package, say
``protocol:<name>``), the exit code it forces
(``-`` for a row-, record- or finding-level code that does not set the exit by itself) and
its effect on the decision or the row. A code shared by several stages has one entry naming
them all. ``docs/reference.md`` renders this table, and ``tests/test_codes.py`` holds it
equal to the codes the source emits, so neither can drift. This module only describes: the
engine never looks a code up here to decide anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine import protocols


@dataclass(frozen=True)
class Code:
    """One code's row in the table."""

    stage: str
    """The stage (or stages, comma-separated) that emits it."""
    exit: str
    """The exit code it forces (0-4), or ``-`` when it does not set the exit by itself."""
    effect: str
    """Its effect on the decision (INCOMPLETE, FAIL, ...) or on a row; '' for none."""
    meaning: str
    """One line in the governance team's words."""


def block(table: dict[str, Code], stage: str, exit_code: str, effect: str, text: str) -> None:
    """Add one ``CODE: meaning`` per line of ``text`` to ``table``, all with the same stage,
    exit and effect."""
    for line in text.strip().splitlines():
        code, _, meaning = line.partition(":")
        assert code not in table, f"{code} is listed twice"
        table[code.strip()] = Code(stage, exit_code, effect, meaning.strip())


CODES: dict[str, Code] = {}  # the engine's own; each protocol adds its own (``table``)


def _block(stage: str, exit_code: str, effect: str, text: str) -> None:
    block(CODES, stage, exit_code, effect, text)


def table() -> dict[str, Code]:
    """Every code: the engine's own, then each protocol's (stage ``protocol:<name>``)."""
    out = dict(CODES)
    for protocol in protocols.installed():
        for code, row in protocol.codes.items():
            if code in out:
                raise RuntimeError(f"code {code} is in two tables")
            out[code] = row
    return out


_block("spec", "2", "nothing runs", """
YAML_SYNTAX: the file is not well-formed YAML
YAML_ALIAS: a YAML alias (*name); specs must spell every value out
YAML_ANCHOR: a YAML anchor (&name); specs must spell every value out
YAML_TAG: an explicit YAML tag (!!python/..., !custom); only plain values are allowed
BAD_CHARACTER: a control character YAML does not allow outside a quoted, escaped string
BAD_SCALAR: a binary value or a string holding a lone UTF-16 surrogate
NON_FINITE: NaN or an infinity in a spec
INTEGER_RANGE: an integer beyond 2**53, which JSON readers cannot keep exactly
YAML_AMBIGUOUS: a plain value YAML 1.1 and 1.2 read differently (1:06:40, 4_000, 017, 0b1, yes, 1e3)
NON_STRING_KEY: a mapping key that is not a string (quote it)
EMPTY_SPEC: the file holds no YAML document
SPEC_TOO_DEEP: a spec nests deeper than the YAML reader allows
SPEC_TOO_LARGE: a spec holds more values than the YAML reader allows
BAD_ENCODING: a spec file is not UTF-8
FILE_NOT_FOUND: a named spec, data file or path does not exist
FILE_UNREADABLE: a spec file exists but cannot be read
BAD_PATH: a path in a spec cannot be resolved (permissions, a loop, a bad name)
PATH_ABSOLUTE: a path in a spec is absolute; paths are relative to the spec file
PATH_ESCAPES_ROOT: a path in a spec leads outside the spec root
CORRECTION_UNCALIBRATED: the policy's judge.correct, but the Evaluation names no calibration or key
PATH_THROUGH_LINK: a baseline, key, calibration or replay path passes through a symbolic link
INPUT_KIND: an input names a folder where its format reads a file, or the reverse
UNKNOWN_KIND: the kind is none of Policy, Suite, Evaluation, PolicyTest
WRONG_KIND: a spec of one kind is named where another kind is expected
MISSING_KEY: a required key is absent (or a judge provider lacks what it needs)
UNKNOWN_KEY: a key the schema does not know here (a hint names the close one)
ONE_OF: exactly one of several alternative keys must be given
SCHEMA: a value breaks its JSON Schema in a way no more precise code names
OUT_OF_RANGE: a number outside the range its key allows
EMPTY: a list, mapping or string that must not be empty is empty
DUPLICATE_ENTRY: a list that must hold distinct entries holds one twice
BAD_THRESHOLD: a category threshold or mandatory minimum outside [0, 1]
UNKNOWN_PURPOSE: gate purpose is none of release, triage, self_test
NAME_CLASH: a category has the name of a formula
NO_WEIGHT: the weighted overall score needs a category with weight above 0
UNATTAINABLE_GATE: a threshold the Wilson lower bound can never reach (1.0)
UNKNOWN_CATEGORY: a waiver scope or a policy test names a category the policy does not have
PAIRED_RULES_IGNORED: regressed_when / improved_when set with a paired comparison test
PAIRED_CLUSTER_UNSUPPORTED: cluster_by: case with a test other than paired_bootstrap
POWER_NEEDS_EFFECT: gate.comparison.min_power or discordance without the effect to detect
UNKNOWN_CONTROL: a control identifier that is in no loaded catalogue
UNKNOWN_INSPECTION: an inspection type that is not in the engine's table
UNKNOWN_INSPECTION_ID: a category, fallback or policy test names an inspection id not in the policy
UNKNOWN_REASON_CODE: reason_codes renames, or a policy test wants, a code never given
UNKNOWN_WAIVER_SCOPE: a waiver scope names a case the suite lacks: it would match no row
TEST_NEEDS_EVALUATION: a policy test case gives records but the test names no Evaluation
TEST_POLICY_MISMATCH: a policy test's Evaluation runs another policy file than the one tested
NEEDS_RECORDS: a policy test case of category counts wants rows or gives waivers
INLINE_RECORDS_FORMAT: a policy test case writes records inline for an input that is not jsonl
UNUSED_INSPECTION: an inspection that no category runs, so its rows would count nowhere
REPORT_WITHOUT_INSPECTION: spec.report names a report built from an inspection the policy lacks
BAD_DATA_FILE: a data file a spec names (lexicon, detector, catalogue) cannot be used
UNRESOLVABLE_JUDGE: a judge panel member that cannot be asked (unknown provider, no model, twice)
BAD_JMESPATH: a selector is not valid JMESPath
BAD_REGEX: a pattern is not a valid regular expression
BAD_RUBRIC: a judge rubric cannot be loaded or is malformed
BAD_SCHEMA: a JSON Schema a spec names is unreadable or not a valid schema
UNKNOWN_VARIABLE: a rubric template uses a variable the inspection's inputs do not give
VERDICT_SHADOWS_INPUT: a rubric verdict field has the name of one of the inspection's inputs
AGREEMENT_WITHOUT_REPEATS: judge.min_agreement is set while judge.repeats is 1
FORMULA_SYNTAX: a formula that does not parse, or is not a string
FORMULA_ARITY: a formula calls a function with the wrong number of arguments
FORMULA_FORBIDDEN: a formula uses syntax outside the allow-list (attributes, **, keywords)
FORMULA_LITERAL: a formula literal that is too long, beyond 2**53, or not finite
FORMULA_TOO_DEEP: a formula nests too deeply
FORMULA_TOO_LONG: a formula longer than the length limit
FORMULA_UNKNOWN_FUNCTION: a formula calls a function that is not in the table
FORMULA_UNKNOWN_NAME: a formula uses a name that nothing binds
SPEC_INVALID: one or more located spec problems (each printed with its own code)
FORMULA: a formula problem without a more precise code (fallback)
""")

_block("spec", "-", "warning (engine validate, engine run)", """
EVEN_PANEL: a judge panel with an even number of members, which can tie on a yes/no field
WEIGHTS_UNUSED: category weights that cannot change the decision: nothing gated reads 'weighted'
""")

_block("spec", "-", "warning (engine validate)", """
WAIVER_EXPIRED: a waiver whose expires (its last day, UTC) is before today: it no longer applies
""")

_block("spec", "2 or -", "purpose release: spec error, nothing runs; triage and self_test: a "
       "warning (engine validate, engine run)", """
EXPECTATION_FROM_EVIDENCE: an expectation (allowed tools, should_refuse) read from unpinned records
SCOPE_FROM_EVIDENCE: a guard (when, controls.when) choosing the units read from unpinned records
""")

_block("spec, cli", "2", "nothing runs", """
BAD_DATE: a date that is not a calendar date YYYY-MM-DD (a spec value or --as-of)
BAD_NAME: a name that is not lower-case letters, digits and _ (a spec key or engine init)
UNKNOWN_INPUT: no input is named as the units, or --input names an input none declares
""")

_block("spec, run, verify, cli", "2 or 1", "nothing runs or is written (2); invalid evidence "
       "(engine verify, 1); a skipped baseline (--baseline-label)", """
PATH_TOO_DEEP: a folder more than 64 folders deep, or a path past PATH_MAX, under a walked folder
""")

_block("spec, inspection, records", "2 or -", "spec error, ERROR row, or "
       "INVALID record", """
BAD_TYPE: a value of the wrong type (in a spec: exit 2; in a validated row: the row is INVALID)
BAD_VALUE: a value of the right type that cannot be used (spec, inspection or record)
""")

_block("spec, records", "2 or 3", "spec error or INCOMPLETE", """
DUPLICATE_ID: an id used twice (a suite case, a record's unit id, a validated row's id)
""")

_block("spec, records", "2 or 3", "spec error or INCOMPLETE", """
DUPLICATE_KEY: a key twice in a mapping (a spec) or JSON object (a record), a name twice in a .eval
""")

_block("records", "3", "INCOMPLETE", """
INVALID_JSON: a record line is not one JSON value
NOT_AN_OBJECT: a record is not a JSON object
NON_FINITE_NUMBER: a record holds NaN, an infinity, or a number that overflows a double
NUMBER_OUT_OF_RANGE: a record holds an integer beyond 2**53-1
NOT_UTF8: a record line is not UTF-8
BYTE_ORDER_MARK: a record file starts with a byte-order mark
LONE_SURROGATE: a record string holds a lone UTF-16 surrogate
NESTED_TOO_DEEP: a record nests arrays and objects deeper than 64 levels
RESERVED_FIELD: a record sets 'case', which the engine binds to the suite case
UNKNOWN_CASE: a record names a case that is not in the suite
MISSING_CASE_ID: a record names no case
EXTRA_RUN: a run beyond the trials its suite case declares; refused, never scored
BAD_UNIT_ID: a record's unit id is neither a string nor an integer; refused, never scored
SELECTOR_FAILED: a selector cannot be applied to a record (a JMESPath type error)
INSPECT_LOG_TRUNCATED: an inspect_ai log ends early (a .json cut short, a .eval zip or entry cut)
INSPECT_LOG_MALFORMED: an inspect_ai log lacks what inspect_ai writes (no samples, unreadable entry)
INSPECT_SAMPLE_INVALIDATED: an inspect_ai sample its log marks invalidated: not evidence until rerun
INSPECT_SCORE_EDITED: an inspect_ai sample whose score was edited after scoring (its history)
RUN_MISSING: a run a tool numbered is absent (an epoch of a sample, an otel trial below a higher)
PROMPTFOO_TRUNCATED: a promptfoo results file ends before its JSON document does
PROMPTFOO_NOT_RESULTS: the file holds no results.results list of promptfoo eval -o results.json
PROMPTFOO_UNSUPPORTED: a promptfoo results file of a format version the reader does not read (< 3)
PROMPTFOO_FIELD: a promptfoo result lacks testIdx, promptIdx or success, or has one of a wrong type
OTEL_NOT_OTLP: an otel-genai line or document is not an OTLP trace export (no resourceSpans list)
OTEL_BAD_SPAN: an OTLP span with a bad name, time, status or attribute; the span is dropped
OTEL_BAD_ID: an OTLP trace or span id that is not 16 / 8 bytes in hex or base64, or is all zeros
OTEL_ORPHAN_SPAN: an OTLP span whose parent span is not in the export (not an invoke_agent span)
OTEL_UNOWNED_SPAN: a tool call, inference or token usage span below no agent run (invoke_agent)
OTEL_NO_CONVENTION: an otel-genai run or tool span of no convention the reader reads
OTEL_DISAGREE: two places of one otel-genai run record it differently (calls, a call, the answer)
PROMPTFOO_CHANGED: a promptfoo results file not regular, or changed between the reader's passes
PROMPTFOO_STATS: promptfoo's own results.stats disagree with its results (or are missing)
RUN_UNNUMBERED: a run naming no trial number in a case whose other runs name theirs
VALUE_TOO_LARGE: a record over 64 MiB, or with more arrays and objects than 1 per 16 bytes
""")

_block("inspection", "-", "ERROR row", """
MISSING_VALUE: a selector selected nothing, so the rule has no evidence
NOTHING_TO_VERIFY: the unit declares no expectation the inspection could check
NO_OUTCOME_EVIDENCE: an expected state is declared but no observed state was recorded
NO_BUDGET: a budget inspection found no budget for the unit
UNMEASURABLE: a budget inspection found no measurement for the unit
FORMULA_NULL: a formula inside an inspection is null or not true/false for this unit
FORMULA_RUNTIME: a formula failed while evaluated (GATE_ERROR when it is a gate's)
FORMULA_DOMAIN: a formula function got an argument outside its domain (round, wilson, log)
FORMULA_TYPE: a formula value of the wrong type (a spec error when found at load time)
""")

_block("inspection", "-", "SKIPPED or ERROR row", """
NO_JUDGE: a rule needs a judge and none is configured (SKIPPED; ERROR for a canary check)
COLLECTING: first pass of a judged run: the question is queued, the row comes later
""")

_block("run", "-", "ERROR row", """
INSPECTION_FAILED: an inspection primitive raised; the run goes on, the row is ERROR
NO_OUTCOME: an inspection primitive returned nothing
BAD_OUTCOME: an inspection primitive returned no valid status
""")

_block("run", "-", "no row", """
NOT_APPLICABLE: the inspection does not apply to this unit; no row is written
""")

_block("run", "2", "nothing kept", """
SPEC_CHANGED: a spec file changed while a sharded run was going on
INPUT_CHANGED: an input file changed while a sharded run was going on
RAY_NOT_INSTALLED: --executor ray without Ray installed
""")

_block("judge", "2", "nothing runs", """
BAD_API_KEY: the judge API key holds a line break, a space or a non-ASCII character
CACHE_KEY_UNUSABLE: the judge cache key file is unsafe (readable by others) or malformed
REPLAY_NOT_A_SCORECARD: --judge-replay names something that is not a signed scorecard
REPLAY_UNTRUSTED: the replayed scorecard does not verify against a trusted key
REPLAY_MISMATCH: the replayed judgements are malformed or not the files the signature binds
""")

_block("judge", "-", "ERROR row", """
JUDGE_CALL_FAILED: the judge endpoint gave no usable reply after its retries and deadline
INVALID_VERDICT: the judge's reply does not match the rubric's output schema
INCOMPLETE_PANEL: a member of a judge panel gave no valid verdict
PANEL_FIELDS_DIFFER: panel members answered with different verdict fields
PANEL_TIED: a panel is tied on a yes/no field
PANEL_DISAGREED: panel members disagree and the policy treats disagreement as an error
""")

_block("judge", "-", "ABSTAIN row", """
ANSWERS_DISAGREE: a prompt's judge.repeats answers agree less than judge.min_agreement
""")

_block("decide", "4", "SELF_TEST", """
PURPOSE_SELF_TEST: the policy's purpose is self_test: never a release decision
MOCK_JUDGE: a mock judge answered, so the evidence is simulated
""")

_block("decide", "4", "TRIAGE", """
PURPOSE_TRIAGE: the policy's purpose is triage: never a release decision
PARTIAL_RUN: reserved for a partial scan; this version never gives it
""")

_block("decide", "3", "INCOMPLETE", """
VALIDATION_FAILED: strict validation found INVALID or UNLABELED rows or failed captures
NO_CATEGORIES: no category has any rows
REQUIRED_CATEGORY_MISSING: a required category has no rows
CATEGORY_SKIPPED: every row of a category was skipped, or none can be judged without a judge
CATEGORY_UNRESOLVED: a category has ERROR rows, or more ABSTAIN rows than judge.max_abstained
BELOW_MIN_N: a category has fewer scored rows than its min_n
BELOW_MIN_CASES: a category has fewer scored cases than its min_cases
CONTROL_FAILED: a planted control was not caught, so the evaluator itself is broken
GATE_NULL: a gate formula or the overall score is null: evidence it needs is missing
GATE_ERROR: a gate formula could not be evaluated (the message names the formula code)
CASE_MISSING: suite cases have fewer runs than their declared trials
BASELINE_MISSING: history requires a baseline and none was found
BASELINE_UNTRUSTED: the baseline does not verify against a trusted key
BASELINE_INCOMPATIBLE: the baseline has another suite, policy or judge, or no PASS/FAIL
COMPARISON_UNTESTED: a required paired test found no pairs, or the baseline's rows did not verify
UNDERPOWERED: a required comparison's stable category could not see the effect with min_power
SUITE_MISMATCH: the records' suite digest is not the one the Evaluation pins
SUITE_NOT_PINNED: a release whose records carry their own cases pins no suite_sha256
JUDGE_OVERRIDDEN: a release whose judge the command line changed from the Evaluation's
CALIBRATION_MISSING: a judged category a required, verified judge calibration does not cover
CORRECTION_UNDEFINED: judge.correct, but the calibration has a null sens or spec, or Youden <= 0
""")

_block("run", "3", "INCOMPLETE under purpose: release (a blocker: never hides a FAIL)", """
AS_OF_MOVED: a baseline or calibration signed after a waiver expired: rows were judged too early
""")

_block("run, verify", "3", "INCOMPLETE under purpose: release (a blocker: never hides a FAIL); "
       "engine verify with a pinned governance or harness key: invalid (exit 1)", """
SPECS_UNSIGNED: no bundle (specs.intoto.jsonl) signs this Evaluation, or the run checked none
SPECS_SIGNATURE_INVALID: the bundle is signed by no --governance-key, or is malformed
SPECS_CHANGED: the files loaded are not exactly those governance signed (the files named)
INPUT_UNATTESTED: an input the Evaluation requires attested has no attestation
INPUT_ATTESTATION_INVALID: the attestation names other bytes, or no listed harness key signed it
""")

_block("run", "3", "INCOMPLETE under purpose: release (a blocker: never hides a FAIL)", """
CANDIDATE_NOT_NAMED: gate.subject: required, and the release named no build (--subject)
""")

_block("decide", "1", "FAIL", """
REGRESSED: worse than the baseline (a category now failing, or the decision was PASS)
BELOW_THRESHOLD: a category's gated statistic is below its threshold
BELOW_MINIMUM: a category's rate is below its mandatory minimum
OVERALL_BELOW_THRESHOLD: the weighted overall score is below the overall threshold
CONDITION_FALSE: a gate condition formula is false
BELOW_PASS_HAT_K: pass^k is below the policy's min_pass_hat_k
BELOW_CONSISTENCY: consistency across trials is below min_consistency
TOO_MANY_FLAKY: more flaky cases than max_flaky_cases
""")

_block("evidence", "2", "nothing written", """
OUTPUT_EXISTS: the output folder already holds evidence; nothing is ever overwritten
KEY_EXISTS: keygen would overwrite an existing key file
BAD_KEY: a key file is not a readable, unencrypted Ed25519 PEM key
""")

_block("verify", "1", "invalid evidence", """
UNREADABLE: a scorecard or signed file cannot be read
NOT_A_FILE: a signed file or scorecard.json is a FIFO, device or folder: never read
NOT_CANONICAL: the scorecard bytes are not RFC 8785 canonical JSON
UNSIGNED: no signature or attestation lies beside the scorecard
BAD_ENVELOPE: the DSSE envelope or its in-toto statement is malformed
BAD_SIGNATURE: no signature verifies over these bytes with the key
KEY_NOT_TRUSTED: no key was pinned, or the signer is not the pinned key
DIGEST_MISMATCH: a file changed after signing (its SHA-256 differs from the statement)
SUBJECT_MISSING: a file the signed statement names is missing beside the scorecard
VERIFY: evidence that does not verify, without a more precise code (fallback)
NO_SIGNED_TIME: --baseline-label skipped a scorecard whose signed statement has no time
SYMLINK: a symlink under a verified folder: evidence elsewhere is not checked as this run's
WRONG_FOLDER: a scorecard sits in the folder of another evaluation than the one it names
DUPLICATE_SCORECARD: the same scorecard lies in more than one place under a folder
WRONG_PREDICATE: a signed statement of another kind (a calibration is not a scorecard)
UNEXPECTED_EVALUATION: a scorecard of an evaluation --expect does not name
MISSING_EVALUATION: an evaluation --expect or the run names has no verified scorecard there
RUN_MISMATCH: a scorecard or seal of another run than the folder's, or than --run-id states
SIGNED_BEFORE_INPUTS: the scorecard was signed before the specs bundle or an attestation it binds
RUN_UNBOUND: a scorecard naming no run, beside others: nothing shows it is of their run
STALE: a scorecard or seal signed before the time --not-before states
CANDIDATE_MISMATCH: a scorecard that does not name the build --subject gives as its candidate
DECISION_REFUSED: a valid scorecard that decided other than --require-decision asks
VSA_MISMATCH: vsa.intoto.jsonl says other than its evidence (candidate, decision, run, digests, key)
PART_OF_RUN: --subject or --require-decision on one scorecard of a run of several: verify its folder
""")

_block("verify", "2", "nothing verified", """
NO_SCORECARD: engine verify was given a folder with no scorecard.json anywhere under it
""")

_block("cli", "2", "nothing runs", """
BAD_INPUT_OPTION: --input is not NAME=PATH
INPUT_NOT_FOUND: a path given on the command line does not exist
DUPLICATE_NAME: two Evaluations under the given paths share a name
NO_EVALUATION: no Evaluation under the paths (or not exactly the one the command needs)
AMBIGUOUS_BASELINE: --baseline or --baseline-label with more than one Evaluation
BAD_LABEL: --label or --baseline-label is not 1-64 characters of A-Z, a-z, 0-9, '.', '_', '-'
BAD_SUBJECT: --subject is not NAME@sha256:HEX (64 lowercase hex), NAME printable, or twice
SUBJECT_NEEDS_OUT: --subject with several Evaluations and no --out (the run's VSA goes at its top)
BAD_RUN_ID: --run-id is not 1-128 characters of A-Z, a-z, 0-9, '.', '_', ':', '@', '+', '-'
BASELINE_CONFLICT: --baseline with --baseline-label, or one of --baseline-label and --history
BASELINE_NOT_GOVERNED: --baseline or --baseline-label for a release whose comparison gates
BAD_SHARDS: --shards without --executor ray, or not a positive number
BAD_WORKERS: --workers is not a positive number or auto, or is given with --executor ray
NO_JUDGE_MODEL: a judge provider chosen on the command line without a model
NO_REPLAY: judge provider replay without --judge-replay
NO_TESTS: engine test found no PolicyTest
BAD_PREDICATE: engine attest --predicate is not a JSON object (text, or @FILE)
BASE_UNREADABLE: engine diff --base: no git or repository, no such revision, or no such policy in it
BASE_AMBIGUOUS: engine diff --base: a name git finds in two places (tag and branch, ref and commit)
POLICY_NOT_EVALUATED: engine diff --base: the Evaluation runs another policy than the NEW one given
COMPARE_AMBIGUOUS: engine compare: a folder holding more or fewer than one scorecard
IO_ERROR: the operating system refused a read or write; nothing partial is kept
USAGE: a command line or input that cannot be used, without a more precise code
ENGINE_ERROR: an engine error without a more precise code (fallback)
""")

_block("cli", "2", "nothing written (engine calibrate)", """
BAD_HUMAN_LABEL: a hold-out record's label field is not true/false, pass/fail or yes/no
CALIBRATION_NO_JUDGE: engine calibrate on an Evaluation that asks no live judge
""")

_block("cli", "3", "nothing written (engine calibrate)", """
CALIBRATION_INCOMPLETE: a labelled row of a judged category got no verdict, or none is labelled
""")

_block("cli", "3", "no decision", """
INTERNAL_ERROR: a bug in specgate; never a PASS or a FAIL (--debug shows the traceback)
""")
