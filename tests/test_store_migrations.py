"""The store's schema: Alembic migrations, safe when many processes open a new store at once,
quick to check when there is nothing to do, and stores made before Alembic upgraded in place."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from sqlalchemy import (
    JSON,
    Column,
    Connection,
    Engine,
    Float,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    create_engine,
    insert,
    text,
)

from assay.store import migrations, schema
from assay.store.runs import RunStore, StoreError
from assay.types.score import Score
from tests.postgres_support import fresh_database, postgres_url

ROOT = Path(__file__).resolve().parents[1]
LEGACY_DUMP = Path(__file__).parent / "data" / "legacy_store_m001.sql"
LEGACY_RUN = "20240101-000000-abcdef"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def new_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], str]]:
    """Makes as many new, empty stores as a test needs, on each backend in turn."""
    with ExitStack() as stack:
        made: list[str] = []

        def make() -> str:
            if request.param == "sqlite":
                made.append(f"sqlite:///{tmp_path}/runs-{len(made)}.db")
            else:
                made.append(stack.enter_context(fresh_database(postgres_url())))
            return made[-1]

        yield make


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


# Opens each store given at its own start time, so that every process opens the same store in
# the same instant (after imports, which take far longer than a migration).
OPEN_STORES = """
import sys, time
from assay.store.runs import RunStore
start, gap = float(sys.argv[1]), float(sys.argv[2])
for i, url in enumerate(sys.argv[3:]):
    time.sleep(max(0.0, start + i * gap - time.time()))
    store = RunStore(url)
    store.create_run("suite", {})
    store.close()
"""


@pytest.mark.process
def test_many_processes_opening_new_stores_at_once_all_succeed(new_store):
    urls = [new_store() for _ in range(3)]
    start = time.time() + 3.0
    procs = [subprocess.Popen([sys.executable, "-c", OPEN_STORES, str(start), "1.5", *urls],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=_env())
             for _ in range(5)]
    failures = []
    for proc in procs:
        _out, err = proc.communicate(timeout=240)
        if proc.returncode != 0:
            failures.append(err.strip().splitlines()[-1:])
    assert not failures, failures
    for url in urls:
        store = RunStore(url)
        assert len(store.run_records()) == 5
        assert _versions(url) == [migrations.revisions()[-1]]
        store.close()


@pytest.mark.slow
def test_concurrent_cli_commands_on_a_new_store_all_succeed(new_store):
    """Read commands racing to give a new store its schema: an empty SQLite file (a file
    that does not exist at all is refused by a command that only reads runs)."""
    url = new_store()
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).touch()
    procs = [subprocess.Popen([sys.executable, "-m", "assay", "runs", "--store", url, "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=_env())
             for _ in range(4)]
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        assert json.loads(out) == []


@pytest.mark.process
def test_a_current_store_opens_without_importing_alembic(new_store):
    url = new_store()
    RunStore(url).close()  # creates the schema
    probe = ("import sys\nfrom assay.store.runs import RunStore\n"
             "RunStore(sys.argv[1]).close()\nprint('alembic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe, url], capture_output=True, text=True,
                         env=_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


@pytest.mark.process
def test_a_new_store_is_created_without_importing_alembic(new_store):
    probe = ("import sys\nfrom assay.store.runs import RunStore\n"
             "RunStore(sys.argv[1]).close()\nprint('alembic' in sys.modules)")
    url = new_store()
    out = subprocess.run([sys.executable, "-c", probe, url], capture_output=True, text=True,
                         env=_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    assert _versions(url) == [migrations.revisions()[-1]]


def _shape(url: str) -> dict[str, object]:
    """Every table's columns, keys and indexes, as the database reports them. Columns are
    compared as a set: a migration's added column comes last, where the schema may place it
    anywhere, and the code names every column it reads."""
    from sqlalchemy import inspect

    engine = create_engine(url)
    with engine.connect() as conn:
        found = inspect(conn)
        shape = {name: (
            sorted((c["name"], str(c["type"]), c["nullable"], str(c.get("default")))
                   for c in found.get_columns(name)),
            found.get_pk_constraint(name)["constrained_columns"],
            sorted((i["name"], tuple(i["column_names"]), bool(i["unique"]))
                   for i in found.get_indexes(name)),
            sorted(tuple(u["column_names"]) for u in found.get_unique_constraints(name)),
        ) for name in found.get_table_names()}
    engine.dispose()
    return shape


def test_a_new_store_created_from_the_schema_matches_one_built_by_every_migration(new_store):
    created, replayed = new_store(), new_store()
    RunStore(created).close()
    engine = create_engine(replayed)
    assert migrations.ensure_schema(engine, replay=True) == migrations.revisions()
    engine.dispose()
    assert _shape(created) == _shape(replayed)
    assert _versions(created) == _versions(replayed)


def test_the_migrations_create_exactly_the_schema_the_code_uses(new_store):
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    url = new_store()
    engine = create_engine(url)
    migrations.ensure_schema(engine, replay=True)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={
            "compare_type": True, "version_table": migrations.VERSION_TABLE})
        assert compare_metadata(context, schema.metadata) == []
    engine.dispose()


def test_revision_ids_are_the_file_names_in_one_line_of_descent():
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(migrations.SCRIPT_DIR))
    walked = [s.revision for s in script.walk_revisions()][::-1]  # oldest first
    assert walked == migrations.revisions()
    assert script.get_heads() == [migrations.revisions()[-1]]
    for rev in walked:
        assert len(rev) <= 32  # the width of Alembic's version column
        assert (migrations.VERSIONS_DIR / f"{rev}.py").is_file()


# The tables exactly as the store defined them before Alembic managed its schema.
def _legacy_metadata() -> MetaData:
    md = MetaData()
    Table("assay_migrations", md, Column("name", String(200), primary_key=True),
          Column("applied_at", Float, nullable=False))
    Table("runs", md, Column("id", String(40), primary_key=True),
          Column("suite", String(500), nullable=False),
          Column("status", String(20), nullable=False),
          Column("created_at", Float, nullable=False), Column("finished_at", Float),
          Column("config", JSON, nullable=False), Column("summary", JSON))
    Table("executions", md, Column("run_id", String(40), primary_key=True),
          Column("case_id", String(500), primary_key=True),
          Column("repeat", Integer, primary_key=True),
          Column("execution", JSON, nullable=False),
          Column("created_at", Float, nullable=False))
    Table("scores", md, Column("run_id", String(40), primary_key=True),
          Column("case_id", String(500), primary_key=True),
          Column("repeat", Integer, primary_key=True),
          Column("evaluator", String(200), primary_key=True), Column("value", Float),
          Column("error_code", String(100)), Column("score", JSON, nullable=False),
          Column("created_at", Float, nullable=False))
    Table("case_results", md, Column("run_id", String(40), primary_key=True),
          Column("case_id", String(500), primary_key=True),
          Column("repeat", Integer, primary_key=True), Column("score", Float),
          Column("verdict", String(20), nullable=False), Column("row", JSON, nullable=False),
          Column("created_at", Float, nullable=False))
    return md


def _make_legacy_store(url: str) -> None:
    md = _legacy_metadata()
    engine = create_engine(url)
    with engine.begin() as conn:
        md.create_all(conn)
        conn.execute(insert(md.tables["assay_migrations"]).values(
            name="m001_initial_tables", applied_at=1.0))
        conn.execute(insert(md.tables["runs"]).values(
            id=LEGACY_RUN, suite="legacy-suite", status="completed", created_at=1.0,
            finished_at=2.0, config={"run": {"concurrency": 4}}, summary={"mean_score": 1.0}))
        conn.execute(insert(md.tables["case_results"]).values(
            run_id=LEGACY_RUN, case_id="case-1", repeat=0, score=1.0, verdict="pass",
            row={"eval_id": "case-1"}, created_at=1.5))
    engine.dispose()


def _versions(url: str) -> list[str]:
    engine = create_engine(url)
    with engine.connect() as conn:
        found = [r[0] for r in conn.execute(
            text(f"SELECT version_num FROM {migrations.VERSION_TABLE}"))]
    engine.dispose()
    return found


def _tables(url: str) -> set[str]:
    from sqlalchemy import inspect

    engine = create_engine(url)
    names = set(inspect(engine).get_table_names())
    engine.dispose()
    return names


def _assert_adopted(url: str) -> None:
    store = RunStore(url)
    scores_before = store.score_count(LEGACY_RUN)
    legacy = store.run_record(LEGACY_RUN)
    assert legacy.summary is not None and legacy.summary.mean_score == 1.0
    assert [r.verdict.value for r in store.case_records(LEGACY_RUN)] == ["pass"]
    store.record_score(LEGACY_RUN, "case-2", 0, Score(name="e", value=0.5))
    new_run = store.create_run("after-upgrade", {})
    store.close()
    assert _versions(url) == [migrations.revisions()[-1]]
    assert "assay_migrations" not in _tables(url)
    again = RunStore(url)
    assert {r.id for r in again.run_records()} == {LEGACY_RUN, new_run}
    assert again.score_count(LEGACY_RUN) == scores_before + 1
    again.close()


def test_a_store_written_before_alembic_is_upgraded_in_place(new_store):
    url = new_store()
    _make_legacy_store(url)
    _assert_adopted(url)


def test_the_sqlite_file_of_an_old_store_is_upgraded_in_place(tmp_path):
    """The dump of a store file that the previous store code wrote, byte for byte its SQL."""
    db = tmp_path / "runs.db"
    conn = sqlite3.connect(db)
    conn.executescript(LEGACY_DUMP.read_text())
    conn.close()
    _assert_adopted(f"sqlite:///{db}")


def test_tables_that_assay_did_not_create_are_not_taken_over(new_store):
    url = new_store()
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE runs (id INTEGER PRIMARY KEY, owner VARCHAR(20))"))
    engine.dispose()
    with pytest.raises(StoreError, match=r"already holds table\(s\) runs that assay did not"):
        RunStore(url)
    assert migrations.VERSION_TABLE not in _tables(url)


def test_a_store_from_a_newer_assay_is_refused_with_a_clear_error(new_store):
    url = new_store()
    RunStore(url).close()
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(f"UPDATE {migrations.VERSION_TABLE} SET version_num = '0999_future'"))
    engine.dispose()
    with pytest.raises(StoreError, match="0999_future, written by a newer version of assay"):
        RunStore(url)


def test_an_unreachable_server_is_a_clear_error_without_the_password():
    with pytest.raises(StoreError) as info:
        RunStore("postgresql+psycopg://assay:s3cret-pw@127.0.0.1:1/assay")
    assert "cannot open the run store" in info.value.message
    assert "s3cret-pw" not in info.value.message


def test_a_database_a_store_cannot_be_kept_in_is_named_with_what_can():
    """``mysql://`` failed with "No module named 'MySQLdb'", as if a driver were missing."""
    with pytest.raises(StoreError) as info:
        RunStore("mysql://assay:s3cret-pw@127.0.0.1:1/assay")
    assert "a run store is SQLite (sqlite:///FILE, or a path) or PostgreSQL" in \
        info.value.message and "not 'mysql'" in info.value.message
    assert "s3cret-pw" not in info.value.message


def test_postgres_is_read_as_postgresql_as_hosting_platforms_spell_it():
    """``postgres://`` (a ``DATABASE_URL`` as Heroku or Render give it) failed with SQLAlchemy's
    "Can't load plugin: sqlalchemy.dialects:postgres"."""
    from assay._util.user_paths import user_url

    assert user_url("postgres://u:p@h/db") == "postgresql://u:p@h/db"
    assert user_url("Postgres+psycopg://u:p@h/db") == "postgresql+psycopg://u:p@h/db"
    assert user_url("postgresql://u:p@h/db") == "postgresql://u:p@h/db"
    with pytest.raises(StoreError) as info:
        RunStore("postgres://assay:s3cret-pw@127.0.0.1:1/assay")
    assert "Can't load plugin" not in info.value.message and "s3cret-pw" not in \
        info.value.message


@pytest.mark.postgres
def test_a_postgres_url_opens_the_postgresql_store():
    from sqlalchemy.engine import make_url

    with fresh_database(postgres_url()) as url:
        spelled = make_url(url).set(drivername="postgres").render_as_string(hide_password=False)
        assert spelled.startswith("postgres://")
        store = RunStore(spelled)
        try:
            run_id = store.create_run("s", {})
            assert store.run_record(run_id).id == run_id and store.dialect == "postgresql"
        finally:
            store.close()


@pytest.mark.slow
def test_concurrent_assay_runs_on_a_new_store_all_complete(new_store, tmp_path):
    (tmp_path / "agent.py").write_text(
        "def answer(question: str) -> str:\n    return 'echo ' + question\n")
    (tmp_path / "EVAL.yaml").write_text(
        "description: echo\nexecution:\n  target: agent\n  evaluators:\n"
        "    - {name: has_echo, type: contains, search_text: echo}\n"
        "evalcases:\n" + "".join(f"  - {{id: c{i}, input: q{i}}}\n" for i in range(5)))
    (tmp_path / ".assay").mkdir()
    (tmp_path / ".assay" / "targets.yaml").write_text(
        "targets:\n  - {name: agent, provider: python, function: 'agent:answer'}\n")
    url = new_store()
    procs = [subprocess.Popen([sys.executable, "-m", "assay", "run", "EVAL.yaml", "--store", url],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env={**_env(), "ASSAY_CACHE_DIR": str(tmp_path / "c")})
             for _ in range(4)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, out + err
    store = RunStore(url)
    runs = store.run_records()
    assert len(runs) == 4 and {r.status.value for r in runs} == {"completed"}
    assert all(len(store.case_records(r.id)) == 5 for r in runs)
    store.close()


def test_postgres_tests_fail_under_ci_and_skip_elsewhere_without_a_server(monkeypatch):
    from tests.postgres_support import URL_VARIABLE

    monkeypatch.delenv(URL_VARIABLE, raising=False)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="must run in CI"):
        postgres_url()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match=r"scripts/postgres\.sh start"):
        postgres_url()


def test_upgrading_fills_the_search_text_of_cases_stored_before_it(new_store):
    """A store at 0005 (no search table) is searched after the upgrade exactly as one whose
    cases were written with it: the migration fills the column as writing does."""
    from assay.store import queries
    from assay.testing.runs import write_run

    url = new_store()
    store = RunStore(url)
    run_id = write_run(store, 30, hostile_at=[4])
    store.close()
    engine = create_engine(url)
    select_text = text("SELECT case_id, text FROM case_search ORDER BY case_id")
    with engine.begin() as conn:
        written = conn.execute(select_text).fetchall()
        conn.execute(text("DROP TABLE case_search"))
        conn.execute(text("ALTER TABLE runs DROP COLUMN lease_expires_at"))  # 0007's
        for table in ("trace_spans", "traces", "trace_decisions"):  # 0008's
            conn.execute(text(f"DROP TABLE {table}"))
        for column in ("name", "notes"):  # 0009's
            conn.execute(text(f"ALTER TABLE runs DROP COLUMN {column}"))
        conn.execute(text("DROP TABLE run_tags"))
        conn.execute(text("DROP TABLE human_labels"))
        for table in ("judge_batches", "judge_batch_requests"):  # 0010's
            conn.execute(text(f"DROP TABLE {table}"))
        back_to(conn, "0005_browse_indexes")
    store = _upgraded(url, engine)
    with store.transaction() as conn:
        assert conn.execute(select_text).fetchall() == written
    assert len(written) == 30 and all(t.startswith(c) for c, t in written)

    def found(query: str) -> list[str]:
        return [r.case_id for r in queries.case_page(
            store, run_id, queries.CaseFilter(text=query), limit=100)[0]]

    assert found("<SCRIPT>alert(1)") == ["case-000004"]  # the agent's output, any case
    assert found("CASE-000012") == ["case-000012"]
    assert found("what is 17 + 17") == ["case-000017"]  # the input
    store.close()


def test_upgrading_folds_the_search_text_that_was_only_lower_cased(new_store):
    """Cases stored while searches only lower-cased are found by the caseless search after
    the upgrade: ``STRASSE`` finds ``Straße``, ``plain`` a full-width ``\uff30\uff2c\uff21\uff29\uff2e``."""
    from assay.store import queries
    from assay.testing.runs import store_case
    from assay.types.case import Case
    from assay.types.execution import Execution
    from assay.types.records import CaseRecord, Verdict

    url = new_store()
    store = RunStore(url)
    run_id = store.create_run("suite", {})
    ids = ["Straße-1", "\uff30\uff2c\uff21\uff29\uff2e-2", "ascii-3"]
    for case_id in ids:
        store_case(store, CaseRecord(
            run_id=run_id, case_id=case_id, case=Case(id=case_id, input="ﬁle"),
            execution=Execution(input="ﬁle", output="a"), scores=[Score(name="x", value=1.0)],
            score=1.0, verdict=Verdict.PASS))
    store.close()
    engine = create_engine(url)
    with engine.begin() as conn:  # the text as it was kept before 0013: lower-cased
        for case_id in ids:
            conn.execute(text("UPDATE case_search SET text = :t WHERE case_id = :c"),
                         {"t": f"{case_id}\nﬁle\n\na\n".lower(), "c": case_id})
        back_to(conn, "0012_judge_batch_files")
    store = _upgraded(url, engine)

    def found(query: str) -> list[str]:
        return sorted(r.case_id for r in queries.case_page(
            store, run_id, queries.CaseFilter(text=query), limit=100)[0])

    assert found("STRASSE") == ["Straße-1"]
    assert found("plain") == ["\uff30\uff2c\uff21\uff29\uff2e-2"]
    assert found("FILE") == sorted(ids)
    assert found("ASCII-3") == ["ascii-3"]
    store.close()


def back_to(conn: Connection, revision: str) -> None:
    """The store recorded at ``revision`` (before 0014), its executions table as it was
    then: no latency column, no index of it (the test drops the other tables it needs
    gone)."""
    conn.execute(text("DROP INDEX ix_executions_run_latency"))
    conn.execute(text("ALTER TABLE executions DROP COLUMN latency_ms"))
    conn.execute(text(f"UPDATE {migrations.VERSION_TABLE} SET version_num = :revision"),
                 {"revision": revision})


def _upgraded(url: str, engine: Engine) -> RunStore:
    """The store at ``url`` opened again (``engine`` let go first), upgraded to the head."""
    engine.dispose()
    store = RunStore(url)
    assert _versions(url) == [migrations.revisions()[-1]]
    return store


def test_upgrading_fills_the_latency_of_executions_stored_before_it(new_store):
    """A store at 0013 with runs in it gets each execution's latency in the new column,
    as the JSON holds it (NULL where it holds none, or anything but a number), and a sort
    by latency reads them in the order the JSON gave."""
    from assay.store import queries
    from assay.testing.runs import write_run

    url = new_store()
    store = RunStore(url)
    runs = [write_run(store, 40, seed=1), write_run(store, 25, seed=2)]
    store.close()
    engine = create_engine(url)
    json_cast = "CAST(:value AS json)" if engine.dialect.name == "postgresql" else ":value"
    damaged = {"case-000003": '{"input": "q", "latency_ms": null}',
               "case-000004": '{"input": "q", "latency_ms": "fast"}',
               "case-000005": '{"input": "q"}', "case-000006": '{"input": "q", '
               '"latency_ms": 12}', "case-000007": '{"input": "q", "latency_ms": 1e400}'}
    with engine.begin() as conn:
        for case_id, value in damaged.items():
            conn.execute(text(f"UPDATE executions SET execution = {json_cast} WHERE "
                              "run_id = :run AND case_id = :case"),
                         {"value": value, "run": runs[0], "case": case_id})
        conn.execute(text("DELETE FROM executions WHERE case_id = 'case-000008'"))
        stored = {(r, c, k): e for r, c, k, e in conn.execute(text(
            "SELECT run_id, case_id, repeat, CAST(execution AS TEXT) FROM executions"))}
        back_to(conn, "0013_case_search_casefold")
    store = _upgraded(url, engine)
    with store.transaction() as conn:
        filled = {(r, c, k): v for r, c, k, v in conn.execute(text(
            "SELECT run_id, case_id, repeat, latency_ms FROM executions"))}
    assert filled.keys() == stored.keys() and len(filled) == 63
    for key, execution in stored.items():
        latency = json.loads(execution).get("latency_ms")
        if key[1] in damaged and key[0] == runs[0]:
            latency = {"case-000006": 12.0}.get(key[1])  # 1e400 is no double
        assert filled[key] == latency, (key, execution)
    sort = queries.CaseSort.LATENCY_DESC
    order = [r.case_id for r in queries.case_page(store, runs[1], queries.CaseFilter(),
                                                  sort, limit=100)[0]]
    latency = {c: v for (r, c, _), v in filled.items() if r == runs[1]}
    assert order == [*sorted(latency, key=lambda c: (-(latency[c] or 0), c)), "case-000008"]
    store.close()


def test_the_sqlite_schema_of_a_new_store_is_what_create_all_writes():
    """A new SQLite file gets its tables from ``sqlite_direct.SCHEMA`` (sqlite3 alone): the
    statements SQLAlchemy compiles from the schema the code uses, one for one."""
    from sqlalchemy.schema import CreateIndex, CreateTable

    from assay.store import sqlite_direct

    engine = create_engine("sqlite://")
    compiled = []
    for table in schema.metadata.sorted_tables:
        compiled.append(str(CreateTable(table).compile(engine)).strip())
        compiled += [str(CreateIndex(index).compile(engine)).strip()
                     for index in sorted(table.indexes, key=lambda i: str(i.name))]
    version = Table(migrations.VERSION_TABLE, MetaData(),
                    Column("version_num", String(32), nullable=False),
                    PrimaryKeyConstraint("version_num",
                                         name=f"{migrations.VERSION_TABLE}_pkc"))
    compiled.append(str(CreateTable(version).compile(engine)).strip())
    engine.dispose()
    assert list(sqlite_direct.SCHEMA) == compiled


def test_a_current_sqlite_store_makes_a_runs_first_statements_with_sqlite3_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening a current store, creating a run, reading it back and asking what it has
    stored (nothing) wait for no SQLAlchemy engine; the results written after use it."""
    import threading

    from assay.store import runs
    from assay.types.execution import Execution
    from assay.types.records import RunStatus

    url = f"sqlite:///{tmp_path}/runs.db"
    RunStore(url).close()
    release = threading.Event()
    real = runs._new_engine

    def held(*args: object) -> object:
        release.wait(20)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(runs, "_new_engine", held)
    store = RunStore(url)
    assert store.direct
    run_id = store.create_run("suite", {"k": 1})
    assert store.run_record(run_id).status is RunStatus.RUNNING
    assert store.run_record(run_id[:17]).id == run_id  # a unique prefix, as git takes it
    assert (store.executions(run_id), store.scores(run_id), store.case_keys(run_id)) == (
        {}, {}, set())
    assert not store._connections._future.done()  # nothing above waited for it
    release.set()
    store.record_execution(run_id, "c1", 0, Execution(output="x"))
    store.flush()
    assert store.executions(run_id)[("c1", 0)].output == "x"
    store.set_status(run_id, "completed", {"cases": 1})
    assert store.run_record(run_id).status is RunStatus.COMPLETED
    store.close()


def test_a_new_sqlite_store_made_by_many_processes_at_once_is_made_once(tmp_path: Path):
    """Every opener of a new file takes the write lock before it creates the tables: one
    creates them, the others find them made."""
    from concurrent.futures import ThreadPoolExecutor

    from assay.store import sqlite_direct
    from assay.store.revisions import revisions

    path = tmp_path / "runs.db"
    with ThreadPoolExecutor(8) as pool:
        states = list(pool.map(lambda _: sqlite_direct.prepare(path, revisions()[-1]),
                               range(16)))
    assert states == ["current"] * 16
    assert _versions(f"sqlite:///{path}") == [revisions()[-1]]
