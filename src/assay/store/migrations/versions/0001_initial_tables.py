"""Runs, executions, scores and case results: the tables of the first store.

Stores written before the schema was managed by Alembic hold these tables already, beside the
``assay_migrations`` table that recorded them: such a store is adopted as it stands, and only a
table it lacks is created. The same tables in a database without ``assay_migrations`` belong to
something else, and assay refuses to take them over.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from alembic import op

from assay.store.errors import StoreError

revision = "0001_initial_tables"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

LEGACY_TABLE = "assay_migrations"


def _runs() -> list[sa.Column]:
    return [
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("suite", sa.String(500), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("finished_at", sa.Float),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("summary", sa.JSON),
    ]


def _executions() -> list[sa.Column]:
    return [
        sa.Column("run_id", sa.String(40), primary_key=True),
        sa.Column("case_id", sa.String(500), primary_key=True),
        sa.Column("repeat", sa.Integer, primary_key=True),
        sa.Column("execution", sa.JSON, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    ]


def _scores() -> list[sa.Column]:
    return [
        sa.Column("run_id", sa.String(40), primary_key=True),
        sa.Column("case_id", sa.String(500), primary_key=True),
        sa.Column("repeat", sa.Integer, primary_key=True),
        sa.Column("evaluator", sa.String(200), primary_key=True),
        sa.Column("value", sa.Float),
        sa.Column("error_code", sa.String(100)),
        sa.Column("score", sa.JSON, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    ]


def _case_results() -> list[sa.Column]:
    return [
        sa.Column("run_id", sa.String(40), primary_key=True),
        sa.Column("case_id", sa.String(500), primary_key=True),
        sa.Column("repeat", sa.Integer, primary_key=True),
        sa.Column("score", sa.Float),
        sa.Column("verdict", sa.String(20), nullable=False),
        sa.Column("row", sa.JSON, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    ]


TABLES: dict[str, Callable[[], list[sa.Column]]] = {
    "runs": _runs, "executions": _executions, "scores": _scores,
    "case_results": _case_results,
}


def upgrade() -> None:
    existing = set(sa.inspect(op.get_bind()).get_table_names())
    taken = [name for name in TABLES if name in existing]
    if taken and LEGACY_TABLE not in existing:
        raise StoreError(
            f"the database already holds table(s) {', '.join(taken)} that assay did not "
            "create; give the run store a database of its own")
    for name, columns in TABLES.items():
        if name not in existing:
            op.create_table(name, *columns())
