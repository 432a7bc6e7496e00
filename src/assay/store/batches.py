"""The batches a run's judge calls were submitted in (``assay run --batch``, migrations 0010-0012).

A batch run leaves its judge calls with the providers' batch APIs and the run waiting; what it
needs to collect them later, in another process, is kept here: each batch's provider id and
judge model, and each request's custom id with the judgement waiting for it (case, repeat,
evaluator) and the response-cache key its answer is given under. No request body, answer or
credential is kept: the judges build their requests again when the run resumes.

A batch is kept *before* its provider is asked to run it (:func:`record_intent`: assay's own
token, the model, each request's custom id and cache key, in the :data:`SUBMITTING` state, its
``batch_id`` the token), and given the provider's id once the provider answers
(:func:`record_batch_id`). A process that dies between the two leaves a submission whose id is
not known, which the next resume looks for at the provider before anything is sent again
(:mod:`assay.run.batch`); one found never sent is dropped (:func:`drop_intent`) and its
requests go in a new batch. Where the provider takes a batch's requests from a file uploaded
first (OpenAI), the file's id is kept as soon as the upload answers
(:func:`record_input_file`), before the batch is created: a submission found never sent whose
file is kept is made a batch of that file, not uploaded again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.store.runs import RunStore

SUBMITTING = "submitting"
"""The state of a submission whose provider id is not known yet (its ``batch_id`` is its
token)."""


@dataclass(slots=True)
class StoredBatch:
    """A batch as the store holds it: submitted, or being submitted (:attr:`known` False)."""

    batch_id: str
    model: str
    state: str
    requests: int
    submitted_at: float
    """When the submission was recorded, just before the provider was asked."""
    counts: dict[str, int] = field(default_factory=dict)
    checked_at: float | None = None
    collected: bool = False
    token: str | None = None
    """assay's own token of the submission (None for a batch kept before migration 0011)."""
    input_file: str | None = None
    """The provider's id of the file its requests were uploaded in (OpenAI's; None for
    Anthropic's, and for a batch kept before migration 0012)."""

    @property
    def known(self) -> bool:
        """Whether ``batch_id`` is the provider's id (else the submission's token)."""
        return self.state != SUBMITTING


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """One request of a batch and the judgement it answers."""

    custom_id: str
    case_id: str
    repeat: int
    evaluator: str
    cache_key: str


def record_intent(store: RunStore, run_id: str, token: str, model: str,
                  requests: Sequence[BatchRequest]) -> StoredBatch:
    """Keep a batch about to be submitted, and its requests, in one transaction, before the
    provider is asked: its ``batch_id`` is ``token`` until :func:`record_batch_id`."""
    from assay.store import schema

    found = StoredBatch(token, model, SUBMITTING, len({r.custom_id for r in requests}),
                        time.time(), token=token)
    with store.transaction() as conn:
        conn.execute(schema.judge_batches.insert().values(
            run_id=run_id, batch_id=token, model=model, state=SUBMITTING,
            requests=found.requests, counts=None, submitted_at=found.submitted_at,
            checked_at=None, collected=False, token=token))
        if requests:
            conn.execute(schema.judge_batch_requests.insert(), [
                {"run_id": run_id, "batch_id": token, "custom_id": r.custom_id,
                 "case_id": r.case_id, "repeat": r.repeat, "evaluator": r.evaluator,
                 "cache_key": r.cache_key} for r in requests])
    return found


def record_batch_id(store: RunStore, run_id: str, token: str, batch_id: str) -> None:
    """The provider took the submission ``token`` as batch ``batch_id``: the batch and its
    requests are known by that id from now on (one transaction)."""
    from sqlalchemy import update

    from assay.store import schema

    batches, requests = schema.judge_batches, schema.judge_batch_requests
    with store.transaction() as conn:
        conn.execute(update(batches).where(batches.c.run_id == run_id,
                                           batches.c.batch_id == token).values(
            batch_id=batch_id, state="submitted"))
        conn.execute(update(requests).where(requests.c.run_id == run_id,
                                            requests.c.batch_id == token).values(
            batch_id=batch_id))


def record_input_file(store: RunStore, run_id: str, token: str, file_id: str) -> None:
    """The requests of the submission ``token`` were uploaded as the provider's file
    ``file_id`` (the batch is not created yet): kept, so that the file is not uploaded again
    nor left behind."""
    from sqlalchemy import update

    from assay.store import schema

    table = schema.judge_batches
    with store.transaction() as conn:
        conn.execute(update(table).where(table.c.run_id == run_id,
                                         table.c.batch_id == token).values(input_file=file_id))


def drop_intent(store: RunStore, run_id: str, token: str) -> None:
    """Forget a submission the provider never took (its requests are collected again)."""
    from sqlalchemy import delete

    from assay.store import schema

    with store.transaction() as conn:
        for table in (schema.judge_batch_requests, schema.judge_batches):
            conn.execute(delete(table).where(table.c.run_id == run_id,
                                             table.c.batch_id == token))


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
                       checked_at=row["checked_at"], collected=bool(row["collected"]),
                       token=row["token"], input_file=row["input_file"])


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


__all__ = ["SUBMITTING", "BatchRequest", "StoredBatch", "batch_requests", "drop_intent",
           "mark_collected", "record_batch_id", "record_input_file", "record_intent",
           "run_batches", "update_batch"]
