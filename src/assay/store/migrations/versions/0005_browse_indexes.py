"""Browsing large runs a page at a time.

Indexes that answer a page of a run's cases in index order (by verdict then score, by score,
by finish time) with the case key in the index, so that a page deep in a run of 100,000
cases reads only index entries; a ``passed`` column on scores (filled from each stored score)
and an index of every score's key and state, so that a page's scores, filtering and counting
by an evaluator's result never read the scores' JSON; and runs by date and suite.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_browse_indexes"
down_revision: str | None = "0004_calibrations"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("scores", sa.Column("passed", sa.Boolean))
    if op.get_bind().dialect.name == "postgresql":
        op.execute("UPDATE scores SET passed = (score ->> 'passed')::boolean "
                   "WHERE value IS NOT NULL")
    else:
        op.execute("UPDATE scores SET passed = json_extract(score, '$.passed') "
                   "WHERE value IS NOT NULL")
    op.create_index("ix_runs_created_at", "runs", ["created_at"])
    op.create_index("ix_runs_suite_created_at", "runs", ["suite", "created_at"])
    op.create_index("ix_case_results_run_verdict_score", "case_results",
                    ["run_id", "verdict", "score", "case_id", "repeat"])
    op.create_index("ix_case_results_run_score", "case_results",
                    ["run_id", "score", "case_id", "repeat"])
    op.create_index("ix_case_results_run_created_at", "case_results", ["run_id", "created_at"])
    op.create_index("ix_scores_state", "scores",
                    ["run_id", "case_id", "repeat", "evaluator", "value", "error_code",
                     "passed"])
    op.create_index("ix_scores_evaluator_state", "scores",
                    ["run_id", "evaluator", "case_id", "repeat", "value", "error_code",
                     "passed"])
