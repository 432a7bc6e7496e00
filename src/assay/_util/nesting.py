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

    Iterative, so it answers for values too deep for any recursive walk. Only containers
    are stacked: this runs on every case of a suite, and most values are text.
    """
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
    return False
