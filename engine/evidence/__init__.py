"""Stage 6, evidence: the scorecard, staged and sealed, and its verification.

``scorecard`` builds the scorecard and stages files so a run leaves all or nothing;
``signing`` writes the detached signature and DSSE envelope; ``verify`` checks them.
"""
