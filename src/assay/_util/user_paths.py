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
    """A store URL with the path of a SQLite file expanded as :func:`user_path` does, and
    ``postgres://`` read as ``postgresql://`` (the spelling Heroku, Render and others put in
    ``DATABASE_URL``, which SQLAlchemy no longer takes); other URLs (PostgreSQL, a store in
    memory) as given."""
    if url.startswith(SQLITE_PREFIX + "~"):
        return SQLITE_PREFIX + str(user_path(url.removeprefix(SQLITE_PREFIX)))
    scheme, sep, rest = url.partition("://")
    dialect, plus, driver = scheme.partition("+")
    if sep and dialect.lower() == "postgres":
        return f"postgresql{plus}{driver}://{rest}"
    return url


ALLOW_OUTSIDE_FILES = "ASSAY_ALLOW_OUTSIDE_FILES"
"""Set to ``1``, a suite's ``file://`` references may name files outside its folder."""


def outside_folder(written: str, file: Path, folder: Path) -> str | None:
    """Why ``file`` (written ``written`` in a suite file, as ``file://written``) is not read:
    it resolves, symlinks followed, outside the suite's ``folder``, and
    ``ASSAY_ALLOW_OUTSIDE_FILES=1`` does not allow that; None when it may be read.

    A suite comes from wherever its repository does (a pull request, a shared project), and
    what it names is sent to a judge model, run as an evaluator or shown in a report:
    ``file://../../etc/passwd``, an absolute path or a link out of the folder would take a
    file of the machine along. The one rule of every ``file://`` a suite holds."""
    if os.environ.get(ALLOW_OUTSIDE_FILES) == "1":
        return None
    root = folder.resolve()
    try:
        resolved = file.resolve()
    except (OSError, RuntimeError):  # a loop of links: never inside
        resolved = None
    if resolved is not None and resolved.is_relative_to(root):
        return None
    shown = "a loop of symbolic links" if resolved is None else str(resolved)
    return (f"file://{written} is outside the suite's folder {root} (it is {shown}): keep "
            f"the file in the suite's folder, or set {ALLOW_OUTSIDE_FILES}=1 to allow files "
            "outside it")


__all__ = ["ALLOW_OUTSIDE_FILES", "outside_folder", "user_path", "user_url"]
