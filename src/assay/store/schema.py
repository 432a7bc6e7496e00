"""The run store's tables. Rows are written as results complete, so nothing finished is lost.

This is the schema the code reads and writes through; the migrations in
``assay.store.migrations`` create it, and a test checks that the two agree.

Primary keys make every write idempotent: a (run, case, repeat, evaluator) score exists at most
once, which is what lets a killed run resume without duplicates.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()

runs = Table(
    "runs", metadata,
    Column("id", String(40), primary_key=True),
    Column("suite", String(500), nullable=False),
    Column("status", String(20), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("finished_at", Float),
    Column("config", JSON, nullable=False),
    Column("summary", JSON),
    Column("lease_expires_at", Float, doc="until when the process running the run vouches "
           "for it (migration 0007): a running run past it was left by a dead process"),
)

executions = Table(
    "executions", metadata,
    Column("run_id", String(40), primary_key=True),
    Column("case_id", String(500), primary_key=True),
    Column("repeat", Integer, primary_key=True),
    Column("execution", JSON, nullable=False),
    Column("created_at", Float, nullable=False),
)

scores = Table(
    "scores", metadata,
    Column("run_id", String(40), primary_key=True),
    Column("case_id", String(500), primary_key=True),
    Column("repeat", Integer, primary_key=True),
    Column("evaluator", String(200), primary_key=True),
    Column("value", Float),
    Column("error_code", String(100)),
    Column("score", JSON, nullable=False),
    Column("passed", Boolean, doc="the score's own pass or fail, for filtering without "
           "reading its JSON (None for errors, skips and scores stored before it existed)"),
    Column("created_at", Float, nullable=False),
)

case_results = Table(
    "case_results", metadata,
    Column("run_id", String(40), primary_key=True),
    Column("case_id", String(500), primary_key=True),
    Column("repeat", Integer, primary_key=True),
    Column("score", Float),
    Column("verdict", String(20), nullable=False),
    Column("row", JSON, nullable=False),
    Column("created_at", Float, nullable=False),
)


case_search = Table(
    "case_search", metadata,  # see assay.store.search (migration 0006)
    Column("run_id", String(40), primary_key=True),
    Column("case_id", String(500), primary_key=True),
    Column("repeat", Integer, primary_key=True),
    Column("text", Text, nullable=False),
)


baselines = Table(
    "baselines", metadata,
    Column("suite", String(500), primary_key=True),
    Column("target", String(500), primary_key=True),
    Column("run_id", String(40), nullable=False),
    Column("created_at", Float, nullable=False),
)
"""The named baseline of each (suite, target): the run a new run is compared to. One per
scope, so setting another replaces it; ``target`` is "" for outputs judged as recorded."""


calibrations = Table(
    "calibrations", metadata,
    Column("id", String(40), primary_key=True),
    Column("judge_key", String(64), nullable=False, index=True),
    Column("judge_name", String(200), nullable=False),
    Column("judge_type", String(100), nullable=False),
    Column("set_name", String(200), nullable=False),
    Column("kind", String(20), nullable=False),
    Column("items", Integer, nullable=False),
    Column("kappa", Float),
    Column("accuracy", Float),
    Column("run_id", String(40)),
    Column("created_at", Float, nullable=False),
    Column("report", JSON, nullable=False),
)

# Browsing large runs: pages of cases by verdict, score or evaluator, runs by date and suite.
Index("ix_runs_created_at", runs.c.created_at)
Index("ix_runs_suite_created_at", runs.c.suite, runs.c.created_at)
Index("ix_case_results_run_verdict_score", case_results.c.run_id, case_results.c.verdict,
      case_results.c.score, case_results.c.case_id, case_results.c.repeat)
Index("ix_case_results_run_score", case_results.c.run_id, case_results.c.score,
      case_results.c.case_id, case_results.c.repeat)
Index("ix_case_results_run_created_at", case_results.c.run_id, case_results.c.created_at)
Index("ix_scores_state", scores.c.run_id, scores.c.case_id, scores.c.repeat, scores.c.evaluator,
      scores.c.value, scores.c.error_code, scores.c.passed)
Index("ix_scores_evaluator_state", scores.c.run_id, scores.c.evaluator, scores.c.case_id,
      scores.c.repeat, scores.c.value, scores.c.error_code, scores.c.passed)
