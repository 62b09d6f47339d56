"""The engine version, in one place."""

__version__ = "0.1.0"

# Version of the primitives' semantics; part of every policy_sha256, so a change in what a
# primitive means can never be mistaken for the same policy.
SCORING_VERSION = "specgate-primitives/1"
