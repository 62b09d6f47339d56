"""Stage 4, run: one evaluation end to end.

``execute`` runs the named steps (score, decide, write, seal) over ``RunOptions``;
``rows`` turns records into rows (admit, inspect, waive, tally); ``shards`` scores them
in one process or in shards on Ray.
"""
