"""Add ``baselines``: one named baseline run per (suite, target)."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_baselines"
down_revision: str | None = "0002_drop_assay_migrations"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    if sa.inspect(op.get_bind()).has_table("baselines"):
        return
    op.create_table(
        "baselines",
        sa.Column("suite", sa.String(500), primary_key=True),
        sa.Column("target", sa.String(500), primary_key=True),
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
