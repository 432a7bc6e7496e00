"""Alembic's environment for the run store: migrate the connection assay hands over.

assay runs its migrations itself (see :func:`assay.store.migrations.ensure_schema`), inside a
transaction that holds the migration lock, and passes that connection in
``config.attributes["connection"]``; there is no ``alembic.ini``.
"""

from __future__ import annotations

from alembic import context

from assay.store import schema
from assay.store.migrations import VERSION_TABLE

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("the run store's migrations run through "
                       "assay.store.migrations.ensure_schema, which passes a connection")
context.configure(connection=connection, version_table=VERSION_TABLE,
                  target_metadata=schema.metadata)
with context.begin_transaction():
    context.run_migrations()
