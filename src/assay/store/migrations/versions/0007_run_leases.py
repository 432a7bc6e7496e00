"""Add ``runs.lease_expires_at``: until when the process running a run vouches for it.

A process running a run pushes this time forward every few seconds (see
:class:`assay.store.runs.RunLease`); a run still marked ``running`` whose lease has run out
was left by a process that died without saying so (``kill -9``, a machine gone), and is read as
interrupted, so that it can be resumed or deleted. Runs stored before this migration have no
lease: their creation time stands in for one.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_run_leases"
down_revision: str | None = "0006_case_search_text"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("lease_expires_at", sa.Float))
