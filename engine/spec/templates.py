"""The one jinja2 sandbox for governance-written templates (suggested fixes, judge rubrics).

jinja2's own sandbox stops attribute escapes but not work: ``{{ 9**9**9 }}``,
``{{ 'a' * 10**9 }}`` or a 10**9-wide ``center`` hang or exhaust memory while a spec loads.
Here exponentiation is refused when the template is compiled (a located spec problem), and
at render time every operation that can grow a value is bounded: repetition and
multiplication, ``%`` formatting, numbers given to calls and filters, ranges, and loops
nested more than two deep. Values cannot be mutated (no ``append``) and there is no
``namespace``, so nothing grows across loop iterations.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

LIMIT = 10_000  # largest width, count or range a template may ask for
MAX_LENGTH = 100_000  # longest string or list ``*`` may build
MAX_LOOP_NESTING = 2
_WIDE = re.compile(r"\d{5,}")  # a format width or precision of 10,000 or more
# filters and str methods whose number arguments size their result
_SIZING = frozenset({"center", "indent", "wordwrap", "truncate", "batch", "slice", "format",
                     "ljust", "rjust", "zfill", "expandtabs"})
_SEQUENCE = (str, list, tuple)


class TemplateRefused(ValueError):
    """A template that would do unbounded work; the message says what and where."""


def _check_sizes(values: Any) -> None:
    for value in values:
        if isinstance(value, int | float) and not isinstance(value, bool) and \
                abs(value) > LIMIT:
            raise SecurityError(f"templates may size values up to {LIMIT}, not {value}")
        if isinstance(value, str) and _WIDE.search(value):
            raise SecurityError("templates may not format with a width of 10,000 or more")


def _bounded(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    at = 1 if getattr(function, "jinja_pass_arg", None) else 0  # where the value is

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        # the format filter's value is a format; any other filter's value is data
        _check_sizes(args[at:at + 1] if name == "format" else (*args[at + 1:],
                                                               *kwargs.values()))
        return function(*args, **kwargs)
    return call if name in _SIZING else function


class Sandbox(ImmutableSandboxedEnvironment):
    """A sandbox whose templates stay small and quick."""

    intercepted_binops = frozenset({"**", "*", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(undefined=jinja2.StrictUndefined, autoescape=False, **options)
        self._compiled: dict[str, jinja2.Template] = {}
        self.globals.pop("namespace", None)
        self.globals["range"] = _range
        self.filters = {name: _bounded(name, f) for name, f in self.filters.items()}

    def call_binop(self, context: Any, operator_name: str, left: Any, right: Any) -> Any:
        """``**`` never; ``*`` and ``%`` only when the result stays small."""
        if operator_name == "**":
            raise SecurityError("templates may not use exponentiation (**)")
        if operator_name == "%":
            if isinstance(left, str):
                _check_sizes([left])
            return operator.mod(left, right)
        if isinstance(left, _SEQUENCE) or isinstance(right, _SEQUENCE):
            seq, count = (left, right) if isinstance(left, _SEQUENCE) else (right, left)
            if isinstance(count, int) and len(seq) * count > MAX_LENGTH:
                raise SecurityError(f"templates may not build values over {MAX_LENGTH} long")
        elif isinstance(left, int) and isinstance(right, int) and \
                left.bit_length() + right.bit_length() > 256:
            raise SecurityError("templates may not multiply numbers this large")
        return operator.mul(left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        """A str method that sizes its result takes no size above the limit."""
        owner = getattr(__obj, "__self__", None)
        if getattr(__obj, "__name__", None) in _SIZING and isinstance(owner, str):
            _check_sizes((owner, *args, *kwargs.values()))
        return super().call(__context, __obj, *args, **kwargs)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """``str.format`` with no width or precision above the limit."""
        wrapped = super().wrap_str_format(value)
        if wrapped is not None:
            _check_sizes([value.__self__])
        return wrapped

    def checked(self, source: str, tree: nodes.Template | None = None) -> jinja2.Template:
        """Compile ``source`` (``tree``: its parse, when the caller has it); TemplateRefused
        for exponentiation or deeply nested loops, jinja2.TemplateSyntaxError for bad
        syntax."""
        tree = self.parse(source) if tree is None else tree
        power = next(iter(tree.find_all(nodes.Pow)), None)
        if power is not None:
            raise TemplateRefused(f"line {power.lineno}: exponentiation (**) is not allowed")
        deep = _loop_depth(tree)
        if deep is not None:
            raise TemplateRefused(f"line {deep}: loops nest more than {MAX_LOOP_NESTING} deep")
        return self.compiled(source)

    def compiled(self, source: str) -> jinja2.Template:
        """``source`` compiled, once per process (specs loaded again, or several specs
        sharing a fixes file or rubric, reuse it); only for sources already checked."""
        template = self._compiled.get(source)
        if template is None:
            if len(self._compiled) >= MAX_COMPILED:  # a long-lived process stays bounded
                self._compiled.clear()
            template = self._compiled[source] = self.from_string(source)
        return template


MAX_COMPILED = 1_000


def printed_names(tree: nodes.Template) -> frozenset[str] | None:
    """The names of a template that does nothing but print text and names, or None when it
    does anything more. Printing a name cannot fail once it has a value, so such a
    template needs no trial render, and it can compile when it is first rendered."""
    names = set()
    for output in tree.body:
        if not isinstance(output, nodes.Output):
            return None
        for node in output.nodes:
            if isinstance(node, nodes.Name) and node.ctx == "load":
                names.add(node.name)
            elif not isinstance(node, nodes.TemplateData):
                return None
    return frozenset(names)


class Deferred:
    """A checked template that compiles on its first render (a fix text only a finding of
    its category writes); renders exactly as the compiled template."""

    __slots__ = ("_env", "source")

    def __init__(self, env: Sandbox, source: str) -> None:
        self._env, self.source = env, source

    def render(self, **values: Any) -> str:
        """The text for ``values``."""
        return self._env.compiled(self.source).render(**values)


MAX_RANGE = 1_000  # a range's length: two nested loops stay under a million steps


def _range(*args: Any) -> range:
    _check_sizes(args)
    made = range(*args)
    if len(made) > MAX_RANGE:
        raise SecurityError(f"templates may loop over ranges of up to {MAX_RANGE} items")
    return made


def _loop_depth(node: nodes.Node, depth: int = 0) -> int | None:
    """The line of a loop nested deeper than MAX_LOOP_NESTING, or None."""
    for child in node.iter_child_nodes():
        inner = depth + 1 if isinstance(child, nodes.For) else depth
        if inner > MAX_LOOP_NESTING:
            return child.lineno
        found = _loop_depth(child, inner)
        if found is not None:
            return found
    return None
