"""The batches a run's judge calls were submitted in (``assay run --batch``, migration 0010).

A batch run leaves its judge calls with the providers' batch APIs and the run waiting; what it
needs to collect them later, in another process, is kept here: each batch's provider id and
judge model, and each request's custom id with the judgement waiting for it (case, repeat,
evaluator) and the response-cache key its answer is given under. No request body, answer or
credential is kept: the judges build their requests again when the run resumes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.store.runs import RunStore


@dataclass(slots=True)
class StoredBatch:
    """A submitted batch as the store holds it."""

    batch_id: str
    model: str
    state: str
    requests: int
    submitted_at: float
    counts: dict[str, int] = field(default_factory=dict)
    checked_at: float | None = None
    collected: bool = False


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """One request of a batch and the judgement it answers."""

    custom_id: str
    case_id: str
    repeat: int
    evaluator: str
    cache_key: str


def record_batch(store: RunStore, run_id: str, batch_id: str, model: str,
                 requests: Sequence[BatchRequest]) -> None:
    """Keep a batch just submitted and its requests, in one transaction."""
    from assay.store import schema

    custom_ids = {r.custom_id for r in requests}
    with store.transaction() as conn:
        conn.execute(schema.judge_batches.insert().values(
            run_id=run_id, batch_id=batch_id, model=model, state="submitted",
            requests=len(custom_ids), counts=None, submitted_at=time.time(),
            checked_at=None, collected=False))
        if requests:
            conn.execute(schema.judge_batch_requests.insert(), [
                {"run_id": run_id, "batch_id": batch_id, "custom_id": r.custom_id,
                 "case_id": r.case_id, "repeat": r.repeat, "evaluator": r.evaluator,
                 "cache_key": r.cache_key} for r in requests])


def run_batches(store: RunStore, run_id: str, *, open_only: bool = False) -> list[StoredBatch]:
    """The run's batches in the order they were submitted (``open_only``: those whose answers
    were not collected yet)."""
    from sqlalchemy import select

    from assay.store import schema

    table = schema.judge_batches
    query = select(table).where(table.c.run_id == run_id)
    if open_only:
        query = query.where(table.c.collected.is_(False))
    with store.transaction() as conn:
        rows = conn.execute(query.order_by(table.c.submitted_at, table.c.batch_id)).all()
    return [_batch(row._mapping) for row in rows]


def _batch(row: Any) -> StoredBatch:
    counts = row["counts"]
    return StoredBatch(batch_id=row["batch_id"], model=row["model"], state=row["state"],
                       requests=int(row["requests"]), submitted_at=float(row["submitted_at"]),
                       counts=dict(counts) if isinstance(counts, dict) else {},
                       checked_at=row["checked_at"], collected=bool(row["collected"]))


def batch_requests(store: RunStore, run_id: str, batch_id: str) -> list[BatchRequest]:
    """The requests of one batch, each judgement waiting for it a row."""
    from sqlalchemy import select

    from assay.store import schema

    table = schema.judge_batch_requests
    with store.transaction() as conn:
        rows = conn.execute(select(table).where(table.c.run_id == run_id,
                                                table.c.batch_id == batch_id)).all()
    return [BatchRequest(r.custom_id, r.case_id, int(r.repeat), r.evaluator, r.cache_key)
            for r in rows]


def update_batch(store: RunStore, run_id: str, batch_id: str, state: str,
                 counts: dict[str, int]) -> None:
    """What the provider said of a batch when asked now."""
    from sqlalchemy import update

    from assay.store import schema

    table = schema.judge_batches
    with store.transaction() as conn:
        conn.execute(update(table).where(table.c.run_id == run_id,
                                         table.c.batch_id == batch_id).values(
            state=state[:40], counts=counts, checked_at=time.time()))


def mark_collected(store: RunStore, run_id: str, batch_ids: Sequence[str]) -> None:
    """The run was judged from these batches' answers: they are not read again."""
    if not batch_ids:
        return
    from sqlalchemy import update

    from assay.store import schema

    table = schema.judge_batches
    with store.transaction() as conn:
        conn.execute(update(table).where(table.c.run_id == run_id,
                                         table.c.batch_id.in_(list(batch_ids))).values(
            collected=True))


__all__ = ["BatchRequest", "StoredBatch", "batch_requests", "mark_collected", "record_batch",
           "run_batches", "update_batch"]
