"""Traces received by the OTLP receiver, and what online evaluations decided of them.

``trace_spans`` holds every span received, append-only, in the order received (``seq``), one
row per (trace, span): an exporter that sends a batch again stores nothing twice. ``traces``
keeps a row per trace for listing and filtering without reading spans. ``trace_decisions``
records, per online evaluation and evaluator version, whether each trace was judged (and in
which run) or sampled out, so a restarted evaluation neither judges a trace twice nor skips
one.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_trace_spans"
down_revision: str | None = "0007_run_leases"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "trace_spans",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("trace_id", sa.String(64), nullable=False),
        sa.Column("span_id", sa.String(64), nullable=False),
        sa.Column("received_at", sa.Float, nullable=False),
        sa.Column("span", sa.JSON, nullable=False))
    op.create_index("ux_trace_spans_trace_span", "trace_spans", ["trace_id", "span_id"],
                    unique=True)
    op.create_table(
        "traces",
        sa.Column("trace_id", sa.String(64), primary_key=True),
        sa.Column("first_received", sa.Float, nullable=False),
        sa.Column("last_received", sa.Float, nullable=False),
        sa.Column("start_time", sa.Float),
        sa.Column("service", sa.String(500)),
        sa.Column("root_name", sa.String(500)),
        sa.Column("has_error", sa.Boolean, nullable=False))
    op.create_index("ix_traces_last_received", "traces", ["last_received"])
    op.create_index("ix_traces_start_time", "traces", ["start_time"])
    op.create_table(
        "trace_decisions",
        sa.Column("watcher", sa.String(200), primary_key=True),
        sa.Column("trace_id", sa.String(200), primary_key=True),
        sa.Column("decision", sa.String(20), nullable=False),
        sa.Column("run_id", sa.String(40)),
        sa.Column("reason", sa.String(500)),
        sa.Column("cost", sa.Float),
        sa.Column("decided_at", sa.Float, nullable=False))
    op.create_index("ix_trace_decisions_watcher_time", "trace_decisions",
                    ["watcher", "decided_at"])
