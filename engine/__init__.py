"""specgate: declarative, signed release gates for AI agents.

The public surface is small on purpose; everything else lives in private modules.
"""

from engine._interrupt import interruptible

with interruptible():  # a Ctrl-C while importing exits as interrupted, never as a FAIL (1)
    from engine._version import __version__
    from engine.errors import (
        EngineError,
        FormulaError,
        Problem,
        SpecErrors,
        UsageError,
        VerifyError,
    )
    from engine.evidence.verify import verify
    from engine.formula import compile_formula
    from engine.run.execute import Result, RunOptions, execute
    from engine.spec.evaluation import Evaluation, load

__all__ = [
    "EngineError",
    "Evaluation",
    "FormulaError",
    "Problem",
    "Result",
    "RunOptions",
    "SpecErrors",
    "UsageError",
    "VerifyError",
    "__version__",
    "compile_formula",
    "execute",
    "load",
    "verify",
]
