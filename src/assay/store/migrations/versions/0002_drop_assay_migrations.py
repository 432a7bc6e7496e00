"""Drop ``assay_migrations``, the table that recorded migrations before Alembic did."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_drop_assay_migrations"
down_revision: str | None = "0001_initial_tables"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    if sa.inspect(op.get_bind()).has_table("assay_migrations"):
        op.drop_table("assay_migrations")
