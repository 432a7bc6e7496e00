"""The run store: runs, executions, scores and case results in SQLite or PostgreSQL.

Every result is written (and committed) the moment it completes, with idempotent inserts, so a
run killed at any point keeps what finished and resumes without duplicates. The database is
reached through SQLAlchemy Core, so a ``postgresql://`` URL works as well as the default
``sqlite:///.assay/runs.db``.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, create_engine, event, select, update
from sqlalchemy.exc import SQLAlchemyError

from assay.errors import ErrorCategory, EvaluationError
from assay.model import Execution, Score
from assay.redact import redact_url, scrub, url_secrets
from assay.store import schema
from assay.store.migrations import migrate

DEFAULT_URL = "sqlite:///.assay/runs.db"


class StoreError(EvaluationError):
    """The store could not be read or written; what was already written stays readable."""

    def __init__(self, message: str) -> None:
        super().__init__("store_error", message, ErrorCategory.SYSTEM)


def new_run_id() -> str:
    """A short, sortable run id: UTC time plus randomness."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


class RunStore:
    """Reads and writes runs. One instance per process; safe to call from the event loop.

    Result rows are queued and committed together, at the latest ``flush_seconds`` after they
    were recorded (the runner also flushes on a timer and when it stops): one transaction per
    batch instead of three per case is what lets a fully cached run store thousands of cases a
    second. A process killed outright loses at most that window, which a resume recomputes
    (from the response cache, so at no cost).
    """

    def __init__(self, url: str = DEFAULT_URL, flush_seconds: float = 0.2,
                 flush_rows: int = 1000) -> None:
        self.url = url
        self.display_url = redact_url(url)
        """The URL as it may be shown: a password in it is hidden."""
        self.flush_seconds = flush_seconds
        self.flush_rows = flush_rows
        self._pending: list[tuple[Any, dict[str, Any]]] = []
        self._last_flush = time.monotonic()
        if url.startswith("sqlite:///"):
            path = Path(url.removeprefix("sqlite:///"))
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the store directory {path.parent}: {exc}") \
                    from None
        try:
            self.engine: Engine = create_engine(url, future=True, json_serializer=_json_text,
                                                json_deserializer=orjson.loads)
        except (SQLAlchemyError, ImportError, ValueError) as exc:
            raise StoreError(f"cannot open the run store {self.display_url!r}: "
                             f"{scrub(str(exc), url_secrets(url))}") from None
        self.dialect = self.engine.dialect.name
        if self.dialect == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        with self._begin() as conn:
            migrate(conn)

    @contextmanager
    def _begin(self) -> Iterator[Connection]:
        try:
            with self.engine.begin() as conn:
                yield conn
        except SQLAlchemyError as exc:
            reason = str(getattr(exc, "orig", None) or exc)
            raise StoreError(
                f"the run store {self.display_url} failed: "
                f"{scrub(reason.splitlines()[0], url_secrets(self.url))}. Results written "
                "before this point are kept and readable."
            ) from None

    def _insert_ignore(self, table: Any) -> Any:
        """An INSERT that skips rows whose key exists: what makes every write idempotent."""
        if self.dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            return pg_insert(table).on_conflict_do_nothing()
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(table).on_conflict_do_nothing()

    def _queue(self, table: Any, values: dict[str, Any]) -> None:
        self._pending.append((table, values))
        if (len(self._pending) >= self.flush_rows
                or time.monotonic() - self._last_flush >= self.flush_seconds):
            self.flush()

    def flush(self) -> None:
        """Commit every queued row in one transaction, in the order they were recorded."""
        self._last_flush = time.monotonic()
        if not self._pending:
            return
        batch, self._pending = self._pending, []
        with self._begin() as conn:
            start = 0
            for i in range(1, len(batch) + 1):
                if i == len(batch) or batch[i][0] is not batch[start][0]:
                    conn.execute(self._insert_ignore(batch[start][0]),
                                 [values for _, values in batch[start:i]])
                    start = i

    # -- writing --------------------------------------------------------------------------

    def create_run(self, suite: str, config: dict[str, Any], run_id: str | None = None) -> str:
        run_id = run_id or new_run_id()
        with self._begin() as conn:
            conn.execute(schema.runs.insert().values(
                id=run_id, suite=suite, status="running", created_at=time.time(),
                config=config))
        return run_id

    def set_status(self, run_id: str, status: str, summary: dict[str, Any] | None = None) -> None:
        values: dict[str, Any] = {"status": status}
        if status != "running":
            values["finished_at"] = time.time()
        if summary is not None:
            values["summary"] = summary
        with self._begin() as conn:
            conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(**values))

    def record_execution(self, run_id: str, case_id: str, repeat: int,
                         execution: Execution) -> None:
        self._queue(schema.executions, {
            "run_id": run_id, "case_id": case_id, "repeat": repeat,
            "execution": execution.model_dump(mode="json"), "created_at": time.time()})

    def record_score(self, run_id: str, case_id: str, repeat: int, score: Score) -> None:
        self._queue(schema.scores, {
            "run_id": run_id, "case_id": case_id, "repeat": repeat, "evaluator": score.name,
            "value": score.value, "error_code": score.error.code if score.error else None,
            "score": score.model_dump(mode="json"), "created_at": time.time()})

    def record_case(self, run_id: str, case_id: str, repeat: int, score: float | None,
                    verdict: str, row: dict[str, Any]) -> None:
        self._queue(schema.case_results, {
            "run_id": run_id, "case_id": case_id, "repeat": repeat, "score": score,
            "verdict": verdict, "row": row, "created_at": time.time()})

    def forget_errors(self, run_id: str) -> int:
        """Delete a run's error scores and the case rows they belong to, so that a resume
        computes them again; returns how many scores were deleted."""
        from sqlalchemy import and_, delete

        self.flush()
        with self._begin() as conn:
            keys = conn.execute(select(schema.scores.c.case_id, schema.scores.c.repeat).where(
                and_(schema.scores.c.run_id == run_id,
                     schema.scores.c.error_code.is_not(None)))).fetchall()
            for case_id, repeat in {tuple(k) for k in keys}:
                conn.execute(delete(schema.case_results).where(and_(
                    schema.case_results.c.run_id == run_id,
                    schema.case_results.c.case_id == case_id,
                    schema.case_results.c.repeat == repeat)))
            conn.execute(delete(schema.scores).where(and_(
                schema.scores.c.run_id == run_id, schema.scores.c.error_code.is_not(None))))
        return len(keys)

    # -- reading --------------------------------------------------------------------------

    def run(self, run_id: str) -> dict[str, Any]:
        with self._begin() as conn:
            row = conn.execute(select(schema.runs).where(schema.runs.c.id == run_id)).first()
            if row is None:
                # Accept a unique prefix, as git does for commits.
                rows = conn.execute(select(schema.runs).where(
                    schema.runs.c.id.like(f"{run_id}%"))).fetchall()
                if len(rows) == 1:
                    row = rows[0]
        if row is None:
            raise StoreError(f"no run {run_id!r} in {self.display_url}; list runs with "
                             "'assay runs'")
        return dict(row._mapping)

    def runs(self, limit: int = 50) -> list[dict[str, Any]]:
        with self._begin() as conn:
            rows = conn.execute(select(schema.runs).order_by(
                schema.runs.c.created_at.desc()).limit(limit)).fetchall()
        return [dict(r._mapping) for r in rows]

    def executions(self, run_id: str) -> dict[tuple[str, int], Execution]:
        self.flush()
        with self._begin() as conn:
            rows = conn.execute(select(schema.executions).where(
                schema.executions.c.run_id == run_id)).fetchall()
        return {(r.case_id, r.repeat): Execution.model_validate(r.execution) for r in rows}

    def scores(self, run_id: str) -> dict[tuple[str, int], dict[str, Score]]:
        self.flush()
        with self._begin() as conn:
            rows = conn.execute(select(schema.scores).where(
                schema.scores.c.run_id == run_id)).fetchall()
        found: dict[tuple[str, int], dict[str, Score]] = {}
        for r in rows:
            found.setdefault((r.case_id, r.repeat), {})[r.evaluator] = Score.model_validate(
                r.score)
        return found

    def score_count(self, run_id: str) -> int:
        self.flush()
        with self._begin() as conn:
            return len(conn.execute(select(schema.scores.c.evaluator).where(
                schema.scores.c.run_id == run_id)).fetchall())

    def case_rows(self, run_id: str) -> list[dict[str, Any]]:
        self.flush()
        with self._begin() as conn:
            rows = conn.execute(select(schema.case_results).where(
                schema.case_results.c.run_id == run_id).order_by(
                schema.case_results.c.created_at)).fetchall()
        return [dict(r._mapping) for r in rows]

    def close(self) -> None:
        self.flush()
        self.engine.dispose()


def _json_text(value: Any) -> str:
    """orjson for the JSON columns: most of the store's time went to stdlib json.dumps."""
    return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()
