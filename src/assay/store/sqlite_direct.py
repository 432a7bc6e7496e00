"""A SQLite run store's first step, with ``sqlite3`` alone: is the schema current, and if the
file is new, the schema created; then the run's first statements, before its first call.

Importing SQLAlchemy takes a tenth of a second or more, about what a whole 600-case run at
100 ms has to spare against a client with no framework. So a SQLite file store is opened in
two steps (:class:`assay.store.runs.RunStore`): here, the recorded revision is read (and an
empty file given every table, under the same ``BEGIN IMMEDIATE`` lock the migrations take, so
any number of processes may open a new store at once) and the statements a run makes before
its first call (creating the run, reading it back) are made; SQLAlchemy is imported when
something first needs it (the writer's first commit of result rows, once the run's first calls
are out), for the result rows and everything else. A store at another
revision (older, or newer than this assay) is left to :mod:`assay.store.migrations`.

:data:`SCHEMA` is what SQLAlchemy's ``create_all`` of :mod:`assay.store.schema` writes for
SQLite, statement for statement: a test compiles the one and compares it with the other.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from assay._util.sqlite_wal import use_wal
from assay.store.revisions import VERSION_TABLE

SCHEMA: tuple[str, ...] = (
    "CREATE TABLE baselines (\n\tsuite VARCHAR(500) NOT NULL, \n\ttarget VARCHAR(500) NOT"
    " NULL, \n\trun_id VARCHAR(40) NOT NULL, \n\tcreated_at FLOAT NOT NULL, \n\tPRIMARY K"
    "EY (suite, target)\n)",
    "CREATE TABLE calibrations (\n\tid VARCHAR(40) NOT NULL, \n\tjudge_key VARCHAR(64) NO"
    "T NULL, \n\tjudge_name VARCHAR(200) NOT NULL, \n\tjudge_type VARCHAR(100) NOT NULL, "
    "\n\tset_name VARCHAR(200) NOT NULL, \n\tkind VARCHAR(20) NOT NULL, \n\titems INTEGER"
    " NOT NULL, \n\tkappa FLOAT, \n\taccuracy FLOAT, \n\trun_id VARCHAR(40), \n\tcreated_"
    "at FLOAT NOT NULL, \n\treport JSON NOT NULL, \n\tPRIMARY KEY (id)\n)",
    "CREATE INDEX ix_calibrations_judge_key ON calibrations (judge_key)",
    "CREATE TABLE case_results (\n\trun_id VARCHAR(40) NOT NULL, \n\tcase_id VARCHAR(500)"
    " NOT NULL, \n\trepeat INTEGER NOT NULL, \n\tscore FLOAT, \n\tverdict VARCHAR(20) NOT"
    " NULL, \n\t\"row\" JSON NOT NULL, \n\tcreated_at FLOAT NOT NULL, \n\tPRIMARY KEY (ru"
    "n_id, case_id, repeat)\n)",
    "CREATE INDEX ix_case_results_run_created_at ON case_results (run_id, created_at)",
    "CREATE INDEX ix_case_results_run_score ON case_results (run_id, score, case_id, repe"
    "at)",
    "CREATE INDEX ix_case_results_run_verdict_score ON case_results (run_id, verdict, sco"
    "re, case_id, repeat)",
    "CREATE TABLE case_search (\n\trun_id VARCHAR(40) NOT NULL, \n\tcase_id VARCHAR(500) "
    "NOT NULL, \n\trepeat INTEGER NOT NULL, \n\ttext TEXT NOT NULL, \n\tPRIMARY KEY (run_"
    "id, case_id, repeat)\n)",
    "CREATE TABLE executions (\n\trun_id VARCHAR(40) NOT NULL, \n\tcase_id VARCHAR(500) N"
    "OT NULL, \n\trepeat INTEGER NOT NULL, \n\texecution JSON NOT NULL, \n\tcreated_at FL"
    "OAT NOT NULL, \n\tlatency_ms FLOAT, \n\tPRIMARY KEY (run_id, case_id, repeat)\n)",
    "CREATE INDEX ix_executions_run_latency ON executions (run_id, latency_ms, case_id, repe"
    "at)",
    "CREATE TABLE human_labels (\n\tid VARCHAR(40) NOT NULL, \n\trun_id VARCHAR(40) NOT N"
    "ULL, \n\tcase_id VARCHAR(500) NOT NULL, \n\trepeat INTEGER NOT NULL, \n\tevaluator V"
    "ARCHAR(200) NOT NULL, \n\tagrees BOOLEAN NOT NULL, \n\tvalue TEXT, \n\tjudge_value F"
    "LOAT, \n\tjudge_passed BOOLEAN, \n\tcomment TEXT NOT NULL, \n\tauthor VARCHAR(200) N"
    "OT NULL, \n\tcreated_at FLOAT NOT NULL, \n\tPRIMARY KEY (id)\n)",
    "CREATE INDEX ix_human_labels_case ON human_labels (run_id, case_id, repeat, evaluato"
    "r, created_at)",
    "CREATE TABLE judge_batch_requests (\n\trun_id VARCHAR(40) NOT NULL, \n\tbatch_id VARCHA"
    "R(200) NOT NULL, \n\tcustom_id VARCHAR(64) NOT NULL, \n\tcase_id VARCHAR(500) NOT NU"
    "LL, \n\trepeat INTEGER NOT NULL, \n\tevaluator VARCHAR(200) NOT NULL, \n\tcache_key "
    "VARCHAR(64) NOT NULL, \n\tPRIMARY KEY (run_id, batch_id, custom_id, case_id, repeat,"
    " evaluator)\n)",
    "CREATE TABLE judge_batches (\n\trun_id VARCHAR(40) NOT NULL, \n\tbatch_id VARCHAR(2"
    "00) NOT NULL, \n\tmodel VARCHAR(500) NOT NULL, \n\tstate VARCHAR(40) NOT NULL, \n\t"
    "requests INTEGER NOT NULL, \n\tcounts JSON, \n\tsubmitted_at FLOAT NOT NULL, \n\tc"
    "hecked_at FLOAT, \n\tcollected BOOLEAN NOT NULL, \n\ttoken VARCHAR(64), \n\tinput"
    "_file VARCHAR(200), \n\tPRIMARY KEY (run_id, batch_id)\n)",
    "CREATE TABLE run_tags (\n\trun_id VARCHAR(40) NOT NULL, \n\ttag VARCHAR(200) NOT NUL"
    "L, \n\tPRIMARY KEY (run_id, tag)\n)",
    "CREATE INDEX ix_run_tags_tag ON run_tags (tag, run_id)",
    "CREATE TABLE runs (\n\tid VARCHAR(40) NOT NULL, \n\tsuite VARCHAR(500) NOT NULL, \n"
    "\tstatus VARCHAR(20) NOT NULL, \n\tcreated_at FLOAT NOT NULL, \n\tfinished_at FLOAT,"
    " \n\tconfig JSON NOT NULL, \n\tsummary JSON, \n\tlease_expires_at FLOAT, \n\tname VA"
    "RCHAR(200), \n\tnotes TEXT, \n\tPRIMARY KEY (id)\n)",
    "CREATE INDEX ix_runs_created_at ON runs (created_at)",
    "CREATE INDEX ix_runs_suite_created_at ON runs (suite, created_at)",
    "CREATE TABLE scores (\n\trun_id VARCHAR(40) NOT NULL, \n\tcase_id VARCHAR(500) NOT N"
    "ULL, \n\trepeat INTEGER NOT NULL, \n\tevaluator VARCHAR(200) NOT NULL, \n\tvalue FLO"
    "AT, \n\terror_code VARCHAR(100), \n\tscore JSON NOT NULL, \n\tpassed BOOLEAN, \n\tcr"
    "eated_at FLOAT NOT NULL, \n\tPRIMARY KEY (run_id, case_id, repeat, evaluator)\n)",
    "CREATE INDEX ix_scores_evaluator_state ON scores (run_id, evaluator, case_id, repeat"
    ", value, error_code, passed)",
    "CREATE INDEX ix_scores_state ON scores (run_id, case_id, repeat, evaluator, value, e"
    "rror_code, passed)",
    "CREATE TABLE trace_decisions (\n\twatcher VARCHAR(200) NOT NULL, \n\ttrace_id VARCHA"
    "R(200) NOT NULL, \n\tdecision VARCHAR(20) NOT NULL, \n\trun_id VARCHAR(40), \n\treas"
    "on VARCHAR(500), \n\tcost FLOAT, \n\tdecided_at FLOAT NOT NULL, \n\tPRIMARY KEY (wat"
    "cher, trace_id)\n)",
    "CREATE INDEX ix_trace_decisions_watcher_time ON trace_decisions (watcher, decided_at"
    ")",
    "CREATE TABLE trace_spans (\n\tseq INTEGER NOT NULL, \n\ttrace_id VARCHAR(64) NOT NUL"
    "L, \n\tspan_id VARCHAR(64) NOT NULL, \n\treceived_at FLOAT NOT NULL, \n\tspan JSON N"
    "OT NULL, \n\tPRIMARY KEY (seq)\n)",
    "CREATE UNIQUE INDEX ux_trace_spans_trace_span ON trace_spans (trace_id, span_id)",
    "CREATE TABLE traces (\n\ttrace_id VARCHAR(64) NOT NULL, \n\tfirst_received FLOAT NOT"
    " NULL, \n\tlast_received FLOAT NOT NULL, \n\tstart_time FLOAT, \n\tservice VARCHAR(5"
    "00), \n\troot_name VARCHAR(500), \n\thas_error BOOLEAN NOT NULL, \n\tPRIMARY KEY (tr"
    "ace_id)\n)",
    "CREATE INDEX ix_traces_last_received ON traces (last_received)",
    "CREATE INDEX ix_traces_start_time ON traces (start_time)",
    f"CREATE TABLE {VERSION_TABLE} (\n\tversion_num VARCHAR(32) NOT NULL, \n\tCONSTRAINT "
    f"{VERSION_TABLE}_pkc PRIMARY KEY (version_num)\n)",
)
"""Every table and index of a new store, as ``create_all`` writes them for SQLite, then
Alembic's version table as :func:`assay.store.migrations._create_at_head` makes it."""

RUN_COLUMNS = ("SELECT id, suite, status, created_at, finished_at, CAST(config AS TEXT) AS "
               "config, CAST(summary AS TEXT) AS summary, lease_expires_at, name, notes "
               "FROM runs")
"""A run row as :func:`assay.store.runs.run_columns` reads it: its JSON as text (its tags
are added by :func:`run_rows`, as :func:`assay.store.runs.with_tags` adds them)."""


def pragmas(conn: Any) -> None:
    """The settings of every connection to a store file (``conn``: a sqlite3 connection or
    cursor): wait out other writers, write-ahead logging, commits that survive a crash of the
    process (not of the machine) without a sync each."""
    conn.execute("PRAGMA busy_timeout=30000")
    use_wal(conn)
    conn.execute("PRAGMA synchronous=NORMAL")


def connect(path: Path) -> sqlite3.Connection:
    """A connection to the store file with :func:`pragmas`, in autocommit (transactions are
    begun explicitly)."""
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    try:
        pragmas(conn)
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def transaction(path: Path, immediate: bool = False) -> Iterator[sqlite3.Connection]:
    """A connection in a transaction, committed when the block ends (rolled back when it
    raises), then closed. ``immediate`` takes the write lock at once."""
    conn = connect(path)
    try:
        conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        conn.close()


def recorded(conn: sqlite3.Connection) -> tuple[str, ...] | None:
    """The revisions the store records; None when it has no version table."""
    try:
        rows = conn.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise
    return tuple(sorted(row[0] for row in rows))


def prepare(path: Path, head: str) -> Literal["current", "migrate"]:
    """Check the store file at ``path`` against revision ``head``: ``current`` when it is at
    ``head`` or was empty and now is (created here), ``migrate`` when
    :mod:`assay.store.migrations` has something to do (an older store, or one written by a
    newer assay, which it refuses). Raises ``sqlite3.Error`` for a file that cannot be read."""
    conn = connect(path)
    try:
        found = recorded(conn)
    finally:
        conn.close()
    if found == (head,):
        return "current"
    if found is not None:
        return "migrate"
    with transaction(path, immediate=True) as conn:  # the lock every opener of a new store takes
        if conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]:
            return "current" if recorded(conn) == (head,) else "migrate"
        for statement in SCHEMA:
            conn.execute(statement)
        conn.execute(f"INSERT INTO {VERSION_TABLE} (version_num) VALUES (?)", (head,))
    return "current"


def like_escaped(text: str) -> str:
    """``text`` as the literal start of a ``LIKE ... ESCAPE '\\'`` pattern."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def insert_run(path: Path, values: Mapping[str, Any]) -> None:
    """A new run's row (``config`` already JSON text)."""
    names = ", ".join(values)
    marks = ", ".join(f":{name}" for name in values)
    with transaction(path) as conn:
        conn.execute(f"INSERT INTO runs ({names}) VALUES ({marks})", dict(values))


def run_rows(path: Path, run_id: str) -> list[dict[str, Any]]:
    """The run ``run_id``, else the runs whose id starts with it (as :data:`RUN_COLUMNS`)."""
    conn = connect(path)
    try:
        conn.row_factory = sqlite3.Row
        rows = conn.execute(f"{RUN_COLUMNS} WHERE id = ?", (run_id,)).fetchall()
        if not rows:
            rows = conn.execute(f"{RUN_COLUMNS} WHERE id LIKE ? ESCAPE '\\'",
                                (like_escaped(run_id) + "%",)).fetchall()
        found = [dict(row) for row in rows]
        for row in found:
            row["tags"] = [tag for (tag,) in conn.execute(
                "SELECT tag FROM run_tags WHERE run_id = ? ORDER BY tag", (row["id"],))]
    finally:
        conn.close()
    return found
