"""Stage 5, decide: the tally in, a decision out.

The tally (``aggregate``), the decision and its reasons (``decision``, ``reasons``),
baselines (``baseline``; chosen by label: ``labelled``), findings and fixes (``findings``),
PolicyTests (``policytest``), and the spill-to-disk stores the tally keeps large sets in
(``spill``, ``sorted_digest``).
"""
