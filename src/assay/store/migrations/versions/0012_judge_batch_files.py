"""Add the uploaded input file of a batch submission (``assay run --batch``).

OpenAI's Batch API takes a batch's requests from a file uploaded first: its id is kept in
``judge_batches.input_file`` as soon as the upload answers, before the batch is created. A
process that dies in between thus leaves the file's id, and the resume makes the batch of that
file instead of uploading the requests again (and leaving the first file behind); once the
run is judged, the file is deleted at the provider. Batches kept before this revision, and
Anthropic's (whose requests go with the batch itself), have none.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_judge_batch_files"
down_revision: str | None = "0011_judge_batch_tokens"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column("judge_batches", sa.Column("input_file", sa.String(200)))
