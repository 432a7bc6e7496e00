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
                ("executions", "execution, created_at, latency_ms"),
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


LATENCIES = [120.0, None, 5.0, 7.5, 5.0, "none", 120.0, 0.25, None, 5.0, 900.0, "none", 7.5,
             3000.5, 5.0, None, 42.0, "none", 120.0, 0.25, 1.0, 5.0, 2.0]
"""The agent's latency of each case of :func:`_timed_run`: ties, cases without one (None),
and cases without an execution at all ("none")."""


def _timed_run(url: str) -> str:
    """A run whose cases' latencies are :data:`LATENCIES` (over two repeats)."""
    from assay.testing.runs import store_case
    from assay.types.case import Case
    from assay.types.execution import Execution
    from assay.types.records import CaseRecord
    from assay.types.score import Score

    store = RunStore(url)
    run = store.create_run("suite", {})
    for i, latency in enumerate(LATENCIES):
        case_id = f"case-{i * 7 % len(LATENCIES):02d}"  # key order is not insertion order
        record = CaseRecord(
            run_id=run, case_id=case_id, repeat=i % 2, case=Case(id=case_id, input="q"),
            execution=Execution(input="q", output="a",
                                latency_ms=latency if latency != "none" else None),
            scores=[Score(name="x", value=0.5)], score=0.5, verdict=Verdict.PASS)
        if latency == "none":
            store.record_case(record)  # its execution was never stored
        else:
            store_case(store, record)
    store.close()
    return run


def _latency_order(url: str, run: str, descending: bool) -> list[tuple[str, int]]:
    """The cases in the order a sort by latency always gave: by the latency their
    executions' JSON holds (ties by case and repeat), then those without one, by key."""
    import json

    engine = create_engine(url)
    with engine.connect() as conn:
        cases = conn.execute(text("SELECT case_id, repeat FROM case_results WHERE run_id = "
                                  ":run"), {"run": run}).fetchall()
        timed = {(c, r): json.loads(e) if isinstance(e, str) else e
                 for c, r, e in conn.execute(text(
                     "SELECT case_id, repeat, CAST(execution AS TEXT) FROM executions "
                     "WHERE run_id = :run"), {"run": run})}
    engine.dispose()
    latency = {key: timed[key].get("latency_ms") for key in timed}
    keys = sorted((c, r) for c, r in cases)
    with_one = [k for k in keys if latency.get(k) is not None]
    without = [k for k in keys if latency.get(k) is None]
    ordered = sorted(with_one, key=lambda k: (-latency[k] if descending else latency[k], k))
    return ordered + without


@pytest.mark.parametrize("sort", [CaseSort.LATENCY, CaseSort.LATENCY_DESC])
def test_a_sort_by_latency_is_the_order_of_the_executions_latencies(store_url, sort):
    """The latency a sort reads is the executions' stored column (migration 0014), not
    their JSON: the order is the JSON's all the same, ties by key, the cases without a
    latency (none measured, no execution) last by key, on every reader of it."""
    from assay.store.queries import case_pages

    pytest.importorskip("fastapi")
    from tests.server_support import serve

    run = _timed_run(store_url)
    expected = _latency_order(store_url, run, sort is CaseSort.LATENCY_DESC)
    assert len(expected) == len(LATENCIES) and expected[-6:] == sorted(expected[-6:])
    store = RunStore(store_url)
    try:
        for limit in (1, 4, 100):
            paged = [(r.case_id, r.repeat) for page in case_pages(
                store, run, CaseFilter(), sort, limit) for r in page]
            assert paged == expected, limit
            listed = [(r.case_id, r.repeat)
                      for r in _offset_pages(store, run, CaseFilter(), sort, limit)]
            assert listed == expected, limit
        rows = _offset_pages(store, run, CaseFilter(), sort, 100)
        shown = {(r.case_id, r.repeat): r.latency_ms for r in rows}
        assert sorted(v for v in shown.values() if v is not None) == sorted(
            v for v in LATENCIES if isinstance(v, float))
        with serve(store_url) as served, served.client() as api:
            answer = api.get(f"/runs/{run}/export", params={"sort": sort.value,
                                                             "format": "json"})
            assert answer.status_code == 200, answer.text[:300]
            assert [(r["case_id"], r["repeat"]) for r in answer.json()] == expected
            page = api.get(f"/runs/{run}/cases", params={"sort": sort.value, "limit": 5,
                                                         "offset": 5})
            assert page.status_code == 200, page.text[:300]
            assert [(r["case_id"], r["repeat"]) for r in page.json()["items"]] == \
                expected[5:10]
    finally:
        store.close()


def test_a_page_sorted_by_latency_reads_no_executions_json_to_sort(store_url, statements):
    """The keys of a page sorted by latency are read from the column, through its index:
    the statement that orders them names no execution's JSON."""
    run = _timed_run(store_url)
    store = RunStore(store_url)
    try:
        statements.clear()
        case_page(store, run, CaseFilter(), CaseSort.LATENCY_DESC, 5, 5)
        ordering = [s for s, _ in statements if "ORDER BY" in s and "executions" in s]
        assert ordering and not [s for s in ordering if "execution," in s.split(
            "ORDER BY")[1] or "latency_ms'" in s], ordering
    finally:
        store.close()
