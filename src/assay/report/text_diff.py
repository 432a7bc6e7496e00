"""The line diff of two texts, as the viewer shows it: the side-by-side view of a case in two
runs (baseline and candidate outputs) and a case page (expected and actual outputs).

One rule for both: Python's :mod:`difflib` over the texts' lines, the first
:data:`DIFF_LINES` of each. The page marks the words that changed within a changed block
(``report/static/app.js``, with the vendored jsdiff); which lines changed is decided here.
"""

from __future__ import annotations

import difflib
import json
from typing import Any, Literal

from pydantic import BaseModel

DIFF_LINES = 4_000
"""The most lines of each output the text diff compares."""


class DiffLine(BaseModel):
    """A line of the text diff of two outputs: in both, only the first's (``removed``) or
    only the second's (``added``)."""

    op: Literal["same", "removed", "added"]
    text: str


def as_text(value: Any) -> str:
    """A value as people read it: text as it is, anything else as indented JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def text_diff(before: str, after: str) -> tuple[list[DiffLine], bool]:
    """The line diff of two texts (their first :data:`DIFF_LINES` lines), and whether
    either had more."""
    a, b = before.splitlines(), after.splitlines()
    cut = len(a) > DIFF_LINES or len(b) > DIFF_LINES
    a, b = a[:DIFF_LINES], b[:DIFF_LINES]
    lines: list[DiffLine] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            lines += [DiffLine(op="same", text=x) for x in a[i1:i2]]
            continue
        lines += [DiffLine(op="removed", text=x) for x in a[i1:i2]]
        lines += [DiffLine(op="added", text=x) for x in b[j1:j2]]
    return lines, cut
