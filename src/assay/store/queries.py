"""Reading a run store a page at a time: runs by suite, target, status and date; a run's cases
by verdict, evaluator and text, sorted by score; one case; baselines.

:class:`~assay.store.runs.RunStore` reads whole runs (what reporters and resumes need); the
server and the HTML report browse runs of 100,000 cases, which only works when every query
reads one page through an index (see migration ``0003``) and never a whole run. Text given by a
user (a search, a case id) reaches SQL only as a bound parameter, with LIKE wildcards escaped.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field
from sqlalchemy import (
    Integer,
    Text,
    and_,
    bindparam,
    case,
    cast,
    delete,
    func,
    literal,
    literal_column,
    or_,
    select,
    tuple_,
)
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from assay._util import jsondata
from assay.errors import ConfigError, EvaluationError
from assay.store import schema
from assay.store.runs import (
    CASE_RESULT,
    CASE_ROWS,
    EXECUTION,
    SCORE,
    CaseTable,
    CaseUnreadable,
    RowsNotJSON,
    RunStore,
    Unreadable,
    _case_record,
    check_row,
    lease_deadline,
    not_number_sql,
    read_run,
    repeat_sql,
    run_columns,
    stored_model,
    unreadable_sql,
    with_tags,
)
from assay.store.search import check_query, fold, needle
from assay.types import numbers
from assay.types.execution import Execution
from assay.types.records import (
    CaseRecord,
    GitState,
    RunRecord,
    RunStatus,
    RunSummary,
    Verdict,
)
from assay.types.score import Score

PREVIEW_CHARS = 240
"""How much of a case's input and output a page of cases shows."""
BINS = 10
"""The bins of a score histogram (width 0.1; a 1.0 falls in the last)."""

VERDICT_ORDER = (Verdict.ERROR, Verdict.FAIL, Verdict.BORDERLINE, Verdict.SKIPPED, Verdict.PASS)
"""Problems first: the order of the ``problems`` sort."""


class CaseSort(StrEnum):
    """How a page of cases is ordered (``-`` is descending)."""

    PROBLEMS = "problems"
    SCORE = "score"
    SCORE_DESC = "-score"
    CASE = "case"
    FINISHED = "finished"
    FINISHED_DESC = "-finished"
    CASE_DESC = "-case"
    LATENCY = "latency"
    LATENCY_DESC = "-latency"


class EvaluatorState(StrEnum):
    """What one evaluator's score on a case was."""

    VALUE = "value"
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScoreCell(_View):
    """One evaluator's score on a case, as a page of cases shows it (the full score is on the
    case)."""

    state: str = Field(description="value, error, measured (a value off the 0-1 scale, "
                       "which is no skip) or skipped")
    value: float | None = None
    passed: bool | None = None
    error_code: str | None = None
    raw: int | float | str | None = Field(
        default=None, description="what a measurement measured (a text's first characters)")

    @property
    def shown(self) -> str:
        """The score as every surface shows it (:attr:`assay.types.Score.shown`)."""
        return numbers.outcome(self.value, self.error_code if self.state == "error" else None,
                               self.state == "skipped", self.state == "measured", self.raw)


class CaseRow(_View):
    """A case in a page of cases: enough to list, sort and pick it."""

    case_id: str
    repeat: int
    verdict: Verdict
    score: float | None = None
    target: str | None = None
    input_preview: str = ""
    expected_preview: str = ""
    output_preview: str = ""
    target_error: str | None = None
    latency_ms: float | None = None
    finished_at: float | None = None
    scores: dict[str, ScoreCell] = Field(default_factory=dict)
    failing_evaluator: str | None = Field(default=None, description=(
        "the evaluator that failed the case: the first in error, else the failed one with "
        "the lowest value"))
    rationale_preview: str = Field(default="", description=(
        "the failing evaluator's rationale (or its error's message), cut"))
    overall_score: float | None = Field(default=None, description=(
        "the case's score on its policy's own 0-100 scale, when the policy has one"))


def cases_shown(summary: RunSummary | None, stored_cases: int | None) -> str:
    """A run's cases as every list of runs shows them: its summary's count (a run with
    repeats: its cases, then its executions, ``5 (10 executions)``, never the executions
    counted as cases), else (a run
    stopped, or not yet finished, before its summary was written) the case results it has
    stored, so that what is known is never a blank. Its mean and gate are
    :data:`~assay.types.numbers.MISSING` then: a mean of the cases stored so far would read
    as the run's, and no gate was checked."""
    if summary is not None and summary.case_summary:  # repeats: its cases, and executions
        return (f"{numbers.count(len(summary.case_summary))} "
                f"({numbers.count_of(summary.cases, 'execution')})")
    if summary is not None:
        return numbers.count(summary.cases)
    return numbers.MISSING if stored_cases is None else f"{numbers.count(stored_cases)} stored"


def listed_cases(run: RunRecord, stored: Mapping[str, int]) -> dict[str, Any]:
    """What a list of runs says of a run's cases beside its record (``assay runs --json``),
    as :class:`RunItem` says it over the REST API: ``stored_cases`` (a run without a
    summary: the case results it stored, from ``stored``, by run id) and ``cases``."""
    kept = None if run.summary is not None else stored.get(run.id, 0)
    return {"stored_cases": kept, "cases": cases_shown(run.summary, kept)}


class RunItem(_View):
    """A run in a list of runs: its record without the config snapshot, plus what lists show."""

    id: str
    suite: str
    status: RunStatus
    created_at: float | None = Field(description=(
        "null only when the stored value cannot be read, which ``unreadable`` names"))
    finished_at: float | None = None
    target: str | None = None
    summary: RunSummary | None = None
    pass_rate: float | None = None
    is_baseline: bool = False
    unreadable: str | None = Field(default=None, description="why the run's stored row "
                                   "cannot be read; the other fields hold what could be")
    abandoned: bool = Field(default=False, description="its process stopped without "
                            "finishing it (status interrupted): resume or delete it")
    name: str | None = None
    tags: list[str] = Field(default_factory=list)
    notes: str | None = None
    description: str = Field(default="", description="the suite's description")
    suite_path: str | None = None
    git: GitState | None = None
    agent_version: str | None = None

    stored_cases: int | None = Field(default=None, description="for a run without a "
                                     "summary (one interrupted, or still running): how many "
                                     "case results it has stored")

    @computed_field(description="the cases column of a list of runs "  # type: ignore[prop-decorator]
                    "(:func:`cases_shown`)")
    @property
    def cases(self) -> str:
        return cases_shown(self.summary, self.stored_cases)

    @classmethod
    def of(cls, run: RunRecord, baselines: set[str],
           stored_cases: int | None = None) -> RunItem:
        summary = run.summary
        config = run.config
        return cls(id=run.id, suite=run.suite, status=run.status, created_at=run.created_at,
                   finished_at=run.finished_at, target=run_target(run), summary=summary,
                   stored_cases=None if summary is not None else stored_cases,
                   pass_rate=None if summary is None else summary.pass_rate,
                   is_baseline=run.id in baselines, unreadable=run.unreadable,
                   abandoned=run.abandoned, name=run.name, tags=run.tags, notes=run.notes,
                   description=config.description, suite_path=config.suite_path,
                   git=config.git, agent_version=config.agent_version)


class Histograms(_View):
    """Score distributions of a run in ten bins of width 0.1 (a 1.0 falls in the last), with
    errors, skips and measurements counted beside them, never in a bin, as a run's summary
    counts them (:class:`~assay.types.records.EvaluatorTally`)."""

    bins: int = 10
    bin_labels: list[str] = Field(default_factory=list, description="each bin's range, "
                                  "shown (``0.100 to 0.200``)")
    cases: list[int]
    case_errors: int = 0
    evaluators: dict[str, list[int]] = Field(default_factory=dict)
    evaluator_errors: dict[str, int] = Field(default_factory=dict)
    evaluator_skips: dict[str, int] = Field(default_factory=dict, description="not "
                                            "applicable (measurements not counted)")
    evaluator_measurements: dict[str, int] = Field(
        default_factory=dict, description="measurements: values off the 0-1 scale, in no bin")


@dataclass
class RunFilter:
    suite: str | None = None
    target: str | None = None
    status: RunStatus | None = None
    since: float | None = None
    until: float | None = None
    tag: str | None = None
    branch: str | None = None
    text: str | None = None
    """Text in the run's id, name, suite or notes (in any case, as :func:`search.needle`
    folds it; a control character is a ConfigError here, before any query)."""

    def __post_init__(self) -> None:
        if self.text:
            check_query(self.text)


@dataclass
class CaseFilter:
    """Which cases of a run to list; a search ``text`` with a control character is a
    ConfigError here, before any query (see :func:`search.check_query`)."""

    verdicts: Sequence[Verdict] = ()
    with_evaluator_errors: bool = False
    """With ``verdicts``: also a case one of whose evaluators could not score it, whatever its
    verdict, as :attr:`~assay.types.records.CaseRecord.failed_or_errored` counts it (a pass
    beside an evaluator's error is not a pass)."""
    evaluator: str | None = None
    evaluator_state: EvaluatorState | None = None
    text: str | None = None
    score_bin: int | None = None
    """A bin of :func:`histograms` (0 to 9): the cases whose score (or, with ``evaluator``,
    whose value from it) falls in it, by the rule that counts the bins."""

    def __post_init__(self) -> None:
        if self.text:
            check_query(self.text)
        if self.score_bin is not None and not 0 <= self.score_bin < BINS:
            raise ConfigError(f"score bin {self.score_bin}: expected 0 to {BINS - 1}")


def run_target(run: RunRecord) -> str | None:
    """The target a run ran (:attr:`~assay.types.records.RunSnapshot.target_name`)."""
    return run.config.target_name


def _config_field(dialect: str, *keys: str) -> Any:
    """The first of the config JSON's ``keys`` that is set, as SQL text (NULL for a config
    that is not JSON, which SQLite would otherwise refuse to read at all)."""
    config = schema.runs.c.config
    value = func.coalesce(*(config[key].as_string() for key in keys)) if len(keys) > 1 \
        else config[keys[0]].as_string()
    if dialect == "sqlite":
        return case((func.json_valid(config) == 1, value), else_=None)
    return value


def _config_path(dialect: str, *path: str) -> Any:
    """A value at ``path`` in the config JSON, as SQL text (NULL for a config that is not
    JSON)."""
    config = schema.runs.c.config
    value = config[path].as_string()
    if dialect == "sqlite":
        return case((func.json_valid(config) == 1, value), else_=None)
    return value


def _target_column(dialect: str) -> Any:
    """The run's target as SQL, by :attr:`~assay.types.records.RunSnapshot.target_name`'s
    rule: ``target_override``, else ``target``, else ``python_target``."""
    return _config_field(dialect, "target_override", "target", "python_target")


def _status_condition(status: RunStatus, now: float | None) -> ColumnElement[bool]:
    """Runs whose status reads as ``status`` (see :func:`~assay.store.runs.read_run`): a
    running run whose lease ran out is interrupted, not running."""
    runs = schema.runs
    if now is None or status not in (RunStatus.RUNNING, RunStatus.INTERRUPTED):
        return runs.c.status == status.value
    alive = lease_deadline() >= now
    if status is RunStatus.RUNNING:
        return and_(runs.c.status == RunStatus.RUNNING.value, alive)
    return or_(runs.c.status == RunStatus.INTERRUPTED.value,
               and_(runs.c.status == RunStatus.RUNNING.value, ~alive))


# -- runs --------------------------------------------------------------------------------


def list_runs(store: RunStore, where: RunFilter, limit: int = 50,
              offset: int = 0) -> tuple[list[RunItem], int]:
    """A page of runs, newest first, and how many match; a run whose row cannot be read is
    listed with ``unreadable`` saying why."""
    runs = schema.runs
    now = store.clock()
    conditions: list[ColumnElement[bool]] = []
    if where.suite is not None:
        conditions.append(runs.c.suite == where.suite)
    if where.status is not None:
        conditions.append(_status_condition(where.status, now))
    if where.since is not None or where.until is not None:
        # a start that is not a number (stored_number's rule) is not known to be in range
        conditions.append(~not_number_sql(runs.c.created_at, store.dialect))
    if where.since is not None:
        conditions.append(runs.c.created_at >= where.since)
    if where.until is not None:
        conditions.append(runs.c.created_at < where.until)
    if where.target is not None:
        conditions.append(_target_column(store.dialect) == where.target)
    if where.tag is not None:
        tags = schema.run_tags
        conditions.append(runs.c.id.in_(select(tags.c.run_id).where(tags.c.tag == where.tag)))
    if where.branch is not None:
        conditions.append(_config_path(store.dialect, "git", "branch") == where.branch)
    newest = (runs.c.created_at.desc(), runs.c.id.desc())
    with store.transaction() as conn:
        if where.text:  # the page's runs picked from the matches, which are counted here
            matches = _runs_holding(conn, conditions, where.text)
            total = len(matches)
            page = select(*run_columns()).where(runs.c.id.in_(matches[offset:offset + limit]))
        else:
            total = conn.execute(select(func.count()).select_from(runs).where(
                and_(true_(), *conditions))).scalar_one()
            page = select(*run_columns()).where(and_(true_(), *conditions)).offset(offset)
        rows = with_tags(conn, conn.execute(page.order_by(*newest).limit(limit)).fetchall())
        baselines = {r.run_id for r in conn.execute(select(schema.baselines.c.run_id))}
    found = [read_run(r, now) for r in rows]
    stored = store.stored_case_counts([r.id for r in found if r.summary is None])
    return [RunItem.of(r, baselines, stored.get(r.id, 0)) for r in found], int(total)


def _runs_holding(conn: Connection, conditions: list[ColumnElement[bool]],
                  text: str) -> list[str]:
    """The ids of the runs meeting ``conditions`` whose id, name, suite or notes hold
    ``text``, newest first. Matched here as :func:`search.fold` folds both, not by SQL's
    ``lower()``: neither database folds as Unicode does (``STRASSE`` is ``Straße``), and a
    store holds far fewer runs than cases, so reading their short columns costs little."""
    runs = schema.runs
    found = needle(text)
    rows = conn.execute(select(runs.c.id, runs.c.name, runs.c.suite, runs.c.notes).where(
        and_(true_(), *conditions)).order_by(runs.c.created_at.desc(), runs.c.id.desc()))
    return [row.id for row in rows if any(
        isinstance(value, str) and found in fold(value) for value in row)]


def true_() -> ColumnElement[bool]:
    return literal(True).is_(True)


def find_run(store: RunStore, run_id: str) -> RunRecord | None:
    """A run by its exact id (no prefix matching: an API names runs exactly), or None; a row
    that cannot be read is a record whose ``unreadable`` says why."""
    with store.transaction() as conn:
        row = conn.execute(select(*run_columns()).where(schema.runs.c.id == run_id)).first()
        found = None if row is None else with_tags(conn, [row])[0]
    return None if found is None else read_run(found, store.clock())


class RunInUse(EvaluationError):
    """A run that cannot be deleted now: it is running, or an unfinished rescore needs it."""

    def __init__(self, message: str) -> None:
        super().__init__("run_in_use", message)


def deletable(store: RunStore, run_id: str) -> RunRecord | None:
    """The run ``run_id`` if it may be deleted now, None when there is no such run; raises
    :class:`RunInUse` when it may not (see :func:`delete_run`)."""
    with store.transaction() as conn:
        return _deletable(conn, store, run_id)


def _deletable(conn: Connection, store: RunStore, run_id: str) -> RunRecord | None:
    now = store.clock()
    runs = schema.runs
    row = conn.execute(select(*run_columns()).where(runs.c.id == run_id)).first()
    if row is None:
        return None
    run = read_run(row._mapping, now)
    if run.status is RunStatus.RUNNING:
        raise RunInUse(f"run {run.id} is running; stop it (Ctrl-C where it runs, or "
                       "cancel it in the server that started it) or let it finish before "
                       "deleting it")
    waiting = [read_run(r._mapping, now) for r in conn.execute(select(*run_columns()).where(
        _config_field(store.dialect, "rescored_from") == run.id,
        runs.c.status != RunStatus.COMPLETED.value))]
    if waiting:
        named = ", ".join(f"{r.id} ({r.status.value})" for r in waiting[:5])
        raise RunInUse(f"run {run.id} holds the executions that its rescore(s) {named} "
                       "resume from; resume or delete them first")
    return run


def delete_run(store: RunStore, run_id: str) -> bool:
    """Delete a run and everything stored for it; False when there was no such run.

    Refused (:class:`RunInUse`) while the run is running (its process renews its lease), and
    while a rescore of it that did not complete needs its executions to resume. A run whose
    process died (its lease ran out) reads as interrupted and can be deleted; so can a run
    whose row cannot be read. The batches a waiting run left at its providers are not
    cancelled here (the store makes no provider call): :func:`assay.run.delete.delete_run`
    does that first, and is what the CLI and the REST API call."""
    runs = schema.runs
    with store.transaction() as conn:
        if _deletable(conn, store, run_id) is None:
            return False
        for table in (schema.scores, schema.executions, schema.case_results,
                      schema.case_search, schema.run_tags, schema.human_labels,
                      schema.judge_batches, schema.judge_batch_requests):
            conn.execute(delete(table).where(table.c.run_id == run_id))
        conn.execute(delete(schema.baselines).where(schema.baselines.c.run_id == run_id))
        gone = conn.execute(delete(runs).where(runs.c.id == run_id)).rowcount
    return bool(gone)


# -- cases -------------------------------------------------------------------------------


def _case_conditions(run_id: str, where: CaseFilter) -> list[ColumnElement[bool]]:
    cr = schema.case_results
    conditions: list[ColumnElement[bool]] = [cr.c.run_id == run_id]
    if where.verdicts:
        kept: ColumnElement[bool] = cr.c.verdict.in_([v.value for v in where.verdicts])
        if where.with_evaluator_errors:
            sc = schema.scores
            kept = or_(kept, tuple_(cr.c.case_id, cr.c.repeat).in_(
                select(sc.c.case_id, sc.c.repeat).where(sc.c.run_id == run_id,
                                                        sc.c.error_code.is_not(None))))
        conditions.append(kept)
    if where.evaluator is not None or where.evaluator_state is not None:
        sc = schema.scores
        match: list[ColumnElement[bool]] = [sc.c.run_id == run_id]
        if where.evaluator is not None:  # else: any evaluator in that state
            match.append(sc.c.evaluator == where.evaluator)
        state = where.evaluator_state
        if state is EvaluatorState.VALUE:
            match.append(sc.c.value.is_not(None))
        elif state is EvaluatorState.ERROR:
            match.append(sc.c.error_code.is_not(None))
        elif state is EvaluatorState.SKIPPED:  # a measurement is no skip
            match += [sc.c.value.is_(None), sc.c.error_code.is_(None),
                      func.coalesce(measurement_sql(sc.c.error_code, sc.c.score), False)
                      .is_(False)]
        elif state in (EvaluatorState.PASSED, EvaluatorState.FAILED):
            match += [sc.c.value.is_not(None),
                      sc.c.passed.is_(state is EvaluatorState.PASSED)]
        # An uncorrelated IN: the databases read the matching scores once (from the index
        # that covers them) instead of probing the scores for every case.
        conditions.append(tuple_(cr.c.case_id, cr.c.repeat).in_(
            select(sc.c.case_id, sc.c.repeat).where(*match)))
    if where.score_bin is not None:
        if where.evaluator is not None:
            sc = schema.scores
            conditions.append(tuple_(cr.c.case_id, cr.c.repeat).in_(
                select(sc.c.case_id, sc.c.repeat).where(
                    sc.c.run_id == run_id, sc.c.evaluator == where.evaluator,
                    sc.c.value.is_not(None), bin_of(sc.c.value) == where.score_bin)))
        else:
            conditions += [cr.c.score.is_not(None), bin_of(cr.c.score) == where.score_bin]
    if where.text:
        # As for an evaluator: the matching keys are read once from the narrow search table,
        # never from the cases' JSON.
        cs = schema.case_search
        conditions.append(tuple_(cr.c.case_id, cr.c.repeat).in_(
            select(cs.c.case_id, cs.c.repeat).where(
                cs.c.run_id == run_id, cs.c.text.contains(needle(where.text), autoescape=True))))
    return conditions


@dataclass
class _Segment:
    """A part of a sort that one index reads in order: its rows, and their order (each
    column with whether it descends). ``nullable``: the first column may be NULL in it, and
    the database puts those rows first or last (see :func:`_without_nulls`)."""

    key: Any
    condition: ColumnElement[bool] | None
    columns: list[tuple[Any, bool]]
    nullable: bool = False

    @property
    def order(self) -> list[Any]:
        return [c.desc() if descending else c for c, descending in self.columns]

    def where(self, conditions: list[ColumnElement[bool]]) -> list[ColumnElement[bool]]:
        return conditions if self.condition is None else [*conditions, self.condition]


def _ordered(columns: Sequence[Any], descending: bool = False) -> list[tuple[Any, bool]]:
    return [(c, descending) for c in columns]


def _segments(sort: CaseSort, where: CaseFilter) -> tuple[Any, list[_Segment]]:
    """A sort as consecutive index-ordered segments, and the column whose value is each
    row's segment key (None: each segment is counted on its own). ``problems`` is one segment per verdict (errors,
    failures, borderline, skipped, passes), each by score; a score sort is the scored cases by
    score, then the rest by id. So a page anywhere in a run is read from an index, never by
    sorting the whole run, and one grouped count gives every segment's size."""
    cr = schema.case_results
    key = [cr.c.case_id, cr.c.repeat]
    if sort is CaseSort.PROBLEMS:
        wanted = [v for v in VERDICT_ORDER if not where.verdicts or v in where.verdicts
                  or where.with_evaluator_errors]  # a pass with an error is kept, last
        # A text search scans the search table: once for all verdicts, not once for each.
        return cr.c.verdict if where.text else None, [
            _Segment(v.value, cr.c.verdict == v.value, _ordered([cr.c.score, *key]),
                     nullable=True) for v in wanted]
    if sort is CaseSort.SCORE:
        return None, [_Segment(0, cr.c.score.is_not(None), _ordered([cr.c.score, *key])),
                      _Segment(1, cr.c.score.is_(None), _ordered(key))]
    if sort is CaseSort.SCORE_DESC:
        return None, [_Segment(0, cr.c.score.is_not(None), _ordered([cr.c.score, *key], True)),
                      _Segment(1, cr.c.score.is_(None), _ordered(key))]
    if sort is CaseSort.FINISHED:
        return None, [_Segment(0, None, _ordered([cr.c.created_at, *key]))]
    if sort is CaseSort.FINISHED_DESC:
        return None, [_Segment(0, None, _ordered([cr.c.created_at, *key], True))]
    if sort is CaseSort.CASE_DESC:
        return None, [_Segment(0, None, _ordered(key, True))]
    return None, [_Segment(0, None, _ordered(key))]


CountCache = dict[tuple[Any, ...], dict[Any, int]]
"""Segment sizes by (run, filter, sort), for a caller that knows the run can no longer change
(a finished run)."""


def _sources(run_id: str, sort: CaseSort, where: CaseFilter) -> tuple[Any, list[
        tuple[Any, _Segment]]]:
    """:func:`_segments`, each with the rows it reads from (the run's cases, or those joined
    to the value a sort is by): what every reader of a page of cases pages through. A sort by
    a value of another table (an evaluator's value, the agent's latency) is its cases with
    the value, by it (then by key, ascending), then those without, by key."""
    cr = schema.case_results
    if where.evaluator is not None and sort in (CaseSort.SCORE, CaseSort.SCORE_DESC):
        sc = schema.scores
        joined = cr.outerjoin(sc, and_(sc.c.run_id == cr.c.run_id,
                                       sc.c.case_id == cr.c.case_id,
                                       sc.c.repeat == cr.c.repeat,
                                       sc.c.evaluator == where.evaluator))
        key = _ordered([cr.c.case_id, cr.c.repeat])
        return None, [
            (joined, _Segment(0, sc.c.value.is_not(None),
                              [(sc.c.value, sort is CaseSort.SCORE_DESC), *key])),
            (joined, _Segment(1, sc.c.value.is_(None), key))]
    if sort in (CaseSort.LATENCY, CaseSort.LATENCY_DESC):
        return None, _by_latency(run_id, sort is CaseSort.LATENCY_DESC)
    group, segments = _segments(sort, where)
    return group, [(cr, segment) for segment in segments]


def _by_latency(run_id: str, descending: bool) -> list[tuple[Any, _Segment]]:
    """A sort by the agent's latency: the cases whose execution holds one, by it, read in
    order from ``ix_executions_run_latency`` (the column, migration 0014, never the JSON),
    then the others (no execution, or none measured), by key."""
    cr, ex = schema.case_results, schema.executions
    on = and_(ex.c.run_id == cr.c.run_id, ex.c.case_id == cr.c.case_id,
              ex.c.repeat == cr.c.repeat)
    # The executions' own key orders the timed cases (the same values as the cases' key
    # through the join), so that the index gives the order with no sort.
    timed = _Segment(0, and_(ex.c.run_id == run_id, ex.c.latency_ms.is_not(None)),
                     [(ex.c.latency_ms, descending), *_ordered([ex.c.case_id, ex.c.repeat])])
    untimed = _Segment(1, ex.c.latency_ms.is_(None), _ordered([cr.c.case_id, cr.c.repeat]))
    return [(cr.join(ex, on), timed), (cr.outerjoin(ex, on), untimed)]


def _page_keys(conn: Any, conditions: list[ColumnElement[bool]], group: Any,
               parts: list[tuple[Any, _Segment]], limit: int, offset: int,
               counts: dict[Any, int] | None) -> tuple[list[tuple[str, int]], int,
                                                       dict[Any, int]]:
    """The (case id, repeat) keys of one page of ``parts`` (:func:`_sources`), how many rows
    match in all, and the segment sizes (to be cached by a caller that may)."""
    cr = schema.case_results
    if counts is None:
        if group is None:  # each segment counted on its own
            counts = {}
            for source, segment in parts:
                counts[segment.key] = int(conn.execute(select(func.count()).select_from(
                    source).where(*segment.where(conditions))).scalar_one())
        else:  # a column that the index is in order of: one pass, no sorting
            counts = {k: int(n) for k, n in conn.execute(
                select(group, func.count()).select_from(cr).where(*conditions)
                .group_by(group))}
    keys: list[tuple[str, int]] = []
    total = 0
    for source, segment in parts:
        count = counts.get(segment.key, 0)
        start = max(0, offset - total)
        wanted = limit - len(keys)
        if wanted > 0 and start < count:
            keys += [(r.case_id, r.repeat) for r in conn.execute(
                select(cr.c.case_id, cr.c.repeat).select_from(source)
                .where(*segment.where(conditions))
                .order_by(*segment.order).limit(wanted).offset(start))]
        total += count
    return keys, total, counts


def case_page(store: RunStore, run_id: str, where: CaseFilter,
              sort: CaseSort = CaseSort.PROBLEMS, limit: int = 50,
              offset: int = 0, cache: CountCache | None = None,
              preview: int = PREVIEW_CHARS) -> tuple[list[CaseRow], int]:
    """A page of a run's cases and how many match. With an evaluator named in ``where``, the
    score sorts are by that evaluator's value. ``cache`` keeps the counts of a run that can no
    longer change between calls.

    Two steps: the page's keys from the indexes (see :func:`_segments`), then what the page
    shows for those keys only (a huge output is cut to a preview of ``preview`` characters
    in the database).

    A row that cannot be read is :class:`CaseUnreadable` naming its case; one whose text is
    not JSON stops the database's JSON functions first, and is then looked for
    (:func:`check_cases`) to be named."""
    try:
        return _case_page(store, run_id, where, sort, limit, offset, cache, preview)
    except RowsNotJSON:
        check_cases(store, run_id, where)
        raise


def _case_page(store: RunStore, run_id: str, where: CaseFilter, sort: CaseSort, limit: int,
               offset: int, cache: CountCache | None,
               preview: int) -> tuple[list[CaseRow], int]:
    store.flush()
    conditions = _case_conditions(run_id, where)
    group, parts = _sources(run_id, sort, where)
    with store.transaction() as conn:
        cache_key = (run_id, repr(where), sort.value)
        found = None if cache is None else cache.get(cache_key)
        keys, total, counts = _page_keys(conn, conditions, group, parts, limit, offset,
                                         found)
        if cache is not None and found is None:
            cache[cache_key] = counts
            while len(cache) > 1024:
                cache.pop(next(iter(cache)))
        return _page_rows(conn, run_id, keys, preview), total


def case_pages(store: RunStore, run_id: str, where: CaseFilter,
               sort: CaseSort = CaseSort.PROBLEMS, limit: int = 500,
               preview: int = PREVIEW_CHARS) -> Iterator[list[CaseRow]]:
    """Every case :func:`case_page` would list (the same rows, in the same order), a page of
    ``limit`` at a time, for a reader of them all (an export).

    Each page is read after the last one's key (keyset paging: ``WHERE (value, case id,
    repeat) > last ORDER BY ... LIMIT n``), from where the index left off, instead of by an
    offset, which reads and drops every row before it: a whole run costs in proportion to its
    size, not to its square. A row that cannot be read is :class:`CaseUnreadable`, as in
    :func:`case_page` (a reader that must not stop halfway asks :func:`check_cases` first)."""
    try:
        yield from _case_pages(store, run_id, where, sort, limit, preview)
    except RowsNotJSON:
        check_cases(store, run_id, where)
        raise


def _case_pages(store: RunStore, run_id: str, where: CaseFilter, sort: CaseSort, limit: int,
                preview: int) -> Iterator[list[CaseRow]]:
    cr = schema.case_results
    conditions = _case_conditions(run_id, where)
    for source, segment in _keyset_segments(run_id, sort, where, store.dialect):
        last: tuple[Any, ...] | None = None
        while True:
            store.flush()
            query = select(cr.c.case_id, cr.c.repeat, *(
                c.label(f"order_{i}") for i, (c, _) in enumerate(segment.columns))) \
                .select_from(source).where(*segment.where(conditions))
            with store.transaction() as conn:
                found = conn.execute(_after(query, segment, last).order_by(*segment.order)
                                     .limit(limit)).fetchall()
                page = _page_rows(conn, run_id, [(r[0], r[1]) for r in found], preview)
            if page:
                yield page
            if len(found) < limit:
                break
            last = tuple(found[-1][2:])


def _keyset_segments(run_id: str, sort: CaseSort, where: CaseFilter,
                     dialect: str) -> list[tuple[Any, _Segment]]:
    """``sort`` as :func:`case_page` orders it (:func:`_sources`), in segments whose every
    order column holds a value (what a keyset needs): a nullable segment is split where the
    database puts its NULLs (:func:`_without_nulls`)."""
    return [(source, part) for source, segment in _sources(run_id, sort, where)[1]
            for part in _without_nulls(segment, dialect)]


def _without_nulls(segment: _Segment, dialect: str) -> list[_Segment]:
    """A segment whose first order column may be NULL, as two without: its NULL rows (by the
    other columns) and the rest, in the order the database sorts them: SQLite puts NULL
    before every value, PostgreSQL after."""
    if not segment.nullable:
        return [segment]
    (column, descending), rest = segment.columns[0], segment.columns[1:]
    condition = [] if segment.condition is None else [segment.condition]
    nulls = _Segment(segment.key, and_(*condition, column.is_(None)), rest)
    values = _Segment(segment.key, and_(*condition, column.is_not(None)), segment.columns)
    return [nulls, values] if (dialect == "sqlite") != descending else [values, nulls]


def _after(query: Any, segment: _Segment, last: tuple[Any, ...] | None) -> Any:
    """``query`` kept to the rows of ``segment`` after ``last`` (the order values of the
    previous page's last row; None: from the first). One direction throughout is one row
    comparison, which an index seeks to; mixed directions are spelt out."""
    if last is None:
        return query
    columns = [c for c, _ in segment.columns]
    directions = {descending for _, descending in segment.columns}
    if len(directions) == 1:
        row, bound = tuple_(*columns), tuple_(*(literal(v) for v in last))
        return query.where(row < bound if directions.pop() else row > bound)
    beyond = []
    for i, (column, descending) in enumerate(segment.columns):
        ties = [c == v for c, v in zip(columns[:i], last[:i], strict=False)]
        beyond.append(and_(*ties, column < last[i] if descending else column > last[i]))
    # Every row after ``last`` is at or beyond its first value: said on its own too, it is
    # a range the index seeks to, where the alternatives alone would scan from the start.
    first, descending = segment.columns[0]
    return query.where(first <= last[0] if descending else first >= last[0], or_(*beyond))


def _page_rows(conn: Connection, run_id: str, keys: list[tuple[str, int]],
               preview: int) -> list[CaseRow]:
    """What a page of cases shows of the cases ``keys``, in their order, read for those keys
    only (a huge output is cut to a preview of ``preview`` characters in the database)."""
    cr, ex, sc = schema.case_results, schema.executions, schema.scores
    ids = sorted({case_id for case_id, _ in keys})
    rows: dict[tuple[str, int], Any] = {}
    executions: dict[tuple[str, int], Any] = {}
    cells: dict[tuple[str, int], dict[str, ScoreCell]] = {}
    reasons: dict[tuple[str, int, str], str] = {}
    if ids:
        for found_row in conn.execute(select(
                cr.c.case_id, cr.c.repeat, cr.c.verdict, cr.c.score, cr.c.created_at,
                cr.c.row["target"].as_string().label("target"),
                cr.c.row["overall_score"].label("overall_score"),
                _preview(cr.c.row["case"]["input"], preview).label("input_preview"),
                _preview(cr.c.row["case"]["expected_output"], preview).label(
                    "expected_preview")).where(
                cr.c.run_id == run_id, cr.c.case_id.in_(ids))):
            rows[(found_row.case_id, found_row.repeat)] = _read(CASE_RESULT, run_id,
                                                                found_row)
        for e in conn.execute(select(
                ex.c.case_id, ex.c.repeat,
                _preview(ex.c.execution["output"], preview).label("output"),
                ex.c.execution["error"].as_string().label("error"),
                ex.c.execution["latency_ms"].label("latency_ms")).where(
                ex.c.run_id == run_id, ex.c.case_id.in_(ids))):
            executions[(e.case_id, e.repeat)] = _read(EXECUTION, run_id, e)
        for s in conn.execute(select(
                sc.c.case_id, sc.c.repeat, sc.c.evaluator, sc.c.value, sc.c.error_code,
                sc.c.passed, _preview(sc.c.score["rationale"], preview).label("rationale"),
                _preview(sc.c.score["error"]["message"], preview).label("message"),
                measurement_sql(sc.c.error_code, sc.c.score).label("measured"),
                _preview(sc.c.score["raw"], numbers.MEASURED_CHARS).label("raw")).where(
                sc.c.run_id == run_id, sc.c.case_id.in_(ids))):
            _read(SCORE, run_id, s)
            state = _cell_state(s.value, s.error_code, bool(s.measured))
            cells.setdefault((s.case_id, s.repeat), {})[s.evaluator] = ScoreCell(
                state=state, value=s.value, passed=s.passed if state == "value" else None,
                error_code=s.error_code,
                raw=_measured_raw(s.raw) if state == "measured" else None)
            reasons[(s.case_id, s.repeat, s.evaluator)] = _shorten(
                s.message if state == "error" else s.rationale, preview)
    page = []
    for key in keys:
        r = rows.get(key)
        if r is None:  # deleted between the two steps
            continue
        found = executions.get(key)
        verdict = _verdict(r.verdict)
        scored = cells.get(key, {})
        failing = None if verdict is Verdict.PASS else failing_evaluator(scored)
        try:
            page.append(CaseRow(
                case_id=r.case_id, repeat=r.repeat, verdict=verdict, score=r.score,
                target=r.target, input_preview=_shorten(r.input_preview, preview),
                expected_preview=_shorten(r.expected_preview, preview),
                output_preview=_shorten(found.output if found is not None else None, preview),
                target_error=None if found is None else (_shorten(found.error, 500) or None),
                latency_ms=None if found is None else found.latency_ms,
                finished_at=r.created_at, scores=scored, failing_evaluator=failing,
                rationale_preview="" if failing is None else reasons.get((*key, failing), ""),
                overall_score=r.overall_score))
        except ValueError as exc:  # a field of another type than assay writes
            raise CaseUnreadable(run_id, r.case_id, r.repeat, exc) from None
    return page


def _read(part: CaseTable, run_id: str, row: Any) -> Any:
    """A row of a page as read, or :class:`CaseUnreadable` naming its case when it holds
    what cannot be read (:func:`~assay.store.runs.check_row`)."""
    try:
        check_row(part, row._mapping)
    except ValueError as exc:
        raise CaseUnreadable(run_id, row.case_id, row.repeat, exc) from None
    return row


def check_cases(store: RunStore, run_id: str, where: CaseFilter) -> None:
    """:class:`CaseUnreadable` naming the first case kept by ``where`` one of whose rows
    cannot be read (:func:`~assay.store.runs.check_row`), looked for in the database
    (:func:`~assay.store.runs.unreadable_sql`) without reading the run: what a reader that
    cannot stop halfway (an export, whose file is under way) asks before it starts.

    A case's execution and scores are looked for by case id alone, so that one whose
    ``repeat`` is damaged (and would match no case) is found too."""
    store.flush()
    cr = schema.case_results
    conditions = _case_conditions(run_id, where)
    filtered = len(conditions) > 1
    with store.transaction() as conn:
        for part in CASE_ROWS:
            table = schema.metadata.tables[part.table]
            scope = conditions if table is cr else [table.c.run_id == run_id]
            if filtered and table is not cr:
                scope.append(table.c.case_id.in_(select(cr.c.case_id).where(*conditions)))
            found = conn.execute(select(
                table.c.case_id, *(table.c[name] for name in part.numbers),
                table.c[part.json]).where(*scope, unreadable_sql(part, store.dialect))
                .limit(1)).first()
            if found is not None:
                _read(part, run_id, found)


def failing_evaluator(cells: dict[str, ScoreCell]) -> str | None:
    """The evaluator to blame for a case that did not pass: the first (by name) in error,
    else the failed one with the lowest value, else the lowest value; None without scores."""
    ordered = sorted(cells.items())
    for name, cell in ordered:
        if cell.state == "error":
            return name
    valued = [(cell.value, cell.passed is not False, name) for name, cell in ordered
              if cell.value is not None]
    if not valued:
        return None
    return min(valued, key=lambda v: (v[1], v[0]))[2]


def _cell_state(value: float | None, error_code: str | None, measured: bool) -> str:
    """A stored score's state as a page of cases shows it: a value, an error, a measurement
    (counted apart from skips, as a run's summary counts it) or a skip."""
    if value is not None:
        return "value"
    if error_code is not None:
        return "error"
    return "measured" if measured else "skipped"


def _measured_raw(text: str | None) -> int | float | str | None:
    """A measurement's value from the start of its JSON text: the number or text it is, or
    the text as cut when it was cut."""
    if not text or text == "null":
        return None
    try:
        found = jsondata.loads(text)
    except ValueError:
        return _shorten(text, numbers.MEASURED_CHARS)
    return found if isinstance(found, (int, float, str)) else _shorten(text,
                                                                        numbers.MEASURED_CHARS)


def _preview(value: Any, chars: int = PREVIEW_CHARS) -> Any:
    """The first characters of a JSON value's text, cut in the database (a huge output is
    never read whole to show a line of it)."""
    return func.substr(cast(value, Text), 1, chars * 4)


def _shorten(text: str | None, limit: int = PREVIEW_CHARS) -> str:
    if not text or text == "null":
        return ""
    if text.startswith('"') and text.endswith('"') and len(text) < limit * 4:

        try:
            decoded = jsondata.loads(text)
        except ValueError:
            decoded = None
        if isinstance(decoded, str):
            text = decoded
    elif text.startswith('"'):
        text = text[1:]  # a long string cut short: show it without its opening quote
    return text if len(text) <= limit else text[:limit] + "…"


def _verdict(value: str) -> Verdict:
    try:
        return Verdict(value)
    except ValueError:
        return Verdict.ERROR


def case_record(store: RunStore, run_id: str, case_id: str, repeat: int) -> CaseRecord | None:
    """One case of a run with everything stored for it, or None; :class:`CaseUnreadable`
    when a row of it cannot be read (its other rows, and the run's other cases, still can)."""
    store.flush()
    try:
        return _read_case(store, run_id, case_id, repeat)
    except ValueError as exc:  # not JSON, or not the record it should be
        raise CaseUnreadable(run_id, case_id, repeat, exc) from None


def _read_case(store: RunStore, run_id: str, case_id: str, repeat: int) -> CaseRecord | None:
    rows_of, executions_of, scores_of = _case_statements(store.dialect)
    key = {"run_id": run_id, "case_id": case_id, "repeat": repeat}
    with store.transaction() as conn:
        rows = [dict(r._mapping) for r in conn.execute(rows_of, key)]
        if not rows:
            return None
        stored = [stored_model(Execution, e._mapping) for e in conn.execute(executions_of, key)]
        scores = {s.evaluator: stored_model(Score, s._mapping)
                  for s in conn.execute(scores_of, key)}
    records = [_case_record(run_id, row, stored[0] if stored else None, scores)
               for row in rows]
    return records[0]


@functools.cache
def _case_statements(dialect: str) -> tuple[Any, Any, Any]:
    """The statements that read one case's result, execution and scores (built once: a
    case is read on every click). A row of the case whose repeat is damaged is read with
    it (:func:`~assay.store.runs.repeat_sql`), to be named instead of missed."""
    cr, ex, sc = schema.case_results, schema.executions, schema.scores

    def key(table: Any) -> tuple[Any, ...]:
        return (table.c.run_id == bindparam("run_id"), table.c.case_id == bindparam("case_id"),
                repeat_sql(table, bindparam("repeat"), dialect))

    return (select(cr).where(*key(cr)), select(ex.c.repeat, ex.c.execution).where(*key(ex)),
            select(sc.c.repeat, sc.c.evaluator, sc.c.value, sc.c.score).where(*key(sc)))


def metric_score_rows(store: RunStore, run_id: str) -> list[list[dict[str, Any]]]:
    """Every case's multi-metric verdict (its score's ``details.metric_scores``), read alone
    from the database: what a run's per-metric means are computed from."""
    store.flush()
    sc = schema.scores
    found = sc.c.score["details"]["metric_scores"]
    with store.transaction() as conn:
        rows = conn.execute(select(cast(found, Text)).where(
            sc.c.run_id == run_id, sc.c.value.is_not(None))).fetchall()

    decoded = []
    for (text,) in rows:
        if text and text != "null":
            value = jsondata.loads(text)
            if isinstance(value, list):
                decoded.append(value)
    return decoded


def bin_of(column: Any, bins: int = BINS) -> Any:
    """The histogram bin of a 0-1 value, as SQL: the one rule the histograms count by and
    a bin's filter keeps by (grouped by position: its parameters differ each time)."""
    return case((column >= 1.0, bins - 1), else_=cast(column * bins, Integer))


def _bin_or_not(column: Any, bins: int, dialect: str) -> Any:
    """:func:`bin_of` a value, or -1 for one that is not a number (SQLite lets a number
    column hold text, which would fall in the last bin): counted as what it is instead."""
    return case((not_number_sql(column, dialect), -1), else_=bin_of(column, bins))


def histograms(store: RunStore, run_id: str, bins: int = BINS) -> Histograms:
    """The run's case scores and each evaluator's values in ``bins`` equal bins over [0, 1];
    :class:`CaseUnreadable` naming a case whose score or value is not a number."""
    store.flush()
    try:
        return _histograms(store, run_id, bins)
    except _NotANumber:
        check_cases(store, run_id, CaseFilter())  # names the case
        raise Unreadable(f"a score of run {run_id} is not a number") from None


class _NotANumber(Exception):
    """A histogram met a value that is not a number (:func:`check_cases` names its case)."""


def _histograms(store: RunStore, run_id: str, bins: int) -> Histograms:
    cr, sc = schema.case_results, schema.scores
    edges = [numbers.score(i / bins) for i in range(bins + 1)]
    result = Histograms(bins=bins, cases=[0] * bins,
                        bin_labels=[f"{edges[i]} to {edges[i + 1]}" for i in range(bins)])
    with store.transaction() as conn:
        for b, n in conn.execute(select(_bin_or_not(cr.c.score, bins, store.dialect),
                                        func.count()).where(
                cr.c.run_id == run_id, cr.c.score.is_not(None)).group_by(literal_column("1"))):
            result.cases[_bin(b, bins)] += n
        result.case_errors = int(conn.execute(select(func.count()).where(
            cr.c.run_id == run_id, cr.c.score.is_(None))).scalar_one())
        for name, b, n in conn.execute(select(sc.c.evaluator,
                                              _bin_or_not(sc.c.value, bins, store.dialect),
                                              func.count())
                                       .where(sc.c.run_id == run_id, sc.c.value.is_not(None))
                                       .group_by(sc.c.evaluator, literal_column("2"))):
            result.evaluators.setdefault(name, [0] * bins)[_bin(b, bins)] += n
        for name, errors, measured, count in conn.execute(select(
                sc.c.evaluator, func.count(sc.c.error_code),
                func.count(case((measurement_sql(sc.c.error_code, sc.c.score), 1))),
                func.count()).where(
                sc.c.run_id == run_id, sc.c.value.is_(None)).group_by(sc.c.evaluator)):
            result.evaluators.setdefault(name, [0] * bins)
            result.evaluator_errors[name] = int(errors)
            result.evaluator_skips[name] = int(count - errors - measured)
            if measured:
                result.evaluator_measurements[name] = int(measured)
    return result


def measurement_sql(error_code: Any, score: Any) -> ColumnElement[bool]:
    """Whether a stored score with no value is a measurement (:attr:`Score.measurement`:
    its ``details`` say so), as SQL: counted apart from skips, as a run's summary counts it."""
    return and_(error_code.is_(None), score["details"]["measurement"].as_boolean())


def _bin(value: Any, bins: int) -> int:
    if value == -1:
        raise _NotANumber
    return max(0, min(bins - 1, int(float(value))))
