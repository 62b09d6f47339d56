"""Stage 4, run: one evaluation end to end.

``execute`` runs the named steps (score, decide, write, seal) over ``RunOptions``;
``rows`` turns records into rows (admit, inspect, waive, tally); ``shards`` scores them
in one process, or cuts them into shards and merges what ``workers`` (a process pool) or
``on_ray`` (Ray tasks) scored.
"""
