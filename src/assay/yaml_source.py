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
from typing import TYPE_CHECKING, Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, ScalarEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.reader import Reader, ReaderError
from yaml.resolver import Resolver

from assay.errors import EvaluationError
from assay.limits import DEPTH_EXPECTED, MAX_ALIAS_VALUES, MAX_DEPTH, depth_message

PathKey = tuple[Hashable, ...]
"""Where a value sits in a document: mapping keys and sequence indexes from the root."""


@dataclass(frozen=True)
class Mark:
    """A place in a file. ``column`` is None for formats located by line only (JSONL)."""

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


class _LimitExceeded(yaml.YAMLError):
    """A document over one of the loader's bounds; ``problem`` says where and which."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


class _Bounds:
    """A YAML composer that refuses documents nesting too deep or whose aliases expand past a
    bound (see :mod:`assay.limits`).

    Counting happens as nodes are composed, before anything is constructed or walked (both
    recursive): each anchored node remembers how many values it stands for and how deep it
    nests (aliases inside it included), and each alias adds those to where it is used.
    """

    if TYPE_CHECKING:  # the parser's (libyaml's or PyYAML's), later in the MRO
        def check_event(self, *choices: Any) -> bool: ...
        def peek_event(self) -> Any: ...

    def bound(self, file: str) -> None:
        self.file = file
        self.aliased = 0
        self.values = 0
        self.depth = 0
        self.deepest = 0
        self.sizes: dict[int, tuple[int, int]] = {}  # id(anchored node) -> (values, depth)
        self.open_anchors: set[str] = set()

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(AliasEvent):
            event = self.peek_event()
            anchor = event.anchor
            if anchor in self.open_anchors:
                raise self.limit(event.start_mark, f"alias *{anchor} refers to a value that "
                                 "contains it (a recursive structure)",
                                 "aliases only to values defined before, outside them")
            node = super().compose_node(parent, index)  # type: ignore[misc]  # undefined: located
            size, depth = self.sizes.get(id(node), (1, 0))
            self.aliased += size
            self.values += size
            if self.aliased > MAX_ALIAS_VALUES:
                raise self.limit(event.start_mark, f"YAML aliases expand the document to more "
                                 f"than {MAX_ALIAS_VALUES:,} values (an alias bomb?)",
                                 "anchored values reused fewer times, or written out")
            self.reach(self.depth + depth, event.start_mark)
            return node
        event = self.peek_event()
        anchor = event.anchor
        before, outer_deepest = self.values, self.deepest
        self.values += 1
        collection = not isinstance(event, ScalarEvent)
        if collection:
            self.depth += 1
            self.reach(self.depth, event.start_mark)
        self.deepest = self.depth
        if anchor is not None:
            self.open_anchors.add(anchor)
        node = super().compose_node(parent, index)  # type: ignore[misc]
        if anchor is not None:
            self.open_anchors.discard(anchor)
            self.sizes[id(node)] = (self.values - before,
                                    self.deepest - self.depth + (1 if collection else 0))
        if collection:
            self.depth -= 1
        self.deepest = max(outer_deepest, self.deepest)
        return node

    def reach(self, depth: int, mark: Any) -> None:
        """Note that values nest ``depth`` deep here; past the bound, a located error."""
        self.deepest = max(self.deepest, depth)
        if depth > MAX_DEPTH:
            raise self.limit(mark, depth_message(MAX_DEPTH), DEPTH_EXPECTED)

    def limit(self, mark: Any, message: str, expected: str) -> _LimitExceeded:
        return _LimitExceeded(Problem(self.file, mark.line + 1, mark.column + 1, message,
                                      expected))


class _BoundedLoader(_Bounds, yaml.SafeLoader):
    """The bounded composer over PyYAML's pure-Python scanner and parser."""

    def __init__(self, text: str, file: str) -> None:
        yaml.SafeLoader.__init__(self, text)
        self.bound(file)


try:
    from yaml.cyaml import CParser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    CParser = None  # type: ignore[misc,assignment]

if CParser is not None:
    class _FastBoundedLoader(_Bounds, Composer, CParser, SafeConstructor, Resolver):
        """The bounded composer over libyaml's scanner and parser (about 20 times faster
        than PyYAML's own on a large suite); composing stays in Python, so the bounds and
        their located errors are the same."""

        def __init__(self, text: str, file: str) -> None:
            Reader(text)  # a character YAML does not allow: a located ReaderError, as before
            CParser.__init__(self, text)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self.bound(file)

    _Loader: type[Any] = _FastBoundedLoader
else:  # pragma: no cover - PyYAML built without libyaml
    _Loader = _BoundedLoader


def load_yaml(text: str, file: str) -> Loaded:
    """Parse one YAML document into plain values plus where each was written.

    Raises :class:`YamlSyntaxError` (located) for text that is not YAML. Duplicate keys, which
    YAML parsers silently resolve to the last one, are reported in ``Loaded.problems``.
    """
    try:
        return _load(text, file, _Loader)
    except YamlSyntaxError:
        if _Loader is _BoundedLoader:
            raise
    # libyaml words some syntax errors differently: broken text is parsed again by PyYAML's
    # own parser, so a problem reads the same wherever assay runs (and only broken files pay).
    return _load(text, file, _BoundedLoader)


def _load(text: str, file: str, kind: type[Any]) -> Loaded:
    try:
        # The reader checks for unprintable characters as soon as the loader is built.
        loader = kind(text, file)
    except ReaderError as exc:
        raise YamlSyntaxError(_reader_problem(exc, text, file)) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return Loaded(None, SourceMap(Mark(file, 1, 1)))
        data = loader.construct_object(node, deep=True)
        source = SourceMap(_mark(file, node))
        source.values[()] = source.root
        problems: list[Problem] = []
        _walk(loader, node, (), file, source, problems)
        return Loaded(data, source, problems)
    except _LimitExceeded as exc:
        raise YamlSyntaxError(exc.problem) from None
    except yaml.MarkedYAMLError as exc:
        raise YamlSyntaxError(_syntax_problem(exc, file)) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(Problem(file, None, None, f"invalid YAML: {exc}")) from None
    finally:
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


def _walk(loader: yaml.SafeLoader, node: Node, path: PathKey, file: str,
          source: SourceMap, problems: list[Problem]) -> None:
    if isinstance(node, MappingNode):
        seen: dict[Hashable, Mark] = {}
        for key_node, value_node in node.value:
            key = _key(loader, key_node)
            key_mark = _mark(file, key_node)
            if key in seen:
                first = seen[key]
                problems.append(Problem.at(
                    key_mark, f"duplicate key {key!r} (first at line {first.line}); "
                    "the last one would silently win", "each key once per mapping"))
            seen[key] = key_mark
            child = (*path, key)
            source.keys[child] = key_mark
            source.values[child] = _mark(file, value_node)
            _walk(loader, value_node, child, file, source, problems)
    elif isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            child = (*path, index)
            source.keys[child] = source.values[child] = _mark(file, item)
            _walk(loader, item, child, file, source, problems)


def _key(loader: yaml.SafeLoader, node: Node) -> Hashable:
    if isinstance(node, ScalarNode):
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
