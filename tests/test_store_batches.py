"""A flush of the run store writes one statement per table, however the rows of its tables
interleave (each case queues an execution, a score and a case row in turn), and the first
row for a key still wins. A file store commits its batches on a writer thread: a statement
never overtakes the rows recorded before it, a failed batch is reported, and rows handed over
just before the process exits are committed."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from sqlalchemy import event

from assay.errors import ConfigError
from assay.store.errors import StoreError
from assay.store.runs import RunStore
from assay.store.writer import BatchWriter
from assay.types.case import Case
from assay.types.execution import Execution
from assay.types.records import CaseRecord, Verdict
from assay.types.score import Score


def _record(store: RunStore, run: str, i: int, output: str | None = None,
            value: float | None = None) -> None:
    execution = Execution(output=output if output is not None else f"answer {i}")
    store.record_execution(run, f"c{i}", 0, execution)
    store.record_score(run, f"c{i}", 0, Score(name="judge", value=i / 10 if value is None
                                              else value))
    store.record_case(CaseRecord(run_id=run, case_id=f"c{i}", case=Case(id=f"c{i}"),
                                 execution=execution, verdict=Verdict.FAIL))


@pytest.mark.parametrize("writer", [True, False], ids=["writer-thread", "in-line"])
def test_interleaved_rows_flush_as_one_statement_per_table(tmp_path, writer):
    store = RunStore(f"sqlite:///{tmp_path}/runs.db", flush_seconds=3600)
    assert store._writer is not None  # a file store has one where SQLite can
    if not writer:
        store._writer = None
    run = store.create_run("suite", {})
    statements: list[str] = []
    if writer:  # the writer thread speaks to the driver: count what SQLite itself runs
        event.listen(store.engine.pool, "checkout", lambda dbapi, *rest: dbapi.set_trace_callback(
            lambda sql: statements.append(sql.split()[0])))
    else:
        event.listen(store.engine, "before_cursor_execute",
                     lambda conn, cursor, sql, *rest: statements.append(sql.split()[0]))
    for i in range(5):
        _record(store, run, i)
    store.record_score(run, "c0", 0, Score(name="judge", value=0.9))  # same key, later
    store.flush()
    assert statements.count("INSERT") == 4  # executions, scores, case rows, search rows
    scores = store.scores(run)
    assert len(store.case_records(run)) == 5 and scores[("c0", 0)]["judge"].value == 0.0


def test_rows_read_back_as_recorded_through_the_writer(tmp_path):
    """Values pass through a JSON array on their way in: floats keep every bit, a missing
    value stays NULL, and a NUL character survives (SQLite's JSON reader would cut a plain
    text short at one; the writer binds such a batch row by row)."""
    store = RunStore(f"sqlite:///{tmp_path}/runs.db", flush_seconds=3600)
    run = store.create_run("suite", {})
    _record(store, run, 0, output="a\x00b", value=0.1 + 0.2)
    _record(store, run, 1, output="plain \u2603 \U0001F600 \"quoted\"", value=1 / 3)
    store.flush(wait=False)
    records = {r.case_id: r for r in store.case_records(run)}  # waits for the writer
    assert records["c0"].execution.output == "a\x00b"
    assert records["c1"].execution.output == "plain \u2603 \U0001F600 \"quoted\""
    assert records["c0"].scores[0].value == 0.1 + 0.2 and records["c1"].scores[0].value == 1 / 3
    store.close()
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        rows = conn.execute("SELECT case_id, value, typeof(value), passed, text FROM scores "
                            "JOIN case_search USING (run_id, case_id, repeat) ORDER BY case_id"
                            ).fetchall()
    assert rows[0][:4] == ("c0", 0.1 + 0.2, "real", None) and "a b" in rows[0][4]
    assert rows[1][:3] == ("c1", 1 / 3, "real")


def test_a_failed_batch_is_reported_and_it_and_later_batches_are_written_once_there_is_room(
        tmp_path):
    store = RunStore(f"sqlite:///{tmp_path}/runs.db", flush_seconds=3600)
    run = store.create_run("suite", {})
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON scores WHEN NEW.case_id = 'c1' "
                     "BEGIN SELECT RAISE(ABORT, 'disk says no'); END")
    _record(store, run, 0)
    store.flush()
    _record(store, run, 1)
    store.flush(wait=False)  # returns at once; the failure comes with the next call
    writer = store._writer
    assert writer is not None
    with writer._lock:  # let c1's batch fail before c2 is recorded
        writer._lock.wait_for(lambda: writer._outstanding == 0)
    _record(store, run, 2)
    with pytest.raises(StoreError, match=r"runs\.db failed: disk says no\. Results written "
                                         "before this point are kept"):
        store.flush()
    # reported once; nothing after c1's batch is committed before it (a prefix), and
    # nothing is dropped: while the store still refuses, the next flush says so again
    reader = RunStore(f"sqlite:///{tmp_path}/runs.db")
    assert sorted(k[0] for k in reader.case_keys(run)) == ["c0"]
    with pytest.raises(StoreError, match="disk says no"):
        store.flush()
    with sqlite3.connect(tmp_path / "runs.db") as conn:  # room again
        conn.execute("DROP TRIGGER refuse")
    store.flush()
    assert sorted(k[0] for k in store.case_keys(run)) == ["c0", "c1", "c2"]
    assert sorted(k[0] for k in store.executions(run)) == ["c0", "c1", "c2"]
    assert {k[0] for k in store.scores(run)} == {"c0", "c1", "c2"}


def test_rows_handed_to_the_writer_are_committed_when_the_process_exits(tmp_path):
    script = (
        "import sys\n"
        "from assay.types import Execution\n"
        "from assay.store.runs import RunStore\n"
        "store = RunStore(sys.argv[1], flush_seconds=3600)\n"
        "run = store.create_run('suite', {})\n"
        "for i in range(3000):\n"
        "    store.record_execution(run, f'c{i}', 0, Execution(output='x' * 500))\n"
        "store.flush(wait=False)\n"
        "print(run)\n")
    url = f"sqlite:///{tmp_path}/runs.db"
    done = subprocess.run([sys.executable, "-c", script, url], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(RunStore(url).executions(done.stdout.strip())) == 3000


def test_a_batch_that_fails_as_the_process_exits_is_told_on_stderr(tmp_path):
    """No caller is left to raise to when the last rows fail at exit: before, the failure
    was swallowed, and the run looked stored."""
    url = f"sqlite:///{tmp_path}/runs.db"
    run = RunStore(url).create_run("suite", {})
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON executions "
                     "BEGIN SELECT RAISE(ABORT, 'disk says no\x1b[2J'); END")
    script = (
        "import sys\n"
        "from assay.types import Execution\n"
        "from assay.store.runs import RunStore\n"
        "store = RunStore(sys.argv[1], flush_seconds=3600)\n"
        "store.record_execution(sys.argv[2], 'c0', 0, Execution(output='x'))\n"
        "store.flush(wait=False)\n")
    done = subprocess.run([sys.executable, "-c", script, url, run], capture_output=True,
                          text=True, timeout=120)
    assert "results recorded last were not stored: the run store" in done.stderr
    assert "Traceback" not in done.stderr
    assert "disk says no\\x1b[2J" in done.stderr and "\x1b" not in done.stderr  # shown, inert


def test_a_store_is_collected_when_no_longer_used(tmp_path):
    """The exit handler holds the writer and the engine, not the store itself."""
    import gc
    import weakref

    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    gone = weakref.ref(store)
    del store
    gc.collect()
    assert gone() is None


@pytest.mark.timeout(60)
@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_does_not_wait_for_its_parents_batches(tmp_path):
    """A child of fork inherits the batches its parent handed over, counted as outstanding,
    but not the thread that commits them: before, its first wait never returned."""
    path = tmp_path / "w.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v)")
    release = threading.Event()

    def connect():  # type: ignore[no-untyped-def]
        release.wait(30)  # the parent's batch stays outstanding while the child runs
        return sqlite3.connect(path, check_same_thread=False)

    writer, table = BatchWriter(connect), _Table("t")
    writer.submit([(table, {"k": "parent", "v": 1})])
    pid = os.fork()
    if pid == 0:  # the child: its own batch, then a wait that must return
        code = 1
        try:
            release.set()  # the child's own writer thread may connect at once
            writer.wait()  # the parent's batch is the parent's to commit
            writer.submit([(table, {"k": "child", "v": 2})])
            writer.wait()
            code = 0
        finally:
            os._exit(code)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        release.set()
        pytest.fail("the forked child's wait never returned")
    release.set()
    writer.wait()
    assert os.waitstatus_to_exitcode(status) == 0
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT k FROM t ORDER BY k").fetchall() == [("child",), ("parent",)]


class _Table:
    """What the writer needs of a table: its name."""

    def __init__(self, name: str) -> None:
        self.name = name


def _writer_on(path) -> tuple[BatchWriter, _Table]:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v)")
    return BatchWriter(lambda: sqlite3.connect(path, check_same_thread=False)), _Table("t")


def test_a_value_json_cannot_carry_is_bound_by_the_driver(tmp_path):
    """Bytes (JSON has none) and a text with a NUL (SQLite's JSON reader would end it
    there) go to the driver row by row."""
    writer, table = _writer_on(tmp_path / "w.db")
    writer.submit([(table, {"k": "blob", "v": b"\x00\xff"}), (table, {"k": "n", "v": 2})])
    writer.submit([(table, {"k": "nul", "v": "a\x00b"})])
    writer.wait()
    with sqlite3.connect(tmp_path / "w.db") as conn:
        assert conn.execute("SELECT k, v FROM t ORDER BY k").fetchall() == [
            ("blob", b"\x00\xff"), ("n", 2), ("nul", "a\x00b")]


def test_only_a_batch_holding_a_huge_text_runs_with_a_small_page_cache(tmp_path):
    """A huge value's overflow pages would fill SQLite's 2 MB page cache for nothing: the
    batch holding it runs with a small one, and the connection gets its own back after; a
    batch of ordinary rows touches no setting."""
    from assay.store.writer import JSON_EACH_CHARS, LARGE_ROW_CACHE_KIB

    path = tmp_path / "w.db"
    _writer_on(path)
    seen: list[tuple[str, int]] = []
    conn = sqlite3.connect(path, check_same_thread=False)

    def traced(statement: str) -> None:
        if statement.startswith("INSERT"):
            seen.append(("insert", conn.execute("PRAGMA cache_size").fetchone()[0]))
        elif "cache_size=" in statement:  # a setting (this callback's own reads are not)
            seen.append((statement, 0))

    conn.set_trace_callback(traced)

    class Pooled:  # the writer closes what it is given: a pool's connection stays open
        def cursor(self):  # type: ignore[no-untyped-def]
            return conn.cursor()

        def commit(self) -> None:
            conn.commit()

        def rollback(self) -> None:
            conn.rollback()

        def close(self) -> None:
            pass

    writer, table = BatchWriter(Pooled), _Table("t")
    writer.submit([(table, {"k": "small", "v": "x"})])
    writer.wait()
    assert [what for what, _ in seen] == ["insert"] and seen[0][1] == -2000
    seen.clear()
    huge = "y" * (JSON_EACH_CHARS + 1)
    writer.submit([(table, {"k": "huge", "v": huge}), (table, {"k": "next", "v": "z"})])
    writer.wait()
    inserts = [size for what, size in seen if what == "insert"]
    assert inserts and all(size == -LARGE_ROW_CACHE_KIB for size in inserts)
    assert conn.execute("PRAGMA cache_size").fetchone()[0] == -2000
    assert conn.execute("SELECT length(v) FROM t WHERE k = 'huge'").fetchone() == (len(huge),)


@pytest.mark.timeout(30)
def test_a_writer_thread_that_cannot_start_hands_nothing_over(tmp_path, monkeypatch):
    writer, table = _writer_on(tmp_path / "w.db")

    def refuse(self):  # type: ignore[no-untyped-def]
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    with pytest.raises(RuntimeError, match="start new thread"):
        writer.submit([(table, {"k": "a", "v": 1})])
    writer.wait()  # returns: nothing is outstanding (before, it waited for ever)
    monkeypatch.undo()
    writer.submit([(table, {"k": "b", "v": 2})])
    writer.wait()
    with sqlite3.connect(tmp_path / "w.db") as conn:
        assert conn.execute("SELECT k FROM t").fetchall() == [("b",)]


def test_an_agent_output_with_a_nul_character_is_stored_on_every_backend(store_url):
    """PostgreSQL refuses NUL in text, and its JSON operators refuse the escape: such an
    output failed its whole batch (the run stopped with a store error). SQLite keeps it
    exactly; PostgreSQL keeps U+FFFD in its place, and its pages of cases can be read. The
    search text holds a space on both; a search for a NUL is refused (it would match every
    case with a space)."""
    store = RunStore(store_url, flush_seconds=3600)
    run = store.create_run("suite", {})
    _record(store, run, 0, output="a\x00b \\u0000 \\\x00")
    _record(store, run, 1)
    store.flush()
    records = {r.case_id: r for r in store.case_records(run)}
    nul = "\ufffd" if store.dialect == "postgresql" else "\x00"
    assert records["c0"].execution.output == f"a{nul}b \\u0000 \\{nul}" and len(records) == 2
    from assay.store.queries import CaseFilter, case_page

    with pytest.raises(ConfigError, match="U\\+0000"):
        CaseFilter(text="A\x00B")
    rows, total = case_page(store, run, CaseFilter(text="A B"))
    assert [r.case_id for r in rows] == ["c0"] and total == 1
    # SQLite's text functions stop at a NUL, so its preview (cut in the database) does too
    assert rows[0].output_preview.startswith("a\ufffdb" if nul == "\ufffd" else "a")


def test_the_writer_stores_values_exactly_on_every_backend(store_url):
    """Through the writer's JSON batches: floats keep every bit, a pass is a boolean, a
    missing value stays NULL, and a JSON column holds the object itself (not a text of it)."""
    from sqlalchemy import text

    store = RunStore(store_url, flush_seconds=3600)
    assert store._writer is not None
    run = store.create_run("suite", {})
    _record(store, run, 0, value=0.1 + 0.2)
    store.record_score(run, "c0", 0, Score(name="other", value=1 / 3, passed=True))
    store.record_score(run, "c0", 0, Score(name="skipped", skipped="no inputs"))
    store.flush()
    scores = store.scores(run)[("c0", 0)]
    assert scores["judge"].value == 0.1 + 0.2 and scores["other"].value == 1 / 3
    assert scores["skipped"].value is None and scores["skipped"].skipped == "no inputs"
    json_type = "json_typeof" if store.dialect == "postgresql" else "json_type"
    with store.transaction() as conn:
        rows = dict(conn.execute(text(
            "SELECT evaluator, passed FROM scores WHERE run_id = :r"), {"r": run}).fetchall())
        kind = conn.execute(text(f"SELECT {json_type}(execution) FROM executions "
                                 "WHERE run_id = :r"), {"r": run}).scalar_one()
    assert rows == {"judge": None, "other": True, "skipped": None}  # SQLite's 1 == True
    assert kind == "object"


def test_a_failed_rollback_does_not_hide_the_failure_that_caused_it():
    """With PostgreSQL a lost connection fails the insert and then the rollback (a driver
    error, not SQLite's); the batch's own failure is the one reported."""
    class Cursor:
        def execute(self, sql, params):  # type: ignore[no-untyped-def]
            raise RuntimeError("server closed the connection")

        def close(self) -> None:
            pass

    class Connection:
        def cursor(self) -> Cursor:
            return Cursor()

        def rollback(self) -> None:
            raise ConnectionError("no connection to roll back")

        def close(self) -> None:
            pass

    writer = BatchWriter(Connection, postgres=True)
    writer.submit([(_Table("t"), {"k": "a"})])
    with pytest.raises(RuntimeError, match="server closed the connection"):
        writer.wait()


@pytest.mark.timeout(30)
def test_nothing_commits_after_a_failed_batch_until_the_caller_is_told(tmp_path):
    """A case's scores in one batch and its record in the next: the record must never be
    committed when the scores failed, even when it was handed over before they failed."""
    writer, table = _writer_on(tmp_path / "w.db")
    with sqlite3.connect(tmp_path / "w.db") as conn:
        conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON t WHEN NEW.k = 'scores' "
                     "BEGIN SELECT RAISE(ABORT, 'disk is full'); END")
    gate = threading.Event()
    connect = writer._connect
    writer._connect = lambda: (gate.wait(10), connect())[1]  # type: ignore[method-assign]
    writer.submit([(table, {"k": "scores", "v": 1})])
    writer.submit([(table, {"k": "record", "v": 2})])  # handed over before the first fails
    gate.set()
    with pytest.raises(sqlite3.IntegrityError, match="disk is full"):
        writer.wait()

    def stored() -> list[tuple[str]]:
        with sqlite3.connect(tmp_path / "w.db") as conn:
            return conn.execute("SELECT k FROM t ORDER BY k").fetchall()

    assert stored() == []  # not the record without its scores
    with pytest.raises(sqlite3.IntegrityError, match="disk is full"):
        writer.submit([(table, {"k": "later", "v": 3})])  # tried again first, still refused
    assert stored() == []
    with sqlite3.connect(tmp_path / "w.db") as conn:
        conn.execute("DROP TRIGGER refuse")
    writer.submit([(table, {"k": "later", "v": 3})])
    writer.wait()
    assert stored() == [("later",), ("record",), ("scores",)]


def _collect_before_the_engine_is_built(monkeypatch) -> tuple[threading.Event,
                                                             threading.Event]:
    """(go, built): the engine of the next store opened is built once ``go`` is set, after a
    garbage collection on the building thread (as one triggered by its imports would run);
    ``built`` is set once it is."""
    import gc

    import assay.store.runs as runs

    go, built = threading.Event(), threading.Event()
    build = runs._new_engine

    def collected_first(*args, **kwargs):
        go.wait(10)
        gc.collect()
        engine = build(*args, **kwargs)
        built.set()
        return engine

    monkeypatch.setattr(runs, "_new_engine", collected_first)
    return go, built


def test_a_store_collected_while_its_engine_is_built_does_not_hang_the_build(tmp_path,
                                                                             monkeypatch):
    """A store file whose schema is current gets its SQLAlchemy engine when first asked for,
    on the thread that asks. A garbage collection that runs on that thread (while it imports
    SQLAlchemy's dialect) and collects another store whose engine is not built yet used to
    wait there for that engine: for itself, so the build never ended, and any thread
    importing the same module after it hung too. The collected store's engine is now never
    built (nothing asked for it), and the build goes on."""
    url = f"sqlite:///{tmp_path}/runs.db"
    RunStore(url).close()  # the file, at the current schema: the engine is built when needed
    go, built = _collect_before_the_engine_is_built(monkeypatch)
    first, other = RunStore(url), RunStore(url)
    assert first.direct and other.direct
    other.cycle = other  # only a garbage collection frees it
    del other
    asker = threading.Thread(target=lambda: first.engine, daemon=True)
    asker.start()
    go.set()
    assert built.wait(20), "the engine's build waited for itself"
    asker.join(20)
    assert not asker.is_alive()
    first.close()


def test_a_store_whose_engine_is_never_asked_for_never_builds_one(tmp_path, monkeypatch):
    """Opening a current SQLite store imports nothing of SQLAlchemy: a run's first statements
    are made with sqlite3 alone, and the engine is built when the first write needs it, which
    a store closed before any write never does. A closed store's engine is refused."""
    import assay.store.runs as runs

    url = f"sqlite:///{tmp_path}/runs.db"
    RunStore(url).close()
    builds: list[str] = []
    monkeypatch.setattr(runs, "_new_engine", lambda *a: builds.append("built"))
    store = RunStore(url)
    assert store.direct
    run_id = store.create_run("suite", {})
    assert store.run_record(run_id).id == run_id
    store.close()
    assert builds == []
    with pytest.raises(StoreError, match="closed"):
        store.engine  # noqa: B018


def test_a_store_collected_with_rows_queued_while_its_engine_is_built_keeps_them(tmp_path,
                                                                              monkeypatch):
    """The same collection, of a store whose writer holds rows: the writer waits for the
    engine that the collecting thread is building, so the store's last act (commit the rows,
    then close) used to wait there for ever; now it waits on a thread of its own, and the
    rows are kept."""
    url = f"sqlite:///{tmp_path}/runs.db"
    first = RunStore(url)
    run = first.create_run("suite", {})
    first.close()
    go, built = _collect_before_the_engine_is_built(monkeypatch)

    def queue_a_row() -> None:  # in a frame of its own, which nothing inspects
        store = RunStore(url, flush_seconds=3600)
        assert store.direct
        store.record_execution(run, "c0", 0, Execution(output="kept"))
        store.flush(wait=False)  # the writer now waits for the engine
        store.cycle = store  # only a garbage collection frees it

    queue_a_row()
    go.set()
    assert built.wait(20), "the engine's build waited for the writer, which waited for it"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with sqlite3.connect(tmp_path / "runs.db") as db:
            if db.execute("SELECT count(*) FROM executions").fetchone()[0] == 1:
                break
        time.sleep(0.05)
    else:
        raise AssertionError("the queued row was not committed")
