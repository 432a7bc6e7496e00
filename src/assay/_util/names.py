"""The name a user most likely meant, for errors that name an unknown one."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'contains'?)`` when one of ``known`` is close to ``name``, else ``''``:
    a list of fifty names does not show which one a typo was of."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""
