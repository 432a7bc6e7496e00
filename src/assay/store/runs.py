"""The run store: runs, executions, scores and case results in SQLite or PostgreSQL.

Every result is committed within a fraction of a second of completing, with idempotent inserts,
so a run killed at any point keeps what finished and resumes without duplicates. The database is
reached through SQLAlchemy Core, so a ``postgresql://`` URL works as well as the default
``sqlite:///.assay/runs.db``; ``sqlite://`` (no path) is a store in memory.

Each row is encoded to JSON when it is recorded, not when its batch is committed: a value that
cannot be stored is refused right there (:class:`RecordRejected`, which the runner turns into
that one case's error) and never takes the rest of a batch down with it.

Every entry point keeps its runs in :func:`default_url` unless told otherwise, so that a run
made from Python can be shown, compared, rescored and resumed later like one made by
``assay run``. Every run row is read by :func:`read_run`, which never fails: a row that cannot
be read is an entry naming the run and why, and a run left ``running`` by a process that died
(its :class:`RunLease` ran out) reads as interrupted.

No secret is stored: every JSON value written (rows through :func:`encode`, run configs and
summaries through the columns' serializer) and the search text pass through
:mod:`assay._util.redact`'s registry, so a judge's answer or an agent's output that quotes a key
keeps a label in its place (``${{ OPENAI_API_KEY }}``).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import math
import os
import re
import secrets
import sqlite3
import sys
import threading
import time
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import orjson
import pydantic_core
from pydantic import BaseModel, ValidationError

from assay._util import jsondata
from assay._util.control_chars import printable, quoted
from assay._util.redact import (
    redact_url,
    register,
    register_environment,
    scrub,
    scrub_json,
    url_secrets,
)
from assay._util.user_paths import user_path, user_url
from assay.errors import ConfigError
from assay.store import sqlite_direct
from assay.store.errors import StoreError
from assay.store.revisions import revisions
from assay.store.search import search_text
from assay.store.writer import BatchWriter, EncodedJSON, json_each_works
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.records import (
    CaseRecord,
    CauseAnalysis,
    EvaluatorSpec,
    RunRecord,
    RunSnapshot,
    RunStatus,
    RunSummary,
    SourceLocation,
    Verdict,
)
from assay.types.score import Score

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

DEFAULT_URL = "sqlite:///.assay/runs.db"
"""Where runs are kept when neither a store nor ``$ASSAY_STORE_URL`` is given."""

MEMORY = ":memory:"
"""``store=":memory:"``: a store in memory, which lives as long as the result that holds it."""

LEASE_VARIABLE = "ASSAY_RUN_LEASE_S"
DEFAULT_LEASE_S = 60.0
"""How long a running run's process vouches for it at a time (it renews the lease every
quarter of that): a run killed outright reads as interrupted within this many seconds."""

_MEMORY_RUNS: dict[str, weakref.ref[RunStore]] = {}
"""The runs this process made in stores in memory (the newest few thousand), so that asking
another store for one says where it went instead of only "no run"."""
_MEMORY_RUNS_KEPT = 4096


def default_url() -> str:
    """The run store of every entry point (``assay.evaluate``, ``rescore``, ``resume``,
    ``compare``, ``calibrate`` and the ``assay`` commands) when given none:
    ``$ASSAY_STORE_URL``, else ``.assay/runs.db`` under the current directory.

    On disk by default, as MLflow and Inspect keep theirs: a run is worth re-opening,
    comparing and resuming after the process that made it is gone. ``store=":memory:"`` keeps a
    run in memory instead (nothing written, nothing to re-open later)."""
    return os.environ.get("ASSAY_STORE_URL") or DEFAULT_URL


STORE_DIALECTS = ("sqlite", "postgresql")
"""The databases a run store is kept in: its schema and queries are written for these two."""


def store_url(store: str | Path | None) -> str:
    """A store URL from a URL, a path to a SQLite file, ``":memory:"``, or None (the
    default)."""
    if store is None:
        return default_url()
    text = str(store)
    if text == MEMORY:
        return "sqlite://"
    if "://" in text:
        return text
    return f"sqlite:///{user_path(text)}"


def open_store(store: RunStore | str | Path | None, must_exist: bool = False) -> RunStore:
    """A store from an open store, a URL, a path to a SQLite file, ``":memory:"``, or None
    (:func:`default_url`); ``must_exist`` as :class:`RunStore` takes it."""
    if isinstance(store, RunStore):
        return store
    return RunStore(store_url(store), must_exist=must_exist)


class StoredResult(Protocol):
    """What a run's result (:class:`assay.EvaluationResult`) offers to name its run."""

    @property
    def run_id(self) -> str: ...

    @property
    def store(self) -> RunStore | None: ...


def run_id_of(run: str | StoredResult) -> str:
    """The id of a run named by its id or by its result."""
    return run if isinstance(run, str) else run.run_id


def kept_in_memory(run_id: str, looked_in: str) -> str | None:
    """Why a run this process kept in memory is not in the store at ``looked_in`` (None for
    any other run)."""
    kept = _MEMORY_RUNS.get(run_id)
    if kept is None:
        return None
    where = ("pass its result (or store=result.store) instead of the id" if kept()
             is not None else "it went with its result")
    return (f"run {quoted(run_id)} was kept in memory (store=':memory:'), not in {looked_in}: "
            f"{where}. Runs are kept on disk unless store=':memory:' is given")


def store_for(runs: list[str | StoredResult], store: RunStore | str | Path | None
              ) -> RunStore:
    """The store that holds ``runs``: ``store`` when given, else the store of the results
    among them (a store in memory too, which only its result leads to), else the default
    store (:func:`default_url`)."""
    results = [r for r in runs if not isinstance(r, str)]
    for result in results:
        if result.store is None:
            raise ConfigError(f"run {result.run_id!r} is a dry run: it stored nothing to read "
                              "back", code="no_store")
    if store is not None or not results:
        try:
            return open_store(store, must_exist=True)
        except StoreError:
            assert not isinstance(store, RunStore)  # an open store is given back as it is
            for run in runs:
                note = kept_in_memory(run, redact_url(store_url(store))) \
                    if isinstance(run, str) else None
                if note:
                    raise StoreError(note) from None
            raise
    held = {id(r.store): r.store for r in results}
    found = results[0].store
    if len(held) > 1 or found is None:
        raise ConfigError("the runs given are in different stores: give store= (the store "
                          "that holds them all)", code="no_store")
    return found


def lease_seconds() -> float:
    """How long a run's lease lasts: ``$ASSAY_RUN_LEASE_S`` (seconds), else 60."""
    text = os.environ.get(LEASE_VARIABLE, "").strip()
    if not text:
        return DEFAULT_LEASE_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise ConfigError(f"${LEASE_VARIABLE}={text[:40]!r}: expected a number of seconds "
                          "above 0 (how long a running run's process vouches for it)")
    return value


class RecordRejected(ValueError):
    """A value that cannot be stored as JSON (the row is not queued; nothing else is lost)."""


def encode(value: Any) -> EncodedJSON:
    """A model or plain value as JSON text with every known secret hidden (the one place a
    row becomes what is stored), or RecordRejected saying why it cannot be."""
    try:
        if isinstance(value, BaseModel):
            text = value.model_dump_json()
        else:
            text = pydantic_core.to_json(value).decode()
    except (ValueError, TypeError, pydantic_core.PydanticSerializationError) as exc:
        raise RecordRejected(str(exc).splitlines()[0]) from None
    return EncodedJSON(scrub_json(text))


def new_run_id() -> str:
    """A short, sortable run id: UTC time plus randomness."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


class RunStore:
    """Reads and writes runs. One instance per process; safe to call from the event loop.

    Result rows are queued and committed together, at the latest ``flush_seconds`` after they
    were recorded (the runner also flushes on a timer and when it stops): one transaction per
    batch instead of three per case is what lets a fully cached run store thousands of cases a
    second. A SQLite file or a PostgreSQL database commits its batches on a writer thread
    (:mod:`assay.store.writer`), so the event loop does not wait for the database. A process
    killed outright loses at most the rows of that window and of the few batches the writer
    has not committed yet, which a resume recomputes (from the response cache, so at no cost); a process that exits any other
    way commits them first.
    """

    def __init__(self, url: str = DEFAULT_URL, flush_seconds: float = 0.2,
                 flush_rows: int = 1000, must_exist: bool = False) -> None:
        """``must_exist``: a SQLite file that does not exist is an error instead of a new,
        empty store. Whatever only reads runs (show, compare, report, delete) asks for it, so
        a mistyped path says so and leaves no stray file behind."""
        url = user_url(url)
        register(url_secrets(url))
        self.url = url
        self.display_url = redact_url(url)
        """The URL as it may be shown: a password in it is hidden."""
        dialect = url.partition("://")[0].partition("+")[0].lower()
        if dialect not in STORE_DIALECTS:
            raise StoreError(f"cannot open the run store {self.display_url!r}: a run store is "
                             "SQLite (sqlite:///FILE, or a path) or PostgreSQL "
                             f"(postgresql://...), not {dialect[:40]!r}")
        register_environment()  # what is written here is scrubbed with the keys known now
        self.flush_seconds = flush_seconds
        self.flush_rows = flush_rows
        self._pending: list[tuple[Any, dict[str, Any]]] = []
        self._last_flush = time.monotonic()
        self.path: Path | None = None
        """The SQLite file of the store; None for PostgreSQL and a store in memory."""
        if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
            path = self.path = Path(url.removeprefix("sqlite:///"))
            if must_exist and not path.is_file():
                raise StoreError(f"no run store at {path}: the file does not exist (a run "
                                 "creates it: assay run; or give --store)")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the store directory {path.parent}: {exc}") \
                    from None
        memory = url in ("sqlite://", "sqlite:///:memory:")
        self.in_memory = memory
        """A store in memory: it lives as long as this object, and nothing else can read it."""
        self._fresh: set[str] = set()
        """Runs this store created and recorded nothing for yet: nothing of them is stored."""
        self.read_page = READ_PAGE
        """How many cases a read in pages holds at once (see :data:`READ_PAGE`)."""
        # A SQLite file whose schema is current is opened with sqlite3 alone, and SQLAlchemy
        # imported when first needed, once the run's first calls are out (see _Connections).
        self.direct = self.path is not None and self._schema_is_current()
        """Whether the run's first statements go through sqlite3 alone."""
        self._connections = _Connections(functools.partial(_new_engine, url, memory),
                                         lazy=self.direct)
        self.dialect = "sqlite" if self.path is not None or memory else self.engine.dialect.name
        # Result rows are committed on a thread of their own (see :mod:`assay.store.writer`),
        # except in a store in memory, which has one connection to share.
        self._writer: BatchWriter | None = None
        if self.dialect == "postgresql":
            self._writer = BatchWriter(self._connections.raw_connection, postgres=True)
        elif self.dialect == "sqlite" and not memory and json_each_works():
            self._writer = BatchWriter(self._connections.raw_connection)
        self._inserts: dict[Any, Any] = {}
        # Connections are closed when the store goes, or at exit even if the process leaves
        # without tearing its objects down (the ``assay`` command does): closing the last
        # connection is what folds SQLite's write-ahead log back into the database file.
        # Rows still on their way to the writer are committed first.
        weakref.finalize(self, _shut, self._writer, self._connections,
                         functools.partial(_failure, self.display_url, url_secrets(self.url)))
        if not self.direct:
            self._prepare_schema()

    @property
    def engine(self) -> Engine:
        """The store's SQLAlchemy engine (for a SQLite file opened by sqlite3 alone, built
        when first asked for)."""
        return self._connections.engine

    def _schema_is_current(self) -> bool:
        """Step one of opening a SQLite file: with sqlite3 alone, whether its schema is at
        this assay's revision, creating it in a file that has no tables. False leaves the
        store to the migrations (an older store, or one this assay cannot read)."""
        assert self.path is not None
        try:
            return sqlite_direct.prepare(self.path, revisions()[-1]) == "current"
        except sqlite3.Error as exc:
            reason = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise StoreError(f"cannot open the run store {self.display_url}: {reason}") \
                from None

    def input_files(self) -> dict[Path, str]:
        """The store's SQLite file and the files SQLite keeps beside it while it is open:
        no output may be one of them."""
        if self.path is None:
            return {}
        return {self.path: "the run store",
                **{self.path.with_name(self.path.name + s): "a file of the run store"
                   for s in ("-wal", "-shm", "-journal")}}

    def _prepare_schema(self) -> None:
        """Create or upgrade the schema (see :mod:`assay.store.migrations`)."""
        from sqlalchemy.exc import SQLAlchemyError

        from assay.store.migrations import ensure_schema

        shown = self.engine.url.render_as_string(hide_password=True)
        try:
            ensure_schema(self.engine)
        except StoreError as exc:
            raise StoreError(f"the run store {shown}: {exc.message}") from None
        except SQLAlchemyError as exc:
            reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
            raise StoreError(f"cannot open the run store {shown}: {reason}") from None

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One transaction on the store, for the modules that keep their own tables in it
        (baselines, calibrations, the paged queries): ``with store.transaction() as conn:``
        runs SQLAlchemy statements on ``conn``, committed together when the block ends and
        rolled back when it raises. It starts once every result row handed to the writer is
        committed, so a statement never overtakes the results recorded before it; a
        database error is a :class:`StoreError` naming the store (no password in it)."""
        from sqlalchemy.exc import SQLAlchemyError

        self._wait_for_writer()
        try:
            with self.engine.begin() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise self._failed(exc) from None

    @contextmanager
    def _direct_statement(self) -> Iterator[Path]:
        """The store file for a statement through sqlite3 alone, after every row handed to
        the writer is committed; its errors as the store's."""
        assert self.path is not None
        self._wait_for_writer()
        try:
            yield self.path
        except sqlite3.Error as exc:
            raise self._failed(exc) from None

    def _failed(self, exc: BaseException) -> StoreError:
        return _failure(self.display_url, url_secrets(self.url), exc)

    def _wait_for_writer(self) -> None:
        if self._writer is not None:
            try:
                self._writer.wait()
            except Exception as exc:
                raise self._failed(exc) from None

    def _insert_ignore(self, table: Any) -> Any:
        """An INSERT that skips rows whose key exists: what makes every write idempotent.
        Only a SQLite store without a writer (one in memory) commits through it."""
        statement = self._inserts.get(table)
        if statement is None:
            from sqlalchemy.dialects.sqlite import insert

            from assay.store import schema

            statement = self._inserts[table] = insert(
                schema.metadata.tables[table]).on_conflict_do_nothing()
        return statement

    def _queue(self, table: str, values: dict[str, Any]) -> None:
        """Queue a row of ``table`` (its name); flush when the batch is due."""
        if self._fresh:
            self._fresh.discard(values["run_id"])
        self._pending.append((table, values))
        if (len(self._pending) >= self.flush_rows
                or time.monotonic() - self._last_flush >= self.flush_seconds):
            self.flush(wait=False)

    def flush(self, wait: bool = True) -> None:
        """Commit every queued row in one transaction: one multi-row insert per table.

        Rows of different tables interleave as cases complete (execution, scores, case); the
        batch is one transaction, so grouping them by table changes nothing a reader can see
        and turns thousands of statements into four. A store with a writer thread (a SQLite
        file, PostgreSQL) hands the batch to it; ``wait=False`` returns without waiting for
        the commit (the runner's timer does so), and a failure then surfaces at the next
        flush or statement.
        """
        self._last_flush = time.monotonic()
        if self._writer is not None:
            try:
                self._writer.raise_failure()  # an earlier batch's, before this one is taken
            except Exception as exc:
                raise self._failed(exc) from None
            if self._pending:
                batch, self._pending = self._pending, []
                if self.dialect == "postgresql":
                    batch = [(table, _without_nul(values)) for table, values in batch]
                try:
                    self._writer.submit(batch)
                except Exception as exc:
                    self._pending[:0] = batch  # not handed over: the next flush tries again
                    raise self._failed(exc) from None
            if wait:
                self._wait_for_writer()
            return
        if not self._pending:
            return
        batch, self._pending = self._pending, []
        by_table: dict[Any, list[dict[str, Any]]] = {}
        for table, values in batch:
            by_table.setdefault(table, []).append(values)
        with self.transaction() as conn:
            for table, rows in by_table.items():
                conn.execute(self._insert_ignore(table), rows)

    # -- writing --------------------------------------------------------------------------

    def create_run(self, suite: str, config: dict[str, Any], run_id: str | None = None, *,
                   name: str | None = None, tags: Sequence[str] = (),
                   notes: str | None = None) -> str:
        """A new run, marked running, with a lease that :meth:`hold_lease` keeps fresh, and
        the name, tags and notes it was given."""
        run_id = run_id or new_run_id()
        now = time.time()
        values = {"id": run_id, "suite": suite, "status": "running", "created_at": now,
                  "config": config, "lease_expires_at": now + lease_seconds(), "name": name,
                  "notes": None if notes is None else scrub(notes)}
        if self.direct and not tags:
            with self._direct_statement() as path:
                sqlite_direct.insert_run(path, {**values, "config": _json_text(config)})
        else:
            from assay.store import schema

            with self.transaction() as conn:
                conn.execute(schema.runs.insert().values(**values))
                _set_tags(conn, run_id, tags)
        self._fresh.add(run_id)
        if self.in_memory:
            _MEMORY_RUNS[run_id] = weakref.ref(self)
            while len(_MEMORY_RUNS) > _MEMORY_RUNS_KEPT:
                _MEMORY_RUNS.pop(next(iter(_MEMORY_RUNS)))
        return run_id

    def set_status(self, run_id: str, status: str, summary: dict[str, Any] | None = None,
                   config: dict[str, Any] | None = None) -> None:
        """Record a run's status (and summary); marking it running again (a resume) takes a
        new lease, and records its snapshot again when ``config`` is given (what that
        resume chose for itself, :meth:`~assay.types.records.RunSnapshot.resumed`)."""
        from sqlalchemy import update

        from assay.store import schema

        self._fresh.discard(run_id)  # a resumed run has its stored results read
        values: dict[str, Any] = {"status": status}
        if status == "waiting":  # not finished: its judge calls are in batches
            values["finished_at"] = None
        elif status != "running":
            values["finished_at"] = time.time()
        else:
            values["lease_expires_at"] = time.time() + lease_seconds()
        if summary is not None:
            values["summary"] = summary
        if config is not None:
            values["config"] = config
        with self.transaction() as conn:
            conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(**values))

    def annotate_run(self, run_id: str, *, name: str | None = None,
                     tags: Sequence[str] | None = None, notes: str | None = None,
                     add_tags: Sequence[str] = (), remove_tags: Sequence[str] = ()) -> RunRecord:
        """Name a run, set its tags (all of them, or some added and removed) or its notes,
        at any time: what people call a run and write of it, never what it measured. An
        empty name or notes clears it. Returns the run as it reads now."""
        run = self.run_record(run_id)
        values: dict[str, Any] = {}
        if name is not None:
            values["name"] = name.strip() or None
        if notes is not None:
            values["notes"] = scrub(notes) if notes.strip() else None
        from sqlalchemy import update

        from assay.store import schema

        with self.transaction() as conn:
            if values:
                conn.execute(update(schema.runs).where(schema.runs.c.id == run.id)
                             .values(**values))
            if tags is not None or add_tags or remove_tags:
                kept = list(run.tags if tags is None else tags)
                wanted = [t for t in dict.fromkeys([*kept, *add_tags]) if t not in remove_tags]
                _set_tags(conn, run.id, wanted)
        return self.run_record(run.id)

    def hold_lease(self, run_id: str) -> RunLease | None:
        """Keep ``run_id``'s lease fresh until the returned lease is released: the sign, to
        every other process reading the store, that the run's process is alive. None for a
        store in memory, which no other process can read."""
        if self.in_memory:
            return None
        return RunLease(self, run_id, lease_seconds())

    def renew_lease(self, run_id: str, seconds: float) -> None:
        """Push a running run's lease ``seconds`` ahead. Not behind the writer: a renewal
        must not wait for a batch of results, and it touches no row a batch writes."""
        from sqlalchemy import update
        from sqlalchemy.exc import SQLAlchemyError

        from assay.store import schema

        try:
            with self.engine.begin() as conn:
                conn.execute(update(schema.runs).where(
                    schema.runs.c.id == run_id, schema.runs.c.status == "running").values(
                    lease_expires_at=time.time() + seconds))
        except SQLAlchemyError as exc:
            raise self._failed(exc) from None

    def record_execution(self, run_id: str, case_id: str, repeat: int,
                         execution: Execution) -> None:
        """Queue an execution; RecordRejected (nothing queued) when it cannot be stored.
        Its latency goes in a column too (:func:`latency_column`), for sorting by it."""
        self._queue("executions", {
            "run_id": run_id, "case_id": case_id, "repeat": repeat,
            "execution": encode(execution), "created_at": time.time(),
            "latency_ms": latency_column(execution.latency_ms)})

    def record_score(self, run_id: str, case_id: str, repeat: int, score: Score) -> None:
        """Queue a score; RecordRejected (nothing queued) when it cannot be stored."""
        self._queue("scores", {
            "run_id": run_id, "case_id": case_id, "repeat": repeat, "evaluator": score.name,
            "value": score.value, "error_code": score.error.code if score.error else None,
            "passed": score.passed if score.value is not None else None,
            "score": encode(score), "created_at": time.time()})

    def record_case(self, record: CaseRecord) -> None:
        """Queue a case's record. Its execution and scores are stored on their own (as they
        complete); this row holds the case as given and the verdict."""
        row: dict[str, Any] = {"case": record.case, "target": record.target}
        if record.evaluators is not None:
            row["evaluators"] = record.evaluators
        if record.source is not None:
            row["source"] = record.source
        if record.overall_score is not None:
            row["overall_score"] = record.overall_score
        if record.cause_analysis is not None:
            row["cause_analysis"] = record.cause_analysis
        self._queue("case_results", {
            "run_id": record.run_id, "case_id": record.case_id, "repeat": record.repeat,
            "score": record.score, "verdict": record.verdict.value,
            "row": encode(row), "created_at": record.finished_at or time.time()})
        self._queue("case_search", {
            "run_id": record.run_id, "case_id": record.case_id, "repeat": record.repeat,
            "text": search_text(record.case_id, record.case.input, record.case.expected_output,
                                record.execution.output, record.execution.error)})

    def forget_errors(self, run_id: str) -> int:
        """Delete a run's error scores, its failed executions (an agent that errored is run
        again) and the case rows they belong to, so that a resume computes them again;
        returns how many scores were deleted."""
        from sqlalchemy import and_, delete, select, tuple_

        from assay.store import schema

        self.flush()
        with self.transaction() as conn:
            keys = conn.execute(select(schema.scores.c.case_id, schema.scores.c.repeat).where(
                and_(schema.scores.c.run_id == run_id,
                     schema.scores.c.error_code.is_not(None)))).fetchall()
            # An execution that cannot be read is named, never taken for one that did not
            # fail (nor one that did): which it was, the store no longer says.
            failed = [(k.case_id, k.repeat) for k in conn.execute(
                select(schema.executions.c.case_id, schema.executions.c.repeat,
                       schema.executions.c.execution).where(
                    schema.executions.c.run_id == run_id)).fetchall()
                if _stored(Execution, k._mapping, run_id).error is not None]
            cases = {tuple(k) for k in keys} | set(failed)
            for case_id, repeat in cases:
                where = (schema.case_results.c.run_id == run_id,
                         schema.case_results.c.case_id == case_id,
                         schema.case_results.c.repeat == repeat)
                conn.execute(delete(schema.case_results).where(and_(*where)))
                conn.execute(delete(schema.case_search).where(and_(
                    schema.case_search.c.run_id == run_id,
                    schema.case_search.c.case_id == case_id,
                    schema.case_search.c.repeat == repeat)))
            for case_id, repeat in failed:
                conn.execute(delete(schema.executions).where(and_(
                    schema.executions.c.run_id == run_id,
                    tuple_(schema.executions.c.case_id, schema.executions.c.repeat)
                    == (case_id, repeat))))
            conn.execute(delete(schema.scores).where(and_(
                schema.scores.c.run_id == run_id, schema.scores.c.error_code.is_not(None))))
        return len(keys)

    # -- reading --------------------------------------------------------------------------

    def clock(self) -> float | None:
        """Now, for judging leases; None for a store in memory, whose runs are all this
        process's (none of them can have been left by a dead one)."""
        return None if self.in_memory else time.time()

    def find(self, run_id: str) -> RunRecord:
        """A run by id (or a unique id prefix, as git takes commits), read by
        :func:`read_run`: an unreadable row is an entry saying why. StoreError when no run
        has that id."""
        return read_run(self._row(run_id), self.clock())

    def _row(self, run_id: str) -> Mapping[Any, Any]:
        if self.direct:
            with self._direct_statement() as path:
                found = sqlite_direct.run_rows(path, run_id)
            if len(found) == 1:
                return found[0]
            raise StoreError(self._no_run(run_id))
        from sqlalchemy import select

        from assay.store import schema

        with self.transaction() as conn:
            row = conn.execute(select(*run_columns()).where(schema.runs.c.id == run_id)).first()
            if row is None:
                rows = conn.execute(select(*run_columns()).where(schema.runs.c.id.like(
                    f"{sqlite_direct.like_escaped(run_id)}%", escape="\\"))).fetchall()
                if len(rows) == 1:
                    row = rows[0]
            if row is None:
                raise StoreError(self._no_run(run_id))
            return with_tags(conn, [row])[0]

    def _no_run(self, run_id: str) -> str:
        """Why ``run_id`` is not here: a run this process kept in memory is named as such."""
        return kept_in_memory(run_id, self.display_url) or \
            f"no run {quoted(run_id)} in {self.display_url}; list runs with 'assay runs'"

    def has_run(self, run_id: str) -> bool:
        """Whether a run has exactly this id (a new run may not take it)."""
        from sqlalchemy import select

        from assay.store import schema

        with self.transaction() as conn:
            return conn.execute(select(schema.runs.c.id).where(
                schema.runs.c.id == run_id)).first() is not None

    def run_record(self, run_id: str) -> RunRecord:
        """A run by id (or a unique id prefix) as a typed record; StoreError naming the run
        and why when its row cannot be read."""
        return readable(self.find(run_id))

    def run_records(self, limit: int = 50) -> list[RunRecord]:
        """The newest runs, unreadable ones included as entries that say why."""
        now = self.clock()
        return [read_run(row, now) for row in self._rows(limit)]

    def _rows(self, limit: int) -> list[dict[str, Any]]:
        from sqlalchemy import select

        from assay.store import schema

        with self.transaction() as conn:
            rows = conn.execute(select(*run_columns()).order_by(
                schema.runs.c.created_at.desc(), schema.runs.c.id.desc()).limit(limit)
            ).fetchall()
            return with_tags(conn, rows)

    def set_cause_analysis(self, run_id: str, case_id: str, repeat: int,
                           analysis: CauseAnalysis) -> None:
        """Keep a cause analysis made after the run (a comparison's) with its stored case."""
        from sqlalchemy import select, update

        from assay.store import schema

        self.flush()
        table = schema.case_results
        where = (table.c.run_id == run_id) & (table.c.case_id == case_id) & \
            (table.c.repeat == repeat)
        with self.transaction() as conn:
            found = conn.execute(select(table.c.row).where(where)).first()
            if found is None:
                raise StoreError(f"run {run_id!r} has no stored case {case_id!r} (repeat "
                                 f"{repeat}) to keep a cause analysis with")
            conn.execute(update(table).where(where).values(
                row=encode({**(found[0] or {}), "cause_analysis": analysis})))

    def case_keys(self, run_id: str) -> set[tuple[str, int]]:
        """The (case id, repeat) pairs whose case record is stored: what a resume does not
        run again. A row whose repeat is not a whole number (:func:`check_row`) would match
        no case, and its case would silently run again: it is :class:`CaseUnreadable`."""
        if run_id in self._fresh:
            return set()
        from sqlalchemy import select

        from assay.store import schema

        self.flush()
        table = schema.case_results
        with self.transaction() as conn:
            rows = conn.execute(select(table.c.case_id, table.c.repeat).where(
                table.c.run_id == run_id)).fetchall()
        keys = set()
        for case_id, repeat in rows:
            try:
                check_row(CASE_RESULT, {"repeat": repeat})
            except ValueError as exc:
                raise CaseUnreadable(run_id, case_id, repeat, exc) from None
            keys.add((case_id, repeat))
        return keys

    def case_records(self, run_id: str, *, light: bool = False) -> list[CaseRecord]:
        """Every case record of a run, in the order the cases finished. ``light`` leaves out
        what only a person reads (the agent's messages, trace, output and retrieved context;
        the judges' transcripts, rationales, hits and misses), cut in the database: what
        figures and comparisons are computed from reads ten times faster."""
        executions = self.executions(run_id, light=light)
        scores = self.scores(run_id, light=light)
        return [self._record_of(run_id, row, executions, scores)
                for row in self._case_rows(run_id)]

    def iter_case_records(self, run_id: str) -> Iterator[CaseRecord]:
        """A run's case records in the order the cases finished (as :meth:`case_records`,
        ties in case id and repeat order), ``read_page`` at a time: a run of thousands
        of long answers is read whole without holding them all, three queries a page."""
        if run_id in self._fresh:
            return
        self.flush()
        after: tuple[float, str, int] | None = None
        while True:
            rows = self._case_page(run_id, after)
            if not rows:
                return
            keys = {(row["case_id"], row["repeat"]) for row in rows}
            executions = self.executions(run_id, keys=keys)
            scores = self.scores(run_id, keys=keys)
            for row in rows:
                yield self._record_of(run_id, row, executions, scores)
            last = rows[-1]
            after = (last["created_at"], last["case_id"], last["repeat"])
            del rows, executions, scores  # the next page replaces this one, not joins it

    @staticmethod
    def _record_of(run_id: str, row: dict[str, Any],
                   executions: Mapping[tuple[str, int], Execution],
                   scores: Mapping[tuple[str, int], dict[str, Score]]) -> CaseRecord:
        """A case record from its row and its case's execution and scores;
        :class:`CaseUnreadable` naming the case when it does not read."""
        key = (row["case_id"], row["repeat"])
        try:
            return _case_record(run_id, row, executions.get(key), scores.get(key, {}))
        except ValueError as exc:
            raise CaseUnreadable(run_id, *key, exc) from None

    def executions(self, run_id: str, *, light: bool = False,
                   keys: Collection[tuple[str, int]] | None = None
                   ) -> dict[tuple[str, int], Execution]:
        """A run's stored executions by (case id, repeat); with ``keys``, only those (one
        query for a page of cases: what a resume reads as it goes, see
        :meth:`iter_case_records`)."""
        if run_id in self._fresh or (keys is not None and not keys):
            return {}
        rows = self._run_rows(run_id, "executions", "execution", (), LIGHT_EXECUTION, light,
                              keys)
        return {(r.case_id, r.repeat): _stored(Execution, r._mapping, run_id) for r in rows}

    def scores(self, run_id: str, *, light: bool = False,
               keys: Collection[tuple[str, int]] | None = None
               ) -> dict[tuple[str, int], dict[str, Score]]:
        """A run's stored scores by (case id, repeat) and evaluator; ``keys`` as for
        :meth:`executions`."""
        if run_id in self._fresh or (keys is not None and not keys):
            return {}
        rows = self._run_rows(run_id, "scores", "score", ("evaluator", "value"), LIGHT_SCORE,
                              light, keys)
        found: dict[tuple[str, int], dict[str, Score]] = {}
        for r in rows:
            found.setdefault((r.case_id, r.repeat), {})[r.evaluator] = _stored(
                Score, r._mapping, run_id)
        return found

    def _run_rows(self, run_id: str, table: str, json: str, columns: tuple[str, ...],
                  light_paths: Sequence[tuple[str, ...]], light: bool,
                  keys: Collection[tuple[str, int]] | None = None) -> list[Any]:
        """A run's rows of ``table``: case id, repeat, ``columns`` and its JSON column
        ``json`` (with ``light``, without the members at ``light_paths``). A light read that
        meets a row that is not JSON reads again whole, so that the row's case is named.

        With ``keys`` only their rows are read, by their case ids (one statement, whatever
        the backend) and nothing is flushed: a page of a resume reads rows stored before it
        began, and a paged read flushed when it began."""
        from sqlalchemy import select

        from assay.store import schema

        found = getattr(schema, table)
        column = self._without(found.c[json], light_paths) if light else found.c[json]
        where = found.c.run_id == run_id
        if keys is None:
            self.flush()
        else:
            where = where & found.c.case_id.in_(sorted({case_id for case_id, _ in keys}))
        try:
            with self.transaction() as conn:
                rows = list(conn.execute(select(
                    found.c.case_id, found.c.repeat, *(found.c[c] for c in columns),
                    column.label(json)).where(where)).fetchall())
        except RowsNotJSON:
            if not light:
                raise
            return self._run_rows(run_id, table, json, columns, light_paths, False, keys)
        if keys is None:
            return rows
        return [r for r in rows if (r.case_id, r.repeat) in keys]  # another repeat's

    def _without(self, column: Any, paths: Sequence[tuple[str, ...]]) -> Any:
        """A JSON column with the members at ``paths`` removed, in the database."""
        from sqlalchemy import JSON, cast, func, literal_column
        from sqlalchemy.dialects.postgresql import JSONB

        if self.dialect == "postgresql":
            found: Any = cast(column, JSONB)
            for path in paths:
                found = found.op("#-")(literal_column("'{" + ",".join(path) + "}'"))
            return cast(found, JSON)
        return func.json_remove(column, *("$." + ".".join(path) for path in paths),
                                type_=JSON)

    def stored_case_counts(self, run_ids: Sequence[str]) -> dict[str, int]:
        """How many case results each of these runs has stored (a run with none is not
        named): what a list shows for a run that stopped before its summary was written."""
        from sqlalchemy import func, select

        from assay.store import schema

        if not run_ids:
            return {}
        results = schema.case_results
        self.flush()
        with self.transaction() as conn:
            return {str(run_id): int(count) for run_id, count in conn.execute(
                select(results.c.run_id, func.count()).where(
                    results.c.run_id.in_(list(run_ids))).group_by(results.c.run_id))}

    def score_count(self, run_id: str) -> int:
        from sqlalchemy import select

        from assay.store import schema

        self.flush()
        with self.transaction() as conn:
            return len(conn.execute(select(schema.scores.c.evaluator).where(
                schema.scores.c.run_id == run_id)).fetchall())

    def _case_rows(self, run_id: str) -> list[dict[str, Any]]:
        """A run's case rows as the table holds them: read as :meth:`case_records`."""
        from sqlalchemy import select

        from assay.store import schema

        self.flush()
        with self.transaction() as conn:
            rows = conn.execute(select(schema.case_results).where(
                schema.case_results.c.run_id == run_id).order_by(
                schema.case_results.c.created_at)).fetchall()
        return [dict(r._mapping) for r in rows]

    def _case_page(self, run_id: str, after: tuple[float, str, int] | None
                   ) -> list[dict[str, Any]]:
        """The next page (``read_page``) of a run's case rows in the order they finished (then
        case id and repeat), those after ``after`` (created at, case id, repeat): a keyset,
        so each page is one query however far into the run it is."""
        from sqlalchemy import and_, or_, select

        from assay.store import schema

        table = schema.case_results
        where = table.c.run_id == run_id
        if after is not None:
            at, case_id, repeat = after
            where = where & or_(table.c.created_at > at, and_(
                table.c.created_at == at, or_(table.c.case_id > case_id, and_(
                    table.c.case_id == case_id, table.c.repeat > repeat))))
        with self.transaction() as conn:
            rows = conn.execute(select(table).where(where).order_by(
                table.c.created_at, table.c.case_id, table.c.repeat).limit(self.read_page)
            ).fetchall()
        return [dict(r._mapping) for r in rows]

    def close(self) -> None:
        self.flush()
        self._connections.dispose()


READ_PAGE = 500
"""How many cases a read in pages holds at once (:meth:`RunStore.iter_case_records`, a
resume): a bounded memory, in a few queries rather than one a case."""

LIGHT_EXECUTION = (("messages",), ("trace",), ("output",), ("input",),
                   ("retrieved_context",))
"""What a light read of an execution leaves out (see :meth:`RunStore.case_records`)."""
LIGHT_SCORE = (("details", "judge_request"), ("details", "judge_answer"),
               ("details", "raw_output"), ("rationale",), ("hits",), ("misses",))
"""What a light read of a score leaves out."""


def _failure(display_url: str, hidden: dict[str, str], exc: BaseException) -> StoreError:
    """The store's error for a failed statement or batch, with no secret of the URL in it.
    A statement that met stored text that is not JSON (SQLite's JSON functions refuse it) is
    :class:`RowsNotJSON`: the store works, a row in it does not read."""
    orig = getattr(exc, "orig", None) or exc
    reason = (str(orig).splitlines() or [type(orig).__name__])[0]
    if reason.strip() == SQLITE_NOT_JSON:
        return RowsNotJSON(display_url)
    return StoreError(
        f"the run store {display_url} failed: {scrub(reason, hidden)}. Results written "
        "before this point are kept and readable.")


def _shut(writer: BatchWriter | None, connections: _Connections,
          failed: Callable[[BaseException], StoreError]) -> None:
    """A store's last act, when it is collected or the process exits: the rows on their way
    to the writer are committed, then the connections closed.

    No caller is left to raise to, so a batch that fails here is told on stderr, in the
    store's own words (secrets removed): silence would pass for results kept.

    On a thread that builds a store's engine (a garbage collection there collected this
    store) it is handed to a thread of its own: the writer may be waiting for the very
    engine this thread is building, and waiting for the writer here would wait for ever.
    """
    if getattr(_building, "active", False):
        threading.Thread(target=_shut, args=(writer, connections, failed),
                         name="assay-store-shut").start()
        return
    if writer is not None:
        try:
            writer.wait()
        except Exception as exc:
            with contextlib.suppress(Exception):
                print(printable(f"assay: results recorded last were not stored: "
                                f"{failed(exc)}"), file=sys.stderr, flush=True)
    connections.dispose()


def _json_text(value: Any) -> str:
    """The JSON columns' serializer: rows arrive encoded and scrubbed (see :func:`encode`);
    other values (run configs and summaries) are plain data, go through orjson and are
    scrubbed here."""
    if isinstance(value, EncodedJSON):
        return value
    return scrub_json(orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode())


# A JSON escape of NUL: an odd number of backslashes, then u0000 (an even number is an escaped
# backslash followed by the text "u0000")
_NUL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def _without_nul(values: dict[str, Any]) -> dict[str, Any]:
    """A row as PostgreSQL can hold it: NUL becomes U+FFFD.

    PostgreSQL refuses NUL in text, and its JSON operators refuse the escape ``\\u0000`` (so
    a page of cases that shows such a value could not be read). An agent may answer with
    one; rather than fail the batch, the character is replaced, which SQLite does not need.
    """
    fixed = None
    for key, value in values.items():
        if not isinstance(value, str):
            continue
        if isinstance(value, EncodedJSON):
            if "\\u0000" not in value:
                continue
            value = EncodedJSON(_NUL_ESCAPE.sub(r"\1\\ufffd", value))
        elif "\x00" in value:
            value = value.replace("\x00", "\ufffd")
        else:
            continue
        if fixed is None:
            fixed = dict(values)
        fixed[key] = value
    return values if fixed is None else fixed


_LONG_INTEGER = re.compile(r"\d{19}")


class NotJSON:
    """A JSON column's stored text that is not JSON (a hand edit, another program, a damaged
    file; SQLite's JSON columns take any text). Read as this instead of raising, so that the
    one row is named (:class:`CaseUnreadable`) and a query's other rows are still read. It
    is neither a string nor a container: a reader that does not look for it fails loudly
    on it, as on the decode error it stands for, instead of reading its characters."""

    __slots__ = ("problem", "text")

    def __init__(self, text: str, problem: str) -> None:
        self.text = text
        self.problem = problem

    def __repr__(self) -> str:
        return f"NotJSON({self.problem})"


def _json_load(text: str | bytes) -> Any:
    """orjson for speed; the standard library when the text may hold an integer of 64 bits
    or more (agents do return them), which orjson would read back as a rounded float. Text
    that is not JSON is :class:`NotJSON`."""
    decoded = text if isinstance(text, str) else text.decode("utf-8", "replace")
    try:
        if _LONG_INTEGER.search(decoded):
            return jsondata.loads(text)
        return orjson.loads(text)
    except ValueError as exc:  # orjson's and json's decode errors are both ValueErrors
        return NotJSON(decoded, printable(str(exc).splitlines()[0] if str(exc) else "?")[:120])


_NUMBERS = (int, float)


def stored_number(value: Any, name: str, *, whole: bool = False,
                  required: bool = False) -> Any:
    """A number read from the store, as it is; ValueError naming ``name`` (and what it holds)
    when the row holds anything else. SQLite lets a REAL or INTEGER column, and a JSON
    field, hold any text (a hand edit, another program): such a value is never read as 0 or
    left out, and never reaches a reader's arithmetic. The one rule for every number a case's
    or a run's rows hold (:data:`CASE_ROWS`); None is no value, which is not this rule's to
    refuse unless the number is ``required`` (a case's repeat, part of its key: a row
    without one belongs to no case)."""
    if (value is None and not required) or \
            (type(value) in _NUMBERS and (not whole or type(value) is int)):
        return value
    raise ValueError(f"its {name} holds {_shown(value)}, not "
                     f"{'a whole number' if whole else 'a number'}")


def _shown(value: Any) -> str:
    """A stored value that is not what its column should hold, as an error names it."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return f"the text {printable(value[:40])!r}"
    return f"{type(value).__name__} {printable(repr(value))[:40]}"


class CaseTable:
    """What every reader reads of one table of a case's rows, checked by one rule: its JSON
    column is JSON (:class:`NotJSON`), and its numbers are numbers (:func:`stored_number`),
    ``repeat`` a whole one. :func:`check_row` reads a row by it; :func:`unreadable_sql` finds
    such a row in the database without reading it, for a reader that must know before it
    starts (an export)."""

    __slots__ = ("json", "json_numbers", "numbers", "table")

    def __init__(self, table: str, json: str, numbers: tuple[str, ...],
                 json_numbers: tuple[str, ...]) -> None:
        self.table = table
        self.json = json
        self.numbers = numbers
        self.json_numbers = json_numbers


CASE_RESULT = CaseTable("case_results", "row", ("repeat", "score", "created_at"),
                        ("overall_score",))
EXECUTION = CaseTable("executions", "execution", ("repeat",), ("latency_ms",))
SCORE = CaseTable("scores", "score", ("repeat", "value"), ())
CASE_ROWS = (CASE_RESULT, EXECUTION, SCORE)
"""A case's rows, and the numbers of each that some reader reads (a page of cases reads the
JSON ones in the database): its result, its execution, its scores."""


def check_row(part: CaseTable, row: Mapping[Any, Any]) -> None:
    """ValueError saying why a row of ``part`` cannot be read: ``row`` holds (under their
    names) the numbers that were read of it, and its JSON column or JSON numbers when they
    were (as data: :class:`NotJSON` when the text is not JSON)."""
    for name in part.numbers:
        if name in row:
            key = name == "repeat"  # part of the case's key: never absent
            stored_number(row[name], f"{name} column", whole=key, required=key)
    # Not .get(): a SQLAlchemy row's get() of a name it lacks costs seven times as much.
    data = row[part.json] if part.json in row else None  # noqa: SIM401
    if isinstance(data, NotJSON):
        raise ValueError(f"its {_JSON_NAMES[part.json]} is not JSON ({data.problem})")
    for name in part.json_numbers:
        if name in row:
            stored_number(row[name], f"{_JSON_NAMES[part.json]}'s {name}")
        elif isinstance(data, dict):
            stored_number(data.get(name), f"{_JSON_NAMES[part.json]}'s {name}")


_JSON_NAMES = {"row": "result row", "execution": "execution", "score": "score"}


def unreadable_sql(part: CaseTable, dialect: str) -> Any:
    """SQL true for a row of ``part`` that :func:`check_row` refuses, read in the database
    (no row leaves it): on SQLite, JSON text that is not JSON and a number column or JSON
    number holding anything else; on PostgreSQL, whose columns hold only their type and
    JSON, a JSON number that is not one."""
    from sqlalchemy import case, func, literal, or_

    from assay.store import schema

    table = schema.metadata.tables[part.table]
    data = table.c[part.json]
    if dialect == "sqlite":
        found: list[Any] = [func.json_valid(data) == 0]
        found += [func.typeof(table.c.repeat) != "integer"]
        found += [not_number_sql(table.c[name], dialect) for name in part.numbers
                  if name != "repeat"]
        found += [func.coalesce(case((func.json_valid(data) == 1,
                                      func.json_type(data, f"$.{name}"))), "null").not_in(
            ("integer", "real", "null")) for name in part.json_numbers]
        return or_(*found)
    if not part.json_numbers:
        return literal(False)
    return or_(*(func.coalesce(func.json_typeof(data[name]), "null").not_in(
        ("number", "null")) for name in part.json_numbers))


def repeat_sql(table: Any, repeat: Any, dialect: str) -> Any:
    """SQL true for a case's rows of ``repeat`` in ``table`` and, on SQLite, for those whose
    repeat is not a whole number: a reader of one case reads them too, and
    :func:`check_row` names them, instead of reading the case without them."""
    from sqlalchemy import func, or_

    if dialect == "sqlite":
        return or_(table.c.repeat == repeat, func.typeof(table.c.repeat) != "integer")
    return table.c.repeat == repeat


def not_number_sql(column: Any, dialect: str) -> Any:
    """SQL true for a number column's value that :func:`stored_number` refuses (on SQLite
    only: PostgreSQL's number columns hold numbers)."""
    from sqlalchemy import func, literal

    if dialect == "sqlite":
        return func.typeof(column).not_in(("integer", "real", "null"))
    return literal(False)


def latency_column(latency_ms: float | None) -> float | None:
    """What ``executions.latency_ms`` holds for an execution's latency: the number, or None
    where its JSON holds null (no latency, or one that is not finite, which JSON cannot
    spell): the column and the JSON always say the same."""
    return latency_ms if latency_ms is not None and math.isfinite(latency_ms) else None


def run_columns() -> list[Any]:
    """What :func:`read_run` reads of a run row: its JSON as text, decoded there, so that a
    value that is not JSON is one run's problem instead of failing the whole query."""
    from sqlalchemy import Text, cast

    from assay.store import schema

    runs = schema.runs
    return [runs.c.id, runs.c.suite, runs.c.status, runs.c.created_at, runs.c.finished_at,
            cast(runs.c.config, Text).label("config"),
            cast(runs.c.summary, Text).label("summary"), runs.c.lease_expires_at,
            runs.c.name, runs.c.notes]


def with_tags(conn: Connection, rows: Sequence[Any]) -> list[dict[str, Any]]:
    """Run rows (:func:`run_columns`) with each run's tags, read in one query."""
    from sqlalchemy import select

    from assay.store import schema

    found = [dict(r._mapping) for r in rows]
    ids = [r["id"] for r in found]
    tags: dict[str, list[str]] = {}
    if ids:
        for run_id, tag in conn.execute(select(schema.run_tags.c.run_id, schema.run_tags.c.tag)
                                        .where(schema.run_tags.c.run_id.in_(ids))
                                        .order_by(schema.run_tags.c.tag)):
            tags.setdefault(run_id, []).append(tag)
    for row in found:
        row["tags"] = tags.get(row["id"], [])
    return found


def _set_tags(conn: Connection, run_id: str, tags: Sequence[str]) -> None:
    """A run's tags become ``tags`` (in a transaction the caller holds)."""
    from sqlalchemy import delete

    from assay.store import schema

    conn.execute(delete(schema.run_tags).where(schema.run_tags.c.run_id == run_id))
    wanted = list(dict.fromkeys(tags))
    if wanted:
        conn.execute(schema.run_tags.insert(), [{"run_id": run_id, "tag": t} for t in wanted])


def lease_deadline() -> Any:
    """A run's lease expiry as SQL: runs stored before leases existed count from their start."""
    from sqlalchemy import func

    from assay.store import schema

    runs = schema.runs
    return func.coalesce(runs.c.lease_expires_at, runs.c.created_at + DEFAULT_LEASE_S)


def read_run(row: Mapping[Any, Any], now: float | None) -> RunRecord:
    """A run row (:func:`run_columns`) as a record; the one way a run row is read.

    Never raises: a row that cannot be read (JSON that is not JSON, a summary or config of
    the wrong shape, an unknown status) is a record whose ``unreadable`` says which field
    and why, with what could be read. A row still ``running`` whose lease expired before
    ``now`` (None: do not judge) was left by a process that died: it reads as interrupted,
    ``abandoned``."""
    problems: list[str] = []
    status = _field(RunStatus, row.get("status"), "status", problems)
    config = _field(RunSnapshot, _decoded(row.get("config"), "config", problems), "config",
                    problems)
    summary_data = _decoded(row.get("summary"), "summary", problems)
    summary = None if summary_data is None else _field(RunSummary, summary_data, "summary",
                                                       problems)
    created = known_number(row.get("created_at"), "created_at", problems)
    finished = row.get("finished_at")
    finished = _field(float, finished, "finished_at", problems) if finished is not None \
        else None
    abandoned = False
    if status is RunStatus.RUNNING and now is not None and created is not None:
        lease = _field(float, row.get("lease_expires_at"), "lease_expires_at", problems)
        if (created + DEFAULT_LEASE_S if lease is None else lease) < now:
            status, abandoned = RunStatus.INTERRUPTED, True
    return RunRecord.model_construct(
        id=str(row.get("id")), suite=str(row.get("suite")),
        status=status or RunStatus.FAILED, created_at=created, finished_at=finished,
        config=config or RunSnapshot(), summary=summary,
        unreadable="; ".join(problems) or None, abandoned=abandoned,
        name=row.get("name") or None, tags=list(row.get("tags") or []),
        notes=row.get("notes") or None)


Stored = TypeVar("Stored", Execution, Score)


class Unreadable(StoreError):
    """Stored rows that cannot be read (hand-edited, damaged, or of another program); the
    store and everything else in it are fine."""

    code = "unreadable"


SQLITE_NOT_JSON = "malformed JSON"
"""What SQLite's JSON functions say of text that is not JSON."""


class RowsNotJSON(Unreadable):
    """A statement met a stored row whose JSON is not JSON; the store and its other rows
    are fine. A run's own reads name the case (:class:`CaseUnreadable`)."""

    def __init__(self, display_url: str) -> None:
        super().__init__(f"a row of the run store {display_url} is not JSON (written by "
                         "another program, edited by hand, or the file is damaged); the "
                         "store's other rows are intact: `assay show RUN_ID` names the case")
        self.code = "rows_not_json"


class RunUnreadable(Unreadable):
    """A run whose stored row cannot be read; the store and its other runs are fine."""

    def __init__(self, run: RunRecord) -> None:
        super().__init__(f"run {run.id} cannot be read: {run.unreadable}. Other runs are "
                         "not affected; delete this one to remove it from the store")
        self.code = "run_unreadable"
        self.run_id = run.id


class CaseUnreadable(Unreadable):
    """A case whose stored rows (its result, its execution or a score) cannot be read; the
    run's other cases are fine."""

    def __init__(self, run_id: str, case_id: str, repeat: int, error: ValueError) -> None:
        super().__init__(f"case {case_id!r} (repeat {repeat}) of run {run_id} cannot be read: "
                         f"{_problem(error)}. The store's other rows are intact")
        self.code = "case_unreadable"
        self.run_id = run_id


def _stored(kind: type[Stored], row: Mapping[Any, Any], run_id: str) -> Stored:
    """A case's stored execution or score as its record; :class:`CaseUnreadable` naming the
    case when it is not one."""
    try:
        return stored_model(kind, row)
    except ValueError as exc:
        raise CaseUnreadable(run_id, row["case_id"], row["repeat"], exc) from None


def stored_model(kind: type[Stored], row: Mapping[Any, Any]) -> Stored:
    """A stored execution or score as its record, from its row (its JSON column and what
    else was read of it); ValueError saying why when it is not one (its text not JSON, a
    number that is not one, or JSON of another shape)."""
    part = EXECUTION if kind is Execution else SCORE
    check_row(part, row)
    data = row[part.json]
    if not isinstance(data, dict):
        raise ValueError(f"its {_JSON_NAMES[part.json]} is {_json_kind(data)}, not a JSON "
                         "object")
    return kind.model_validate(data)


def _json_kind(value: Any) -> str:
    """What a JSON value is, in JSON's words: ``a JSON array``, ``a JSON string``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a JSON boolean"
    if isinstance(value, list):
        return "a JSON array"
    return "a JSON string" if isinstance(value, str) else "a JSON number"


def readable(run: RunRecord) -> RunRecord:
    """``run``, or :class:`RunUnreadable` naming it and why its row cannot be read."""
    if run.unreadable:
        raise RunUnreadable(run)
    return run


def _decoded(text: Any, name: str, problems: list[str]) -> Any:
    """A JSON column's text as data; None (and a problem) when it is not JSON."""
    if text is None or not isinstance(text, str | bytes):
        return text
    try:
        return _json_load(text)
    except ValueError as exc:
        shown = text[:40] if isinstance(text, str) else repr(text[:40])
        problems.append(f"{name} is not JSON ({str(exc).splitlines()[0]}; it starts "
                        f"{shown!r})")
        return None


def _field(kind: Any, value: Any, name: str, problems: list[str],
           required: bool = False) -> Any:
    """``value`` as ``kind``; None (and a problem naming the field) when it is not one, or
    when it is None and ``required`` (a number every run has: :func:`stored_number`)."""
    if value is None and not required:
        return None
    try:
        if kind is float:
            return float(stored_number(value, "column", required=required))
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            return kind.model_validate(value)
        return kind(value)
    except (ValueError, TypeError) as exc:
        problems.append(f"{name}: {_problem(exc)}")
    return None


def known_number(value: Any, name: str, problems: list[str]) -> float | None:
    """A number every row of its table holds (when it was made: a run's, a baseline's, a
    calibration's ``created_at``), by :func:`stored_number`'s rule: None, and a problem
    naming ``name`` and what it holds, when the store holds anything else (text, NULL).
    Such a time reads as unknown, never as 0 (shown as 1970), and never fails its reader."""
    found: float | None = _field(float, value, name, problems, required=True)
    return found


def _problem(error: ValueError | TypeError) -> str:
    """Why a stored value cannot be read, in a line: each field a model refused (the first
    three), or the error's message."""
    if isinstance(error, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}"
                         for e in error.errors()[:3])
    return printable(str(error).splitlines()[0] if str(error) else type(error).__name__)[:200]


class RunLease:
    """A running run's lease, renewed from a thread of its own every quarter of its length
    until :meth:`release`: while the process lives the run reads as running wherever the
    store is read; once it is killed (``kill -9``, a machine gone) the lease runs out and the
    run reads as interrupted, so it can be resumed or deleted.

    A thread rather than the event loop: an agent that holds the loop up is not a dead
    process. A renewal that fails (a store briefly unreachable) is tried again at the next
    beat; three in a row may fail before the lease runs out."""

    def __init__(self, store: RunStore, run_id: str, seconds: float) -> None:
        self.store = store
        self.run_id = run_id
        self.seconds = seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name=f"assay-lease-{run_id}",
                                        daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 4):
            with contextlib.suppress(StoreError):
                self.store.renew_lease(self.run_id, self.seconds)

    def release(self) -> None:
        """Stop renewing (the run's status says the rest); a renewal under way may finish,
        and changes nothing once the run is no longer running."""
        self._stop.set()
        self._thread.join(timeout=1.0)


def _case_record(run_id: str, row: dict[str, Any], execution: Execution | None,
                 scores: dict[str, Score]) -> CaseRecord:
    """A case record from its stored parts. Rows written by assay before typed records held
    an AgentV-shaped result row instead of the case; the case is rebuilt from what it kept."""
    check_row(CASE_RESULT, row)
    data = row["row"] or {}
    if not isinstance(data, dict):
        raise ValueError(f"its result row is a JSON {type(data).__name__}, not an object")
    if "case" in data:
        case = Case.model_validate(data["case"])
        target = data.get("target")
        evaluators = data.get("evaluators")
        source = data.get("source")
        names = [s for s in scores]
    else:
        case = Case(id=row["case_id"], input=(execution.input if execution else ""))
        target, evaluators, source = data.get("target"), None, None
        names = [r["name"] for r in data.get("evaluator_results", [])]
    try:
        verdict = Verdict(row["verdict"])
    except ValueError:
        verdict = Verdict.ERROR
    return CaseRecord(
        run_id=run_id, case_id=row["case_id"], repeat=row["repeat"], case=case, target=target,
        execution=execution or Execution(input=case.input), score=row["score"],
        scores=[scores[n] for n in names if n in scores], verdict=verdict,
        evaluators=None if evaluators is None else
        [EvaluatorSpec.model_validate(e) for e in evaluators],
        source=None if source is None else SourceLocation.model_validate(source),
        finished_at=row.get("created_at"), overall_score=data.get("overall_score"),
        cause_analysis=data.get("cause_analysis"))


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    sqlite_direct.pragmas(cursor)
    cursor.close()


def _new_engine(url: str, memory: bool) -> Engine:
    """The store's SQLAlchemy engine (SQLite connections get :func:`_sqlite_pragmas`)."""
    try:
        from sqlalchemy import create_engine, event
        from sqlalchemy.exc import SQLAlchemyError
        from sqlalchemy.pool import StaticPool
    except ImportError as exc:
        raise StoreError(f"cannot open the run store {redact_url(url)!r}: {exc}") from None
    options: dict[str, Any] = {"poolclass": StaticPool,
                               "connect_args": {"check_same_thread": False}} if memory else {}
    try:
        engine = create_engine(url, future=True, json_serializer=_json_text,
                               json_deserializer=_json_load, **options)
    except (SQLAlchemyError, ImportError, ValueError) as exc:
        raise StoreError(f"cannot open the run store {redact_url(url)!r}: "
                         f"{scrub(str(exc), url_secrets(url))}") from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


_building = threading.local()
"""``active`` on the threads that build a store's engine (see :class:`_Connections`)."""


def _dispose_built(future: concurrent.futures.Future[Engine]) -> None:
    """Dispose of the engine ``future`` holds once it is built (a failed build opened none)."""
    if future.exception() is None:
        future.result().dispose()


class _Connections:
    """A store's SQLAlchemy engine: built at once, or (a SQLite file opened by sqlite3
    alone) when it is first needed, on the thread that needs it; whoever needs it while it is
    being built waits for it. A build that failed raises there.

    A run's first need is its writer's first commit, which comes after the first answers:
    so importing SQLAlchemy (a tenth of a second or more) happens while the run's first calls
    are out, not before them. Built on a thread of its own from the moment the store opened,
    as before, it took the interpreter from the run's own start (checking the suite, starting
    the target) and delayed the first call by as much (0.67 s to 0.50 s before the first
    request of a 600-case run in ``benchmarks/suite_throughput.py``)."""

    def __init__(self, build: Callable[[], Engine], lazy: bool) -> None:
        self._build = build
        self._engine: Engine | None = None
        self._future: concurrent.futures.Future[Engine] = concurrent.futures.Future()
        self._claimed = False
        self._lock = threading.Lock()
        if not lazy:
            self._engine = build()

    def _claim(self) -> bool:
        """Whether the caller is the one to build the engine (the first to ask)."""
        with self._lock:
            claimed, self._claimed = self._claimed, True
        return not claimed

    def _run_build(self) -> None:
        was = getattr(_building, "active", False)
        _building.active = True
        try:
            self._future.set_result(self._build())
        except BaseException as exc:  # given to whoever asks for the engine
            self._future.set_exception(exc)
        finally:
            _building.active = was

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            if self._claim():
                self._run_build()
            self._engine = self._future.result()
        return self._engine

    def raw_connection(self) -> Any:
        """A DBAPI connection from the engine's pool (the writer's)."""
        return self.engine.raw_connection()

    def dispose(self) -> None:
        """Close the pool's connections; an engine never asked for has none, and is not
        built after; one being built is waited for, so that none is opened behind this. On a
        thread that builds an engine (a garbage
        collection there collected a store) nothing is waited for: the engine waited for may
        be this thread's own, or be held up by the import this thread is in. It is disposed
        of once it is built instead."""
        if self._engine is None and self._claim():
            # Never built, and now never will be: nothing was opened.
            self._future.set_exception(StoreError("the run store is closed"))
            return
        if self._engine is None and getattr(_building, "active", False):
            self._future.add_done_callback(_dispose_built)
            return
        if self._engine is None:
            try:
                self._engine = self._future.result()
            except Exception:  # nothing was opened
                return
        self._engine.dispose()
