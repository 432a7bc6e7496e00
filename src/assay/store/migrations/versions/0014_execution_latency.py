"""Keep each execution's latency in a column of its own, indexed by run.

A sort of a run's cases by latency (a page of cases, an export) read every execution's
``latency_ms`` out of its JSON for each page: a 100,000-case export spent most of its time
there. ``executions.latency_ms`` holds the same number (NULL when the JSON holds none, or
anything but a number, which the readers of the JSON name as they always did), and
``ix_executions_run_latency`` reads a run's executions in its order. The column is filled
here from the executions stored before it, in the database, one statement.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_execution_latency"
down_revision: str | None = "0013_case_search_casefold"
branch_labels: str | None = None
depends_on: str | None = None

SQLITE_FILL = (
    "UPDATE executions SET latency_ms = json_extract(execution, '$.latency_ms') "
    "WHERE json_valid(execution) "
    "AND json_type(execution, '$.latency_ms') IN ('integer', 'real') "
    "AND abs(json_extract(execution, '$.latency_ms')) < 1e308")
"""SQLite: the JSON's number. Text that is not JSON, a value that is not a number and one
beyond a double's range (which JSON may spell, and assay reads as no latency) are left
NULL, as :func:`assay.store.runs.latency_column` leaves them."""

POSTGRES_FILL = (
    "UPDATE executions SET latency_ms = CASE WHEN abs((execution->>'latency_ms')::numeric) "
    "< 1e308 THEN (execution->>'latency_ms')::double precision END "
    "WHERE json_typeof(execution->'latency_ms') = 'number'")
"""PostgreSQL: the same (a cast of a number beyond a double's range would refuse the whole
upgrade)."""


def upgrade() -> None:
    op.add_column("executions", sa.Column("latency_ms", sa.Float))
    bind = op.get_bind()
    bind.execute(sa.text(SQLITE_FILL if bind.dialect.name == "sqlite" else POSTGRES_FILL))
    op.create_index("ix_executions_run_latency", "executions",
                    ["run_id", "latency_ms", "case_id", "repeat"])
