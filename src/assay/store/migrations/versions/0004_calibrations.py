"""Calibrations: how far a judge agreed with human labels, keyed by the judge's identity."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_calibrations"
down_revision: str | None = "0003_baselines"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "calibrations",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("judge_key", sa.String(64), nullable=False),
        sa.Column("judge_name", sa.String(200), nullable=False),
        sa.Column("judge_type", sa.String(100), nullable=False),
        sa.Column("set_name", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("items", sa.Integer, nullable=False),
        sa.Column("kappa", sa.Float),
        sa.Column("accuracy", sa.Float),
        sa.Column("run_id", sa.String(40)),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("report", sa.JSON, nullable=False),
    )
    op.create_index("ix_calibrations_judge_key", "calibrations", ["judge_key"])
