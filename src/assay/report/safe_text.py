"""Data made safe for the terminal: the one way assay puts untrusted text on screen.

Case ids, suite names, agent output, judge rationales and error texts come from suites,
agents and models, so they may hold terminal escape sequences (clear the screen, set the
window title, hide text) or Rich markup (``[red]``, ``[/]``, ``[link=...]``) that Rich would
interpret, or crash on. :func:`for_terminal` turns any value into text that shows as written:
control characters (C0 but newline and tab, DEL, C1, and the bidirectional overrides that
reorder what is shown) become visible escapes such as ``\\x1b``, and markup is escaped. Known
secrets are hidden first (:mod:`assay._util.redact`): a judge's answer that quotes a key shows a
label in its place.
:func:`make_console` builds consoles that do not turn ``:name:`` into emoji.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from assay._util.control_chars import printable
from assay._util.redact import scrub


def for_terminal(value: Any) -> str:
    """``value`` as Rich markup that prints exactly as written: control characters made
    visible, markup escaped, known secrets hidden. Use it for every piece of data put into a
    printed line."""
    return escape(printable(scrub(value if isinstance(value, str) else str(value))))


def make_console(stderr: bool = False) -> Console:
    """A console for assay's output: no emoji codes (``openai:x:`` stays text)."""
    return Console(stderr=stderr, emoji=False)
