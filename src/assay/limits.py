"""Bounds on the shape of suite files, so hostile input fails fast and small.

Everything after parsing (locating, checking, fingerprinting, storing, judging) walks a
suite's values, much of it recursively. A file that nests values thousands deep, or whose
YAML aliases stand for billions of values, would otherwise end in a ``RecursionError`` or
exhaust memory long after it was read. The bounds are far above what a suite needs.
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 100
"""How deep lists and mappings may nest in a suite file (a case, an expected output...)."""

MAX_ALIAS_VALUES = 250_000
"""How many values YAML aliases (``*name``) may add to a document in all. Each alias stands
for a copy of its anchored value, so a few hundred bytes of nested aliases can stand for
billions of values ("billion laughs")."""

DEPTH_EXPECTED = f"lists and mappings nested at most {MAX_DEPTH} deep"


def depth_message(limit: int = MAX_DEPTH) -> str:
    return f"values nest more than {limit} deep"


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether lists and mappings in ``value`` nest more than ``limit`` deep.

    Iterative, so it answers for values too deep for any recursive walk.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
