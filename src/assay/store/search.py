"""The text a search of a run's cases looks in, kept beside each case row.

Searching 100,000 cases by reading every case's and execution's JSON takes seconds; scanning
short rows takes a fraction of that. So each stored case has a row in ``case_search``: its
case id, input, expected output, the agent's output and error, each cut to
:data:`FIELD_CHARS` characters, folded by :func:`fold`. A search is a substring match of the
folded query in that text: the text is folded in Python when it is written and the query when
it is asked, so the database compares folded text alone (plain LIKE, the same on SQLite and
PostgreSQL, neither of which folds text as Unicode does). What lies beyond the first
:data:`FIELD_CHARS` characters of a field, and what the case row does not hold (tool calls,
retrieved context, scores), is not searched.

Migration ``0006`` fills it for cases stored before it, with this same function, and
``0013`` folds again the text that ``0006`` and the writes before ``0013`` only lower-cased. A row is
written with its case row and deleted with it (a resume that runs a case again writes it
anew).
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from typing import Any

import pydantic_core

from assay._util.redact import SECRETS
from assay.errors import ConfigError

FIELD_CHARS = 500
"""How much of each field is searched."""
SCRUB_MARGIN = 1000
"""Characters past :data:`FIELD_CHARS` that are scrubbed with a field: a secret (or a URL's
credentials) that starts within the part kept is found whole if it is no longer than this."""
SEPARATOR = "\n"


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return pydantic_core.to_json(value).decode()
    except (ValueError, TypeError, pydantic_core.PydanticSerializationError):
        return ""


def search_text(case_id: str, case_input: Any, expected: Any, output: Any,
                error: str | None) -> str:
    """The searched text of one case (see the module's docstring).

    A NUL character becomes a space: PostgreSQL refuses NUL in text, and an agent's output
    may hold one, which would otherwise fail the whole batch of results it was written with.
    Known secrets are hidden first (see :mod:`assay._util.redact`), before a field is cut or
    lower-cased, so neither a secret nor a part of one is kept.
    """
    fields = [_text(f)[:FIELD_CHARS + SCRUB_MARGIN]
              for f in (case_id, case_input, expected, output, error)]
    if SECRETS.found_in(SEPARATOR.join(fields)):  # rarely: asked once for all five fields
        fields = [SECRETS.scrub(f) for f in fields]
    return fold(SEPARATOR.join(f[:FIELD_CHARS] for f in fields)).replace("\x00", " ")


_CONTROL = re.compile("[\x00-\x1f\x7f]")


def check_query(query: str) -> None:
    """Refuse a query holding a control character (a ConfigError saying which): the searched
    text has its fields joined by newlines and NUL turned into a space, so ``\\n`` or NUL
    would match nearly every case, not the text asked for."""
    found = _CONTROL.search(query)
    if found is not None:
        raise ConfigError(f"the search holds the control character "
                          f"U+{ord(found.group(0)):04X} at position {found.start()}; a search "
                          "is plain text on one line", code="invalid_search")


def needle(query: str) -> str:
    """A user's query as it is matched against :func:`search_text` (checked by
    :func:`check_query` first)."""
    check_query(query)
    return fold(query)


def fold(text: str) -> str:
    """Text as every search compares it, caseless in Unicode's sense: compatibility forms
    normalised (NFKC: a full-width A, U+FF21, is ``a``, the ligature ``ﬁ`` is ``fi``), then case
    folded (``str.casefold``: ``Straße`` and ``STRASSE`` are both ``strasse``), then normalised
    again, as casefolding can undo NFKC. ``fold(fold(t)) == fold(t)``, and the fold of
    lower-cased text is the fold of the text (so text only lower-cased folds to the same).

    The one rule: the stored case text, the query, the run list's search and a comparison's
    case search all fold here, never in SQL; the static report's search in the browser folds
    with :func:`casefold_table`, made here from the same folding."""
    if text.isascii():  # NFKC leaves ASCII as it is, and casefold is lower() there
        return text.lower()
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


@functools.cache
def casefold_table() -> dict[str, str]:
    """The characters (in NFKC) whose case folding is not their lower case, each with its
    folding (``ß``: ``ss``, the final sigma: the sigma, Cherokee's small letters: their capitals): with
    it, a page folds as :func:`fold` does, lower-casing every other character (the static
    report searches its cases in the browser, where JavaScript has ``toLowerCase`` and
    NFKC but no case folding). Some 270 characters; computed once (a quarter of a second)."""
    return {c: c.casefold() for c in map(chr, range(0x80, sys.maxunicode + 1))
            if c.casefold() != c.lower() and unicodedata.is_normalized("NFKC", c)}


__all__ = ["FIELD_CHARS", "casefold_table", "check_query", "fold", "needle", "search_text"]
