"""Control characters made visible: the base of every safe text assay prints.

Text from suites, agents, models and databases may hold terminal escape sequences (clear the
screen, set the window title) or bidirectional overrides that reorder what is shown.
:func:`printable` shows each as an escape such as ``\\x1b``. It lives below every other
module so that any layer (the run store's last words at exit, too) can use it;
:mod:`assay.report.safe_text` builds the Rich-safe form on top of it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

CONTROL_CLASS = r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
"""What is shown as an escape: C0 and C1 controls (not tab or newline), bidirectional marks,
embeddings, overrides and isolates, zero-width characters, line and paragraph separators and
the byte-order mark, each of which hides or reorders text around it. Written with escapes
so the web UI's ``CONTROL`` (``report/static/app.js``) is this very class, character for
character (a test compares them)."""

_CONTROL = re.compile(CONTROL_CLASS)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: Any) -> str:
    """``value`` as text with every control character shown as an escape (``\\x1b``);
    newlines and tabs are kept. For plain output (no Rich markup parsing). Lists and
    mappings read as :func:`plain_text` writes them, never as Python reprs."""
    text = value if isinstance(value, str) else plain_text(value)
    return _CONTROL.sub(_visible, text)


def quoted(value: Any, limit: int = 80) -> str:
    """A value from outside (an id or a parameter a request gave, a name in a file) as a
    message quotes it: in quotes, cut to ``limit`` characters (``...`` after the closing
    quote says so), and every character that is not printable ASCII shown as its escape
    (``\\x1b``, ``\\u0430``, ``\\u200b``). A Cyrillic ``\\u0430`` for an ``a``, a zero-width
    space or a bidirectional control would otherwise make a message read as if it named what
    exists (``Run not found: 'abc'``) or reorder the message around it; escaped, the
    difference shows. The one quoting of every message that echoes such a value."""
    text = value if isinstance(value, str) else plain_text(value)
    return ascii(text[:limit]) + ("..." if len(text) > limit else "")


def plain_text(value: Any) -> str:
    """``value`` as a person reads it: a list of plain values as ``a, b, c``, a mapping of
    them as ``key: value, key: value``, anything nested as JSON; other values as ``str``
    gives them. Python's reprs (``{'pass': 4}``, ``['a']``) are for programmers, and a
    summary or a message that shows one reads as a bug."""
    if isinstance(value, Mapping):
        if all(_flat(v) for v in value.values()):
            return ", ".join(f"{_scalar(k)}: {_scalar(v)}" for k, v in value.items())
        return _json(value)
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        if all(_flat(v) for v in items):
            return ", ".join(_scalar(v) for v in items)
        return _json(list(items))
    return str(value)


def _flat(value: Any) -> bool:
    return not isinstance(value, Mapping | list | tuple | set | frozenset)


def _scalar(value: Any) -> str:
    return "none" if value is None else str(value)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
