"""Traces in the run store: spans the OTLP receiver took in, grouped by trace, and what the
online evaluations decided of each.

Spans are appended, never changed: a batch is one transaction, and each trace's row is
brought up to date in the same transaction (received times, earliest start, whether a span
failed), so a reader sees a batch whole or not at all. A span sent again (an exporter retrying
after a timeout) is the same (trace, span) key: the same span again is taken and not stored
twice, a different one is handed back as a conflict, never dropped unsaid and never counted. Every span is stored as the
:class:`~assay.types.spans.Span` it was normalised to, scrubbed of known secrets like every
stored row (:func:`assay.store.runs.encode`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Text, and_, case, cast, func, literal, or_, select

from assay.store import schema
from assay.store.runs import RecordRejected, RunStore, _json_load, _without_nul, encode
from assay.types.spans import Span

MAX_TRACE_SPANS = 10_000
"""The most spans of one trace read into an execution; a longer trace is read to that many
(the earliest received) and says so."""

TEXT_COLUMN = 500


@dataclass(frozen=True)
class ReceivedSpan:
    """A span as the receiver hands it over: its trace and service, and the span."""

    trace_id: str
    span: Span
    service: str | None = None


@dataclass(frozen=True)
class TraceRow:
    """A stored trace, as listed: what filtering and sampling read without its spans."""

    trace_id: str
    first_received: float
    last_received: float
    start_time: float | None
    service: str | None
    root_name: str | None
    has_error: bool


def append_spans(store: RunStore, spans: Sequence[ReceivedSpan],
                 now: float | None = None) -> list[ReceivedSpan]:
    """Store ``spans`` in one transaction; the spans not stored because a different span is
    stored under their (trace, span) ids (the same span again is taken, not stored twice).
    RecordRejected, nothing stored, when a span cannot be stored as JSON."""
    if not spans:
        return []
    now = time.time() if now is None else now
    rows = [_span_row(s, now) for s in spans]
    if store.dialect == "postgresql":
        rows = [_without_nul(r) for r in rows]
    keyed: dict[tuple[str, str], list[int]] = {}
    for index, row in enumerate(rows):
        keyed.setdefault((row["trace_id"], row["span_id"]), []).append(index)
    firsts = [rows[indexes[0]] for indexes in keyed.values()]
    with store.transaction() as conn:
        every_new = _insert_new(conn, store.dialect, firsts) == len(rows)  # none sent twice
        clashing = set() if every_new else _clashing(conn, rows, keyed)
        taken = [s for i, s in enumerate(spans) if i not in clashing]
        if taken:
            conn.execute(_trace_upsert(store.dialect), list(_trace_rows(taken, now)))
    return [spans[i] for i in sorted(clashing)]


def _insert_new(conn: Any, dialect: str, rows: Sequence[dict[str, Any]]) -> int:
    """Insert the rows whose key is not stored; how many were (-1: not known). SQLite counts
    an executemany's rows; psycopg does not, so PostgreSQL returns a sequence number for
    each (SQLite would send the rows as a slower multi-row insert to return them)."""
    statement = _insert(dialect, schema.trace_spans).on_conflict_do_nothing(
        index_elements=["trace_id", "span_id"])
    if dialect == "postgresql":
        return len(conn.execute(statement.returning(schema.trace_spans.c.seq), rows).all())
    return int(conn.execute(statement, rows).rowcount)


def _clashing(conn: Any, rows: Sequence[dict[str, Any]],
              keyed: dict[tuple[str, str], list[int]]) -> set[int]:
    """Which rows differ from the span stored under their key (this batch's first of the key,
    or one stored before it). Read only when a key was stored already or sent twice: when
    the count of rows inserted is every row's (or is not known), nothing is read."""
    stored = _stored(conn, list(keyed))
    return {i for key, indexes in keyed.items() for i in indexes
            if not _same(str(rows[i]["span"]), stored.get(key))}


def _same(sent: str, stored: str | None) -> bool:
    """Whether a span's JSON is the stored one's: the same text (a retry sends the same
    span), else the same data (its attributes in another order)."""
    return stored is not None and (sent == stored or _json_load(sent) == _json_load(stored))


def _stored(conn: Any, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The stored span of each (trace, span) key, as the JSON text stored. Asked as a trace
    id among the keys' and a span id among theirs (what the unique index answers, where a
    list of pairs is a scan in SQLite); a row of another pair that matches is left out."""
    table = schema.trace_spans
    wanted = set(keys)
    found: dict[tuple[str, str], str] = {}
    for start in range(0, len(keys), 500):
        chunk = keys[start:start + 500]
        rows = conn.execute(select(table.c.trace_id, table.c.span_id,
                                   cast(table.c.span, Text)).where(
            table.c.trace_id.in_({t for t, _ in chunk}),
            table.c.span_id.in_({s for _, s in chunk})))
        found.update(((t, s), span) for t, s, span in rows if (t, s) in wanted)
    return found


def _span_row(received: ReceivedSpan, now: float) -> dict[str, Any]:
    span = received.span
    return {"trace_id": received.trace_id, "span_id": span.span_id or "",
            "received_at": now, "span": encode(span)}


def _insert(dialect: str, table: Any) -> Any:
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table)
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(table)


def _trace_rows(spans: Iterable[ReceivedSpan], now: float) -> Iterable[dict[str, Any]]:
    """One row per trace of the batch, its spans folded together."""
    found: dict[str, dict[str, Any]] = {}
    for received in spans:
        span = received.span
        row = found.setdefault(received.trace_id, {
            "trace_id": received.trace_id, "first_received": now, "last_received": now,
            "start_time": None, "service": None, "root_name": None, "has_error": False})
        if span.start_time is not None and (row["start_time"] is None
                                            or span.start_time < row["start_time"]):
            row["start_time"] = span.start_time
        if received.service and row["service"] is None:
            row["service"] = received.service[:TEXT_COLUMN]
        if not span.parent_id and row["root_name"] is None:
            row["root_name"] = span.name[:TEXT_COLUMN]
        row["has_error"] = row["has_error"] or span.status == "error"
    return found.values()


def _trace_upsert(dialect: str) -> Any:
    table = schema.traces
    statement = _insert(dialect, table)
    new = statement.excluded
    earliest = case((table.c.start_time.is_(None), new.start_time),
                    (new.start_time.is_(None), table.c.start_time),
                    (new.start_time < table.c.start_time, new.start_time),
                    else_=table.c.start_time)
    return statement.on_conflict_do_update(index_elements=["trace_id"], set_={
        "last_received": new.last_received, "start_time": earliest,
        "service": func.coalesce(table.c.service, new.service),
        "root_name": func.coalesce(new.root_name, table.c.root_name),
        "has_error": or_(table.c.has_error, new.has_error)})


# -- reading ------------------------------------------------------------------------------


def list_traces(store: RunStore, *, since: float | None = None, until: float | None = None,
                settled_before: float | None = None, errors_only: bool = False,
                limit: int = 1000, after: str | None = None) -> list[TraceRow]:
    """Traces oldest first (by start, then id): started at or after ``since`` and before
    ``until``, with no span received after ``settled_before`` (a trace still arriving is
    left for later), a page of ``limit`` after the trace id ``after``."""
    table = schema.traces
    conditions = []
    start = func.coalesce(table.c.start_time, table.c.first_received)
    if since is not None:
        conditions.append(start >= since)
    if until is not None:
        conditions.append(start < until)
    if settled_before is not None:
        conditions.append(table.c.last_received <= settled_before)
    if errors_only:
        conditions.append(table.c.has_error.is_(True))
    if after is not None:
        conditions.append(table.c.trace_id > after)
    query = select(table).where(and_(literal(True), *conditions)).order_by(
        table.c.trace_id).limit(limit)
    with store.transaction() as conn:
        rows = conn.execute(query).mappings().all()
    found = [TraceRow(**dict(r)) for r in rows]
    return sorted(found, key=lambda t: (t.start_time or t.first_received, t.trace_id))


def trace_spans(store: RunStore, trace_id: str,
                limit: int = MAX_TRACE_SPANS) -> tuple[list[Span], int, list[str]]:
    """The spans of a trace in the order received (at most ``limit``), how many it has in
    all, and a note for each stored span that could not be read back."""
    table = schema.trace_spans
    with store.transaction() as conn:
        total = int(conn.execute(select(func.count()).select_from(table).where(
            table.c.trace_id == trace_id)).scalar_one())
        rows = conn.execute(select(table.c.span).where(table.c.trace_id == trace_id)
                            .order_by(table.c.seq).limit(limit)).scalars().all()
    spans: list[Span] = []
    problems: list[str] = []
    for index, row in enumerate(rows):
        try:
            spans.append(Span.model_validate(row))
        except ValidationError as exc:
            problems.append(f"stored span {index} cannot be read: "
                            f"{str(exc).splitlines()[0]}")
    return spans, total, problems


# -- what online evaluations decided ------------------------------------------------------


def decided(store: RunStore, watcher: str, trace_ids: Sequence[str]) -> set[str]:
    """Which of ``trace_ids`` the online evaluation ``watcher`` decided already."""
    table = schema.trace_decisions
    found: set[str] = set()
    with store.transaction() as conn:
        for start in range(0, len(trace_ids), 500):
            chunk = list(trace_ids[start:start + 500])
            found.update(conn.execute(select(table.c.trace_id).where(
                table.c.watcher == watcher, table.c.trace_id.in_(chunk))).scalars())
    return found


def record_decisions(store: RunStore, watcher: str,
                     decisions: Sequence[tuple[str, str, str | None, str | None, float | None]],
                     now: float | None = None) -> None:
    """Record (trace id, decision, run id, reason, cost) for ``watcher`` as decided at
    ``now``; a trace decided already keeps its first decision."""
    if not decisions:
        return
    now = time.time() if now is None else now
    rows = [{"watcher": watcher, "trace_id": t, "decision": d, "run_id": r,
             "reason": (why or "")[:TEXT_COLUMN] or None, "cost": c, "decided_at": now}
            for t, d, r, why, c in decisions]
    with store.transaction() as conn:
        conn.execute(_insert(store.dialect, schema.trace_decisions).on_conflict_do_nothing(
            index_elements=["watcher", "trace_id"]), rows)


def cost_since(store: RunStore, watcher: str, since: float) -> float:
    """What ``watcher``'s judging cost since ``since`` (the cost ceiling's window)."""
    table = schema.trace_decisions
    with store.transaction() as conn:
        return float(conn.execute(select(func.coalesce(func.sum(table.c.cost), 0.0)).where(
            table.c.watcher == watcher, table.c.decided_at >= since)).scalar_one())


def decision_counts(store: RunStore, watcher: str) -> dict[str, int]:
    """How many traces ``watcher`` judged and sampled out."""
    table = schema.trace_decisions
    with store.transaction() as conn:
        rows = conn.execute(select(table.c.decision, func.count()).where(
            table.c.watcher == watcher).group_by(table.c.decision)).all()
    return {str(d): int(n) for d, n in rows}


__all__ = ["MAX_TRACE_SPANS", "ReceivedSpan", "RecordRejected", "TraceRow", "append_spans",
           "cost_since", "decided", "decision_counts", "list_traces", "record_decisions",
           "trace_spans"]
