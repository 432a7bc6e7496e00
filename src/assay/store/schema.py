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
    Column("name", String(200), doc="what people call the run (migration 0009)"),
    Column("notes", Text, doc="what people wrote about the run (migration 0009)"),
)

run_tags = Table(
    "run_tags", metadata,  # migration 0009
    Column("run_id", String(40), primary_key=True),
    Column("tag", String(200), primary_key=True),
)
"""A run's tags, one row each: runs are listed by tag through ``ix_run_tags_tag``."""

human_labels = Table(
    "human_labels", metadata,  # migration 0009
    Column("id", String(40), primary_key=True),
    Column("run_id", String(40), nullable=False),
    Column("case_id", String(500), nullable=False),
    Column("repeat", Integer, nullable=False),
    Column("evaluator", String(200), nullable=False),
    Column("agrees", Boolean, nullable=False),
    Column("value", Text, doc="the correct value as JSON text (SQLite gives a bare number in "
           "a JSON column numeric affinity)"),
    Column("judge_value", Float),
    Column("judge_passed", Boolean),
    Column("comment", Text, nullable=False),
    Column("author", String(200), nullable=False),
    Column("created_at", Float, nullable=False),
)
"""Reviewers' labels of judges' scores, only ever added (see :mod:`assay.store.labels`)."""

executions = Table(
    "executions", metadata,
    Column("run_id", String(40), primary_key=True),
    Column("case_id", String(500), primary_key=True),
    Column("repeat", Integer, primary_key=True),
    Column("execution", JSON, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("latency_ms", Float, doc="the execution's latency_ms when it is a number, else "
           "NULL (migration 0014): what a sort by latency reads, through "
           "``ix_executions_run_latency``, instead of every execution's JSON"),
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

trace_spans = Table(
    "trace_spans", metadata,  # see assay.store.traces (migration 0008)
    Column("seq", Integer, primary_key=True, autoincrement=True,
           doc="the order spans were received in: what an online evaluation reads on from"),
    Column("trace_id", String(64), nullable=False),
    Column("span_id", String(64), nullable=False),
    Column("received_at", Float, nullable=False),
    Column("span", JSON, nullable=False),
)
"""Spans received by the OTLP receiver, one row each, append-only; a span sent again (an
exporter retrying) is the same (trace, span) and is not stored twice."""

traces = Table(
    "traces", metadata,
    Column("trace_id", String(64), primary_key=True),
    Column("first_received", Float, nullable=False),
    Column("last_received", Float, nullable=False),
    Column("start_time", Float, doc="the earliest start of its spans (seconds)"),
    Column("service", String(500), doc="the resource's service.name"),
    Column("root_name", String(500), doc="the name of a span without a parent"),
    Column("has_error", Boolean, nullable=False),
)
"""One row per received trace: what listing, filtering and an online evaluation read
without reading its spans."""

trace_decisions = Table(
    "trace_decisions", metadata,
    Column("watcher", String(200), primary_key=True,
           doc="the online evaluation and its evaluators' version"),
    Column("trace_id", String(200), primary_key=True),
    Column("decision", String(20), nullable=False, doc="judged or sampled_out"),
    Column("run_id", String(40)),
    Column("reason", String(500)),
    Column("cost", Float),
    Column("decided_at", Float, nullable=False),
)
"""What an online evaluation decided for each trace: once per evaluator version, kept across
restarts, so that no trace is judged twice and none is forgotten."""

judge_batches = Table(
    "judge_batches", metadata,  # see assay.store.batches (migration 0010)
    Column("run_id", String(40), primary_key=True),
    Column("batch_id", String(200), primary_key=True, doc="the provider's id of the batch"),
    Column("model", String(500), nullable=False, doc="the judge model, as it may be shown"),
    Column("state", String(40), nullable=False, doc="the provider's status when last asked"),
    Column("requests", Integer, nullable=False),
    Column("counts", JSON, doc="the provider's request counts when last asked"),
    Column("submitted_at", Float, nullable=False),
    Column("checked_at", Float),
    Column("collected", Boolean, nullable=False,
           doc="its answers were read and the run judged from them"),
    Column("token", String(64), doc="assay's own token of the submission (migration 0011): "
           "kept before the provider is asked, looked for there when its id is not known"),
    Column("input_file", String(200), doc="the provider's id of the file its requests were "
           "uploaded in (OpenAI; migration 0012): kept as soon as the upload answers, the "
           "batch made of it by a resume, deleted once the run is judged"),
)
"""The batches a run's judge calls were submitted in (``assay run --batch``). A row in the
``submitting`` state is a submission whose provider id is not known yet: its ``batch_id`` is
its ``token`` (see :mod:`assay.store.batches`)."""

judge_batch_requests = Table(
    "judge_batch_requests", metadata,  # migration 0010
    Column("run_id", String(40), primary_key=True),
    Column("batch_id", String(200), primary_key=True),
    Column("custom_id", String(64), primary_key=True),
    Column("case_id", String(500), primary_key=True),
    Column("repeat", Integer, primary_key=True),
    Column("evaluator", String(200), primary_key=True),
    Column("cache_key", String(64), nullable=False,
           doc="the response cache's key of the request, which its answer is given under"),
)
"""Each request of a batch: its custom id, the judgement (case, repeat, evaluator) waiting for
it and its request's cache key. No request body and no credential is kept."""

Index("ix_run_tags_tag", run_tags.c.tag, run_tags.c.run_id)
Index("ix_human_labels_case", human_labels.c.run_id, human_labels.c.case_id,
      human_labels.c.repeat, human_labels.c.evaluator, human_labels.c.created_at)

# Browsing large runs: pages of cases by verdict, score or evaluator, runs by date and suite.
Index("ix_runs_created_at", runs.c.created_at)
Index("ix_runs_suite_created_at", runs.c.suite, runs.c.created_at)
Index("ix_case_results_run_verdict_score", case_results.c.run_id, case_results.c.verdict,
      case_results.c.score, case_results.c.case_id, case_results.c.repeat)
Index("ix_case_results_run_score", case_results.c.run_id, case_results.c.score,
      case_results.c.case_id, case_results.c.repeat)
Index("ix_executions_run_latency", executions.c.run_id, executions.c.latency_ms,
      executions.c.case_id, executions.c.repeat)
Index("ix_case_results_run_created_at", case_results.c.run_id, case_results.c.created_at)
Index("ix_scores_state", scores.c.run_id, scores.c.case_id, scores.c.repeat, scores.c.evaluator,
      scores.c.value, scores.c.error_code, scores.c.passed)
Index("ux_trace_spans_trace_span", trace_spans.c.trace_id, trace_spans.c.span_id,
      unique=True)
Index("ix_traces_last_received", traces.c.last_received)
Index("ix_traces_start_time", traces.c.start_time)
Index("ix_trace_decisions_watcher_time", trace_decisions.c.watcher,
      trace_decisions.c.decided_at)
Index("ix_scores_evaluator_state", scores.c.run_id, scores.c.evaluator, scores.c.case_id,
      scores.c.repeat, scores.c.value, scores.c.error_code, scores.c.passed)
