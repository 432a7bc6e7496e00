"""The browsing migration: a store written before it gets its indexes and every stored score's
``passed`` filled from the score itself, on SQLite and PostgreSQL."""

from __future__ import annotations

import json

from sqlalchemy import create_engine, text

from assay.store import migrations
from assay.store.queries import CaseFilter, EvaluatorState, case_page
from assay.store.runs import RunStore


def _upgrade_to(url: str, revision: str) -> None:
    from alembic import command
    from alembic.config import Config

    engine = create_engine(url)
    with engine.connect() as conn:
        config = Config()
        config.set_main_option("script_location", str(migrations.SCRIPT_DIR))
        config.set_main_option("path_separator", "os")
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
        conn.commit()
    engine.dispose()


def test_scores_stored_before_the_passed_column_are_filled_in(store_url):
    _upgrade_to(store_url, "0002_drop_assay_migrations")
    engine = create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO runs (id, suite, status, created_at, config) VALUES "
                          "('r', 's', 'completed', 1, '{}')"))
        for case_id, value, passed in [("a", 0.9, True), ("b", 0.2, False), ("c", None, None)]:
            score = {"name": "judge", "value": value, "passed": passed} if value is not None \
                else {"name": "judge", "error": {"code": "x", "message": "y"}}
            conn.execute(text(
                "INSERT INTO scores (run_id, case_id, repeat, evaluator, value, error_code, "
                "score, created_at) VALUES ('r', :c, 0, 'judge', :v, :e, :s, 1)"),
                {"c": case_id, "v": value, "e": None if value is not None else "x",
                 "s": json.dumps(score)})
            conn.execute(text(
                "INSERT INTO case_results (run_id, case_id, repeat, score, verdict, row, "
                "created_at) VALUES ('r', :c, 0, :v, 'pass', :row, 1)"),
                {"c": case_id, "v": value, "row": json.dumps({"case": {"id": case_id}})})
    engine.dispose()
    store = RunStore(store_url)  # upgrades to the newest revision
    with store.engine.connect() as conn:
        passed = dict(conn.execute(text("SELECT case_id, passed FROM scores")).fetchall())
    assert {k: (None if v is None else bool(v)) for k, v in passed.items()} == {
        "a": True, "b": False, "c": None}
    failed, total = case_page(store, "r", CaseFilter(evaluator="judge",
                                                     evaluator_state=EvaluatorState.FAILED))
    assert [c.case_id for c in failed] == ["b"] and total == 1
    store.close()
