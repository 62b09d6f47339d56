"""The formula language (docs/formulas.md): a small, closed expression language.

Source text is parsed with ``ast`` in eval mode and compiled to closures from an
allow-list of node types; anything else is an error with a column. ``null`` propagates
through arithmetic, division by zero gives ``null``, and non-finite numbers never come
out (they become ``null``). Names and function calls are checked when compiled.
"""

from __future__ import annotations

import ast
import contextvars
import io
import math
import tokenize
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.canonical import MAX_INT
from engine.errors import FormulaError, did_you_mean
from engine.stats import DEFAULT_Z, wilson

MAX_LENGTH = 2000
MAX_DEPTH = 32
MAX_STRING = 256

NUMBER, BOOLEAN, STRING, NULL, ANY = "number", "boolean", "string", "null", "any"
Z_KEY = "$wilson_z"  # names cannot start with '$', so this never collides

Env = Mapping[str, Any]
Fn = Callable[[Env], Any]
CONSTANTS = {"null": (None, NULL), "true": (True, BOOLEAN), "false": (False, BOOLEAN)}


@dataclass(frozen=True)
class Formula:
    """A compiled formula: call it with an environment of bound names."""

    source: str
    type: str
    names: frozenset[str]
    fn: Fn

    def __call__(self, env: Env) -> Any:
        return _finite(self.fn(env))


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _type_of(v: Any) -> str:
    if v is None:
        return NULL
    if isinstance(v, bool):
        return BOOLEAN
    if _is_num(v):
        return NUMBER
    return STRING if isinstance(v, str) else "value"


def _need(v: Any, kind: str, what: str) -> None:
    if v is not None and _type_of(v) != kind:
        raise FormulaError(f"{what} needs a {kind}, got a {_type_of(v)}", "FORMULA_TYPE")


def _clip(v: Any) -> Any:
    """Keep numbers inside what JSON and doubles represent; overflow becomes null."""
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_INT:
        try:
            return _finite(float(v))
        except OverflowError:
            return None
    return _finite(v) if isinstance(v, float) else v


# --- function table: name -> (min args, max args or None, argument type, result type, impl)
# Implementations receive evaluated arguments; ``strict`` ones are never given a null.


# Set only while explaining a null result: each division by zero adds its column here.
_ZERO_DIVISIONS: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "zero_divisions", default=None)


def _div(a: Any, b: Any) -> Any:
    return None if b == 0 else a / b


def _log(x: Any, base: Any = None) -> Any:
    if x <= 0 or (base is not None and (base <= 0 or base == 1)):
        return None
    return math.log(x) if base is None else math.log(x) / math.log(base)


def _round(x: Any, digits: Any = None) -> Any:
    if digits is None:
        return round(x)
    if not isinstance(digits, int) or not 0 <= digits <= 15:
        raise FormulaError("round() takes 0 to 15 digits", "FORMULA_DOMAIN")
    return round(float(x), digits)


def _wilson(side: int) -> Callable[..., Any]:
    def bound(env: Env, passed: Any, n: Any) -> Any:
        if not (float(passed).is_integer() and float(n).is_integer()) or not 0 <= passed <= n:
            raise FormulaError(f"wilson bounds need 0 <= passed <= n (got {passed}, {n})",
                               "FORMULA_DOMAIN")
        interval = wilson(int(passed), int(n), env.get(Z_KEY, DEFAULT_Z))
        return None if interval is None else interval[side]

    return bound


@dataclass(frozen=True)
class Function:
    """One row of the function table."""

    min_args: int
    max_args: int | None
    arg_type: str
    result: str
    impl: Callable[..., Any]
    strict: bool = True  # null in any argument gives null without calling impl
    wants_env: bool = False
    doc: str = ""


FUNCTIONS: dict[str, Function] = {
    "abs": Function(1, 1, NUMBER, NUMBER, abs, doc="absolute value"),
    "ceil": Function(1, 1, NUMBER, NUMBER, math.ceil, doc="smallest integer >= x"),
    "clamp": Function(3, 3, NUMBER, NUMBER, lambda x, lo, hi: min(max(x, lo), hi),
                      doc="x limited to [lo, hi]"),
    "coalesce": Function(1, None, ANY, ANY, lambda *a: next((v for v in a if v is not None),
                                                              None),
                         strict=False, doc="first argument that is not null"),
    "count": Function(1, None, ANY, NUMBER, lambda *a: sum(v is not None for v in a),
                      strict=False, doc="how many arguments are not null"),
    "floor": Function(1, 1, NUMBER, NUMBER, math.floor, doc="largest integer <= x"),
    "is_null": Function(1, 1, ANY, BOOLEAN, lambda v: v is None, strict=False,
                        doc="true when the argument is null"),
    "log": Function(1, 2, NUMBER, NUMBER, _log,
                    doc="natural logarithm, or log(x, base); null when undefined"),
    "max": Function(1, None, NUMBER, NUMBER, max, doc="largest argument"),
    "mean": Function(1, None, NUMBER, NUMBER, lambda *a: math.fsum(a) / len(a),
                     doc="arithmetic mean of the arguments"),
    "min": Function(1, None, NUMBER, NUMBER, min, doc="smallest argument"),
    "round": Function(1, 2, NUMBER, NUMBER, _round,
                      doc="round(x) to an integer, round(x, d) to d digits (half to even)"),
    "sqrt": Function(1, 1, NUMBER, NUMBER, lambda x: None if x < 0 else math.sqrt(x),
                     doc="square root; null for negative x"),
    "sum": Function(1, None, NUMBER, NUMBER, lambda *a: math.fsum(a) if any(
        isinstance(v, float) for v in a) else sum(a), doc="sum of the arguments"),
    "wilson_lower": Function(2, 2, NUMBER, NUMBER, _wilson(0), wants_env=True,
                             doc="lower bound of the Wilson score interval for passed of n"),
    "wilson_upper": Function(2, 2, NUMBER, NUMBER, _wilson(1), wants_env=True,
                             doc="upper bound of the Wilson score interval for passed of n"),
}

_ARITH = {
    ast.Add: ("+", lambda a, b: a + b),
    ast.Sub: ("-", lambda a, b: a - b),
    ast.Mult: ("*", lambda a, b: a * b),
    ast.Div: ("/", _div),
}
_COMPARE = {
    ast.Eq: ("==", lambda a, b: a == b), ast.NotEq: ("!=", lambda a, b: a != b),
    ast.Lt: ("<", lambda a, b: a < b), ast.LtE: ("<=", lambda a, b: a <= b),
    ast.Gt: (">", lambda a, b: a > b), ast.GtE: (">=", lambda a, b: a >= b),
}
_REFUSED = {
    ast.Attribute: "attribute access is not allowed",
    ast.Subscript: "subscripts are not allowed",
    ast.Lambda: "lambdas are not allowed",
    ast.ListComp: "comprehensions are not allowed",
    ast.SetComp: "comprehensions are not allowed",
    ast.DictComp: "comprehensions are not allowed",
    ast.GeneratorExp: "comprehensions are not allowed",
    ast.NamedExpr: "assignment is not allowed",
    ast.Await: "await is not allowed",
    ast.JoinedStr: "f-strings are not allowed",
    ast.Starred: "star arguments are not allowed",
}


class _Compiler:
    def __init__(self, source: str, names: Mapping[str, str],
                 functions: Mapping[str, Function]) -> None:
        self.source, self.names, self.functions = source, names, functions
        self.used: set[str] = set()

    def fail(self, node: ast.AST, message: str, code: str = "FORMULA_SYNTAX") -> FormulaError:
        offset = getattr(node, "col_offset", 0)
        col = len(self.source.encode()[:offset].decode(errors="ignore")) + 1
        return FormulaError(message, code, col)

    def compile(self, node: ast.AST, depth: int = 0) -> tuple[Fn, str]:
        if depth > MAX_DEPTH:
            raise self.fail(node, f"formula nests deeper than {MAX_DEPTH}", "FORMULA_TOO_DEEP")
        handler = getattr(self, f"_{type(node).__name__}", None)
        if handler is None:
            reason = _REFUSED.get(type(node), f"'{type(node).__name__}' is not allowed")
            raise self.fail(node, reason, "FORMULA_FORBIDDEN")
        result: tuple[Fn, str] = handler(node, depth + 1)
        return result

    def _Constant(self, node: ast.Constant, depth: int) -> tuple[Fn, str]:
        v = node.value
        if isinstance(v, str):
            if len(v) > MAX_STRING:
                raise self.fail(node, f"string literal longer than {MAX_STRING}",
                                "FORMULA_LITERAL")
        elif isinstance(v, bool) or v is None:
            pass
        elif isinstance(v, int):
            if abs(v) > MAX_INT:
                raise self.fail(node, "integer literal beyond 2**53", "FORMULA_LITERAL")
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise self.fail(node, "number literal is not finite", "FORMULA_LITERAL")
        else:
            raise self.fail(node, f"{type(v).__name__} literals are not allowed",
                            "FORMULA_FORBIDDEN")
        return (lambda env: v), _type_of(v)

    def _Name(self, node: ast.Name, depth: int) -> tuple[Fn, str]:
        name = node.id
        if name.startswith("_"):
            raise self.fail(node, f"name '{name}' is not allowed", "FORMULA_FORBIDDEN")
        if name in CONSTANTS:
            value, kind = CONSTANTS[name]
            return (lambda env: value), kind
        if name not in self.names:
            hint = did_you_mean(name, list(self.names) + list(CONSTANTS))
            raise self.fail(node, f"unknown name '{name}'" + (f" ({hint})" if hint else ""),
                            "FORMULA_UNKNOWN_NAME")
        self.used.add(name)
        return (lambda env: env.get(name)), self.names[name]

    def _check(self, node: ast.AST, kind: str, allowed: tuple[str, ...], what: str) -> None:
        if kind not in allowed and kind not in (ANY, NULL):
            raise self.fail(node, f"{what} needs a {' or '.join(allowed)}, got a {kind}",
                            "FORMULA_TYPE")

    def _BinOp(self, node: ast.BinOp, depth: int) -> tuple[Fn, str]:
        if type(node.op) not in _ARITH:
            symbol = "**" if isinstance(node.op, ast.Pow) else type(node.op).__name__
            raise self.fail(node, f"operator '{symbol}' is not allowed", "FORMULA_FORBIDDEN")
        symbol, op = _ARITH[type(node.op)]
        # where the divisor starts, in characters
        col = len(self.source.encode()[:node.right.col_offset].decode(errors="ignore")) + 1
        left, lt = self.compile(node.left, depth)
        right, rt = self.compile(node.right, depth)
        self._check(node.left, lt, (NUMBER,), f"'{symbol}'")
        self._check(node.right, rt, (NUMBER,), f"'{symbol}'")

        def arith(env: Env) -> Any:
            a, b = left(env), right(env)
            _need(a, NUMBER, f"'{symbol}'")
            _need(b, NUMBER, f"'{symbol}'")
            if b == 0 and symbol == "/" and (seen := _ZERO_DIVISIONS.get()) is not None:
                seen.append(col)
            return None if a is None or b is None else _clip(op(a, b))

        return arith, NUMBER

    def _UnaryOp(self, node: ast.UnaryOp, depth: int) -> tuple[Fn, str]:
        inner, kind = self.compile(node.operand, depth)
        if isinstance(node.op, ast.Not):
            self._check(node.operand, kind, (BOOLEAN,), "'not'")

            def negate(env: Env) -> Any:
                v = inner(env)
                _need(v, BOOLEAN, "'not'")
                return None if v is None else not v

            return negate, BOOLEAN
        if isinstance(node.op, ast.USub | ast.UAdd):
            self._check(node.operand, kind, (NUMBER,), "a sign")
            sign = -1 if isinstance(node.op, ast.USub) else 1

            def signed(env: Env) -> Any:
                v = inner(env)
                _need(v, NUMBER, "a sign")
                return None if v is None else sign * v

            return signed, NUMBER
        raise self.fail(node, "operator '~' is not allowed", "FORMULA_FORBIDDEN")

    def _BoolOp(self, node: ast.BoolOp, depth: int) -> tuple[Fn, str]:
        parts = [self.compile(v, depth) for v in node.values]
        word = "and" if isinstance(node.op, ast.And) else "or"
        for value, (_, kind) in zip(node.values, parts, strict=True):
            self._check(value, kind, (BOOLEAN,), f"'{word}'")
        fns = [fn for fn, _ in parts]
        decisive = word == "or"  # the value that settles the result (Kleene logic)

        def logic(env: Env) -> Any:
            unknown = False
            for fn in fns:
                v = fn(env)
                _need(v, BOOLEAN, f"'{word}'")
                if v is None:
                    unknown = True
                elif v is decisive:
                    return decisive
            return None if unknown else not decisive

        return logic, BOOLEAN

    def _Compare(self, node: ast.Compare, depth: int) -> tuple[Fn, str]:
        items = [self.compile(node.left, depth)]
        items += [self.compile(c, depth) for c in node.comparators]
        ops = []
        for op in node.ops:
            if type(op) not in _COMPARE:
                raise self.fail(node, f"comparison '{type(op).__name__}' is not allowed",
                                "FORMULA_FORBIDDEN")
            ops.append(_COMPARE[type(op)])
        known = {k for _, k in items if k not in (ANY, NULL)}
        if len(known) > 1:
            raise self.fail(node, f"cannot compare {' with '.join(sorted(known))}",
                            "FORMULA_TYPE")
        if known - {NUMBER} and any(s not in ("==", "!=") for s, _ in ops):
            raise self.fail(node, "only numbers can be ordered with < <= > >=", "FORMULA_TYPE")
        fns = [fn for fn, _ in items]

        def compare(env: Env) -> Any:
            values = [fn(env) for fn in fns]
            if any(v is None for v in values):
                return None
            kinds = {_type_of(v) for v in values}
            if len(kinds) > 1:
                raise FormulaError(f"cannot compare {' with '.join(sorted(kinds))}",
                                   "FORMULA_TYPE")
            result = True
            for (symbol, op), a, b in zip(ops, values, values[1:], strict=False):
                if symbol not in ("==", "!=") and kinds != {NUMBER}:
                    raise FormulaError("only numbers can be ordered", "FORMULA_TYPE")
                result = result and op(a, b)
            return result

        return compare, BOOLEAN

    def _IfExp(self, node: ast.IfExp, depth: int) -> tuple[Fn, str]:
        test, tk = self.compile(node.test, depth)
        self._check(node.test, tk, (BOOLEAN,), "a condition")
        then, k1 = self.compile(node.body, depth)
        other, k2 = self.compile(node.orelse, depth)

        def choose(env: Env) -> Any:
            c = test(env)
            _need(c, BOOLEAN, "a condition")
            return None if c is None else (then(env) if c else other(env))

        kinds = {k1, k2} - {NULL}
        return choose, (kinds.pop() if len(kinds) == 1 else ANY)

    def _Call(self, node: ast.Call, depth: int) -> tuple[Fn, str]:
        if not isinstance(node.func, ast.Name):
            raise self.fail(node, "only functions from the table can be called",
                            "FORMULA_FORBIDDEN")
        name = node.func.id
        if name.startswith("_"):
            raise self.fail(node, f"name '{name}' is not allowed", "FORMULA_FORBIDDEN")
        func = self.functions.get(name)
        if func is None:
            hint = did_you_mean(name, self.functions)
            raise self.fail(node, f"unknown function '{name}'" + (f" ({hint})" if hint else ""),
                            "FORMULA_UNKNOWN_FUNCTION")
        if node.keywords:
            raise self.fail(node, "keyword arguments are not allowed", "FORMULA_FORBIDDEN")
        n = len(node.args)
        if n < func.min_args or (func.max_args is not None and n > func.max_args):
            want = (str(func.min_args) if func.max_args == func.min_args else
                    f"{func.min_args} or more" if func.max_args is None else
                    f"{func.min_args} to {func.max_args}")
            raise self.fail(node, f"{name}() takes {want} arguments, got {n}", "FORMULA_ARITY")
        args = [self.compile(a, depth) for a in node.args]
        for arg, (_, kind) in zip(node.args, args, strict=True):
            if func.arg_type != ANY:
                self._check(arg, kind, (func.arg_type,), f"{name}()")
        fns = [fn for fn, _ in args]
        return self._call(name, func, fns), func.result

    @staticmethod
    def _call(name: str, func: Function, fns: list[Fn]) -> Fn:
        def call(env: Env) -> Any:
            values = [fn(env) for fn in fns]
            if func.arg_type != ANY:
                for v in values:
                    _need(v, func.arg_type, f"{name}()")
            if func.strict and any(v is None for v in values):
                return None
            try:
                out = func.impl(env, *values) if func.wants_env else func.impl(*values)
            except (OverflowError, ValueError) as exc:
                raise FormulaError(f"{name}(): {exc}", "FORMULA_DOMAIN") from None
            return _clip(out)

        return call


def _check_brackets(source: str) -> None:
    """Refuse bracket nesting deeper than MAX_DEPTH (brackets leave no trace in the AST)."""
    depth = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
                if depth > MAX_DEPTH:
                    raise FormulaError(f"brackets nest deeper than {MAX_DEPTH}",
                                       "FORMULA_TOO_DEEP", tok.start[1] + 1)
            elif tok.type == tokenize.OP and tok.string in ")]}":
                depth -= 1
    except (tokenize.TokenError, SyntaxError):
        return  # ast.parse reports it with a better message


def compile_formula(source: str, names: Mapping[str, str],
                    functions: Mapping[str, Function] = FUNCTIONS) -> Formula:
    """Compile ``source`` with ``names`` (name -> type) bound; raise FormulaError if refused."""
    if not isinstance(source, str):
        raise FormulaError("a formula must be a string", "FORMULA_SYNTAX", 1)
    if len(source) > MAX_LENGTH:
        raise FormulaError(f"formula longer than {MAX_LENGTH} characters", "FORMULA_TOO_LONG",
                           MAX_LENGTH + 1)
    _check_brackets(source)
    try:
        with warnings.catch_warnings():  # what Python only warns about ("1and x") is refused,
            warnings.simplefilter("error")  # so a formula means the same on every version
            tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise FormulaError(f"not a valid formula: {exc.msg}", "FORMULA_SYNTAX",
                           exc.offset or 1) from None
    except (RecursionError, MemoryError, ValueError):
        raise FormulaError("formula is too complex", "FORMULA_TOO_DEEP", 1) from None
    stripped = len(source) - len(source.lstrip())
    compiler = _Compiler(source.strip(), names, functions)
    try:
        fn, kind = compiler.compile(tree.body)
    except FormulaError as exc:
        exc.col += stripped
        raise
    except RecursionError:
        raise FormulaError("formula is too complex", "FORMULA_TOO_DEEP", 1) from None
    return Formula(source, kind, frozenset(compiler.used), fn)


def why_null(formula: Formula, env: Env) -> str:
    """'division by zero at column N of ...' (N where the divisor starts) when that is why
    ``formula`` is null in ``env``; else ''."""
    seen: list[int] = []
    token = _ZERO_DIVISIONS.set(seen)
    try:
        formula(env)
    except (FormulaError, TypeError, ValueError, OverflowError, RecursionError):
        return ""
    finally:
        _ZERO_DIVISIONS.reset(token)
    if not seen:
        return ""
    return "division by zero at column " + ", ".join(map(str, sorted(set(seen)))) + \
        f" of '{formula.source}'"


def evaluate(formula: Formula, env: Env) -> Any:
    """Evaluate; only coded FormulaErrors escape (anything else is a bug, reported as one)."""
    try:
        return formula(env)
    except FormulaError:
        raise
    except (TypeError, ValueError, OverflowError, ZeroDivisionError, RecursionError) as exc:
        raise FormulaError(f"formula could not be evaluated: {exc}", "FORMULA_RUNTIME") from None
