"""What the fuzz targets raise when the oracle says no (shared so that ``python -m
bench.fuzz``, whose module is ``__main__``, catches the same classes)."""


class Crash(Exception):
    """An outcome that is neither a result nor a coded error."""


class WrongPass(Exception):
    """A PASS on evidence that must FAIL."""
