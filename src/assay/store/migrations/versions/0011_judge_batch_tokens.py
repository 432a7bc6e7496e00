"""Add the token of a batch submission (``assay run --batch``).

A batch is kept in ``judge_batches`` before its provider is asked to run it: an intent row
whose ``token`` is assay's own (a random hex string the provider is given too: in OpenAI's
batch ``metadata``, in every custom id), in the ``submitting`` state, its ``batch_id`` the
token until the provider's id is known. A process that dies between the provider's answer and
the store's record thus leaves the token, which a resume looks for at the provider before
sending anything again. Batches kept before this revision have no token.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_judge_batch_tokens"
down_revision: str | None = "0010_judge_batches"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("judge_batches", sa.Column("token", sa.String(64)))
