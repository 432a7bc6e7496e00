"""Fold the search text of stored cases as searches now fold it.

``case_search.text`` was lower-cased; a search now folds its query and the text caseless in
Unicode's sense (:func:`assay.store.search.fold`: NFKC, then ``str.casefold``), so ``STRASSE``
finds ``Straße``. The fold of lower-cased text is the fold of the text, so each row is folded
in place, a thousand at a time, without reading the cases' JSON again; a row that is already
folded (every one whose text is ASCII) is left alone.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0013_case_search_casefold"
down_revision: str | None = "0012_judge_batch_files"
branch_labels: str | None = None
depends_on: str | None = None

BATCH = 1000


def upgrade() -> None:
    from assay.store.search import fold

    bind = op.get_bind()
    search = sa.table("case_search", sa.column("run_id"), sa.column("case_id"),
                      sa.column("repeat"), sa.column("text"))
    key = (search.c.run_id, search.c.case_id, search.c.repeat)
    last: tuple[Any, ...] | None = None
    while True:
        query = sa.select(*key, search.c.text)
        if last is not None:
            query = query.where(sa.tuple_(*key) > sa.tuple_(*(sa.literal(v) for v in last)))
        rows = bind.execute(query.order_by(*key).limit(BATCH)).fetchall()
        if not rows:
            break
        changed = [{"k_run": run_id, "k_case": case_id, "k_repeat": repeat, "folded": folded}
                   for run_id, case_id, repeat, text in rows
                   if (folded := fold(text)) != text]
        if changed:
            bind.execute(sa.update(search).where(
                search.c.run_id == sa.bindparam("k_run"),
                search.c.case_id == sa.bindparam("k_case"),
                search.c.repeat == sa.bindparam("k_repeat")).values(
                text=sa.bindparam("folded")), changed)
        last = tuple(rows[-1][:3])
