"""Add the batches of judge calls (``assay run --batch``).

``judge_batches``: each batch a run's judge calls were submitted in (its provider id, judge
model, last known status and counts, and whether its answers were collected), and
``judge_batch_requests``: each request of a batch, by its custom id, with the judgement (case,
repeat, evaluator) waiting for it and the response-cache key its answer is kept under.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_judge_batches"
down_revision: str | None = "0009_run_identity_labels"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "judge_batches",
        sa.Column("run_id", sa.String(40), primary_key=True),
        sa.Column("batch_id", sa.String(200), primary_key=True),
        sa.Column("model", sa.String(500), nullable=False),
        sa.Column("state", sa.String(40), nullable=False),
        sa.Column("requests", sa.Integer, nullable=False),
        sa.Column("counts", sa.JSON),
        sa.Column("submitted_at", sa.Float, nullable=False),
        sa.Column("checked_at", sa.Float),
        sa.Column("collected", sa.Boolean, nullable=False))
    op.create_table(
        "judge_batch_requests",
        sa.Column("run_id", sa.String(40), primary_key=True),
        sa.Column("batch_id", sa.String(200), primary_key=True),
        sa.Column("custom_id", sa.String(64), primary_key=True),
        sa.Column("case_id", sa.String(500), primary_key=True),
        sa.Column("repeat", sa.Integer, primary_key=True),
        sa.Column("evaluator", sa.String(200), primary_key=True),
        sa.Column("cache_key", sa.String(64), nullable=False))
