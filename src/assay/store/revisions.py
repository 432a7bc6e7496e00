"""The store schema's revisions, read from the migration files' names: what a store's recorded
revision is checked against, with no import of SQLAlchemy or Alembic (see
:mod:`assay.store.sqlite_direct`)."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

VERSION_TABLE = "assay_alembic_version"
"""Alembic's version table, under a name of its own so that a database shared with another
Alembic-managed application keeps the two apart."""

SCRIPT_DIR = Path(__file__).parent / "migrations"
VERSIONS_DIR = SCRIPT_DIR / "versions"
_REVISION_FILE = re.compile(r"^(\d{4}_[a-z0-9_]+)\.py$")


@functools.cache
def revisions() -> tuple[str, ...]:
    """Every revision this version of assay knows, oldest first, read from the file names
    (importing the scripts would cost what the fast path avoids)."""
    found = (_REVISION_FILE.match(name) for name in os.listdir(VERSIONS_DIR))
    return tuple(sorted(m.group(1) for m in found if m))
