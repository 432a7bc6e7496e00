"""Data made safe for the terminal: the one way assay puts untrusted text on screen.

Case ids, suite names, agent output, judge rationales and error texts come from suites,
agents and models, so they may hold terminal escape sequences (clear the screen, set the
window title, hide text) or Rich markup (``[red]``, ``[/]``, ``[link=...]``) that Rich would
interpret, or crash on. :func:`for_terminal` turns any value into text that shows as written:
control characters (C0 but newline and tab, DEL, C1, and the bidirectional overrides that
reorder what is shown) become visible escapes such as ``\\x1b``, and markup is escaped. Known
secrets are hidden first (:mod:`assay._util.redact`): a judge's answer that quotes a key shows a
label in its place.
:func:`plain_for_terminal` is the same for a line printed with ``markup=False``.
:func:`make_console` builds consoles that do not turn ``:name:`` into emoji.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, ConsoleDimensions
from rich.markup import escape

from assay._util.control_chars import plain_text, printable
from assay._util.redact import scrub


def for_terminal(value: Any) -> str:
    """``value`` as Rich markup that prints exactly as written: control characters made
    visible, markup escaped, known secrets hidden. Use it for every piece of data put into a
    line printed with markup (Rich's default)."""
    return escape(plain_for_terminal(value))


def plain_for_terminal(value: Any) -> str:
    """``value`` for a line printed with ``markup=False``: control characters made visible,
    known secrets hidden, and nothing escaped, since nothing is read as markup there (a
    :func:`for_terminal` text would show a backslash before each ``[`` that opens a tag)."""
    return printable(scrub(value if isinstance(value, str) else plain_text(value)))


UNWRAPPED_WIDTH = 100_000
"""The width assay's consoles give output that is not a terminal: wider than any line."""


class _Console(Console):
    """A console that wraps only on a terminal.

    Rich wraps every line at the terminal's width, and at 80 columns (or ``$COLUMNS``)
    when the output is a pipe or a file, so a CI log or a file read by a tool got sentences,
    commands and ids cut mid-phrase. Output that is not a terminal has no width to fit: it
    is given one wider than any line, so each line stays whole (tables take their natural
    width), whatever ``$COLUMNS`` says. A width given when the console is made is kept.
    """

    def __init__(self, *args: Any, width: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, width=width, **kwargs)
        self._given_width = width

    @property
    def size(self) -> ConsoleDimensions:
        found = super().size
        if self._given_width is None and not self.is_terminal:
            return ConsoleDimensions(UNWRAPPED_WIDTH, found.height)
        return found

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


def make_console(stderr: bool = False) -> Console:
    """A console for assay's output: no emoji codes (``openai:x:`` stays text), and lines
    wrapped only on a terminal (see :class:`_Console`)."""
    return _Console(stderr=stderr, emoji=False)
