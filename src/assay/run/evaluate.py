"""Runs as library objects: :func:`evaluate`, :func:`resume` and :func:`rescore`.

One call goes from data to a stored, gated run: the data becomes a suite, the target runs each
case (or the outputs in the data are judged as given), every evaluator scores it through the
judge engine, and every record is stored as it completes. ``assay run`` is a thin shell over
:func:`evaluate_async`; there is no other code path, so the CLI and Python give identical
stored records.

The async functions are the core; :func:`evaluate`, :func:`resume` and :func:`rescore` run
them from synchronous code, inside a notebook's running event loop too.

Every one of them keeps its runs in the same store unless given another: ``$ASSAY_STORE_URL``,
else ``.assay/runs.db`` (see :func:`assay.store.runs.default_url`), where ``assay runs``,
``assay show``, ``rescore``, ``resume`` and ``compare`` find them. ``store=":memory:"`` keeps a
run in memory, for as long as its result lives; only functions given that result can read it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from assay._util.case_filter import refuse_bad_filter
from assay._util.git import git_tree
from assay._util.redact import REDACTED
from assay._util.user_code import user_code
from assay._util.user_paths import user_path
from assay._version import __version__
from assay.errors import ConfigError, EvaluationError
from assay.judges.base import EvalContext, Evaluator
from assay.llm.build import build_engine
from assay.llm.engine import DryRunEstimate, JudgeEngine
from assay.llm.models import display_model, judge_notes
from assay.run.dry_run import DRY_RUN_ID, dry_targets
from assay.run.policies import policy_for, settle
from assay.run.policies.base import ScoringPolicy
from assay.run.result import EvaluationResult
from assay.run.runner import CaseExecutor, Progress, Runner, RunOutcome, evaluator_spec
from assay.run.sync import run_sync
from assay.store.runs import RunLease, RunStore, open_store, run_id_of, store_for
from assay.suites.model import Suite, SuiteCase, SuiteFacts
from assay.targets.base import Target
from assay.targets.config import load_targets_for
from assay.targets.resolve import TargetResolver, case_judge
from assay.types.case import AgentInfo, Case
from assay.types.config import (
    IDENTITY_FIELDS,
    CalibrationGate,
    RecordedRunConfig,
    RunConfig,
    settings_error,
)
from assay.types.engine_config import CacheMode, RetryPolicy
from assay.types.execution import Execution
from assay.types.numbers import count_of
from assay.types.records import (
    CaseRecord,
    GitState,
    RunRecord,
    RunSnapshot,
    RunStatus,
    RunSummary,
)

if TYPE_CHECKING:
    from assay.llm.rate_limits import Admission
    from assay.run.batch import BatchProgress
    from assay.run.ray_executor import RayExecutor

Data = Any
"""A suite path (EVAL.yaml, JSONL, CSV, Parquet, a UiPath project), a loaded :class:`Suite`,
a list of dicts or :class:`~assay.Case` objects, a pandas DataFrame, or MLflow's
:class:`~assay.suites.simulation.ConversationSimulator`."""

TargetLike = Target | Callable[..., Any] | str | None
EvaluatorLike = Evaluator | str | Mapping[str, Any] | Callable[..., Any]
Evaluators = EvaluatorLike | Sequence[EvaluatorLike]
"""What ``evaluators=`` (and ``scorers=``) takes: a list of evaluators, or one alone."""
StoreLike = RunStore | str | Path | None
"""An open store, a store URL, a path to a SQLite file, ``":memory:"``, or None: the default
store on disk (``$ASSAY_STORE_URL``, else ``.assay/runs.db``)."""
RunLike = str | EvaluationResult
"""A stored run: its id (or a unique prefix of it), or the result that made it."""
AGENT_VERSION_VARIABLE = "ASSAY_AGENT_VERSION"
"""The agent version a run records when it is given none (a CI job sets it once)."""
OnInputs = Callable[[dict[Path, str]], None]
"""Called with every file a run uses (see :meth:`_Session.inputs`) once they are known and
before anything runs: the command checks its outputs against them there."""


def evaluate(data: Data = None, *, target: TargetLike = None,
             evaluators: Evaluators | None = None,
             config: RunConfig | None = None, store: StoreLike = None,
             columns: Mapping[str, str] | None = None, name: str | None = None,
             scorers: Evaluators | None = None, predict_fn: TargetLike = None,
             traces: Any = None, trace_filter: str | None = None, since: Any = None,
             until: Any = None, **options: Any) -> EvaluationResult:
    """Evaluate ``data`` and return the stored, gated run. See :func:`evaluate_async`."""
    return run_sync(evaluate_async(data, target=target, evaluators=evaluators, config=config,
                                   store=store, columns=columns, name=name, scorers=scorers,
                                   predict_fn=predict_fn, traces=traces,
                                   trace_filter=trace_filter, since=since, until=until,
                                   **options))


async def evaluate_async(
        data: Data = None, *, target: TargetLike = None,
        evaluators: Evaluators | None = None, config: RunConfig | None = None,
        store: StoreLike = None, columns: Mapping[str, str] | None = None,
        name: str | None = None, engine: JudgeEngine | None = None,
        progress: Progress | None = None,
        on_record: Callable[[CaseRecord], None] | None = None,
        on_start: Callable[[RunRecord], None] | None = None, keep: bool = True,
        scorers: Evaluators | None = None, predict_fn: TargetLike = None,
        on_inputs: OnInputs | None = None, traces: Any = None,
        trace_filter: str | None = None, since: Any = None, until: Any = None,
        **options: Any) -> EvaluationResult:
    """Evaluate ``data`` into a new run.

    Args:
        data: see :data:`Data`. Rows map onto cases by column name (``input``,
            ``expected_output``, ``output`` and their usual spellings) or by ``columns``.
        target: what runs each case: a Python callable (sync or async, given the case input),
            a :class:`Target`, a target name from the targets file or a model string; None
            judges the outputs in the data, or runs the suite's own target.
        evaluators: evaluator instances, registered type names, ``{"type": ...}`` dicts, or
            scorer functions, in a list or one alone; None uses the suite's own.
        config: the run's :class:`RunConfig`; ``options`` override its fields by name
            (``judge_model=``, ``concurrency=``, ``repeat=``, ``gates=``...).
        store: see :data:`StoreLike`. None keeps the run on disk in the default store, where
            ``assay runs``, :func:`rescore`, :func:`resume` and :func:`assay.compare` find it
            by id; ``":memory:"`` keeps it in memory for as long as the result lives (pass the
            result itself, not its id, to read it again).
        on_record: called with each case record as it completes (a results file, a UI).
        on_start: called with the run's record once it is created (or resumed).
        keep: keep the records in the result (False: read them back from the store on
            demand, for runs too large to hold).
        scorers, predict_fn: MLflow's names for ``evaluators`` (added to them) and
            ``target``.
        on_inputs: called with every file the run uses (see :data:`OnInputs`) before
            anything runs; what it raises stops the run before it starts.
        traces: judge traces instead of running an agent: a source (``"store"``,
            ``"mlflow:URI"``, ``"phoenix:URL"``, ``"langfuse:FILE"``, a file; see
            :mod:`assay.run.sources`) or a :class:`~assay.run.sources.TraceSource`. Each
            trace is a case whose id is the trace's; ``data``, when given too, is the suite
            whose evaluators (and judge, scoring) judge them. ``trace_filter``, ``since``
            and ``until`` select the traces (``since``: a time, an ISO date or ``24h``).

    The agent-judge options (``naming``, ``judges``, ``global_guidelines``,
    ``quality_criteria``...; see :mod:`assay.run.policies.databricks`) are RunConfig fields too.
    """
    config = _config(config, options)
    refuse_bad_filter(config.filter, "filter")  # as assay run --filter and POST /runs
    if traces is not None:
        data = _traces_data(traces, data, config, store, name, trace_filter, since, until)
    elif (trace_filter, since, until) != (None, None, None):
        raise ConfigError("trace_filter, since and until select traces: give traces= too",
                          code="invalid_option")
    session = _new_session(data, target, evaluators, config, store,
                           columns, name, engine, scorers, predict_fn)
    return await session.execute(progress, on_record, on_start, keep, on_inputs)


def _traces_data(traces: Any, data: Data, config: RunConfig, store: StoreLike,
                 name: str | None, trace_filter: str | None, since: Any,
                 until: Any) -> Suite:
    """The suite of the traces a run judges, with ``data``'s evaluators when it is given."""
    from assay.run.sources.base import TraceQuery
    from assay.run.sources.suite import parse_time, suite_of_traces

    like = load_data(data, config=config) if data is not None else None
    query = TraceQuery(filter=trace_filter, since=parse_time(since, "since"),
                       until=parse_time(until, "until"))
    return suite_of_traces(traces, query, store=store, name=name, like=like)


def check(data: Data = None, **kwargs: Any) -> Suite:
    """Check ``data`` as a run would before its first call. See :func:`check_async`."""
    return run_sync(check_async(data, **kwargs))


async def check_async(
        data: Data = None, *, target: TargetLike = None,
        evaluators: Evaluators | None = None, config: RunConfig | None = None,
        columns: Mapping[str, str] | None = None, name: str | None = None,
        scorers: Evaluators | None = None, predict_fn: TargetLike = None,
        **options: Any) -> Suite:
    """Everything :func:`evaluate_async` checks before its first call, with the same
    arguments, and nothing more: the data loads, the run's options and agent judges, the
    targets (built, and checked as a run checks them), the judge models (known, keys present,
    servers reachable) and the cases (an evaluator to judge each, an agent for each
    conversation). Raises the :class:`ConfigError` the run would raise; returns the suite. No case
    runs, no judge is asked and nothing is stored: ``assay validate`` is this call."""
    session = _new_session(data, target, evaluators, _config(config, options), ":memory:",
                           columns, name, None, scorers, predict_fn)
    try:
        await session.preflight()
    finally:
        await session.close()
    return session.suite


async def judge_case_async(evaluators: Evaluators, case: Case,
                           execution: Execution, *, config: RunConfig | None = None,
                           engine: JudgeEngine | None = None,
                           judge_model: str | None = None) -> CaseRecord:
    """``case`` judged on ``execution`` by ``evaluators`` as a run judges it, in a session of
    one case that keeps nothing: the output crosses into assay as every recorded output does
    (:meth:`Execution.as_data`), the run's checks and judge-model preflight come first and
    raise the run's errors, the engine is the run's (``engine``, else one built from
    ``config``), and the case's score and verdict are ``config``'s scoring policy's.
    ``judge_model`` judges the evaluators that name no model (the suite's judge, which
    ``config.judge_model`` overrides). :func:`assay.score`, ``assay judge``, the pytest
    plugin's ``assert_passes`` and the UiPath evaluators are this call."""
    suite = with_evaluators(Suite(name=case.id, judge_target=judge_model,
                                  cases=[SuiteCase(case=case, execution=execution)]),
                            evaluators)
    suite, config, policy = settle(suite, config or RunConfig())
    session = _Session(suite, config, policy, None, engine, None, find_targets=False)
    outcome = await session.unstored("one-case")
    return outcome.records[0]


def _new_session(data: Data, target: TargetLike, evaluators: Evaluators | None,
                 config: RunConfig, store: StoreLike, columns: Mapping[str, str] | None,
                 name: str | None, engine: JudgeEngine | None,
                 scorers: Evaluators | None,
                 predict_fn: TargetLike) -> _Session:
    """The session of a new run of ``data``: loaded, prepared and refused where the
    arguments contradict each other, not yet checked against its targets and judges."""
    if predict_fn is not None:
        if target is not None:
            raise ConfigError("give target or predict_fn, not both", code="invalid_target")
        target = predict_fn
    from assay.suites.simulation import ConversationSimulator

    if isinstance(data, ConversationSimulator) and callable(target) and \
            not isinstance(target, Target):
        target = data.agent(target)  # MLflow's predict_fn(input=[...], **context)
    if scorers is not None:
        evaluators = [*evaluator_list(evaluators or []), *evaluator_list(scorers, "scorers")]
    suite = load_data(data, columns=columns, config=config, name=name)
    if evaluators is not None:
        suite = with_evaluators(suite, evaluators)
    suite, config, policy = settle(suite, config)
    run_store = open_store(store)
    given = as_target(target)
    if given is None and isinstance(target, str):
        config = config.model_copy(update={"target": target})
    if given is not None and any(c.execution is not None for c in suite.cases):
        raise ConfigError("the data holds the agent's outputs and a target was given too: "
                          "judge the outputs as given (no target), or drop the output "
                          "column and let the target run", code="invalid_data")
    return _Session(suite, config, policy, run_store, engine, given,
                    owns_given=given is not None and not isinstance(target, Target),
                    evaluators_given=evaluators is not None)


def resume(run: RunLike, **kwargs: Any) -> EvaluationResult:
    """Finish a stopped run. See :func:`resume_async`."""
    return run_sync(resume_async(run, **kwargs))


async def resume_async(run: RunLike, *, store: StoreLike = None, data: Data = None,
                       target: TargetLike = None,
                       evaluators: Evaluators | None = None,
                       retry_errors: bool = False, concurrency: int | None = None,
                       judge_model: str | None = None, cache: CacheMode | None = None,
                       budget_usd: float | None = None,
                       progress: Progress | None = None,
                       on_record: Callable[[CaseRecord], None] | None = None,
                       on_start: Callable[[RunRecord], None] | None = None,
                       on_warning: Callable[[str], None] | None = None,
                       on_notice: Callable[[str], None] | None = None,
                       keep: bool = True,
                       on_inputs: OnInputs | None = None,
                       rerun_failed: bool = False,
                       wait: bool | None = None,
                       poll_s: float | None = None,
                       retry: RetryPolicy | Mapping[str, Any] | None = None
                       ) -> EvaluationResult:
    """Resume ``run`` (an id, or the result that made it; in ``store``, else the result's
    store, else the default one): what the store has is kept, the rest runs with the run's own
    recorded config (its target override, judge, thresholds and gates) and evaluators;
    ``budget_usd`` is this resume's own budget (None: it has none), as a budget is what one
    invocation may spend.

    The evaluators are rebuilt from the run's record, unless ``data`` is a suite that names
    its own. A Python function cannot be recorded, so a run whose target was one needs it
    again (``target=``), and a scorer function again under its recorded name
    (``evaluators=[fn]``, in place of that one; the others are still rebuilt).

    A run that completed is left as it is: its stored result is returned and nothing is run
    or rewritten, unless ``retry_errors`` computes its error scores and failed executions
    again. ``judge_model`` replaces the recorded judge (a judge URL's password is never
    recorded, so it must be given again). ``cache`` is this resume's own cache mode (None:
    ``$ASSAY_CACHE``, else use), not the recorded one: how answers are kept is not part of
    what a result means. ``rerun_failed`` makes a new run instead: see
    :func:`rerun_failed_async`.

    A run waiting for its batches (``batch=True``) has them checked: still waiting, the result
    says where they are (:attr:`EvaluationResult.batch`) and nothing changes; done, the cases
    are judged from their answers and the run completes (see :mod:`assay.run.batch`).
    ``wait`` (None: the run's own ``batch_wait``) waits for the batches instead, checking
    them every ``poll_s`` seconds (None: the run's own ``batch_poll_s``): both are this
    invocation's, not what a result means.

    ``retry`` is how this invocation retries a judge call for the rest of the run: a
    :class:`~assay.types.engine_config.RetryPolicy`, or a mapping of the fields to change in
    the run's recorded one (``{"call_timeout_s": 600}``); None: the recorded one. A run
    stopped by a slow provider then finishes with a longer timeout or more attempts. Each
    resume is recorded in the run's snapshot (``resumes``: when, and the retry it used)."""
    run_store = store_for([run], store)
    stored = run_store.run_record(run_id_of(run))
    if rerun_failed:  # a new run, not this one finished (see rerun_failed_async)
        if stored.status is RunStatus.RUNNING and not stored.abandoned:
            raise ConfigError(f"run {stored.id} is still running; re-run its failures once "
                              "it has stopped", code="run_running")
        parts = _reopened(run_store, stored, data, target, evaluators, on_warning,
                          concurrency=concurrency, judge_model=judge_model, cache=cache,
                          budget_usd=budget_usd, wait=wait, poll_s=poll_s, retry=retry)
        owned = parts[3] is not None and not isinstance(target, Target)
        session = await _rerun(run_store, stored, parts, owned, on_notice)
        return await session.execute(progress, on_record, on_start, keep, on_inputs)
    if stored.status is RunStatus.COMPLETED and not retry_errors:
        if on_notice:
            on_notice(f"run {stored.id} completed: nothing to resume")
        return _as_stored(run_store, stored, progress, on_record, on_start, keep, on_inputs)
    suite, config, policy, given = _reopened(
        run_store, stored, data, target, evaluators, on_warning, concurrency=concurrency,
        judge_model=judge_model, cache=cache, budget_usd=budget_usd, wait=wait, poll_s=poll_s,
        retry=retry)
    _check_stored_rows(run_store, stored.id)
    if retry_errors:
        forgotten = run_store.forget_errors(stored.id)
        if on_notice:
            on_notice(f"{forgotten} error score(s) will be computed again")
        if not forgotten and stored.status is RunStatus.COMPLETED:
            return _as_stored(run_store, stored, progress, on_record, on_start, keep,
                              on_inputs, suite.input_files())
    session = _Session(suite, config, policy, run_store, None, given,
                       owns_given=given is not None and not isinstance(target, Target),
                       resume=stored)
    return await session.execute(progress, on_record, on_start, keep, on_inputs)


def _check_stored_rows(run_store: RunStore, run_id: str) -> None:
    """:class:`~assay.store.runs.CaseUnreadable` naming a stored row of the run that the
    resume would fail on (its repeat not a whole number, its JSON not JSON, a number in it
    not a number: :func:`~assay.store.runs.check_row`'s rule), found in the database before
    the run is touched (its status, its error scores): once it is running again, the
    runner's read of its executions and scores met it, and the run ended failed."""
    from assay.store.queries import CaseFilter, check_cases

    check_cases(run_store, run_id, CaseFilter())


def _reopened(run_store: RunStore, stored: RunRecord, data: Data, target: TargetLike,
              evaluators: Evaluators | None,
              on_warning: Callable[[str], None] | None, *, concurrency: int | None,
              judge_model: str | None, cache: CacheMode | None, budget_usd: float | None,
              wait: bool | None = None, poll_s: float | None = None,
              retry: RetryPolicy | Mapping[str, Any] | None = None
              ) -> tuple[Suite, RunConfig, ScoringPolicy, Target | None]:
    """A stored run's suite, config, policy and given target, ready to run again: what a
    resume and a re-run of its failures share (see :func:`resume_async` for the rules)."""
    snapshot = stored.config
    config = snapshot.run.runnable(stored.id)
    changes: dict[str, Any] = {
        k: v for k, v in (("concurrency", concurrency), ("judge_model", judge_model),
                          ("target", target if isinstance(target, str) else None),
                          ("batch_wait", wait), ("batch_poll_s", poll_s),
                          ("retry", _retry_changed(config.retry, retry)))
        if v is not None}  # a judge URL's password the run could not keep, say
    changes["budget_usd"] = budget_usd  # this invocation's own budget (None: none)
    config = _config(config, changes)
    source_run = getattr(snapshot, "rescored_from", None)
    _refuse_what_is_missing(stored, data is None, target)
    given = as_target(target)
    config.cache = cache  # this invocation's own mode, not the recorded one
    if data is None and source_run:  # a rescore: its cases are the source run's executions
        suite = _rescore_suite(run_store, run_store.run_record(source_run), None,
                               check=False)  # judged by the rescore's own evaluators
        suite = _resumed_evaluators(suite, stored, evaluators, recorded=True)
    else:
        if data is None:
            data = Path(str(snapshot.suite_path))
        suite = _resumed_evaluators(load_data(data, config=config), stored, evaluators)
    suite, config, policy = _prepare_again(suite, config)
    if snapshot.suite_hash and suite.fingerprint() != snapshot.suite_hash and on_warning:
        on_warning("the suite changed since this run started; finished results are kept, "
                   "the rest use the new suite")
    return suite, config, policy, given


def _retry_changed(recorded: RetryPolicy, given: RetryPolicy | Mapping[str, Any] | None
                   ) -> dict[str, Any] | None:
    """The retry policy a resume runs with (see :func:`resume_async`), as the fields
    :func:`_config` checks: ``given`` whole, or the fields it names over the run's
    ``recorded`` policy; None when none was given."""
    if given is None:
        return None
    if isinstance(given, RetryPolicy):
        return given.model_dump()
    return {**recorded.model_dump(), **given}


def rerun_failed(run: RunLike, **kwargs: Any) -> EvaluationResult:
    """Run a stored run's failed and errored cases again. See :func:`rerun_failed_async`."""
    return run_sync(rerun_failed_async(run, **kwargs))


async def rerun_failed_async(run: RunLike, **kwargs: Any) -> EvaluationResult:
    """A new run of ``run``'s suite (AgentV's ``--rerun-failed``) in which the cases that
    failed or errored, and those it never ran, run again, and every other case (passed,
    borderline, not applicable) keeps its stored record, copied as it is: so the new run is
    whole, comparable with ``run`` by ``assay compare``, and ``run`` itself is left untouched.
    Its config, judge and evaluators are ``run``'s, as a resume's are (the arguments of
    :func:`resume_async`); its snapshot names ``run`` as ``rerun_of``."""
    return await resume_async(run, rerun_failed=True, **kwargs)


async def _rerun(run_store: RunStore, stored: RunRecord, parts: tuple[
        Suite, RunConfig, ScoringPolicy, Target | None], owned: bool,
                 on_notice: Callable[[str], None] | None) -> _Session:
    """The session of a new run that re-runs ``stored``'s failures (see
    :func:`rerun_failed_async`)."""
    suite, config, policy, given = parts
    config.run_id = None  # a new run: never the id the re-run one was given (--run-id)
    records = run_store.case_records(stored.id)
    kept = [r for r in records if not r.failed_or_errored]
    if on_notice:
        on_notice(f"re-running the failures of run {stored.id}: {len(records) - len(kept)} "
                  f"failed or errored, {len(kept)} kept as they are")
    rescored = bool(suite.metadata.get("rescored_from"))  # no agent: what it judges is stored
    return _Session(suite, config, policy, run_store, None, given, owns_given=owned,
                    seed=(stored.id, kept),
                    executions=[r for r in records if r.failed_or_errored]
                    if rescored and config.repeat > 1 else None)


def _as_stored(store: RunStore, run: RunRecord, progress: Progress | None,
               on_record: Callable[[CaseRecord], None] | None,
               on_start: Callable[[RunRecord], None] | None, keep: bool,
               on_inputs: OnInputs | None = None,
               known: dict[Path, str] | None = None) -> EvaluationResult:
    """A completed run's result as stored, its records reported as a run reports them (so a
    results file still gets every row): nothing runs, nothing is rewritten. ``on_inputs`` is
    told the files its record names (and those ``known`` already), since its results still
    go to the command's outputs."""
    if on_inputs is not None:
        on_inputs({**_recorded_inputs(store, run), **(known or {})})
    records = store.case_records(run.id)
    if on_start is not None:
        on_start(run)
    if progress is not None:
        progress.start(len(records), 0, run.suite)
    for record in records:
        if on_record is not None:
            on_record(record)
        if progress is not None:
            progress.advance(record)
    return EvaluationResult(store, run, records if keep else None)


def _recorded_inputs(store: RunStore, run: RunRecord) -> dict[Path, str]:
    """The files a stored run used, as far as its record names them without loading its
    suite: the store, the suite file (and a JSONL suite's sidecars) and the targets file
    with what it names."""
    from assay.suites.evalyaml import sidecars
    from assay.targets.config import read_targets

    found = store.input_files()
    snapshot = run.config
    if snapshot.targets_file and Path(snapshot.targets_file).is_file():
        found.update(read_targets(snapshot.targets_file, strict=False).input_files())
    if snapshot.suite_path:
        suite = Path(snapshot.suite_path)
        found[suite] = "the suite file"
        if suite.suffix.lower() == ".jsonl":
            found.update(sidecars(suite))
    return found


def _refuse_what_is_missing(stored: RunRecord, reads_data: bool, target: TargetLike) -> None:
    """ConfigError naming at once all that a run's record cannot hold and the resume was not
    given again: its data, when it was made from rows or a DataFrame (no suite path), and
    its target, when that was a Python function. Named one at a time, the call the first
    error showed (``assay.resume(ID, target=agent)``) met the second."""
    missing: list[str] = []
    arguments = [repr(stored.id)]  # the whole call that works, what was given included
    if not stored.config.suite_path and not getattr(stored.config, "rescored_from", None):
        arguments.append("data=rows")
        if reads_data:
            missing.append("its data (rows or a DataFrame, not a suite file)")
    function = (stored.config.model_extra or {}).get("python_target")
    if function:
        arguments.append(f"target={function}")
        if target is None:
            missing.append(f"the Python function {function!r} it ran as its target")
    if missing:
        raise ConfigError(
            f"run {stored.id} needs what a run store cannot hold: {' and '.join(missing)}; "
            f"give {'them' if len(missing) > 1 else 'it'} again, "
            f"assay.resume({', '.join(arguments)})",
            code="missing_target" if function and target is None else "missing_suite")


def _resumed_evaluators(suite: Suite, stored: RunRecord,
                        given: Evaluators | None,
                        recorded: bool = False) -> Suite:
    """The suite judged as the run was: by its recorded evaluators when the run was given
    its evaluators (``evaluators=``), the data names none, or ``recorded`` (a rescore), else
    by the data's own; a given evaluator takes the place of the recorded one of its name (a
    scorer function, which a record cannot hold). ConfigError for a given name the run does
    not have, and for a function still missing."""
    replaced = bool((stored.config.model_extra or {}).get("evaluators_given"))
    own = replaced or recorded or not suite.evaluators
    evaluators = _rebuild_evaluators(stored) if own else list(suite.evaluators)
    if given is not None:
        built = {e.name: e for e in (as_evaluator(v, f"evaluators[{i}]")
                                     for i, v in enumerate(evaluator_list(given)))}
        names = [e.name for e in evaluators]
        unknown = [n for n in built if n not in names]
        if unknown:
            raise ConfigError(
                f"run {stored.id} has no evaluator named {', '.join(map(repr, unknown))} "
                f"(it has {', '.join(map(repr, names)) or 'none'}): a resume finishes a run "
                "with its own evaluators; give a function again under its recorded name",
                code="invalid_evaluator")
        evaluators = [built.get(e.name, e) for e in evaluators]
    _require_functions(evaluators, stored.id, f"assay.resume({stored.id!r}, ...)")
    if replaced and evaluators:
        return with_evaluators(suite, evaluators)
    if own:
        return suite.model_copy(update={"evaluators": evaluators})
    return suite


def rescore(run: RunLike, **kwargs: Any) -> EvaluationResult:
    """Judge a stored run's executions again. See :func:`rescore_async`."""
    return run_sync(rescore_async(run, **kwargs))


async def rescore_async(run: RunLike, *, store: StoreLike = None,
                        evaluators: Evaluators | None = None,
                        config: RunConfig | None = None,
                        progress: Progress | None = None,
                        on_record: Callable[[CaseRecord], None] | None = None,
                        keep: bool = True, on_inputs: OnInputs | None = None,
                        **options: Any) -> EvaluationResult:
    """Judge the stored executions of ``run`` (an id, or the result that made it; in
    ``store``, else the result's store, else the default one) again, with its own evaluators
    or others, into a new run in the same store. The agent is not run: every case is judged
    on what it did in the original run (a failed execution stays failed)."""
    run_store = store_for([run], store)
    stored = run_store.run_record(run_id_of(run))
    records = run_store.case_records(stored.id)
    base = stored.config.run.runnable(stored.id).model_copy(
        update={"target": None, "filter": None, "cache": None,
                "repeat": _rescore_repeats(stored, records) if records else 1})
    config = _config(config or base, options)
    suite = _rescore_suite(run_store, stored, evaluators)
    if suite.judge_target and REDACTED in suite.judge_target and not config.judge_model:
        raise ConfigError(f"run {stored.id} was judged by {suite.judge_target}, whose "
                          "password was not recorded: give the judge again (judge_model=, "
                          "or --judge-model)", code="missing_judge")
    suite, config, policy = settle(suite, config)
    session = _Session(suite, config, policy, run_store, None, None, rescored_from=stored.id,
                       evaluators_given=evaluators is not None,
                       source_suite_hash=None if evaluators is not None
                       else stored.config.suite_version(),
                       executions=records if config.repeat > 1 else None)
    return await session.execute(progress, on_record, None, keep, on_inputs)


def run_inputs(data: Data, *, config: RunConfig | None = None,
               store: StoreLike = None) -> dict[Path, str]:
    """Every file a run of ``data`` would use (as :data:`OnInputs` is given them), without
    running it: for a command that must check its outputs against several runs at once."""
    config = config or RunConfig()
    session = _Session(load_data(data, config=config), config, policy_for(config),
                       open_store(store), None, None)
    return session.inputs()


# -- building blocks ---------------------------------------------------------------------


def _config(config: RunConfig | None, options: Mapping[str, Any]) -> RunConfig:
    base = config or RunConfig()
    if not options:
        return base
    unknown = [k for k in options if k not in RunConfig.model_fields]
    if unknown:
        raise ConfigError(f"unknown option(s) {', '.join(unknown)}; RunConfig fields: "
                          f"{', '.join(RunConfig.model_fields)}")
    try:
        return RunConfig.model_validate({**base.model_dump(), **options})
    except ValidationError as exc:
        raise settings_error(exc) from None


def load_data(data: Data, *, columns: Mapping[str, str] | None = None,
              config: RunConfig | None = None, name: str | None = None) -> Suite:
    """Any accepted data as a suite (see :data:`Data`)."""
    from assay.suites import dataset

    if isinstance(data, Suite):
        return data
    from assay.suites.simulation import ConversationSimulator

    if isinstance(data, ConversationSimulator):
        return data.suite()
    if data is None or (isinstance(data, str) and not data.strip()):
        # An empty path is no path: Path("") is the current directory, searched for suites.
        raise ConfigError("no data: give a suite path, a list of rows or a DataFrame"
                          + (" (the path given is empty)" if data is not None else ""),
                          code="missing_suite")
    if isinstance(data, str | Path):
        path = user_path(data)
        targets_file = user_path(config.targets_file) if config and config.targets_file \
            else None
        if columns and path.is_file():  # mapped columns: the file is rows of data
            return dataset.suite_from_file(path, columns=columns)
        from assay.suites import load_any

        return load_any(path, targets_file)
    if type(data).__name__ == "DataFrame" and hasattr(data, "to_dict"):
        return dataset.suite_from_dataframe(data, name=name or "dataframe", columns=columns)
    if isinstance(data, Iterable) and not isinstance(data, str | bytes | Mapping):
        return dataset.suite_from_rows(data, name=name or "dataset", columns=columns)
    raise ConfigError(f"data of type {type(data).__name__} is not accepted: give a suite "
                      "path, a Suite, a list of dicts or Cases, or a pandas DataFrame",
                      code="invalid_data")


def with_evaluators(suite: Suite, evaluators: Evaluators) -> Suite:
    """The suite judged by ``evaluators`` instead of its own (per-case ones included)."""
    built = [as_evaluator(e, f"evaluators[{i}]")
             for i, e in enumerate(evaluator_list(evaluators))]
    if not built:
        raise ConfigError("evaluators is empty: give at least one evaluator")
    names = [e.name for e in built]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"evaluator name(s) {', '.join(duplicates)} used more than once; "
                          "give each evaluator a distinct name")
    if suite.case_source is not None:
        source = suite.case_source

        def stream() -> Iterable[SuiteCase]:
            for item in source():
                yield _without_own_evaluators(item)

        return suite.model_copy(update={"evaluators": built, "case_source": stream})
    cases = [_without_own_evaluators(c) for c in suite.cases]
    return suite.model_copy(update={"evaluators": built, "cases": cases})


def _without_own_evaluators(item: SuiteCase) -> SuiteCase:
    """``item`` judged by the suite's evaluators: copied only when it has its own (most
    cases, and every row of a list or DataFrame, have none)."""
    if item.evaluators is None:
        return item
    return item.model_copy(update={"evaluators": None})


def evaluator_list(value: Evaluators, where: str = "evaluators") -> list[EvaluatorLike]:
    """``value`` as a list of evaluators: one evaluator alone (``evaluators="exact_match"``,
    ``evaluators=ExactMatch()``, a scorer function, a config dict) is a list of that one, as
    Inspect's ``scorer=`` takes one, instead of a sequence iterated into a string's letters,
    a model's fields or a dict's keys. ConfigError for what is neither."""
    if isinstance(value, Evaluator | str | Mapping) or callable(value):
        return [value]
    if isinstance(value, Iterable):
        return list(value)
    raise ConfigError(f"{where}: a {type(value).__name__} is not an evaluator or a list of "
                      "them (give an Evaluator, a type name, a config dict or a scorer "
                      "function, or a list of these)", code="invalid_evaluator")


def as_evaluator(value: EvaluatorLike, where: str = "evaluator") -> Evaluator:
    """An evaluator from an instance, a registered type name, a config dict or a function."""
    from assay.judges.code.python_scorer import PythonScorer, scorer
    from assay.judges.registry import build

    if isinstance(value, Evaluator):
        return value
    if isinstance(value, str):
        built: Evaluator = build({"type": value}, where)
        return built
    if isinstance(value, Mapping):
        built = build(dict(value), where)
        return built
    if callable(value):
        found = getattr(value, "evaluator", None)
        return found if isinstance(found, PythonScorer) else scorer(value).evaluator
    raise ConfigError(f"{where}: a {type(value).__name__} is not an evaluator (give an "
                      "Evaluator, a type name, a config dict or a scorer function)",
                      code="invalid_evaluator")


def as_target(target: TargetLike) -> Target | None:
    """A Target built from a callable; None for a name (resolved by the run) or None."""
    if target is None or isinstance(target, str):
        return None
    if isinstance(target, Target):
        return target
    if callable(target):
        from assay.targets.callable import CallableTarget

        return CallableTarget(target, name=getattr(target, "__name__", "python"))
    raise ConfigError(f"target of type {type(target).__name__} is not accepted: give a "
                      "function, a Target, a target name or a model string",
                      code="invalid_target")


def suite_judge(suite: Suite, targets_file: Path | None = None) -> str | None:
    """The judge model a run of ``suite`` gives the evaluators that name none, by the rule
    every run judges its cases by (:func:`~assay.targets.resolve.case_judge`, over the
    suite's targets); None: the engine's default. A suite whose targets are judged by
    different models has no one judge: that is an error naming them."""
    base = suite.source.parent if suite.source else Path.cwd()
    targets = load_targets_for(base, targets_file, strict=False)
    found = {name: case_judge(targets, name, suite.target, suite.judge_target)
             for name in suite.facts().targets}
    judges = {display_model(j) if j else None for j in found.values()}
    if len(judges) > 1:
        shown = "; ".join(f"target {n or '(none)'}: {display_model(j) if j else 'the default'}"
                          for n, j in sorted(found.items(), key=lambda x: str(x[0])))
        raise ConfigError(f"suite {suite.name!r} is judged by more than one model ({shown}); "
                          "give the judge model to use", code="ambiguous_judge")
    return next(iter(found.values()), None) if found else suite.judge_target


def _build_spec(spec: dict[str, Any]) -> Evaluator:
    from assay.judges.registry import build

    built: Evaluator = build({"type": spec["type"], "name": spec["name"],
                              "weight": spec["weight"], **spec.get("params", {})},
                             f"evaluator {spec['name']!r}")
    return built


def _rescore_suite(run_store: RunStore, stored: RunRecord,
                   evaluators: Evaluators | None, check: bool = True) -> Suite:
    """A run's stored executions as a suite of recorded cases, judged by ``evaluators`` or by
    the run's own (rebuilt from their recorded specs; ``check``: ConfigError when one of
    them needs its Python function given again)."""
    records = run_store.case_records(stored.id)
    if not records:
        raise ConfigError(f"run {stored.id} has no stored cases to rescore",
                          code="empty_run")
    repeats = _rescore_repeats(stored, records)
    stored_repeats: dict[str, set[int]] = {}
    firsts: dict[str, CaseRecord] = {}  # a case is its first stored repeat's
    for record in records:
        stored_repeats.setdefault(record.case_id, set()).add(record.repeat)
        first = firsts.get(record.case_id)
        if first is None or record.repeat < first.repeat:
            firsts[record.case_id] = record
    cases = []
    for record in firsts.values():
        case = record.case.model_copy(update={"id": record.case_id})
        case_evaluators = None
        if evaluators is None and record.evaluators is not None:
            case_evaluators = [_rebuild(e.model_dump()) for e in record.evaluators]
            if check:
                _require_functions(case_evaluators, stored.id,
                                   f"assay.rescore({stored.id!r}, ...)")
        cases.append(SuiteCase(case=case, execution=record.execution,
                               evaluators=case_evaluators, source=record.source))
    agent = (stored.config.model_extra or {}).get("agent")
    own = _rebuild_evaluators(stored) if evaluators is None else []
    if check:
        _require_functions(own, stored.id, f"assay.rescore({stored.id!r}, ...)")
    complete = all(len(found) == repeats for found in stored_repeats.values())
    suite = Suite(name=stored.suite, cases=cases, evaluators=own,
                  metadata={"rescored_from": stored.id}, judge_target=_recorded_judge(stored),
                  agent=AgentInfo.model_validate(agent) if isinstance(agent, dict) else None,
                  stored_repeats=None if repeats == 1 or complete else
                  {case_id: frozenset(found) for case_id, found in stored_repeats.items()})
    return suite if evaluators is None else with_evaluators(suite, evaluators)


def _rescore_repeats(stored: RunRecord, records: Sequence[CaseRecord]) -> int:
    """The repeats a rescore of run ``stored`` (its stored ``records``) keeps: the source
    run's, so the rescore counts cases as its source did (a case failing in any repeat
    counts once for --max-failed) and compares with it case by case, even when the source
    stopped with some repeats not stored (the suite then names the repeats each case has,
    :attr:`Suite.stored_repeats`)."""
    recorded = stored.config.run.repeat if not stored.config.run.unread else 1
    return max([recorded, *(r.repeat + 1 for r in records)])


def _recorded_judge(stored: RunRecord) -> str | None:
    """The judge model a run's LLM evaluators used (its targets file's judge, say), so that
    judging its executions again keeps the judge: a rescore is then comparable with its
    run. None when the run used several, or none; a model whose URL password was hidden
    when it was recorded stays hidden (``judge_model=`` gives it again)."""
    models = stored.config.judge_models
    return models[0] if len(models) == 1 else None


def _prepare_again(suite: Suite,
                   config: RunConfig) -> tuple[Suite, RunConfig, ScoringPolicy]:
    """A resumed run's suite, config and policy, as it recorded them (its agent judges
    added again by its policy)."""
    return settle(suite, config)


def _rebuild_evaluators(stored: RunRecord) -> list[Evaluator]:
    """The run's evaluators, rebuilt from their records; a scorer whose function cannot be
    imported again (one defined in a notebook or inside a function) comes back without it,
    for :func:`_require_functions` to ask for."""
    return [_rebuild(e.model_dump()) for e in stored.config.evaluators]


def _rebuild(spec: dict[str, Any]) -> Evaluator:
    try:
        return _build_spec(spec)
    except ConfigError:
        params = spec.get("params") or {}
        if spec["type"] != "python" or not params.get("function"):
            raise
        return _build_spec({**spec, "params": {**params, "function": None}})


def _require_functions(evaluators: Sequence[Evaluator], run_id: str, call: str) -> None:
    """ConfigError naming the evaluators that need a Python function given again."""
    missing = [e.name for e in evaluators if e.needs_function()]
    if missing:
        raise ConfigError(
            f"run {run_id} was judged by the Python function(s) "
            f"{', '.join(map(repr, missing))}, which a run store cannot hold: give them "
            f"again, {call.replace('...', 'evaluators=[...]')}", code="invalid_evaluator")


def _project_agent(suite: Suite, config: RunConfig) -> Target | None:
    """A UiPath project's own agent (its entry point), when the run names no target."""
    project = (suite.metadata.get("uipath") or {}).get("project")
    if suite.metadata.get("format") != "uipath" or not project:
        if config.entrypoint:
            raise ConfigError(f"entry point {config.entrypoint!r} given, but {suite.name!r} is "
                              "not a UiPath project's eval set", code="unknown_target")
        return None
    if any(c.execution is not None for c in suite.cases):
        return None
    from assay.targets.uipath_entrypoint import entrypoint_target

    found: Target | None = entrypoint_target(Path(project), config.entrypoint)
    return found


def _first(facts: SuiteFacts, kind: str) -> str:
    """``first: a, b, c`` for the cases of ``kind`` the facts name."""
    return "first: " + ", ".join(repr(i) for i in facts.examples.get(kind, []))


def case_runner(suite: Suite, config: RunConfig, given: Target | None = None,
                owns_given: bool = False, *,
                admission: Callable[[str], Admission] | None = None,
                wrap_target: Callable[[Target], Target] | None = None
                ) -> tuple[Runner, Callable[[], Awaitable[None]]]:
    """The runner a worker of a cluster run (:mod:`assay.run.ray_executor`) runs cases with:
    the run's own targets, judges, engine and policy, and no store (the driver stores what
    it returns). ``admission`` admits judge calls (the cluster's shared limits);
    ``wrap_target`` wraps every target it resolves. Returns the runner and what closes it."""
    session = _Session(suite, config, policy_for(config), None, None, given,
                       owns_given=owns_given)
    session.engine.admission = admission
    resolve = session.resolver()

    def resolver(name: str | None) -> Target:
        target: Target = resolve(name)
        return wrap_target(target) if wrap_target is not None else target

    runner = Runner(suite, resolver, session.engine, None, config,
                    judge_for=session.judge_for, policy=session.policy)
    return runner, session.close


class _Session:
    """One run from preflight to its final status; everything :func:`evaluate_async`,
    :func:`resume_async` and :func:`rescore_async` share."""

    def __init__(self, suite: Suite, config: RunConfig, policy: ScoringPolicy,
                 store: RunStore | None, engine: JudgeEngine | None, given: Target | None, *,
                 owns_given: bool = False, resume: RunRecord | None = None,
                 rescored_from: str | None = None, evaluators_given: bool = False,
                 source_suite_hash: str | None = None,
                 find_targets: bool = True, run_id: str | None = None,
                 seed: tuple[str, list[CaseRecord]] | None = None,
                 executions: list[CaseRecord] | None = None) -> None:
        self.suite = suite
        self.run_id = run_id
        """The id a new run takes (None: a new id); an online evaluation names its
        period's run."""
        self.python_target = given.name if given is not None else None
        """The name of a target given as a Python object, which the run's record cannot
        hold (a resume needs it again)."""
        self.evaluators_given = evaluators_given
        self.config = config
        self.policy = policy
        self.store = store
        """Where the run is kept; None for a session that keeps nothing (one case judged
        by :func:`judge_case_async`)."""
        self.own_engine = engine is None
        self.engine = engine if engine is not None else build_engine(config)
        base = suite.source.parent if suite.source else Path.cwd()
        targets_file = user_path(config.targets_file) if config.targets_file else None
        if given is None and config.transcript:  # recorded sessions answer every case
            from assay.targets.transcript import load_transcripts

            given, owns_given = load_transcripts(user_path(config.transcript)), True
        if given is None and not config.target and suite.target is None:
            given = _project_agent(suite, config)  # uipath eval: the project's entry point
            owns_given = owns_given or given is not None
        self.targets = TargetResolver(self.engine, base, targets_file, given, owns_given,
                                      unanswered_is_missing=policy.unanswered_is_missing,
                                      find_file=find_targets)
        self.resume = resume
        self.rescored_from = rescored_from
        self.source_suite_hash = source_suite_hash
        """A rescore's source suite's fingerprint (:meth:`RunSnapshot.suite_version`)."""
        self.seed = seed
        """(the run re-run, its records kept as they are) for a re-run of its failures."""
        self.executions = executions
        """The records whose executions a rescore of a run with repeats (or a re-run of its
        failures) judges, each stored under its (case, repeat) before the run starts, so the
        runner judges it as a resume judges a stored execution (the suite's case holds only
        one, which another repeat's judgement must never be made from)."""

    def inputs(self) -> dict[Path, str]:
        """Every file this run uses, each with what it is: the suite's (its file, what its
        loader read, its evaluators' scripts and modules), the targets file's (itself, its
        ``.env``, its targets' modules and recorded outputs), the store's and the response
        cache. What no output of the run may be."""
        transcript = {Path(self.config.transcript).absolute(): "the transcript file"} \
            if self.config.transcript else {}
        return {**self.engine.config.input_files(),
                **(self.store.input_files() if self.store is not None else {}),
                **(self.targets.file.input_files() if self.targets.file else {}),
                **self.suite.input_files(), **transcript}

    def judge_for(self, target: str | None) -> str | None:
        """The judge of the target that ran a case (its ``judge_target``), else the suite's."""
        return case_judge(self.targets.file, target, self.suite.target, self.suite.judge_target)

    def target_names(self) -> set[str | None]:
        if self.config.target or self.targets.given is not None:
            return {self.config.target}
        facts = self.suite.facts()
        return facts.targets

    async def preflight(self) -> None:
        """Check every judge model, target and the targets file before the first case."""
        from assay.run.runner import check_case_adjustments, check_evaluator_names

        check_evaluator_names(self.suite)
        check_case_adjustments(self.suite, self.config)
        if self.config.run_id is not None and self.resume is None and \
                self.store is not None and self.store.has_run(self.config.run_id):
            raise ConfigError(f"run id {self.config.run_id!r} is already in the store: "
                              "resume it (--resume) or choose another", code="invalid_config")
        check_cases = getattr(self.targets.given, "check_cases", None)
        if check_cases is not None:  # recorded sessions: one for each case, by id
            from assay.run.runner import select_cases

            check_cases([item.case.id for item in select_cases(self.suite, self.config)],
                        selected=bool(self.config.filter or self.config.case_ids))
        names = self.target_names()
        self.targets.check(names)
        targets = [self.targets(name) for name in names]  # unknown names fail here
        facts = self.suite.facts()
        models = {EvalContext(self.engine, self.judge_for(t),
                              override_model=self.config.judge_model).model(m)
                  for m in facts.models for t in names}
        if facts.conversations and None in names and self.targets.given is None:
            raise ConfigError(
                f"{facts.conversations} case(s) are conversations, which need an agent to "
                "talk to: give the suite (or each case) a target, or --target",
                code="missing_target")
        if facts.unjudged:
            raise ConfigError(
                f"{facts.unjudged} case(s) have no evaluator, so nothing would judge "
                f"them ({_first(facts, 'unjudged')}): give the suite evaluators "
                "(an evaluators list, --judges, or evaluators= in Python)",
                code="missing_evaluator")
        if self.config.batch_wait and not self.config.batch and self.resume is None:
            raise ConfigError("--wait (batch_wait) waits for a batch run: give --batch "
                              "(batch=True), or execution: {batch: true} in the suite file",
                              code="invalid_config")
        if self.batches():
            from assay.run.batch import refuse_unbatchable

            if self.config.executor == "ray":
                raise ConfigError("--batch runs the judges in this process: leave out "
                                  "--executor ray", code="invalid_config")
            if self.config.budget_usd:
                raise ConfigError(
                    "--budget-usd cannot bound a batch run: a batch is billed for every "
                    "request it is given, and what each costs is known only once its answers "
                    "are back. Price the run first with --dry-run (at the batch price), or "
                    "run without batch (--no-batch, batch=False) to keep a budget",
                    code="invalid_config")
            refuse_unbatchable(self.engine, models)
        if facts.simulated:
            models.add(self.simulator_model())
        if models:  # an all-deterministic suite needs no judge model at all
            # A batch run must reach its providers, and a cluster's workers check their own.
            await self.engine.preflight(*models, offline_ok=not self.batches() and
                                        self.config.executor != "ray")
        if not self.config.dry_run:
            for target in targets:
                with user_code(f"target {target.name!r}"):  # a plugin's target may exit
                    await target.preflight()

    def simulator_model(self) -> str | None:
        """The simulated user's model: ``--simulator-model``, the suite's, else the judge's."""
        settings = self.suite.conversation
        return self.config.simulator_model or (settings.simulator.model if settings else None) \
            or self.config.judge_model or self.suite.judge_target

    def resolver(self) -> Any:
        """What the runner asks for targets: conversation cases are played turn by turn."""
        if self.config.dry_run:
            return dry_targets(self.targets, bool(self.suite.facts().conversations))
        if not self.suite.facts().conversations:
            return self.targets
        from assay.targets.conversation import ConversationResolver

        return ConversationResolver(self.targets, self.engine, self.suite.conversation,
                                    self.simulator_model())

    def judge_models(self) -> list[str]:
        """The judge models of the run's evaluators, as they may be shown (no password)."""
        names = self.target_names()
        return sorted({display_model(str(EvalContext(
            self.engine, self.judge_for(t), override_model=self.config.judge_model).model(m)
            or self.engine.config.default_model)) for m in self.suite.facts().models
            for t in names})

    def snapshot(self) -> RunSnapshot:
        facts = self.suite.facts()
        models = self.judge_models()
        run = self.config.model_dump(exclude={*IDENTITY_FIELDS, "agent_version"})
        if self.config.judge_model:  # a password in a judge URL is never stored
            run["judge_model"] = display_model(self.config.judge_model)
        extra: dict[str, Any] = {}
        if self.rescored_from:
            extra["rescored_from"] = self.rescored_from
        if self.source_suite_hash:
            extra["source_suite_hash"] = self.source_suite_hash
        if self.seed is not None:
            extra["rerun_of"] = self.seed[0]
        if self.python_target is not None:
            extra["python_target"] = self.python_target
        if self.evaluators_given:
            extra["evaluators_given"] = True
        if self.suite.agent is not None:
            extra["agent"] = self.suite.agent.model_dump(mode="json", exclude_none=True)
        if facts.simulated:
            extra["simulator_model"] = display_model(str(
                self.simulator_model() or self.engine.config.default_model))
        return RunSnapshot(
            suite_path=str(self.suite.source.resolve()) if self.suite.source else None,
            suite_name=self.suite.name, suite_hash=self.suite.fingerprint(),
            target=self.config.target or self.suite.target,
            target_override=self.config.target,
            targets_file=str(self.targets.path) if self.targets.path else None,
            targets=self.targets.redacted(), judge_models=models,
            evaluators=[evaluator_spec(e) for e in self.suite.evaluators],
            run=RecordedRunConfig.model_validate(run), assay_version=__version__,
            description=self.suite.description, git=self.git,
            agent_version=self.agent_version(), **extra)

    def runner(self, progress: Progress | None,
               on_record: Callable[[CaseRecord], None] | None, stored: bool,
               gate_failures: Sequence[str] = (),
               executor: CaseExecutor | None = None) -> Runner:
        """The runner of this session's cases; ``stored`` False keeps nothing; ``executor``
        runs them elsewhere (a Ray cluster), the runner storing and deciding each."""
        if self.batches() and stored:  # a batch run tells its records once it is whole
            on_record = None
        return Runner(self.suite, self.resolver(), self.engine,
                      self.store if stored else None, self.config, progress, on_record,
                      judge_for=self.judge_for, gate_failures=gate_failures,
                      policy=self.policy, executor=executor)

    async def unstored(self, run_id: str, progress: Progress | None = None,
                       on_record: Callable[[CaseRecord], None] | None = None,
                       keep: bool = True) -> RunOutcome:
        """The session's cases run and judged as a run judges them, with nothing stored:
        a dry run, or one case judged (:func:`judge_case_async`)."""
        try:
            await self.preflight()
            runner = self.runner(progress, on_record, stored=False,
                                 gate_failures=await self.calibration_failures())
            return await runner.run(run_id, keep=keep)
        finally:
            await self.close()

    @functools.cached_property
    def git(self) -> GitState | None:
        """The git working tree of the suite's file (else of the current directory), read
        once."""
        tree = git_tree(self.suite.source if self.suite.source else Path.cwd())
        return None if tree is None else GitState(commit=tree.commit, branch=tree.branch,
                                                  dirty=tree.dirty)

    def agent_version(self) -> str | None:
        """The run's agent version, else ``$ASSAY_AGENT_VERSION``, else the suite's."""
        return self.config.agent_version or os.environ.get(AGENT_VERSION_VARIABLE) or (
            self.suite.agent.version if self.suite.agent is not None else None)

    async def execute(self, progress: Progress | None,
                      on_record: Callable[[CaseRecord], None] | None,
                      on_start: Callable[[RunRecord], None] | None, keep: bool,
                      on_inputs: OnInputs | None = None) -> EvaluationResult:
        """Run the session into its store, or, for a dry run, into nothing (see
        :mod:`assay.run.dry_run`: no output is written, so ``on_inputs`` is not called)."""
        if self.config.dry_run:
            self.engine.estimate_batched = self.config.batch is True  # priced as it would be sent
            outcome = await self.unstored(DRY_RUN_ID, progress, on_record, keep=False)
            outcome.summary.notes = self.notes()
            return EvaluationResult.dry(self.suite, outcome.summary, self.config,
                                        self.engine.estimate)
        store = self.store
        assert store is not None, "a stored run needs a store"
        run_id: str | None = None
        lease: RunLease | None = None
        try:
            if on_inputs is not None:
                on_inputs(self.inputs())
            await self.preflight()
            executor = self.executor()
            runner = self.runner(progress, on_record, stored=True,
                                 gate_failures=await self.calibration_failures(),
                                 executor=executor)
            if self.resume is not None:
                run_id = self.resume.id
                store.set_status(run_id, RunStatus.RUNNING.value, config=self.resume.config
                                 .resumed(self.config.retry).model_dump(mode="json"))
            else:
                run_id = store.create_run(
                    self.suite.name, self.snapshot().model_dump(mode="json"),
                    self.run_id or self.config.run_id, name=self.config.run_name,
                    tags=self.config.tags, notes=self.config.notes)
                if self.seed is not None:
                    self._copy(store, run_id, self.seed[1])
                if self.executions:
                    self._copy(store, run_id, self.executions, executions_only=True)
            lease = store.hold_lease(run_id)
            if on_start is not None:
                with user_code("the on_start hook"):
                    on_start(store.run_record(run_id))
            try:
                found, waiting = await self.passes(runner, store, run_id, keep)
            finally:
                if executor is not None:
                    await executor.close()
            if found is None:
                store.set_status(run_id, RunStatus.WAITING.value)
                result = EvaluationResult(self.store, store.run_record(run_id), [],
                                          suite=self.suite)
                result.batch = waiting
                return result
            outcome = found
            if self.batches() and on_record is not None:  # told once the run is whole
                for record in store.iter_case_records(run_id):  # a page at a time
                    with user_code("the on_record hook"):
                        on_record(record)
            outcome.summary.notes = [*self.notes(), *outcome.summary.notes]
            # a run its budget stopped is left interrupted: a resume runs what it did not
            store.set_status(run_id, (RunStatus.INTERRUPTED if outcome.stopped
                                      else RunStatus.COMPLETED).value,
                             outcome.summary.model_dump(mode="json"))
        except (KeyboardInterrupt, asyncio.CancelledError):
            self._mark(run_id, RunStatus.INTERRUPTED)
            raise
        except EvaluationError:
            self._mark(run_id, RunStatus.FAILED)
            raise
        except BaseException:
            self._mark(run_id, RunStatus.FAILED)
            raise
        finally:
            if lease is not None:
                lease.release()
            await self.close()
        return EvaluationResult(self.store, store.run_record(run_id),
                                outcome.records if keep else None, suite=self.suite)

    def batches(self) -> bool:
        """Whether the run's judge calls go through the providers' batch APIs (see
        :mod:`assay.run.batch`; a dry run makes no call to batch)."""
        return self.config.batch is True and not self.config.dry_run

    async def passes(self, runner: Runner, store: RunStore, run_id: str, keep: bool
                     ) -> tuple[RunOutcome | None, BatchProgress | None]:
        """The run's cases run: once, or for a batch run the batch loop
        (:func:`assay.run.batch.judge_in_batches`), which may leave the run waiting."""
        if not self.batches():
            return await runner.run(run_id, keep=keep), None
        from assay.llm.batch import BatchBook
        from assay.run.batch import judge_in_batches

        self.engine.batch = BatchBook()
        try:
            return await judge_in_batches(runner, store, self.engine, run_id, keep=keep,
                                          wait=self.config.batch_wait,
                                          poll_s=self.config.batch_poll_s)
        finally:
            self.engine.batch = None

    def executor(self) -> RayExecutor | None:
        """Where the run's cases run when not here (``executor: ray``), started."""
        if self.config.executor != "ray":
            return None
        from assay.run.ray_executor import RayExecutor, Recipe, forwarded_environment

        targets = self.targets

        def resources(item: SuiteCase) -> dict[str, float] | None:
            name = self.config.target or item.target or self.suite.target
            if targets.given is not None or targets.file is None or name is None:
                return None
            found = targets.file.get(name)
            return dict(found.resources) if found is not None and found.resources else None

        recipe = Recipe(self.suite.model_copy(update={"cases": [], "case_source": None}),
                        self.config, targets.given, targets.owns_given,
                        environment=forwarded_environment())
        executor = RayExecutor(recipe, resources, self.engine.config.rate_limits)
        executor.start()
        return executor

    @staticmethod
    def _copy(store: RunStore, run_id: str, records: list[CaseRecord],
              executions_only: bool = False) -> None:
        """Store ``records`` (of another run) as results of ``run_id``, as they are: the
        runner then reports them without running them again; ``executions_only``: only
        what their agent did, which the runner then judges without running the agent."""
        for record in records:
            store.record_execution(run_id, record.case_id, record.repeat, record.execution)
            if executions_only:
                continue
            for score in record.scores:
                store.record_score(run_id, record.case_id, record.repeat, score)
            store.record_case(record.model_copy(update={"run_id": run_id}))
        store.flush()

    async def close(self) -> None:
        """Close the targets (killing agent processes) and the engine the session made."""
        await self.targets.aclose()
        if self.own_engine:
            await self.engine.aclose()

    async def calibration_failures(self) -> list[str]:
        """The calibration gate (the run's, else the suite's ``metadata.calibration_gate``),
        checked before the run: each judge it covers must have a current calibration in the
        run store that meets it."""
        gate = self.config.gates.calibration or CalibrationGate.of_suite(
            self.suite.metadata, str(self.suite.source or self.suite.name))
        if gate is None or self.store is None:  # no store: no calibration to check
            return []
        from assay.calibration.gate import calibration_failures

        failures: list[str] = []
        for target in self.target_names():
            failures += await calibration_failures(
                gate, self.suite.evaluators, self.store,
                default_model=self.engine.config.default_model,
                judge_model=self.judge_for(target), override_model=self.config.judge_model,
                suite_path=str(self.suite.source) if self.suite.source else None)
        return list(dict.fromkeys(failures))

    def notes(self) -> list[str]:
        """What a reader of this run's figures must be told."""
        notes = judge_notes(self.judge_models())
        not_run = self.suite.metadata.get("not_run") or {}
        if not_run:
            notes.append("not run, as their status says: " + "; ".join(
                f"{len(ids)} {status} case(s) ({', '.join(ids[:5])}"
                f"{', ...' if len(ids) > 5 else ''})" for status, ids in sorted(not_run.items())))
        for why in self.engine.offline.values():
            dry = self.config.dry_run  # a dry run counts the calls it would have made
            misses = self.engine.estimate.calls if dry else self.engine.offline_misses
            notes.append(f"offline: {why.rstrip('.')}. Its answers came from the response "
                         "cache" + (f"; {count_of(misses, 'call')} not in it "
                                    f"{'would fail' if dry else 'failed'}: resume the run "
                                    "with --retry-errors (retry_errors=True) once the model "
                                    "can be reached" if misses else ", all of them"))
        if self.engine.cache_problem:
            notes.append(f"{self.engine.cache_problem} ({self.engine.cache_failures} time(s)); "
                         "those answers were asked for again and not kept")
        return notes

    def _mark(self, run_id: str | None, status: RunStatus) -> None:
        """Leave a run that stopped ``status``: waiting instead, when it has batches at its
        providers still to collect (whatever stopped this process, a resume collects them
        and ``assay delete`` cancels them; failed would say there is nothing to wait for)."""
        if run_id is None or self.store is None:
            return
        with contextlib.suppress(EvaluationError):
            self.store.flush()
        if self.batches():
            from assay.store.batches import run_batches

            with contextlib.suppress(EvaluationError):
                if run_batches(self.store, run_id, open_only=True):
                    status = RunStatus.WAITING
        with contextlib.suppress(EvaluationError):
            self.store.set_status(run_id, status.value)


__all__ = ["DryRunEstimate", "EvaluationResult", "OnInputs", "RunSummary", "check",
           "check_async", "evaluate", "evaluate_async", "judge_case_async", "rerun_failed",
           "rerun_failed_async", "rescore", "rescore_async", "resume", "resume_async",
           "run_inputs", "suite_judge"]
