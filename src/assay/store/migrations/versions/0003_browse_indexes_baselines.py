"""Indexes for browsing large runs (pages of cases by verdict, score or evaluator; runs by
date and suite) and the ``baselines`` table: one baseline run per (suite, target)."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_browse_indexes_baselines"
down_revision: str | None = "0002_drop_assay_migrations"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_index("ix_runs_created_at", "runs", ["created_at"])
    op.create_index("ix_runs_suite_created_at", "runs", ["suite", "created_at"])
    op.create_index("ix_case_results_run_score", "case_results", ["run_id", "score"])
    op.create_index("ix_case_results_run_verdict_score", "case_results",
                    ["run_id", "verdict", "score"])
    op.create_index("ix_case_results_run_created_at", "case_results", ["run_id", "created_at"])
    op.create_index("ix_scores_run_evaluator_value", "scores", ["run_id", "evaluator", "value"])
    op.create_table(
        "baselines",
        sa.Column("suite", sa.String(500), primary_key=True),
        sa.Column("target", sa.String(500), primary_key=True),
        sa.Column("run_id", sa.String(40), nullable=False),
        sa.Column("set_at", sa.Float, nullable=False),
    )
