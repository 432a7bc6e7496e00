"""YAML that assay writes (converted suites, results files, drafted rubrics, aligned judges),
read back as the very values written.

PyYAML writes text as people write it (``allow_unicode``), but one character does not come
back: NEL (U+0085, the ``…`` of a Windows-1252 text read as Latin-1) is written as itself
inside a quoted or block scalar, and the reader takes it for a line break, so ``a\\x85b`` is
read back as ``a b`` (a case id, an input, an agent's output changed without a word). Text
holding it is written double-quoted, where the writer escapes it (``\\N``).
"""

from __future__ import annotations

from typing import Any

import yaml

STR_TAG = "tag:yaml.org,2002:str"
UNREADABLE = "\x85"
"""The characters a YAML reader does not read back as written unless escaped."""


def text_node(dumper: yaml.SafeDumper, value: str, style: str | None = None) -> yaml.ScalarNode:
    """``value`` as a scalar in ``style`` (None: the writer's choice), double-quoted when it
    holds a character only an escape keeps."""
    if any(c in value for c in UNREADABLE):
        style = '"'
    return dumper.represent_scalar(STR_TAG, value, style=style)


class Dumper(yaml.SafeDumper):
    """The safe dumper (plain data only, no tags), its text read back as written."""


Dumper.add_representer(str, text_node)


def dump(data: Any, *, width: float = 100, dumper: type[yaml.SafeDumper] = Dumper) -> str:
    """``data`` as YAML in the order given, any text as itself (``allow_unicode``)."""
    return yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True,
                     width=width)
