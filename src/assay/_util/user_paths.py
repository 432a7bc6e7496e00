"""Paths a user gave (a command's option or argument, a Python call's argument, a store URL),
as assay reads them: ``~`` and ``~user`` expanded, the same way for every one.

A shell expands ``~`` only at the start of a word, so ``--store ~/runs.db`` reaches assay
expanded but ``--store=~/runs.db``, ``store="~/runs.db"`` from Python or ``sqlite:///~/x.db``
do not; taken literally they made a folder named ``~``. Standard library only, usable from
any layer.
"""

from __future__ import annotations

import os
from pathlib import Path

SQLITE_PREFIX = "sqlite:///"


def user_path(path: str | os.PathLike[str]) -> Path:
    """``path`` with a leading ``~`` (or ``~user``) expanded to that home directory."""
    return Path(path).expanduser()


def user_url(url: str) -> str:
    """A store URL with the path of a SQLite file expanded as :func:`user_path` does; other
    URLs (PostgreSQL, a store in memory) as given."""
    if url.startswith(SQLITE_PREFIX + "~"):
        return SQLITE_PREFIX + str(user_path(url.removeprefix(SQLITE_PREFIX)))
    return url


__all__ = ["user_path", "user_url"]
