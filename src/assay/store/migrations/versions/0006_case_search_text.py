"""Searching a run's cases without reading their JSON.

A ``search_text`` column on case rows: the case id, input, expected output and the agent's
output and error, each cut short and lower-cased (see :mod:`assay.store.search`), so that a
text search of 100,000 cases scans one short column instead of every case's and execution's
JSON. Rows stored before this migration are filled here, a thousand at a time, by the same
function that fills new rows.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0006_case_search_text"
down_revision: str | None = "0005_browse_indexes"
branch_labels: str | None = None
depends_on: str | None = None

BATCH = 1000


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def upgrade() -> None:
    from assay.store.search import search_text

    op.add_column("case_results", sa.Column("search_text", sa.Text))
    bind = op.get_bind()
    cr = sa.table("case_results", sa.column("run_id"), sa.column("case_id"),
                  sa.column("repeat"), sa.column("row", sa.JSON),
                  sa.column("search_text"))
    ex = sa.table("executions", sa.column("run_id"), sa.column("case_id"), sa.column("repeat"),
                  sa.column("execution", sa.JSON))
    key = (cr.c.run_id, cr.c.case_id, cr.c.repeat)
    last: tuple[Any, ...] | None = None
    while True:
        query = sa.select(*key, cr.c.row, ex.c.execution).select_from(cr.outerjoin(ex, sa.and_(
            ex.c.run_id == cr.c.run_id, ex.c.case_id == cr.c.case_id,
            ex.c.repeat == cr.c.repeat)))
        if last is not None:
            query = query.where(sa.tuple_(*key) > sa.tuple_(*(sa.literal(v) for v in last)))
        rows = bind.execute(query.order_by(*key).limit(BATCH)).fetchall()
        if not rows:
            break
        updates = []
        for run_id, case_id, repeat, row, execution in rows:
            case = (_json(row) or {}).get("case") or {}
            done = _json(execution) or {}
            updates.append({"r": run_id, "c": case_id, "p": repeat, "t": search_text(
                case_id, case.get("input"), case.get("expected_output"), done.get("output"),
                done.get("error"))})
        bind.execute(sa.update(cr).where(
            cr.c.run_id == sa.bindparam("r"), cr.c.case_id == sa.bindparam("c"),
            cr.c.repeat == sa.bindparam("p")).values(search_text=sa.bindparam("t")), updates)
        last = tuple(rows[-1][:3])
