"""The run store's tables. Rows are written as results complete, so nothing finished is lost.

This is the schema the code reads and writes through; the migrations in
``assay.store.migrations`` create it, and a test checks that the two agree.

Primary keys make every write idempotent: a (run, case, repeat, evaluator) score exists at most
once, which is what lets a killed run resume without duplicates.
"""

from __future__ import annotations

from sqlalchemy import JSON, Column, Float, Integer, MetaData, String, Table

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
