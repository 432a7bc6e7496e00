"""Named, append-only schema migrations.

Each migration runs once and is recorded by name in ``assay_migrations``. Never edit or reorder
one that has shipped: add a new one at the end. Names, not numbers, are the identity, so two
branches adding migrations cannot collide on a number.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import Connection, select

from assay.store import schema

Migration = Callable[[Connection], None]
MIGRATIONS: list[tuple[str, Migration]] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append((fn.__name__, fn))
    return fn


@migration
def m001_initial_tables(conn: Connection) -> None:
    for table in (schema.runs, schema.executions, schema.scores, schema.case_results):
        table.create(conn, checkfirst=True)


def migrate(conn: Connection) -> list[str]:
    """Apply every migration not yet applied; return the names applied now."""
    schema.migrations_table.create(conn, checkfirst=True)
    done = {row[0] for row in conn.execute(select(schema.migrations_table.c.name))}
    applied = []
    for name, fn in MIGRATIONS:
        if name in done:
            continue
        fn(conn)
        conn.execute(schema.migrations_table.insert().values(name=name, applied_at=time.time()))
        applied.append(name)
    return applied
