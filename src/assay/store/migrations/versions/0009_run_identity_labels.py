"""Add what names a run and what people say of its cases.

``runs.name`` and ``runs.notes`` (a run's name and notes, set when it starts or later),
``run_tags`` (a run's tags, one row each, so that runs are listed by tag through an index),
and ``human_labels``: a reviewer's label of a judge's score on a case (agreeing with it, or
giving the correct value, with a comment), who gave it and when. Labels are only ever added:
a later label of the same score is the one that counts, and the earlier ones stay as history.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_run_identity_labels"
down_revision: str | None = "0008_trace_spans"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("name", sa.String(200)))
    op.add_column("runs", sa.Column("notes", sa.Text))
    op.create_table(
        "run_tags",
        sa.Column("run_id", sa.String(40), primary_key=True),
        sa.Column("tag", sa.String(200), primary_key=True))
    op.create_index("ix_run_tags_tag", "run_tags", ["tag", "run_id"])
    op.create_table(
        "human_labels",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("case_id", sa.String(500), nullable=False),
        sa.Column("repeat", sa.Integer, nullable=False),
        sa.Column("evaluator", sa.String(200), nullable=False),
        sa.Column("agrees", sa.Boolean, nullable=False),
        sa.Column("value", sa.Text),  # JSON text: a bare number in a JSON column reads back as one
        sa.Column("judge_value", sa.Float),
        sa.Column("judge_passed", sa.Boolean),
        sa.Column("comment", sa.Text, nullable=False),
        sa.Column("author", sa.String(200), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False))
    op.create_index("ix_human_labels_case", "human_labels",
                    ["run_id", "case_id", "repeat", "evaluator", "created_at"])
