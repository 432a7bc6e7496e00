"""Where a line of a JSON Lines file ends: the one rule every JSONL reader of assay's uses."""

from __future__ import annotations

from collections.abc import Iterator


def json_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of each non-blank line of JSON Lines text.

    Only a newline ends a line: :meth:`str.splitlines` would also cut a record at a U+2028,
    a U+2029 or a NEL inside one of its strings, which JSON allows unescaped and JSON
    writers (assay's own results among them) leave so. A CRLF's carriage return stays at the
    end of its line, where JSON reads it as white space."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield number, line
