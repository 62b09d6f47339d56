"""specgate: declarative, signed release gates for AI agents.

The public surface is small on purpose; everything else lives in private modules.
"""

from ._run import Result, execute
from ._version import __version__
from .errors import EngineError, FormulaError, Problem, SpecErrors, UsageError, VerifyError
from .formula import compile_formula
from .spec import Evaluation, load
from .verify import verify

__all__ = [
    "EngineError",
    "Evaluation",
    "FormulaError",
    "Problem",
    "Result",
    "SpecErrors",
    "UsageError",
    "VerifyError",
    "__version__",
    "compile_formula",
    "execute",
    "load",
    "verify",
]
