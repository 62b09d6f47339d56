"""Parse YAML once into plain data plus a line/column index.

Safe loading only. Aliases and anchors, duplicate keys, non-string keys, non-finite
floats, integers beyond 2**53 and plain values that YAML 1.1 and YAML 1.2 read differently
(``1:06:40``, ``4_000``, ``017``, ``yes``, ``1e3``) are problems, reported with their place.
Timestamps stay strings so every spec value is JSON and can be canonicalised.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import yaml

from engine.canonical import MAX_INT
from engine.errors import Problem

MAX_DEPTH = 64
MAX_NODES = 200_000

Path = tuple[str | int, ...]


class _Composing(yaml.composer.Composer):
    """The composer both loaders share: it refuses aliases and anchors and bounds size."""

    check_event: Any  # given by the parser each loader is made with
    peek_event: Any

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: D102
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _Refused("YAML_ALIAS", "aliases are not allowed in specs", event.start_mark)
        event = self.peek_event()
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise _Refused("YAML_ANCHOR", f"anchor '&{anchor}' is not allowed in specs",
                           event.start_mark)
        self._nodes = getattr(self, "_nodes", 0) + 1
        if self._nodes > MAX_NODES:
            raise _Refused("SPEC_TOO_LARGE", f"more than {MAX_NODES} values", event.start_mark)
        self._depth = getattr(self, "_depth", 0) + 1
        if self._depth > MAX_DEPTH:
            raise _Refused("SPEC_TOO_DEEP", f"nesting deeper than {MAX_DEPTH}", event.start_mark)
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_RESOLVERS = {
    key: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class _Loader(_Composing, yaml.SafeLoader):
    """SafeLoader without timestamps that refuses aliases and anchors while composing: the
    reference reader, whose problems and places every spec error is reported with."""

    yaml_implicit_resolvers = _RESOLVERS


_CParser: Any = getattr(getattr(yaml, "_yaml", None), "CParser", None)
if _CParser is not None:
    class _FastLoader(_CParser, _Composing, yaml.constructor.SafeConstructor,
                      yaml.resolver.Resolver):
        """libyaml's scanner and parser (C) under the same composer, constructor and
        resolvers: the same nodes and places as ``_Loader``, about ten times sooner."""

        yaml_implicit_resolvers = _RESOLVERS
        get_single_node = _Composing.get_single_node  # ours, not CParser's: it checks

        def __init__(self, text: str) -> None:
            _CParser.__init__(self, text)
            _Composing.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

        def compose_scalar_node(self, anchor: Any) -> Any:  # noqa: D102
            node = super().compose_scalar_node(anchor)
            if node.value == "" and not node.style:  # an empty value: libyaml may place it
                raise _Refused("", "", node.start_mark)  # elsewhere ({a: , b}): doubt
            return node


class _Refused(Exception):
    def __init__(self, code: str, message: str, mark: Any) -> None:
        super().__init__(message)
        self.code, self.message, self.mark = code, message, mark


@dataclass
class Document:
    """Parsed data of one YAML file and where each value and key sits in it."""

    file: str
    data: Any
    places: dict[Path, tuple[int, int]] = field(default_factory=dict)
    key_places: dict[Path, tuple[int, int]] = field(default_factory=dict)
    quoted: set[Path] = field(default_factory=set)  # scalars whose text starts after a quote

    def place(self, path: Path, key: bool = False) -> tuple[int, int]:
        """Line and column (1-based) of ``path``, or of its nearest known parent."""
        table = self.key_places if key and path in self.key_places else self.places
        while path not in table and path:
            path = path[:-1]
            table = self.places
        return table.get(path, (1, 1))

    def problem(self, path: Path, code: str, message: str, hint: str = "", *,
                key: bool = False, col_offset: int = 0, rank: int = 0) -> Problem:
        """A problem located at ``path``."""
        line, col = self.place(path, key)
        if col_offset and path in self.quoted:
            col_offset += 1
        return Problem(self.file, line, col + col_offset, code, json_path(path), message, hint,
                       rank)


def json_path(path: Path) -> str:
    """``('spec', 'inspections', 3, 'type')`` -> ``spec.inspections[3].type``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


@lru_cache(maxsize=32)  # a policy's data file is read for its table and for its digest
def parse(text: str, file: str) -> tuple[Document | None, list[Problem]]:
    """Parse one YAML document; return it, or None with the problems found (the same
    objects for the same text and name: callers read them, never change them)."""
    fast = _parse_fast(text, file)
    return (fast, []) if fast is not None else _parse(text, file)


# What libyaml reads differently from the reference reader (found by differential fuzzing):
# tabs it accepts where the reference refuses them, a block scalar header running into a
# comment, a byte-order mark or Unicode line breaks shifting places. Such texts take the
# reference reader.
_DOUBT = re.compile("[\t\ufeff\x85\u2028\u2029]|[|>][-+0-9]*#")


def _parse_fast(text: str, file: str) -> Document | None:
    """The document read with libyaml when it reads without any problem; None whenever
    anything is refused or in doubt, so that ``_parse`` finds and words every problem."""
    if _CParser is None or yaml.reader.Reader.NON_PRINTABLE.search(text) or \
            _DOUBT.search(text):
        return None
    loader = _FastLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        doc, problems = Document(file, None), list[Problem]()
        doc.data = _build(node, (), doc, loader, problems)
    except Exception:  # noqa: BLE001 - any surprise: the reference reader decides
        return None
    finally:
        loader.dispose()
    return None if problems else doc


def _parse(text: str, file: str) -> tuple[Document | None, list[Problem]]:
    """Parse with the reference (pure Python) reader, wording every problem."""
    try:
        loader = _Loader(text)  # the reader refuses control characters here, before parsing
    except yaml.reader.ReaderError as exc:
        at = exc.position
        line, col = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
        return None, [Problem(file, line, col, "BAD_CHARACTER", "",
                              f"character U+{exc.character:04X} is not allowed in YAML "
                              "(control characters must be escaped in a quoted string)")]
    try:
        node = loader.get_single_node()
    except _Refused as exc:
        return None, [Problem(file, exc.mark.line + 1, exc.mark.column + 1, exc.code, "",
                              exc.message)]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        parser = str(exc.problem or exc)
        words = in_words(parser, str(exc.context or ""))
        return None, [Problem(file, line, col, "YAML_SYNTAX", "",
                              f"{words} (the parser says: {parser})" if words else parser)]
    except yaml.YAMLError as exc:
        return None, [Problem(file, 1, 1, "YAML_SYNTAX", "", str(exc))]
    finally:
        loader.dispose()
    doc = Document(file, None)
    if node is None:
        return None, [Problem(file, 1, 1, "EMPTY_SPEC", "", "the file holds no YAML document")]
    problems: list[Problem] = []
    doc.data = _build(node, (), doc, loader, problems)
    return (None if problems else doc), problems


# What the parser's words usually mean in a hand-written spec: (its text, its context, ours).
_MEANINGS = (
    ("'\\t'", "", "a tab character: YAML indents with spaces only"),
    ("mapping values are not allowed", "", "an unexpected ':': a line is indented more than "
     "the key above it, or a value holding ': ' needs quotes"),
    ("expected <block end>", "", "an indentation mistake: this line does not line up with "
     "the entries at its level"),
    ("did not find expected", "", "an indentation mistake: this line does not line up with "
     "the entries at its level"),
    ("could not find expected ':'", "", "a line that is neither a 'key: value' nor a '- ' "
     "list item (a missing ':'?)"),
    ("end of stream", "quoted scalar", "a quote that is never closed"),
    ("expected ',' or ']'", "", "a '[' list that is never closed, or a missing ','"),
    ("expected ',' or '}'", "", "a '{' mapping that is never closed, or a missing ','"),
)


def in_words(problem: str, context: str) -> str:
    """What a YAML parser error means, in words a policy owner reads ('' if unsure)."""
    for text, where, meaning in _MEANINGS:
        if text in problem and where in context:
            return meaning
    return ""


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _scalar(node: Any, path: Path, doc: Document, loader: yaml.constructor.SafeConstructor,
            problems: list[Problem]) -> Any:
    try:
        value = loader.construct_object(node, deep=True)
    except yaml.constructor.ConstructorError:
        problems.append(doc.problem(path, "YAML_TAG", f"tag '{node.tag}' is not allowed"))
        return None
    if isinstance(value, str) and not value.isascii() and _lone_surrogate(value):
        problems.append(doc.problem(path, "BAD_SCALAR", "a lone UTF-16 surrogate is not text"))
    return value


# YAML 1.2's core schema for plain scalars, in the order its tags are tried; a text none of
# them matches is a string. PyYAML reads YAML 1.1, whose numbers and booleans differ.
_CORE_12: tuple[tuple[re.Pattern[str], Any], ...] = (
    (re.compile(r"(?:null|Null|NULL|~)?"), lambda text: None),
    (re.compile(r"true|True|TRUE"), lambda text: True),
    (re.compile(r"false|False|FALSE"), lambda text: False),
    (re.compile(r"[-+]?[0-9]+"), int),
    (re.compile(r"0o[0-7]+"), lambda text: int(text[2:], 8)),
    (re.compile(r"0x[0-9a-fA-F]+"), lambda text: int(text[2:], 16)),
    (re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"), float),
    (re.compile(r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"), lambda text: math.nan),
)
_MAYBE_DIFFERENT = frozenset("0123456789+-.yYnNoO")  # the first characters worth checking


def _implicit_tag(text: str) -> str:
    """The tag this reader gives ``text`` as an untagged plain scalar."""
    for tag, pattern in _RESOLVERS.get(text[:1], []) + _RESOLVERS.get(None, []):
        if pattern.match(text):
            return str(tag)
    return "tag:yaml.org,2002:str"


def read_by_yaml_12(text: str) -> Any:
    """What a YAML 1.2 reader (core schema) makes of ``text`` as a plain scalar."""
    for pattern, make in _CORE_12:
        if pattern.fullmatch(text):
            return make(text)
    return text


def _why_different(text: str, value: Any) -> str:
    """'' when YAML 1.2 reads the plain scalar ``text`` as ``value`` (YAML 1.1's reading)
    too; otherwise what ``text`` is and what to write instead."""
    if not text or text[0] not in _MAYBE_DIFFERENT or \
            (isinstance(value, float) and not math.isfinite(value)):
        return ""
    other = read_by_yaml_12(text)
    if type(other) is type(value) and other == value:
        return ""
    if isinstance(value, str):
        return (f"'{text}' is text to this YAML 1.1 reader but the number {other} in YAML 1.2; "
                f"write {other} for the number, or quote it for text")
    if isinstance(value, bool):
        kind, write = "a boolean", "true or false"
    else:
        kind = ("a base-60 number" if ":" in text else
                "an underscore-grouped number" if "_" in text else
                "a binary number" if "0b" in text else
                "a signed hexadecimal number" if "x" in text else
                "an octal number (it starts with 0)")
        write = "the number meant in plain digits"
    shown = str(value).lower() if isinstance(value, bool) else str(value)
    there = f"the text '{other}'" if isinstance(other, str) else str(other)
    return (f"'{text}' is {kind} in YAML 1.1, read here as {shown}, but {there} in YAML 1.2; "
            f"write {write}, or quote it for text")


_TYPED = {f"tag:yaml.org,2002:{t}" for t in ("int", "float", "bool", "null")}


def _build(node: Any, path: Path, doc: Document, loader: yaml.constructor.SafeConstructor,
           problems: list[Problem]) -> Any:
    doc.places[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    plain = {yaml.MappingNode: "tag:yaml.org,2002:map", yaml.SequenceNode: "tag:yaml.org,2002:seq"}
    if type(node) in plain and node.tag != plain[type(node)]:
        problems.append(doc.problem(path, "YAML_TAG", f"tag '{node.tag}' is not allowed"))
        return None
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = (_scalar(key_node, path, doc, loader, problems)
                   if isinstance(key_node, yaml.ScalarNode) else None)
            where = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            if not isinstance(key, str):
                problems.append(Problem(doc.file, *where, "NON_STRING_KEY", json_path(path),
                                        "keys must be strings (quote it)"))
                continue
            if key in out:
                problems.append(Problem(doc.file, *where, "DUPLICATE_KEY",
                                        json_path(path + (key,)),
                                        f"key '{key}' appears more than once"))
                continue
            doc.key_places[path + (key,)] = where
            out[key] = _build(value_node, path + (key,), doc, loader, problems)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, path + (i,), doc, loader, problems)
                for i, item in enumerate(node.value)]
    if node.style in ("'", '"'):
        doc.quoted.add(path)
    value = _scalar(node, path, doc, loader, problems)
    different = (_why_different(node.value, value)
                 if not node.style and node.tag == _implicit_tag(node.value) else "")
    if node.tag in _TYPED and (node.style or node.tag != _implicit_tag(
            node.value)):  # a number, boolean or null by an explicit tag (!!int "4_000_0")
        problems.append(doc.problem(path, "YAML_TAG", f"tag '{node.tag}' is not allowed on "
                                    f"'{node.value[:40]}': write the value plainly"))
    elif different:
        problems.append(doc.problem(path, "YAML_AMBIGUOUS", different))
    elif isinstance(value, bytes):
        problems.append(doc.problem(path, "BAD_SCALAR", "binary values are not allowed"))
    elif isinstance(value, float) and not math.isfinite(value):
        problems.append(doc.problem(path, "NON_FINITE", "NaN and infinities are not allowed"))
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        problems.append(doc.problem(path, "INTEGER_RANGE",
                                    "integers beyond 2**53 lose precision in JSON"))
    return value
