"""Committing a store's result rows on a thread of their own (a SQLite file, PostgreSQL).

A run records three or four rows per case. Committed on the event loop, SQLAlchemy's
executemany, SQLite's inserts into the tables and their indexes, and the commit cost about
0.1 ms a case there, a tenth of a judged case's whole client time. Here a batch is packed, on
the caller's thread, into one JSON array per table (one ``orjson`` call), and a writer thread
inserts it with a single ``INSERT ... SELECT ... FROM json_each(?)``. Python's ``sqlite3``
lets go of the interpreter lock for the whole statement, so SQLite's work runs on another
core while the event loop goes on; the loop's share drops to about a tenth.
PostgreSQL gets the same shape through ``json_populate_recordset``: one round trip per table
and batch, waited for on the writer's thread.

What a reader can rely on is unchanged: :meth:`BatchWriter.wait` returns once every batch
handed over has been committed (the store calls it before any other statement and on
``flush()``), batches commit in the order they were handed over, one transaction each, and a
batch that fails is reported to the caller at its next hand-over or wait. At most
:data:`BACKLOG` batches wait for the writer; a caller that gets further ahead waits.

What is committed is always a prefix of what was handed over. A case's rows may span two
batches (its execution and scores in one, its record in the next), so once a batch fails the
writer commits nothing after it: the failed batch and every later one are held. At the
caller's next hand-over or wait after it was told of the failure they are tried again, in
order, on the caller's thread (a disk that was full may have room again); a failure then is
raised there and they stay held. A store never shows a case without its scores, and nothing
handed over is dropped while the process lives.
"""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import sqlite3
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import orjson

BACKLOG = 4
"""Batches handed over and not yet committed before a hand-over waits for the writer."""

JSON_EACH_CHARS = 1 << 16
"""The longest text a table's rows of a batch may hold to go in as one JSON array; a group
holding a longer one is bound row by row. SQLite reads the array once for ``json_each`` and
again for each column's ``json_extract``, each time holding a parse of it: one 30 MB answer
cost some 480 MB in SQLite alone, where binding it costs a copy or two. Rows of a few KB,
what nearly every batch holds, keep the one statement."""

LARGE_ROW_CACHE_KIB = 16
"""SQLite's page cache, in KiB, while the writer inserts a batch holding a text longer than
:data:`JSON_EACH_CHARS`. A huge value goes to disk through overflow pages, each passing
through the cache: at SQLite's default 2 MB that is 2 MB held for pages never read again, on
top of the copies of the value SQLite needs anyway. Only such a batch runs with the small
cache; every other keeps the default, which the tables' indexes use."""

IDLE_SECONDS = 2.0
"""A writer with nothing to do for this long ends its thread; the next batch starts one."""

Rows = Sequence[tuple[Any, dict[str, Any]]]
"""A batch: (table, row values) pairs in the order they were recorded; a table by its name
(or anything with a ``name``)."""


class EncodedJSON(str):
    """JSON text encoded when a row was recorded: a JSON column's value, passed through as it
    is (to SQLite as text; to PostgreSQL embedded in the batch's JSON as the value itself)."""


@functools.cache
def json_each_works() -> bool:
    """Whether this SQLite has the JSON functions (built in from 3.38, and in nearly every
    build before); without them the store commits on the caller's thread as before."""
    try:
        with contextlib.closing(sqlite3.connect(":memory:")) as conn:
            return conn.execute("SELECT json_extract(value, '$[0]') FROM json_each('[[7]]')"
                                ).fetchone() == (7,)
    except sqlite3.Error:
        return False


def _quoted(name: str) -> str:
    """An SQL identifier, quoted (the names are the schema's own; quoted all the same)."""
    return '"' + name.replace('"', '""') + '"'


class _Statement:
    """One table's rows of a batch, ready to run on any thread."""

    __slots__ = ("large", "many", "params", "sql")

    def __init__(self, sql: str, params: Any, many: bool, large: bool = False) -> None:
        self.sql, self.params, self.many, self.large = sql, params, many, large


class BatchWriter:
    """Commits batches of rows to a SQLite file or a PostgreSQL database on one daemon
    thread, in order.

    ``connect`` gives a DBAPI connection with the store's settings (busy timeout, WAL); it is
    called on the writer's thread for each batch and closed (returned to its pool) after.
    For PostgreSQL (``postgres``) a table's rows go as one JSON array of objects through
    ``json_populate_recordset``: one round trip a table, and the wait for it is the thread's,
    not the event loop's. Rows for PostgreSQL must hold no NUL (the store replaces it).
    """

    def __init__(self, connect: Callable[[], Any], postgres: bool = False) -> None:
        self._connect = connect
        self._postgres = postgres
        self._sql: dict[tuple[str, tuple[str, ...], str], str] = {}
        self._start_empty()
        _WRITERS.add(self)

    def _start_empty(self) -> None:
        """Nothing handed over, no thread: a new writer's state, and a forked child's.

        A child of ``fork`` inherits the batches its parent had handed over, counted as
        outstanding, but not the thread that commits them (and perhaps a lock that thread
        held): its first wait would never return. Those batches are the parent's to commit.
        """
        self._queue: queue.SimpleQueue[list[_Statement]] = queue.SimpleQueue()
        self._room = threading.BoundedSemaphore(BACKLOG)
        self._lock = threading.Condition()
        self._outstanding = 0
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._held: list[list[_Statement]] = []
        """The batch that failed and every batch handed over after it, in order (see the
        module docstring)."""

    # -- the caller's side ----------------------------------------------------------------

    def submit(self, batch: Rows) -> None:
        """Hand a batch over; returns at once unless :data:`BACKLOG` batches are waiting.
        An earlier batch's failure is for the caller to collect (:meth:`raise_failure`)
        before it lets go of this one."""
        self._retry_held()
        statements = self._pack(batch)
        self._room.acquire()
        try:
            with self._lock:
                if self._thread is None or not self._thread.is_alive():
                    thread = threading.Thread(target=self._work, name="assay-store-writer",
                                              daemon=True)
                    thread.start()  # may fail (no threads left): then nothing was handed over
                    self._thread = thread
                self._outstanding += 1
                self._queue.put(statements)
        except BaseException:
            self._room.release()
            raise

    def wait(self) -> None:
        """Return once every batch handed over is committed; raise the failure of one, once."""
        with self._lock:
            self._lock.wait_for(lambda: self._outstanding == 0)
        self.raise_failure()
        self._retry_held()

    def _retry_held(self) -> None:
        """Commit the held batches, in order, once the caller has been told why they were
        held: after the writer has moved every batch still queued behind them. A failure is
        raised here, and that batch and the rest stay held."""
        if not self._held or self._failure is not None:
            return
        with self._lock:
            self._lock.wait_for(lambda: self._outstanding == 0)
        while self._held:
            self._commit(self._held[0])
            self._held.pop(0)

    def raise_failure(self) -> None:
        """Raise the failure of a batch handed over earlier, once."""
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def _pack(self, batch: Rows) -> list[_Statement]:
        """Group rows by table and columns; each group becomes one statement."""
        groups: dict[tuple[Any, tuple[str, ...]], list[dict[str, Any]]] = {}
        for table, values in batch:
            groups.setdefault((table, tuple(values)), []).append(values)
        statements = []
        for (table, columns), rows in groups.items():
            source, params = self._params(rows)
            name = table if isinstance(table, str) else table.name
            statements.append(_Statement(
                self._insert(name, columns, source), params, many=source == "values",
                large=source == "values" and not self._postgres and _holds_large(params)))
        return statements

    def _params(self, rows: list[dict[str, Any]]) -> tuple[str, Any]:
        """How a group's rows go in, and its parameter: one JSON array where it can.

        PostgreSQL takes objects, with the JSON columns embedded as they were encoded.
        SQLite's JSON reader ends a text at a NUL character, so a group with a NUL in a plain
        text value (JSON columns arrive encoded, their NULs escaped) goes in row by row, as
        does one with a value JSON cannot carry (bytes, an integer of more than 64 bits), and
        one holding a text longer than :data:`JSON_EACH_CHARS` (see there).
        """
        if self._postgres:
            return "populate", orjson.dumps([
                {k: orjson.Fragment(str(v)) if isinstance(v, EncodedJSON) else v
                 for k, v in row.items()} for row in rows]).decode()
        values = [list(row.values()) for row in rows]
        if not any(isinstance(v, str) and (len(v) > JSON_EACH_CHARS or "\x00" in v)
                   for row in values for v in row):
            try:
                return "json_each", orjson.dumps(values).decode()
            except orjson.JSONEncodeError:  # sqlite3 binds it
                pass
        return "values", values

    def _insert(self, table: str, columns: tuple[str, ...], source: str) -> str:
        key = (table, columns, source)
        sql = self._sql.get(key)
        if sql is None:
            names = ", ".join(_quoted(c) for c in columns)
            if source == "populate":
                rows = f"SELECT {names} FROM json_populate_recordset(NULL::{_quoted(table)}, " \
                       "%s::json)"
            elif source == "json_each":
                picks = ", ".join(f"json_extract(value, '$[{i}]')" for i in range(len(columns)))
                # WHERE true: without it SQLite would read ON CONFLICT as a join's ON
                rows = f"SELECT {picks} FROM json_each(?) WHERE true"
            else:
                rows = "VALUES (" + ", ".join("?" for _ in columns) + ")"
            sql = self._sql[key] = (f"INSERT INTO {_quoted(table)} ({names}) {rows} "
                                    "ON CONFLICT DO NOTHING")
        return sql

    # -- the writer's thread --------------------------------------------------------------

    def _work(self) -> None:
        while True:
            try:
                statements = self._queue.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._queue.empty():
                        self._thread = None
                        return
                continue
            try:
                with self._lock:
                    held = bool(self._held)
                    if held:  # an earlier batch failed: nothing commits after it
                        self._held.append(statements)
                if not held:
                    self._commit(statements)
            except BaseException as exc:  # reported to the caller, never lost in this thread
                with self._lock:
                    self._held.append(statements)
                    if self._failure is None:
                        self._failure = exc
            finally:
                self._room.release()
                with self._lock:
                    self._outstanding -= 1
                    self._lock.notify_all()

    def _commit(self, statements: list[_Statement]) -> None:
        conn = self._connect()
        try:
            cursor = conn.cursor()
            try:
                with _small_page_cache(cursor, any(s.large for s in statements)):
                    for statement in statements:
                        if statement.many:
                            cursor.executemany(statement.sql, statement.params)
                        else:
                            cursor.execute(statement.sql, (statement.params,))
                    conn.commit()
            except BaseException:
                with contextlib.suppress(Exception):  # the first failure is the one to tell
                    conn.rollback()
                raise
            finally:
                cursor.close()
        finally:
            conn.close()


def _holds_large(rows: list[list[Any]]) -> bool:
    """Whether a group's rows hold a text longer than :data:`JSON_EACH_CHARS`."""
    return any(isinstance(v, str) and len(v) > JSON_EACH_CHARS for row in rows for v in row)


@contextlib.contextmanager
def _small_page_cache(cursor: Any, wanted: bool) -> Any:
    """SQLite's page cache at :data:`LARGE_ROW_CACHE_KIB` inside the block when ``wanted``,
    and as it was again after (a connection returns to its pool)."""
    if not wanted:
        yield
        return
    (before,) = cursor.execute("PRAGMA cache_size").fetchone()
    cursor.execute(f"PRAGMA cache_size=-{LARGE_ROW_CACHE_KIB}")
    try:
        yield
    finally:
        cursor.execute(f"PRAGMA cache_size={int(before)}")


_WRITERS: weakref.WeakSet[BatchWriter] = weakref.WeakSet()
"""Every writer of this process, to start empty in a forked child."""


def _forget_parents_batches() -> None:
    for writer in list(_WRITERS):
        writer._start_empty()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_parents_batches)
