"""A flush of the run store writes one statement per table, however the rows of its tables
interleave (each case queues an execution, a score and a case row in turn), and the first
row for a key still wins."""

from __future__ import annotations

from sqlalchemy import event

from assay.model import Case, Execution, Score
from assay.records import CaseRecord, Verdict
from assay.store.runs import RunStore


def test_interleaved_rows_flush_as_one_statement_per_table(tmp_path):
    store = RunStore(f"sqlite:///{tmp_path}/runs.db", flush_seconds=3600)
    run = store.create_run("suite", {})
    statements: list[str] = []
    event.listen(store.engine, "before_cursor_execute",
                 lambda conn, cursor, sql, *rest: statements.append(sql.split()[0]))
    for i in range(5):
        execution = Execution(output=f"answer {i}")
        store.record_execution(run, f"c{i}", 0, execution)
        store.record_score(run, f"c{i}", 0, Score(name="judge", value=i / 10))
        store.record_case(CaseRecord(run_id=run, case_id=f"c{i}", case=Case(id=f"c{i}"),
                                     execution=execution, verdict=Verdict.FAIL))
    store.record_score(run, "c0", 0, Score(name="judge", value=0.9))  # same key, later
    store.flush()
    assert statements.count("INSERT") == 4  # executions, scores, case rows, search rows
    scores = store.scores(run)
    assert len(store.case_records(run)) == 5 and scores[("c0", 0)]["judge"].value == 0.0
