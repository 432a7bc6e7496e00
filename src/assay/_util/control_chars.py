"""Control characters made visible: the base of every safe text assay prints.

Text from suites, agents, models and databases may hold terminal escape sequences (clear the
screen, set the window title) or bidirectional overrides that reorder what is shown.
:func:`printable` shows each as an escape such as ``\\x1b``. It lives below every other
module so that any layer (the run store's last words at exit, too) can use it;
:mod:`assay.report.safe_text` builds the Rich-safe form on top of it.
"""

from __future__ import annotations

import re
from typing import Any

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: Any) -> str:
    """``value`` as text with every control character shown as an escape (``\\x1b``);
    newlines and tabs are kept. For plain output (no Rich markup parsing)."""
    text = value if isinstance(value, str) else str(value)
    return _CONTROL.sub(_visible, text)
