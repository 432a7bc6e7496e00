"""One run row that cannot be read is that run's problem, not the store's: every reader of runs
(``RunStore``, ``assay runs`` and ``assay show``, the REST API, ``assay.compare`` and
``assay.rescore``) lists or reads the others and names the bad one and why, on SQLite and on
PostgreSQL."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

import assay
from assay.store import queries
from assay.store.errors import StoreError
from assay.store.runs import RunStore
from assay.testing.runs import write_run
from assay.types.records import RunStatus
from tests.assay_process import run_assay

BAD_SUMMARY = '{"cases": "many"}'


def _stored(url: str) -> tuple[str, str, str]:
    """Three runs, the middle one then corrupted: its summary of the wrong shape, its config
    not JSON (on PostgreSQL, whose JSON column holds only JSON, a JSON string instead)."""
    store = RunStore(url)
    good = write_run(store, 3, seed=1, created_at=1_000_000.0)
    bad = write_run(store, 2, seed=2, created_at=1_000_100.0)
    other = write_run(store, 3, seed=3, created_at=1_000_200.0)
    store.close()
    engine = create_engine(url)
    json_cast = "CAST(:value AS json)" if engine.dialect.name == "postgresql" else ":value"
    config = '"x"' if engine.dialect.name == "postgresql" else "x"
    with engine.begin() as conn:
        conn.execute(text(f"UPDATE runs SET summary = {json_cast.replace('value', 'summary')}, "
                          f"config = {json_cast.replace('value', 'config')} WHERE id = :id"),
                     {"summary": BAD_SUMMARY, "config": config, "id": bad})
    engine.dispose()
    return good, bad, other


def test_the_store_lists_every_other_run_and_names_the_unreadable_one(store_url):
    good, bad, other = _stored(store_url)
    store = RunStore(store_url)
    records = {r.id: r for r in store.run_records()}
    assert set(records) == {good, bad, other}
    assert records[good].unreadable is None and records[good].summary is not None
    why = records[bad].unreadable
    assert why is not None and "summary: cases" in why and "config" in why, why
    with pytest.raises(StoreError, match=f"run {bad} cannot be read: .*summary: cases"):
        store.run_record(bad)
    assert store.run_record(good).summary is not None

    items, total = queries.list_runs(store, queries.RunFilter())
    assert total == 3 and [i.id for i in items] == [other, bad, good]
    assert {i.id: i.unreadable for i in items}[bad] == why
    by_target, _ = queries.list_runs(store, queries.RunFilter(target="calculator-agent"))
    assert {i.id for i in by_target} == {good, other}
    found = queries.find_run(store, bad)
    assert found is not None and found.unreadable == why

    with pytest.raises(StoreError, match=f"run {bad} cannot be read"):
        assay.compare(bad, good, store=store)
    with pytest.raises(StoreError, match=f"run {bad} cannot be read"):
        assay.rescore(bad, store=store)

    assert queries.delete_run(store, bad)  # the way to be rid of it
    assert {r.id for r in store.run_records()} == {good, other}
    store.close()


@pytest.mark.process
def test_runs_and_show_list_the_others_and_name_the_unreadable_one(store_url, tmp_path):
    good, bad, other = _stored(store_url)
    env = {"COLUMNS": "200"}

    def assay_cli(*args: str):  # type: ignore[no-untyped-def]
        import os

        done = run_assay([*args, "--store", store_url], cwd=tmp_path,
                         env={**os.environ, **env}, timeout=120)
        assert "Traceback" not in done.stderr, done.stderr
        return done

    listed = assay_cli("runs")
    assert listed.returncode == 0, listed.stderr
    for run_id in (good, bad, other):
        assert run_id in listed.stdout
    assert "unreadable" in listed.stdout
    assert f"unreadable {bad}: " in listed.stdout and "summary: cases" in listed.stdout

    as_json = {r["id"]: r for r in json.loads(assay_cli("runs", "--json").stdout)}
    assert set(as_json) == {good, bad, other}
    assert "summary: cases" in as_json[bad]["unreadable"] and as_json[good]["unreadable"] is None

    shown = assay_cli("show", bad)
    assert shown.returncode == 2
    assert f"run {bad} cannot be read" in shown.stderr and "summary: cases" in shown.stderr
    assert assay_cli("show", good).returncode == 0


def test_the_api_lists_shows_and_deletes_an_unreadable_run(store_url):
    pytest.importorskip("fastapi")
    from tests.server_support import serve

    good, bad, other = _stored(store_url)
    with serve(store_url) as served, served.client() as api:
        page = api.get("/runs")
        assert page.status_code == 200, page.text
        items = {r["id"]: r for r in page.json()["items"]}
        assert set(items) == {good, bad, other} and page.json()["total"] == 3
        assert "summary: cases" in items[bad]["unreadable"] and items[good]["unreadable"] is None
        detail = api.get(f"/runs/{bad}")
        assert detail.status_code == 200 and "summary: cases" in detail.json()["unreadable"]
        assert api.get("/runs", params={"target": "calculator-agent"}).json()["total"] == 2
        compared = api.get("/runs/compare", params={"baseline_run_id": good,
                                                    "candidate_run_id": bad})
        assert compared.status_code == 409 and compared.json()["code"] == "run_unreadable"
        assert f"run {bad} cannot be read" in compared.json()["detail"]
        assert api.delete(f"/runs/{bad}").status_code == 200
        assert api.get("/runs").json()["total"] == 2


BAD_CASES = [
    ("executions", "execution", '{"latency_ms": "fast"}', "its execution's latency_ms holds "
     "the text 'fast', not a number"),
    ("executions", "execution", '{"input": "q", "error": 5}', "error: Input should be a valid "
     "string"),
    ("scores", "score", '{"name": "correctness", "value": "high"}', "value: Input should be"),
]
"""A case's row as a hand edit or another program leaves it, and what is said of it."""


def _bad_case(url: str, table: str, column: str, value: str) -> tuple[str, str]:
    """Two runs of three cases, case-000001 of the second with ``value`` in its row."""
    store = RunStore(url)
    other = write_run(store, 3, seed=2)
    run = write_run(store, 3, seed=1)
    store.close()
    engine = create_engine(url)
    cast = "CAST(:value AS json)" if engine.dialect.name == "postgresql" else ":value"
    with engine.begin() as conn:
        conn.execute(text(f"UPDATE {table} SET {column} = {cast} WHERE run_id = :run AND "
                          "case_id = 'case-000001'"), {"value": value, "run": run})
    engine.dispose()
    return run, other


@pytest.mark.parametrize(("table", "column", "value", "said"), BAD_CASES)
def test_a_case_whose_rows_cannot_be_read_is_named_and_the_others_are_served(
        store_url, table, column, value, said):
    pytest.importorskip("fastapi")
    from tests.server_support import serve

    run, other = _bad_case(store_url, table, column, value)
    with serve(store_url) as served, served.client() as api:
        one = {"case_id": "case-000001"}
        pair = {"baseline_run_id": other, "candidate_run_id": run}
        for path, params in [(f"/runs/{run}/case", one),
                             (f"/runs/{run}/case/value", {**one, "pointer": "/record"}),
                             ("/runs/compare/case", {**one, **pair}), ("/runs/compare", pair)]:
            refused = api.get(path, params=params)
            assert refused.status_code == 409, (path, refused.text)
            body = refused.json()
            assert body["code"] == "case_unreadable" and body["detail"].startswith(
                f"case 'case-000001' (repeat 0) of run {run} cannot be read: "), body
            assert said in body["detail"] and "Traceback" not in refused.text
        assert api.get(f"/runs/{run}/case", params={"case_id": "case-000002"}).status_code \
            == 200
        assert api.get(f"/runs/{other}/case", params=one).status_code == 200


@pytest.mark.parametrize(("table", "column", "value", "said"), BAD_CASES[1:])
def test_show_and_compare_name_a_case_that_cannot_be_read_in_one_line(
        tmp_path, table, column, value, said):
    url = f"sqlite:///{tmp_path}/runs.db"
    run, other = _bad_case(url, table, column, value)
    for args in (["show", run], ["compare", other, run]):
        done = run_assay([*args, "--store", url], cwd=tmp_path, timeout=120)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"error [case_unreadable]: case 'case-000001' (repeat 0) "
                                      f"of run {run} cannot be read: "), done.stderr
        assert said in done.stderr and "Traceback" not in done.stderr
    assert run_assay(["show", other, "--store", url], cwd=tmp_path, timeout=120).returncode == 0


def test_a_run_row_with_an_unknown_status_is_named_too(tmp_path: Path):
    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    run_id = write_run(store, 1)
    with store.transaction() as conn:
        conn.execute(text("UPDATE runs SET status = 'exploded'"))
    found = store.run_records()
    assert [r.id for r in found] == [run_id]
    assert "status" in (found[0].unreadable or "") and "exploded" in (found[0].unreadable or "")
    store.close()


NOT_JSON = [("executions", "execution", "its execution is not JSON"),
            ("scores", "score", "its score is not JSON"),
            ("case_results", "row", "its result row is not JSON")]
"""A case's row whose text is not JSON at all (SQLite's JSON columns take any text)."""


def _not_json_case(tmp_path: Path, table: str, column: str) -> tuple[str, str, str]:
    url = f"sqlite:///{tmp_path}/runs.db"
    run, other = _bad_case(url, table, column, "not json {")
    return url, run, other


@pytest.mark.parametrize(("table", "column", "said"), NOT_JSON)
def test_a_case_whose_row_is_not_json_is_named_by_show_and_compare(tmp_path, table, column,
                                                                   said):
    """Not JSON used to end `assay show` in a traceback, and `assay compare` in "the run
    store failed ... Results written before this point are kept", as if a write had failed."""
    url, run, other = _not_json_case(tmp_path, table, column)
    for args in (["show", run], ["compare", other, run]):
        done = run_assay([*args, "--store", url], cwd=tmp_path, timeout=120)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"error [case_unreadable]: case 'case-000001' (repeat 0) "
                                      f"of run {run} cannot be read: {said} ("), done.stderr
        assert "Traceback" not in done.stderr and "written before" not in done.stderr
    assert run_assay(["show", other, "--store", url], cwd=tmp_path, timeout=120).returncode == 0


@pytest.mark.parametrize(("table", "column", "said"), NOT_JSON)
def test_a_case_whose_row_is_not_json_is_named_by_the_api(tmp_path, table, column, said):
    pytest.importorskip("fastapi")
    from tests.server_support import serve

    url, run, other = _not_json_case(tmp_path, table, column)
    with serve(url) as served, served.client() as api:
        one = {"case_id": "case-000001"}
        for path, params in [(f"/runs/{run}/case", one),
                             ("/runs/compare", {"baseline_run_id": other,
                                                "candidate_run_id": run})]:
            refused = api.get(path, params=params)
            assert refused.status_code == 409, (path, refused.text)
            assert refused.json()["code"] == "case_unreadable", refused.text
            assert said in refused.json()["detail"], refused.text
        # the page's SQL meets the text, and the case is looked for to be named; the
        # export is refused before its file starts
        for path in (f"/runs/{run}/cases", f"/runs/{run}/export"):
            refused = api.get(path)
            assert refused.status_code == 409, (path, refused.text)
            assert refused.json()["code"] == "case_unreadable", refused.text
            assert said in refused.json()["detail"] and "case-000001" in refused.text
            assert "written before" not in refused.text
        assert api.get(f"/runs/{other}/export").status_code == 200
        assert api.get(f"/runs/{run}/case", params={"case_id": "case-000002"}).status_code \
            == 200
        assert api.get(f"/runs/{other}/cases").status_code == 200


NOT_NUMBERS = [
    ("case_results", "score", "its score column holds the text 'abc', not a number"),
    ("case_results", "created_at", "its created_at column holds the text 'abc', not a number"),
    ("case_results", "repeat", "its repeat column holds the text 'abc', not a whole number"),
    ("scores", "value", "its value column holds the text 'abc', not a number"),
    ("scores", "repeat", "its repeat column holds the text 'abc', not a whole number"),
    ("executions", "repeat", "its repeat column holds the text 'abc', not a whole number"),
]
"""A number column of a case's rows holding text (SQLite lets a REAL or INTEGER column hold
'abc'), and what is said of it. Before, a page of cases answered 500, a histogram counted the
text in its last bin, and a damaged repeat left the case read without its execution or
scores."""

JSON_NUMBERS = [
    ("executions", "execution", '{"input": "q", "latency_ms": "fast"}',
     "its execution's latency_ms holds the text 'fast', not a number"),
    ("case_results", "row", '{"case": {"id": "case-000001", "input": "q"}, '
     '"overall_score": "big"}', "its result row's overall_score holds the text 'big', not a "
     "number"),
]
"""A number a page of cases reads from a JSON column, holding text: SQLite's cast read it as
0, PostgreSQL's failed the page as a store failure."""


def _number_as_text(tmp_path: Path, table: str, column: str, case: str = "case-000001",
                    cases: int = 3) -> tuple[str, str, str]:
    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    other = write_run(store, cases, seed=2)
    run = write_run(store, cases, seed=1)
    store.close()
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(f"UPDATE {table} SET {column} = 'abc' WHERE run_id = :run AND "
                          "case_id = :case"), {"run": run, "case": case})
    engine.dispose()
    return url, run, other


def _refused_naming(answer, run: str, said: str, case: str = "case-000001") -> None:  # type: ignore[no-untyped-def]
    assert answer.status_code == 409, (answer.request.url, answer.text)
    body = answer.json()
    assert body["code"] == "case_unreadable", body
    assert body["detail"].startswith(f"case {case!r} (repeat "), body
    assert f"of run {run} cannot be read: {said}" in body["detail"], body
    assert "Traceback" not in answer.text


def _every_reader_refuses(url: str, run: str, other: str, said: str,
                          histograms: bool) -> None:
    """The REST API's readers of a run's cases (the web UI's data) name the case and the
    column (409); the other run is served."""
    from tests.server_support import serve

    with serve(url) as served, served.client() as api:
        one = {"case_id": "case-000001"}
        for path, params in [(f"/runs/{run}/cases", {}),
                             (f"/runs/{run}/cases", {"sort": "-score"}),
                             (f"/runs/{run}/cases", {"sort": "latency"}),
                             (f"/runs/{run}/export", {}),
                             (f"/runs/{run}/case", one),
                             ("/runs/compare", {"baseline_run_id": other,
                                                "candidate_run_id": run})]:
            _refused_naming(api.get(path, params=params), run, said)
        shown = api.get(f"/runs/{run}/histograms")
        if histograms:
            _refused_naming(shown, run, said)
        else:  # what it counts is readable
            assert shown.status_code == 200, shown.text
        for path in (f"/runs/{other}/cases", f"/runs/{other}/export",
                     f"/runs/{other}/histograms"):
            assert api.get(path).status_code == 200, path


@pytest.mark.parametrize(("table", "column", "said"), NOT_NUMBERS)
def test_a_number_column_holding_text_is_named_by_the_api(tmp_path, table, column, said):
    pytest.importorskip("fastapi")
    url, run, other = _number_as_text(tmp_path, table, column)
    _every_reader_refuses(url, run, other, said, histograms=column in ("score", "value"))


@pytest.mark.parametrize(("table", "column", "value", "said"), JSON_NUMBERS)
def test_a_json_number_holding_text_is_named_by_the_api(store_url, table, column, value,
                                                        said):
    pytest.importorskip("fastapi")
    run, other = _bad_case(store_url, table, column, value)
    _every_reader_refuses(store_url, run, other, said, histograms=False)


def _cli_refuses(url: str, run: str, other: str, said: str, tmp_path: Path,
                 case: str = "case-000001") -> None:
    """show, compare and the report's file name the case and the column in one line (exit
    2), and leave no file behind."""
    out = tmp_path / "out"
    out.mkdir()
    for args in (["show", run], ["show", run, "--json"], ["compare", other, run],
                 ["report", run, "--html", str(out / "report.html")]):
        done = run_assay([*args, "--store", url], cwd=tmp_path, timeout=120)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith(f"error [case_unreadable]: case {case!r} (repeat "), \
            done.stderr
        assert f"of run {run} cannot be read: {said}" in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert list(out.iterdir()) == []
    assert run_assay(["report", other, "--html", str(out / "other.html"), "--store", url],
                     cwd=tmp_path, timeout=120).returncode == 0


@pytest.mark.parametrize(("table", "column", "said"), NOT_NUMBERS)
def test_a_number_column_holding_text_is_named_by_the_cli(tmp_path, table, column, said):
    url, run, other = _number_as_text(tmp_path, table, column)
    _cli_refuses(url, run, other, said, tmp_path)


LATE = "case-000550"
"""A case the export's second page holds (its pages are of 500)."""


@pytest.mark.parametrize(("table", "column", "said"), [
    ("executions", "execution", "its execution is not JSON ("),
    ("case_results", "score", "its score column holds the text 'abc', not a number"),
    ("scores", "repeat", "its repeat column holds the text 'abc', not a whole number"),
])
def test_an_export_meeting_an_unreadable_row_after_its_first_page_is_refused_up_front(
        tmp_path, table, column, said):
    """The export used to read its first page only before it answered: a row further on cut
    the file short after a 200."""
    pytest.importorskip("fastapi")
    from tests.server_support import serve

    url, run, other = _number_as_text(tmp_path, table, column, case=LATE, cases=600)
    with serve(url) as served, served.client() as api:
        for params in ({}, {"sort": "case"}, {"format": "json"}, {"q": "case-00055"}):
            _refused_naming(api.get(f"/runs/{run}/export", params=params), run, said, LATE)
        kept = api.get(f"/runs/{run}/export", params={"q": "case-000002"})  # not the case
        assert kept.status_code == 200 and "case-000002" in kept.text, kept.text[:300]
        whole = api.get(f"/runs/{other}/export", params={"format": "json"})
        assert whole.status_code == 200 and len(whole.json()) == 600
        first = api.get(f"/runs/{run}/cases", params={"sort": "case"})  # does not hold it
        assert first.status_code == 200, first.text
    _cli_refuses(url, run, other, said, tmp_path, case=LATE)


@pytest.mark.postgres
def test_an_export_meeting_a_json_number_holding_text_later_is_refused_on_postgres():
    """PostgreSQL's JSON holds only JSON, but a number in it may be text: its cast failed
    the export's second page as a store failure."""
    pytest.importorskip("fastapi")
    from tests.postgres_support import fresh_database, postgres_url

    with fresh_database(postgres_url()) as url:
        _late_latency_refused(url)


def _late_latency_refused(store_url: str) -> None:
    from tests.server_support import serve

    store = RunStore(store_url)
    run = write_run(store, 600, seed=1)
    store.close()
    engine = create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE executions SET execution = CAST(:value AS json) WHERE "
                          "run_id = :run AND case_id = :case"),
                     {"value": '{"input": "q", "latency_ms": "fast"}', "run": run,
                      "case": LATE})
    engine.dispose()
    with serve(store_url) as served, served.client() as api:
        _refused_naming(api.get(f"/runs/{run}/export"), run,
                        "its execution's latency_ms holds the text 'fast'", LATE)


def test_a_running_run_whose_lease_is_text_is_named(tmp_path: Path):
    """A lease that is not a number was read as no lease at all."""
    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    run_id = write_run(store, 1, status=RunStatus.RUNNING)
    with store.transaction() as conn:
        conn.execute(text("UPDATE runs SET lease_expires_at = 'soon'"))
    found = store.run_records()
    assert "lease_expires_at: its column holds the text 'soon', not a number" in (
        found[0].unreadable or ""), found[0]
    with pytest.raises(StoreError, match=f"run {run_id} cannot be read: lease_expires_at"):
        store.run_record(run_id)
    store.close()


@pytest.mark.parametrize(("column", "value", "said"), [
    ("execution", "not json {", "its execution is not JSON"),
    ("execution", "[1, 2]", "its execution is a JSON array, not a JSON object"),
    ("repeat", "first", "its repeat column holds the text 'first'")])
def test_a_resume_that_retries_errors_names_an_execution_it_cannot_read(tmp_path, column,
                                                                        value, said):
    """Retrying a run's errors reads every execution to find the agent's failures: one that
    could not be read ended the resume in an AttributeError traceback."""
    from assay.store.runs import CaseUnreadable

    url = f"sqlite:///{tmp_path}/runs.db"
    run, _ = _bad_case(url, "executions", column, value)
    store = RunStore(url)
    try:
        with pytest.raises(CaseUnreadable) as refused:
            store.forget_errors(run)
        assert "case 'case-000001'" in refused.value.message and said in \
            refused.value.message, refused.value.message
        assert store.score_count(run) > 0  # nothing was deleted
    finally:
        store.close()


def _damaged_key(store: Path, run_id: str, value: object) -> None:
    """The stored result row of ``run_id``'s one finished case, its ``repeat`` set to
    ``value``; NULL needs the column's NOT NULL gone first, as another program's table
    could lack it."""
    import sqlite3

    db = sqlite3.connect(store)
    if value is None:
        db.execute("PRAGMA writable_schema = ON")
        db.execute("UPDATE sqlite_master SET sql = replace(sql, 'repeat INTEGER NOT NULL', "
                   "'repeat INTEGER') WHERE name = 'case_results'")
        db.commit()
        db.close()
        db = sqlite3.connect(store)
    assert db.execute("UPDATE case_results SET repeat = ? WHERE run_id = ?",
                      (value, run_id)).rowcount == 1
    db.commit()
    db.close()


@pytest.mark.parametrize(("value", "said"), [
    ("first", "its repeat column holds the text 'first', not a whole number"),
    (None, "its repeat column holds NULL, not a whole number"),
    (0.5, "its repeat column holds float 0.5, not a whole number")])
def test_a_resume_names_a_finished_case_whose_repeat_is_damaged(tmp_path, value, said):
    """The resume's list of finished cases read such a row as a key no case has: the case
    ran again, silently, beside its damaged row."""
    from assay.store.runs import CaseUnreadable
    from tests.test_evaluate import ROWS, agent
    from tests.test_resume_and_default_store import stopped_after_one

    store = tmp_path / "runs.db"
    run_id = stopped_after_one(store, evaluators=["exact_match"])
    _damaged_key(store, run_id, value)
    url = f"sqlite:///{store}"
    before = RunStore(url).run_record(run_id)
    for retry_errors in (False, True):
        with pytest.raises(CaseUnreadable) as refused:
            assay.resume(run_id, data=ROWS, store=store, target=agent,
                         retry_errors=retry_errors)
        message = refused.value.message
        assert message.startswith("case 'fr' (repeat ") and \
            f"of run {run_id} cannot be read: {said}" in message, message
    kept = RunStore(url)
    assert kept.run_record(run_id) == before  # not marked running, failed or anything else
    with kept.transaction() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM case_results")).scalar_one() == 1
    with pytest.raises(CaseUnreadable, match=said):
        kept.case_keys(run_id)
    kept.close()


@pytest.mark.parametrize("table", ["executions", "scores"])
@pytest.mark.parametrize(("value", "said"), [
    ("first", "its repeat column holds the text 'first', not a whole number"),
    (0.5, "its repeat column holds float 0.5, not a whole number")])
def test_a_plain_resume_names_a_damaged_repeat_before_the_run_is_touched(
        tmp_path, table, value, said):
    """A finished case's execution or score whose repeat is damaged was met only once the
    resume had marked the run running again: the run ended failed. It is named before."""
    import sqlite3

    from assay.store.runs import CaseUnreadable
    from tests.test_evaluate import ROWS, agent
    from tests.test_resume_and_default_store import stopped_after_one

    store = tmp_path / "runs.db"
    run_id = stopped_after_one(store, evaluators=["exact_match"])
    db = sqlite3.connect(store)
    assert db.execute(f"UPDATE {table} SET repeat = ? WHERE run_id = ? AND case_id = 'fr'",
                      (value, run_id)).rowcount == 1
    db.commit()
    db.close()
    url = f"sqlite:///{store}"
    before = RunStore(url).run_record(run_id)
    assert before.status is RunStatus.INTERRUPTED
    with pytest.raises(CaseUnreadable) as refused:
        assay.resume(run_id, data=ROWS, store=store, target=agent)
    message = refused.value.message
    assert message.startswith("case 'fr' (repeat ") and \
        f"of run {run_id} cannot be read: {said}" in message, message
    assert RunStore(url).run_record(run_id) == before  # not running, not failed


CREATED_SAID = "created_at: its column holds the text 'yesterday', not a number"


def _created_as_text(tmp_path: Path, table: str = "runs") -> tuple[str, str, str]:
    """Two runs of two suites, each its suite's baseline, the first's created_at in
    ``table`` (runs, baselines) then holding text (SQLite's REAL column takes it)."""
    from assay.store.baselines import set_baseline

    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    bad = write_run(store, 2, suite="alpha", seed=1, created_at=1_000_000.0)
    good = write_run(store, 2, suite="beta", seed=2, created_at=1_000_100.0)
    set_baseline(store, bad)
    set_baseline(store, good)
    with store.transaction() as conn:
        conn.execute(text(f"UPDATE {table} SET created_at = 'yesterday' WHERE "
                          f"{'id' if table == 'runs' else 'run_id'} = :id"), {"id": bad})
    store.close()
    return url, bad, good


def test_a_run_whose_created_at_is_text_is_named_and_never_dated_1970(tmp_path):
    """Such a run was named unreadable, yet listed as started at 0 (1970-01-01)."""
    url, bad, good = _created_as_text(tmp_path)
    store = RunStore(url)
    assert {r.id: (r.created_at, r.unreadable) for r in store.run_records()} == {
        bad: (None, CREATED_SAID), good: (1_000_100.0, None)}
    items = {i.id: i for i in queries.list_runs(store, queries.RunFilter())[0]}
    assert items[bad].created_at is None and CREATED_SAID in (items[bad].unreadable or "")
    found = queries.find_run(store, bad)
    assert found is not None and found.created_at is None
    with pytest.raises(StoreError, match=f"run {bad} cannot be read: {CREATED_SAID}"):
        store.run_record(bad)
    # a date range cannot say that a start it cannot read is in it
    for where in (queries.RunFilter(since=0.0), queries.RunFilter(until=2e9)):
        assert [i.id for i in queries.list_runs(store, where)[0]] == [good]
    store.close()


def test_the_api_lists_a_run_whose_created_at_is_text_without_a_date(tmp_path):
    pytest.importorskip("fastapi")
    from tests.server_support import serve

    url, bad, good = _created_as_text(tmp_path)
    with serve(url) as served, served.client() as api:
        listed = {r["id"]: r for r in api.get("/runs").json()["items"]}
        assert listed[bad]["created_at"] is None and listed[bad]["created"] is None
        assert CREATED_SAID in listed[bad]["unreadable"]
        assert listed[good]["created"] == "1970-01-12T13:48:20Z"
        detail = api.get(f"/runs/{bad}").json()
        assert detail["created_at"] is None and detail["created"] is None, detail
        assert detail["duration"] == "-" and CREATED_SAID in detail["unreadable"]


def test_assay_runs_lists_a_run_whose_created_at_is_text_without_a_date(tmp_path):
    url, bad, _ = _created_as_text(tmp_path)
    env = {**os.environ, "COLUMNS": "200", "TZ": "UTC"}
    listed = run_assay(["runs", "--store", url], cwd=tmp_path, env=env, timeout=120)
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if bad in line and "│" in line)
    assert "unreadable" in row and "1970-01-01" not in row and " - " in row, listed.stdout
    assert f"unreadable {bad}: {CREATED_SAID}" in listed.stdout
    assert "1970-01-12 13:48" in listed.stdout  # the other run's start
    as_json = {r["id"]: r for r in json.loads(run_assay(
        ["runs", "--json", "--store", url], cwd=tmp_path, env=env, timeout=120).stdout)}
    assert as_json[bad]["created_at"] is None and CREATED_SAID in as_json[bad]["unreadable"]


def test_a_baseline_whose_time_is_text_is_listed_with_no_time(tmp_path):
    """Such a baseline failed every reader of it with a validation traceback (the CLI's
    ``assay baseline show``, and the REST API's run detail of every run of its suite); it
    reads as no time, named, by the rule a run's created_at goes through."""
    from assay.store.baselines import get_baseline, list_baselines

    url, bad, good = _created_as_text(tmp_path, "baselines")
    store = RunStore(url)
    listed = {b.run_id: b for b in list_baselines(store)}
    assert (listed[bad].created_at, listed[bad].unreadable) == (None, CREATED_SAID)
    assert listed[good].created_at is not None and listed[good].unreadable is None
    found = get_baseline(store, "alpha", "calculator-agent")
    assert found is not None and found.run_id == bad and found.created_at is None
    store.close()
    env = {**os.environ, "COLUMNS": "200", "TZ": "UTC"}
    shown = run_assay(["baseline", "show", "--store", url], cwd=tmp_path, env=env,
                      timeout=120)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
    line = next(line for line in shown.stdout.splitlines() if bad in line)
    assert f"(since an unknown time: {CREATED_SAID})" in line and "1970" not in line, line
    assert "since 20" in next(line for line in shown.stdout.splitlines() if good in line)
    as_json = {b["run_id"]: b for b in json.loads(run_assay(
        ["baseline", "show", "--json", "--store", url], cwd=tmp_path, env=env,
        timeout=120).stdout)}
    assert as_json[bad]["created_at"] is None and as_json[bad]["unreadable"] == CREATED_SAID


def test_the_api_serves_the_runs_of_a_baseline_whose_time_is_text(tmp_path):
    pytest.importorskip("fastapi")
    from tests.server_support import serve

    url, bad, good = _created_as_text(tmp_path, "baselines")
    with serve(url) as served, served.client() as api:
        for path, params in [(f"/runs/{bad}", {}), ("/runs/baseline", {"suite": "alpha",
                                                                        "target": "calculator-agent"}),
                             (f"/runs/{good}", {})]:
            answer = api.get(path, params=params)
            assert answer.status_code == 200, (path, answer.text[:300])
        assert api.get(f"/runs/{bad}").json()["is_baseline"] is True
        assert {r["id"]: r["is_baseline"] for r in api.get("/runs").json()["items"]} == {
            bad: True, good: True}
