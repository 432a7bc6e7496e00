"""A run's export reads its cases a page at a time after the last page's key (keyset paging),
never by an offset, which reads and drops every row before it (a 100,000-case export took
about 50 s on SQLite, most of it skipping rows). The file is the same, byte for byte and in
the same order, as the pages of cases list them: on SQLite and PostgreSQL, for every sort and
filter, through ties, NULL scores and repeats."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine

from assay.report import export
from assay.store.queries import CaseFilter, CaseRow, CaseSort, EvaluatorState, case_page
from assay.store.runs import RunStore
from assay.testing.runs import write_run
from assay.types.records import Verdict


def _varied_run(url: str, cases: int) -> str:
    """A run of ``cases`` cases whose sort keys tie (scores on a coarse grid, finish times
    shared), with cases whose score is NULL (errors) and a second repeat of some cases."""
    store = RunStore(url)
    run = write_run(store, cases, seed=3)
    store.close()
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE case_results SET score = ROUND(CAST(score AS numeric), 1) "
                          "WHERE run_id = :run"), {"run": run})
        conn.execute(text("UPDATE case_results SET created_at = 5.0 WHERE run_id = :run AND "
                          "case_id LIKE '%3'"), {"run": run})
        for table, columns in (
                ("case_results", "score, verdict, \"row\", created_at"),
                ("executions", "execution, created_at"),
                ("scores", "evaluator, value, error_code, score, passed, created_at")):
            conn.execute(text(f"INSERT INTO {table} (run_id, case_id, repeat, {columns}) "
                              f"SELECT run_id, case_id, 1, {columns} FROM {table} WHERE "
                              "run_id = :run AND case_id LIKE '%7'"), {"run": run})
    engine.dispose()
    return run


def _offset_pages(store: RunStore, run: str, where: CaseFilter, sort: CaseSort,
                  limit: int) -> list[CaseRow]:
    """The rows as the pages of cases list them, page after page by offset."""
    found: list[CaseRow] = []
    for offset in itertools.count(0, limit):
        page, total = case_page(store, run, where, sort, limit, offset)
        found += page
        if offset + limit >= total:
            return found
    raise AssertionError("unreachable")


FILTERS = [CaseFilter(), CaseFilter(evaluator="correctness"),
           CaseFilter(verdicts=[Verdict.FAIL, Verdict.ERROR]),
           CaseFilter(evaluator="relevance", evaluator_state=EvaluatorState.FAILED),
           CaseFilter(text="case-0000")]


def test_keyset_pages_hold_the_offset_pages_rows_in_their_order(store_url):
    from assay.store.queries import case_pages

    run = _varied_run(store_url, 130)
    store = RunStore(store_url)
    try:
        for where, sort in itertools.product(FILTERS, CaseSort):
            expected = _offset_pages(store, run, where, sort, 7)
            pages = list(case_pages(store, run, where, sort, 7))
            assert all(0 < len(page) <= 7 for page in pages)
            got = [row for page in pages for row in page]
            assert [(r.case_id, r.repeat) for r in got] == \
                [(r.case_id, r.repeat) for r in expected], (where, sort)
            assert got == expected, (where, sort)
        assert len(_offset_pages(store, run, CaseFilter(), CaseSort.CASE, 50)) == 143
    finally:
        store.close()


@pytest.fixture
def statements() -> Iterator[list[tuple[str, Any]]]:
    """Every SQL statement any engine of this process runs while the test runs, with the
    offset its query asked for (None: none; SQLite's LIMIT is always spelt with an OFFSET,
    so the text does not tell)."""
    seen: list[tuple[str, Any]] = []

    def note(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any,
             executemany: bool) -> None:
        query = getattr(getattr(context, "compiled", None), "statement", None)
        seen.append((statement, getattr(query, "_offset", None)))

    event.listen(Engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", note)


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_the_export_reads_by_key_not_offset_and_its_bytes_are_the_pages(store_url, fmt,
                                                                         statements):
    pytest.importorskip("fastapi")
    from tests.server_support import serve

    run = _varied_run(store_url, 1100)  # three pages of 500
    store = RunStore(store_url)
    names = sorted(store.run_record(run).summary.evaluators)  # type: ignore[union-attr]
    with serve(store_url) as served, served.client() as api:
        for sort, where, params in [
                (CaseSort.PROBLEMS, CaseFilter(), {}),
                (CaseSort.SCORE_DESC, CaseFilter(), {"sort": "-score"}),
                (CaseSort.LATENCY, CaseFilter(), {"sort": "latency"}),
                (CaseSort.SCORE, CaseFilter(evaluator="correctness"),
                 {"sort": "score", "evaluator": "correctness"})]:
            statements.clear()
            answer = api.get(f"/runs/{run}/export", params={**params, "format": fmt})
            assert answer.status_code == 200, answer.text[:300]
            read = [(s, offset) for s, offset in statements if "case_results" in s]
            assert read and not [s for s, offset in read if offset is not None], read
            rows = (export.case_row(r, names)
                    for r in _offset_pages(store, run, where, sort, 500))
            assert answer.content == b"".join(
                export.chunks(fmt, export.case_columns(names), rows)), sort  # type: ignore[arg-type]
    store.close()
