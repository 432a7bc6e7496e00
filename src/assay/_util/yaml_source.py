"""YAML that remembers where everything was written.

A suite file is checked after it is parsed, so every complaint must still be able to say
``file:line:column``. :func:`load_yaml` builds plain Python values (dicts, lists, scalars)
and, beside them, a :class:`SourceMap` from each value's path (``("evalcases", 2, "id")``)
to the line and column of its key or sequence item. Checking code works on plain values and
asks the map where a path was written. Line and column are 1-based, as editors show them.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.reader import Reader, ReaderError

from assay._util.jsondata import unpaired_surrogate
from assay._util.limits import (
    DEPTH_EXPECTED,
    MAX_ALIAS_VALUES,
    MAX_DEPTH,
    YAML_SURROGATE_EXPECTED,
    depth_message,
    surrogate_message,
)
from assay.errors import EvaluationError

PathKey = tuple[Hashable, ...]
"""Where a value sits in a document: mapping keys and sequence indexes from the root."""


class Mark(NamedTuple):
    """A place in a file. ``column`` is None for formats located by line only (JSONL).

    A named tuple, not a dataclass: a large suite makes one per key and value, and a tuple is
    made in half the time."""

    file: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        if self.line is None:
            return self.file
        if self.column is None:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a file, located, saying what was expected.

    Renders as ``file:line:col: message (expected: ...)``, the shape editors and CI annotate.
    """

    file: str
    line: int | None
    column: int | None
    message: str
    expected: str | None = None

    @classmethod
    def at(cls, mark: Mark, message: str, expected: str | None = None) -> Problem:
        return cls(mark.file, mark.line, mark.column, message, expected)

    def __str__(self) -> str:
        where = str(Mark(self.file, self.line, self.column))
        tail = f" (expected: {self.expected})" if self.expected else ""
        return f"{where}: {self.message}{tail}"

    def sort_key(self) -> tuple[str, int, int]:
        return (self.file, self.line or 0, self.column or 0)


@dataclass
class SourceMap:
    """Path -> where it was written. ``keys`` holds a mapping key's (or sequence item's)
    position; ``values`` holds the position of the value itself, for complaints about it."""

    root: Mark
    keys: dict[PathKey, Mark] = field(default_factory=dict)
    values: dict[PathKey, Mark] = field(default_factory=dict)

    def locate(self, path: PathKey, value: bool = False) -> Mark:
        """The mark of ``path``, else of its nearest ancestor that has one."""
        table = self.values if value else self.keys
        for end in range(len(path), 0, -1):
            prefix = path[:end]
            mark = table.get(prefix) or self.keys.get(prefix)
            if mark is not None:
                return mark
        return self.root


@dataclass
class Loaded:
    """A parsed document with its source map and the problems parsing already found."""

    data: Any
    source: SourceMap
    problems: list[Problem] = field(default_factory=list)


class YamlSyntaxError(EvaluationError):
    """The text is not YAML; ``problem`` says where and why."""

    def __init__(self, problem: Problem) -> None:
        super().__init__("invalid_yaml", str(problem))
        self.problem = problem


def _check_bounds(parser: Any, file: str) -> None:
    """Refuse a document nesting too deep or whose aliases expand past a bound (see
    :mod:`assay._util.limits`), from its parse events, before anything is composed.

    Composing, constructing and walking are all recursive, so the check comes first and reads
    the events of a parser of its own: each anchored value remembers how many values it stands
    for and how deep it nests (aliases inside it included), and each alias adds those where it
    is used. The check stops at the end of the first document, or at an alias to an anchor
    never defined: the composer then reports what is wrong, as it would without the check.
    """
    values = aliased = depth = deepest = 0
    sizes: dict[str, tuple[int, int]] = {}  # anchor -> (values, depth) of its value
    frames: list[tuple[int, int, str | None]] = []  # open collections: (values, deepest, anchor)
    open_anchors: set[str] = set()

    def limit(mark: Any, message: str, expected: str) -> _LimitExceeded:
        return _LimitExceeded(Problem(file, mark.line + 1, mark.column + 1, message, expected))

    get_event = parser.get_event
    while True:
        event = get_event()
        kind = type(event)
        if kind is ScalarEvent:
            values += 1
            if event.anchor is not None:
                sizes[event.anchor] = (1, 0)
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            frames.append((values, deepest, event.anchor))
            values += 1
            depth += 1
            if depth > MAX_DEPTH:
                raise limit(event.start_mark, depth_message(MAX_DEPTH), DEPTH_EXPECTED)
            deepest = depth
            if event.anchor is not None:
                open_anchors.add(event.anchor)
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            before, outer_deepest, anchor = frames.pop()
            if anchor is not None:
                open_anchors.discard(anchor)
                sizes[anchor] = (values - before, deepest - depth + 1)
            depth -= 1
            deepest = max(outer_deepest, deepest)
        elif kind is AliasEvent:
            anchor = event.anchor
            if anchor in open_anchors:
                raise limit(event.start_mark, f"alias *{anchor} refers to a value that "
                            "contains it (a recursive structure)",
                            "aliases only to values defined before, outside them")
            if anchor not in sizes:
                return  # undefined: the composer says so, located
            size, nested = sizes[anchor]
            aliased += size
            values += size
            if aliased > MAX_ALIAS_VALUES:
                raise limit(event.start_mark, f"YAML aliases expand the document to more "
                            f"than {MAX_ALIAS_VALUES:,} values (an alias bomb?)",
                            "anchored values reused fewer times, or written out")
            if depth + nested > MAX_DEPTH:
                raise limit(event.start_mark, depth_message(MAX_DEPTH), DEPTH_EXPECTED)
            deepest = max(deepest, depth + nested)
        elif kind is DocumentEndEvent or kind is StreamEndEvent:
            return


def _cannot_exceed_bounds(text: str) -> bool:
    """Whether ``text`` is sure to be within the bounds :func:`_check_bounds` enforces,
    judged from its characters alone, so the pass over its parse events can be skipped.

    That pass costs as much as composing: for a 10,000-case suite, a tenth of the load. Most
    suites are block YAML with a few flow collections and no aliases, and for those the
    answer is already in the text:

    - Without a ``*`` there is no alias, so nothing expands.
    - A block collection nested in another starts on a later line, indented further, or
      after ``- ``, ``? `` or ``: `` at the start of its line. So the collections that
      start on a line are at most as deep as the run of spaces, tabs, ``-``, ``?`` and
      ``:`` that begins the line, plus the root and a compact mapping after that run.
    - Each flow collection needs a ``[`` or ``{``. A single pair in a flow sequence
      (``[a: b]``) adds a mapping without a brace, so each bracket counts twice.

    The sum over-counts, and never under-counts. When it could reach the bound (or an
    alias is possible) the events are checked as before.
    """
    if "*" in text:
        return False
    brackets = 2 * (text.count("[") + text.count("{"))
    if brackets + 3 > MAX_DEPTH:
        return False
    lead = max((len(line) - len(line.lstrip(" \t-?:")) for line in text.splitlines()),
               default=0)
    return lead + 3 + brackets <= MAX_DEPTH


class _LimitExceeded(yaml.YAMLError):
    """A document over one of the loader's bounds; ``problem`` says where and which."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


_PyLoader: type[Any] = yaml.SafeLoader
"""PyYAML's pure-Python scanner, parser and composer: the words of every syntax error."""

_CSafeLoader: type[Any] | None = getattr(yaml, "CSafeLoader", None)
"""libyaml's scanner, parser and composer (the composer too: composing in Python was half of
loading a 10,000-case suite), with PyYAML's safe constructor; about 20 times faster."""

_Loader: type[Any] = _CSafeLoader or _PyLoader


def load_yaml(text: str, file: str) -> Loaded:
    """Parse one YAML document into plain values plus where each was written.

    Raises :class:`YamlSyntaxError` (located) for text that is not YAML. Duplicate keys, which
    YAML parsers silently resolve to the last one, are reported in ``Loaded.problems``.
    """
    try:
        return _load(text, file, _Loader)
    except YamlSyntaxError:
        if _Loader is _PyLoader:
            raise
    # libyaml words some syntax errors differently: broken text is parsed again by PyYAML's
    # own parser, so a problem reads the same wherever assay runs (and only broken files pay).
    return _load(text, file, _PyLoader)


def _load(text: str, file: str, kind: type[Any]) -> Loaded:
    try:
        Reader(text)  # a character YAML does not allow: a located ReaderError
    except ReaderError as exc:
        raise YamlSyntaxError(_reader_problem(exc, text, file)) from None
    checker = None if _cannot_exceed_bounds(text) else kind(text)
    loader = kind(text)
    try:
        if checker is not None:
            _check_bounds(checker, file)
        node = loader.get_single_node()
        if node is None:
            return Loaded(None, SourceMap(Mark(file, 1, 1)))
        source = SourceMap(_mark(file, node))
        source.values[()] = source.root
        problems: list[Problem] = []
        data = _Walker(loader, file, source, problems).walk(node, ())
        return Loaded(data, source, problems)
    except _LimitExceeded as exc:
        raise YamlSyntaxError(exc.problem) from None
    except yaml.MarkedYAMLError as exc:
        raise YamlSyntaxError(_syntax_problem(exc, file)) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(Problem(file, None, None, f"invalid YAML: {exc}")) from None
    finally:
        if checker is not None:
            checker.dispose()
        loader.dispose()


def load_yaml_file(path: Path, display: str | None = None) -> Loaded:
    """Read and parse a file; ``display`` is the name used in problems (default: the path)."""
    name = display or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise YamlSyntaxError(Problem(name, None, None, f"not UTF-8 text: {exc.reason}")) \
            from None
    except OSError as exc:
        raise YamlSyntaxError(
            Problem(name, None, None, f"cannot read file: {exc.strerror or exc}")) from None
    return load_yaml(text, name)


def _mark(file: str, node: Node) -> Mark:
    return Mark(file, node.start_mark.line + 1, node.start_mark.column + 1)


_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"
_UNBUILT = object()


class _Walker:
    """One pass over the composed nodes that builds the plain values and, beside them, the
    source map and the duplicate-key problems.

    Plain mappings (merge keys flattened first, as the constructor does), sequences and strings
    are built here; anything else (another tag, a key that is not a scalar) is handed to
    PyYAML's safe constructor, which builds it
    exactly as ``yaml.safe_load`` would. Built values are shared with the constructor, so a
    value reached twice through an alias is one object, as with the constructor alone.
    Building and locating in one pass took a 10,000-case suite from two walks to one.
    """

    def __init__(self, loader: Any, file: str, source: SourceMap,
                 problems: list[Problem]) -> None:
        self.loader = loader
        self.file = file
        self.source = source
        self.problems = problems
        self.built: dict[Node, Any] = loader.constructed_objects

    def walk(self, node: Node, path: PathKey, build: bool = True) -> Any:
        """The value of ``node`` (when ``build``), recording where everything in it is."""
        value: Any = None
        merged: set[int] = set()  # key nodes a merge (<<) brought in: theirs to override
        if type(node) is MappingNode and any(k.tag == _MERGE for k, _ in node.value):
            own = {id(k) for k, _ in node.value}
            self.loader.flatten_mapping(node)  # as the constructor would: merged pairs first
            merged = {id(k) for k, _ in node.value if id(k) not in own}
        if build:
            value = self.built.get(node, _UNBUILT)
            if value is not _UNBUILT:
                build = False  # an alias of a value built already: only locate its parts
            elif type(node) is ScalarNode:
                if node.tag == _STR:
                    return node.value if node.value.isascii() else self._text(node)
                return self.loader.construct_object(node)
            elif not _plain(node):
                value = self.loader.construct_object(node, deep=True)
                build = False
        if type(node) is MappingNode:
            mapping: dict[Hashable, Any] = {}
            seen: dict[Hashable, tuple[Mark, bool]] = {}
            keys, values, file = self.source.keys, self.source.values, self.file
            for key_node, value_node in node.value:
                if type(key_node) is ScalarNode and key_node.tag == _STR and \
                        not key_node.value.isascii():
                    self._text(key_node)
                key = _key(self.loader, key_node)
                key_mark = _mark(file, key_node)
                is_merged = id(key_node) in merged
                if key in seen and not (seen[key][1] or is_merged):
                    first = seen[key][0]
                    self.problems.append(Problem.at(
                        key_mark, f"duplicate key {key!r} (first at line {first.line}); "
                        "the last one would silently win", "each key once per mapping"))
                seen[key] = (key_mark, is_merged)
                child = (*path, key)
                keys[child] = key_mark
                values[child] = _mark(file, value_node)
                item = self.walk(value_node, child, build)
                if build:
                    mapping[key] = item
            if build:
                self.built[node] = value = mapping
        elif type(node) is SequenceNode:
            items: list[Any] = []
            keys, values, file = self.source.keys, self.source.values, self.file
            for index, item_node in enumerate(node.value):
                child = (*path, index)
                keys[child] = values[child] = _mark(file, item_node)
                item = self.walk(item_node, child, build)
                if build:
                    items.append(item)
            if build:
                self.built[node] = value = items
        return value

    def _text(self, node: ScalarNode) -> str:
        """A text scalar's value; one holding an unpaired surrogate (a ``"\\ud800"``
        escape) stops the file, located, as a character YAML does not allow does: no such
        text can be encoded, so every later step (a fingerprint, the store, a report) would
        fail on it with a traceback."""
        unpaired = unpaired_surrogate(node.value)
        if unpaired is not None:
            raise _LimitExceeded(Problem.at(_mark(self.file, node), surrogate_message(unpaired),
                                            YAML_SURROGATE_EXPECTED))
        return str(node.value)


def _plain(node: Node) -> bool:
    """A collection this module builds itself: a plain sequence, or a plain mapping whose keys
    are scalars (merges already flattened)."""
    if type(node) is SequenceNode:
        return node.tag == _SEQ
    return (type(node) is MappingNode and node.tag == _MAP
            and all(type(k) is ScalarNode for k, _ in node.value))


def _key(loader: Any, node: Node) -> Hashable:
    if type(node) is ScalarNode:
        if node.tag == _STR:
            return node.value
        value = loader.construct_object(node)
        return value if isinstance(value, Hashable) else str(value)
    return f"<{type(node).__name__} key at line {node.start_mark.line + 1}>"


def _reader_problem(exc: ReaderError, text: str, file: str) -> Problem:
    """A character YAML does not allow (a control character, say), located."""
    before = text[:exc.position]
    line = before.count("\n") + 1
    column = exc.position - (before.rfind("\n") + 1) + 1
    character = exc.character if isinstance(exc.character, int) else ord(str(exc.character))
    return Problem(file, line, column, f"invalid YAML: character U+{character:04X} is not "
                   "allowed in YAML", "printable text (write control characters as escapes "
                   "inside double-quoted strings)")


def _syntax_problem(exc: yaml.MarkedYAMLError, file: str) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    what = exc.problem or "invalid YAML"
    if exc.context:
        what = f"{what} ({exc.context}"
        if exc.context_mark is not None and exc.context_mark is not mark:
            what += f" at line {exc.context_mark.line + 1}"
        what += ")"
    if mark is None:
        return Problem(file, None, None, f"invalid YAML: {what}")
    return Problem(file, mark.line + 1, mark.column + 1, f"invalid YAML: {what}")


class ProblemLog:
    """Collects located problems while a document is checked, so all are found in one pass."""

    def __init__(self, source: SourceMap) -> None:
        self.source = source
        self.problems: list[Problem] = []

    def add(self, path: PathKey, message: str, expected: str | None = None, *,
            value: bool = False) -> None:
        """Record a problem at ``path`` (its value's position when ``value``)."""
        self.problems.append(Problem.at(self.source.locate(path, value), message, expected))

    def extend(self, problems: list[Problem]) -> None:
        self.problems.extend(problems)

    def sorted(self) -> list[Problem]:
        """Problems in file order, each reported once."""
        unique = dict.fromkeys(self.problems)
        return sorted(unique, key=Problem.sort_key)

    def __len__(self) -> int:
        return len(self.problems)
