"""Searching a run's cases without reading their JSON.

A narrow ``case_search`` table keyed like case rows: each case's id, input, expected output
and the agent's output and error, each cut short and lower-cased (see
:mod:`assay.store.search`), so that a text search of 100,000 cases scans short rows instead of
every case's and execution's JSON. Cases stored before this migration are filled here, a
thousand at a time, by the same function that fills new ones.
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

    search = op.create_table(
        "case_search",
        sa.Column("run_id", sa.String(40), primary_key=True),
        sa.Column("case_id", sa.String(500), primary_key=True),
        sa.Column("repeat", sa.Integer, primary_key=True),
        sa.Column("text", sa.Text, nullable=False))
    bind = op.get_bind()
    cr = sa.table("case_results", sa.column("run_id"), sa.column("case_id"),
                  sa.column("repeat"), sa.column("row", sa.JSON))
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
        found = []
        for run_id, case_id, repeat, row, execution in rows:
            case = (_json(row) or {}).get("case") or {}
            done = _json(execution) or {}
            found.append({"run_id": run_id, "case_id": case_id, "repeat": repeat,
                          "text": search_text(case_id, case.get("input"),
                                              case.get("expected_output"), done.get("output"),
                                              done.get("error"))})
        bind.execute(sa.insert(search), found)
        last = tuple(rows[-1][:3])
