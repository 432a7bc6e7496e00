"""The run store's schema, managed by Alembic: named, append-only migrations.

Each file in ``versions/`` is one migration whose revision id is its file name without
``.py``: a four-digit number, so that the ids sort in the order they apply, and a name that
says what it does (``0001_initial_tables``). Never edit, rename or reorder a migration that has
shipped: add the next number, with ``down_revision`` set to the previous id. Migrations only
move forward. Ids stay within 32 characters, the width of Alembic's version column.

Opening a store asks for its recorded revision with one plain query. Alembic takes a good part
of a second to import, so it is loaded only when the schema actually has to change: a current
store opens at the cost of that query. The upgrade runs in one transaction that first takes a
lock (``BEGIN IMMEDIATE`` on SQLite, a transaction-scoped advisory lock on PostgreSQL) and reads
the revision again once it holds it, so any number of processes can open a new store at the
same moment: one migrates, the others wait for it and find nothing left to do.

A database with no tables at all is not migrated step by step: under the same lock its tables
are created from :mod:`assay.store.schema` and the newest revision is recorded, as Alembic's
``stamp`` would. That is what every first run on a new store does, and importing Alembic and
replaying every migration cost it a third of a second. A test replays the migrations on an
empty database and checks that both ways give the same schema.
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    inspect,
    text,
)
from sqlalchemy.exc import OperationalError, ProgrammingError

from assay.store import revisions as _revisions
from assay.store import schema
from assay.store.errors import StoreError
from assay.store.revisions import SCRIPT_DIR, VERSION_TABLE, VERSIONS_DIR

__all__ = ["SCRIPT_DIR", "VERSIONS_DIR", "VERSION_TABLE", "ensure_schema",
           "recorded_revisions", "revisions"]

PG_LOCK_KEY = 0x6173736179_0001
"""The key of the PostgreSQL advisory lock held while the schema is upgraded."""


def revisions() -> list[str]:
    """Every revision this version of assay knows, oldest first (see
    :func:`assay.store.revisions.revisions`)."""
    return list(_revisions.revisions())


def recorded_revisions(conn: Connection) -> tuple[str, ...]:
    """The revisions recorded in the store; empty when it has no version table yet.

    Call it on a connection of its own: on PostgreSQL the failed query of a store without a
    version table spoils the transaction it runs in.
    """
    try:
        rows = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
    except (OperationalError, ProgrammingError):
        return ()
    return tuple(sorted(rows))


def ensure_schema(engine: Engine, *, replay: bool = False) -> list[str]:
    """Bring the store's schema up to date; return the revisions applied now (usually none).

    ``replay`` runs every migration even on an empty database, instead of creating the tables
    from the schema (for the test that compares the two).

    Raises :class:`StoreError` when the store was written by a newer assay, and lets
    SQLAlchemy's errors (an unreachable server, a read-only file) through for the caller to
    report with the store's name.
    """
    known = revisions()
    with engine.connect() as conn:
        found = recorded_revisions(conn)
    if found == (known[-1],):
        return []
    _check_known(found, known)
    if not found and not replay:
        with engine.connect() as conn:
            _lock(conn)
            if not inspect(conn).get_table_names():
                _create_at_head(conn, known[-1])
                conn.commit()
                return known
            conn.rollback()  # not empty after all (or another process got there first)
    return _upgrade(engine, known)


def _create_at_head(conn: Connection, head: str) -> None:
    """Create every table of an empty database and record ``head`` as Alembic would."""
    schema.metadata.create_all(conn)
    version = Table(VERSION_TABLE, MetaData(),
                    Column("version_num", String(32), nullable=False),
                    PrimaryKeyConstraint("version_num", name=f"{VERSION_TABLE}_pkc"))
    version.create(conn)
    conn.execute(version.insert().values(version_num=head))


def _check_known(found: tuple[str, ...], known: list[str]) -> None:
    unknown = [rev for rev in found if rev not in known]
    if unknown:
        raise StoreError(
            f"its schema is at revision {', '.join(unknown)}, written by a newer version of "
            f"assay than this one (which knows up to {known[-1]}); upgrade assay to use it")


def _upgrade(engine: Engine, known: list[str]) -> list[str]:
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext
    from alembic.util.exc import CommandError

    with engine.connect() as conn:
        _lock(conn)
        context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        before = tuple(sorted(context.get_current_heads()))
        _check_known(before, known)
        if before == (known[-1],):  # another process migrated while this one waited
            conn.rollback()
            return []
        config = Config()
        config.set_main_option("script_location", str(SCRIPT_DIR))
        config.set_main_option("path_separator", "os")
        config.attributes["connection"] = conn
        try:
            command.upgrade(config, "head")
        except CommandError as exc:
            raise StoreError(f"its schema could not be upgraded: {exc}") from None
        conn.commit()
    start = known.index(before[0]) + 1 if before else 0
    return known[start:]


def _lock(conn: Connection) -> None:
    """Open the migration's transaction holding a lock that other migrating processes wait on;
    it is released when the transaction ends."""
    if conn.dialect.name == "sqlite":
        # Takes SQLite's write lock now; the others wait (busy_timeout) for the commit.
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    elif conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_LOCK_KEY})
