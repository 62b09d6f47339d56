"""The engine version, in one place."""

__version__ = "0.1.0"

# Version of the primitives' semantics and of the rows they write; part of every
# policy_sha256, so a change in what a primitive means can never be mistaken for the same
# policy. /2 writes compact PASS rows (no copies of expected and observed evidence); /1 is
# the same scoring with full PASS rows, which a policy keeps with ``evidence.passing_rows:
# full`` (and with it the policy_sha256 it had under /1).
SCORING_VERSION = "specgate-primitives/2"
SCORING_VERSION_FULL_ROWS = "specgate-primitives/1"
