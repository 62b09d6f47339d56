"""agent-release-gate: Assevra 0.6 datasets as an input format (see ``plugin``)."""
