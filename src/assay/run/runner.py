"""The async engine that drives cases through a target and their evaluators.

For each (case, repeat) it runs the target once, runs every evaluator, and writes the
execution, each score and the :class:`CaseRecord` to the store the moment they exist. Resuming
a run skips what the store already has: a stored execution is reused (the agent is not run
again) and only the evaluators without a stored score run. Errors are scores, never exceptions
that stop the run; a value that is not data (agent output that cannot be stored) is that one
case's error.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from assay._util import case_filter
from assay._util.gc_pause import gc_relaxed
from assay._util.user_code import error_text, user_code
from assay.errors import ConfigError, EvaluationError
from assay.judges.base import DatasetMetric, EvalContext, Evaluator, dataset_metric
from assay.llm.batch import BATCH_SLOT
from assay.llm.engine import JudgeEngine
from assay.run.budget import Budget, record_cost
from assay.run.policies import policy_for
from assay.run.policies.base import ScoringPolicy
from assay.store.runs import READ_PAGE, RecordRejected, RunStore
from assay.suites.model import Suite, SuiteCase
from assay.targets.base import Target, sampling
from assay.types.case import Case
from assay.types.config import DEFAULT_AGENT_TIMEOUT_S, RunConfig
from assay.types.execution import Execution
from assay.types.records import CaseRecord, EvaluatorSpec, RunSummary, SummaryBuilder, Verdict
from assay.types.score import Score

TargetResolver = Callable[[str | None], Target]
"""A target name (None: outputs recorded in the data) -> the Target that runs it."""


class Progress(Protocol):
    """Where the runner reports progress (the CLI's progress bar, or nothing). A progress
    object may also have ``case_started(case_id, repeat)``, called when a case that has to
    run starts (a resumed case already stored is only advanced)."""

    def start(self, total: int, done: int, label: str = "") -> None: ...

    def advance(self, record: CaseRecord) -> None: ...


def _unselected(store: RunStore | None, run_id: str,
                keys: set[tuple[str, int]]) -> list[CaseRecord]:
    """The stored case records of ``run_id`` under ``keys``: finished results of cases the
    suite no longer selects (a resume after a case was removed or renamed, a re-run of
    failures whose copied results the suite dropped). They are kept, as the resume says, so
    they count in the run's summary and gates, and every surface that lists the run's rows
    (assay show, the results file, compare) agrees with its figures."""
    if store is None or not keys:
        return []
    return [r for r in store.iter_case_records(run_id) if (r.case_id, r.repeat) in keys]


class _NoProgress:
    def start(self, total: int, done: int, label: str = "") -> None:
        pass

    def advance(self, record: CaseRecord) -> None:
        pass


def select_cases(suite: Suite, config: RunConfig) -> Iterator[SuiteCase]:
    """The suite's cases that match the run's filter glob (and id list), streamed, each with
    the run's input overrides and settings applied (:func:`case_adjuster`)."""
    wanted = set(config.case_ids) if config.case_ids is not None else None
    adjust = case_adjuster(suite, config)
    for item in suite.iter_cases():
        if config.filter and not case_filter.matches(item.case.id, config.filter):
            continue
        if wanted is None or item.case.id in wanted:
            yield item if adjust is None else adjust(item)


def case_adjuster(suite: Suite, config: RunConfig) -> Callable[[SuiteCase], SuiteCase] | None:
    """What the run changes in a case before it runs: ``input_overrides`` deep-merged into
    its input (UiPath's ``--input-overrides``: a dict value merges into a dict, anything else
    replaces), and the UiPath eval set's settings the run chose, in its metadata. None when
    the run changes nothing, so an ordinary run pays nothing per case."""
    overrides = config.input_overrides or {}
    extra: dict[str, Any] = {}
    if config.model_settings_id or config.agent_memory_settings_id:
        from assay.suites.uipath import run_settings

        extra = run_settings(suite, config.model_settings_id, config.agent_memory_settings_id)
    if not overrides and not extra:
        return None

    def adjust(item: SuiteCase) -> SuiteCase:
        case = item.case
        update: dict[str, Any] = {}
        if case.id in overrides:
            update["input"] = overridden_input(case, overrides[case.id])
        if extra:
            update["metadata"] = {**case.metadata, **extra}
        return item.model_copy(update={"case": case.model_copy(update=update)})
    return adjust


def overridden_input(case: Case, override: Mapping[str, Any]) -> dict[str, Any]:
    """``case``'s input with ``override`` deep-merged into it; ConfigError for an input
    that is not an object (there are no fields to override)."""
    if not isinstance(case.input, dict):
        raise ConfigError(f"input_overrides for case {case.id!r}: its input is "
                          f"{'text' if isinstance(case.input, str) else 'a message list'}, "
                          "not an object with fields to override", code="invalid_config")
    return deep_merge(case.input, override)


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``override``'s keys: dicts merged key by key, anything else replaced."""
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(merged.get(key), dict) and isinstance(value, dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def check_case_adjustments(suite: Suite, config: RunConfig) -> None:
    """Refuse, before the first call, ids to run (``case_ids``, ``--eval-ids``) and input
    overrides for cases the suite does not have, overrides of an input that has no fields,
    and settings the eval set does not define: a mistyped id would silently run less."""
    if config.case_ids is not None:
        known = {item.case.id for item in suite.iter_cases()}
        unknown = [k for k in config.case_ids if k not in known]
        if unknown:
            raise ConfigError(f"case_ids (--eval-ids) name case(s) the suite does not have: "
                              f"{', '.join(repr(k) for k in unknown)}", code="invalid_config")
    overrides = config.input_overrides or {}
    if config.model_settings_id or config.agent_memory_settings_id:
        from assay.suites.uipath import run_settings

        run_settings(suite, config.model_settings_id, config.agent_memory_settings_id)
    if not overrides:
        return
    found = {item.case.id: item.case for item in suite.iter_cases()
             if item.case.id in overrides}
    missing = [k for k in overrides if k not in found]
    if missing:
        raise ConfigError(f"input_overrides name case(s) the suite does not have: "
                          f"{', '.join(repr(k) for k in missing)}", code="invalid_config")
    for case_id, override in overrides.items():
        overridden_input(found[case_id], override)


def count_cases(suite: Suite, config: RunConfig) -> int:
    if not config.filter and config.case_ids is None:
        return suite.count()
    return sum(1 for _ in select_cases(suite, config))


def count_executions(suite: Suite, config: RunConfig) -> int:
    """The (case, repeat) pairs a run of ``suite`` judges (see :meth:`Suite.repeats_of`)."""
    if suite.stored_repeats is None:
        return count_cases(suite, config) * config.repeat
    return sum(len(suite.repeats_of(item.case.id, config.repeat))
               for item in select_cases(suite, config))


def check_evaluator_names(suite: Suite) -> None:
    """Evaluator names key stored scores, so they must be unique within a case."""
    for case_id, duplicates in suite.facts().duplicate_names.items():
        raise EvaluationError(
            "duplicate_evaluator_name",
            f"case {case_id!r}: evaluator name(s) {', '.join(duplicates)} used more "
            "than once; give each evaluator a distinct 'name'")


def evaluator_spec(evaluator: Evaluator) -> EvaluatorSpec:
    """The evaluator's type and parameters, as a run records them."""
    return evaluator.spec()


@dataclass
class RunOutcome:
    """What a run produced: its summary (gates checked) and, when kept, its records;
    ``stopped`` says why it stopped with cases not run (its budget), None when it ran all."""

    summary: RunSummary
    records: list[CaseRecord]
    stopped: str | None = None


class CaseExecutor(Protocol):
    """Runs a case's agent and judges elsewhere (a Ray worker) and hands back what came out:
    the execution and the scores by evaluator name. The runner stores them and decides the
    case, so a case is stored once, by this process, whatever the executor retried."""

    def capacity(self) -> int:
        """Cases to keep in flight (each of a cluster's workers runs ``concurrency``)."""
        ...

    async def run_case(self, item: SuiteCase, repeat: int, execution: Execution | None,
                       have: dict[str, Score]) -> tuple[Execution, dict[str, Score]]: ...


class Slots:
    """A run's case slots, each a task pulling cases, awaited as ``asyncio.gather`` awaits
    tasks, but open to more while they run (an executor's capacity that grows): ``ended``
    fails with the first slot's error (or cancellation) as soon as it happens, else is done
    when every slot, added late or not, has ended."""

    def __init__(self, slot: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self.slot = slot
        self.tasks: list[asyncio.Future[None]] = []
        self.ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def fill(self, count: int) -> None:
        """Start slots until there are ``count`` (none is ever removed)."""
        while len(self.tasks) < count and not self.ended.done():
            task = asyncio.ensure_future(self.slot())
            task.add_done_callback(self._ended)
            self.tasks.append(task)
        if not self.tasks and not self.ended.done():  # no slot: nothing to wait for
            self.ended.set_result(None)

    def _ended(self, task: asyncio.Future[None]) -> None:
        if self.ended.done():
            return
        if task.cancelled():
            self.ended.set_exception(asyncio.CancelledError())
        elif task.exception() is not None:
            self.ended.set_exception(task.exception())  # type: ignore[arg-type]
        elif all(t.done() for t in self.tasks):
            self.ended.set_result(None)


class Runner:
    """Runs one suite into one run: ``store`` None keeps nothing (a dry run, or a case judged
    on its own)."""

    def __init__(self, suite: Suite, resolve_target: TargetResolver, engine: JudgeEngine,
                 store: RunStore | None, config: RunConfig, progress: Progress | None = None,
                 on_record: Callable[[CaseRecord], None] | None = None,
                 judge_for: Callable[[str | None], str | None] | None = None,
                 gate_failures: Sequence[str] = (),
                 policy: ScoringPolicy | None = None,
                 executor: CaseExecutor | None = None) -> None:
        self.suite = suite
        self.executor = executor
        """Where cases run when not in this process (None: here)."""
        self.policy = policy or policy_for(config)
        """Decides each case's verdict and the run's aggregates and gates."""
        self.gate_failures = list(gate_failures)
        """Gates found failing before the run (the calibration gate), added to its own."""
        self.resolve_target = resolve_target
        self.engine = engine
        self.store = store
        self.config = config
        self.progress = progress or _NoProgress()
        self.case_started: Callable[[str, int], None] | None = getattr(
            self.progress, "case_started", None)
        self.on_record = on_record
        self.judge_for = judge_for or (lambda _target: suite.judge_target)
        self._contexts: dict[tuple[str | None, int], EvalContext] = {}

    def context(self, target: str | None, repeat: int) -> EvalContext:
        """The evaluation context of a case: the judge of the target that ran it, and the
        repeat as the sample index (so repeats are independent judgements, not cache hits)."""
        key = (target, repeat)
        ctx = self._contexts.get(key)
        if ctx is None:
            ctx = EvalContext(self.engine, self.judge_for(target),
                              override_model=self.config.judge_model, sample=repeat,
                              agent=self.suite.agent)
            self._contexts[key] = ctx
        return ctx

    async def run(self, run_id: str, keep: bool = True) -> RunOutcome:
        """Run (or resume) ``run_id``; results already in the store are not redone.

        A pool of ``concurrency`` workers (an executor's ``capacity()``, more as it grows)
        pulls (case, repeat) pairs from an iterator, so memory does not grow with the number
        of cases. Records are reported to ``on_record`` and summarised; with ``keep`` they
        are also returned.
        """
        total = count_executions(self.suite, self.config)
        store = self.store
        stored_cases = store.case_keys(run_id) if store else set()
        kept: list[CaseRecord] = []
        summary = SummaryBuilder(track_cases=self.config.repeat > 1)
        fold = self.policy.fold(self.suite)
        self.progress.start(total, 0, self.suite.name)
        # Evaluators with a dataset-level metric (classification) get every case's score.
        reducers: dict[str, tuple[DatasetMetric, list[Score]]] = {}

        def report(record: CaseRecord) -> None:
            summary.add(record)
            fold.add(record)
            for score in record.scores:
                if score.name in reducers:
                    reducers[score.name][1].append(score)
            if keep:
                kept.append(record)
            if self.on_record is not None:
                with user_code("the on_record hook"):  # the caller's: an exit in it is an
                    self.on_record(record)  # error naming it, the records stored kept
            self.progress.advance(record)

        work = stored_pages(store, run_id, ((item, r) for item in select_cases(
            self.suite, self.config) for r in self.suite.repeats_of(item.case.id,
                                                                     self.config.repeat)))
        leftover = set(stored_cases)  # finished cases the suite's selection has not reached
        budget = Budget(self.config.budget_usd) if self.config.budget_usd else None

        async def worker() -> None:
            for item, repeat, execution, have in work:
                evaluators = self.suite.evaluators_for(item)
                for evaluator in evaluators:
                    metric = dataset_metric(evaluator)
                    if metric is not None and metric.reduces \
                            and metric.name not in reducers:
                        reducers[metric.name] = (metric, [])
                key = (item.case.id, repeat)
                leftover.discard(key)
                if execution is not None:
                    evaluators = self.suite.evaluators_after(item, execution)
                if key in stored_cases and execution is not None and \
                        all(e.name in have for e in evaluators):
                    report(self._record(run_id, item, repeat, execution, evaluators, have,
                                        store_it=False))
                    continue
                if budget is not None and not await budget.admit():
                    continue  # not run: a resume runs it
                if self.case_started is not None:
                    self.case_started(item.case.id, repeat)
                if self.executor is not None:
                    record = await self._elsewhere(run_id, item, repeat, execution,
                                                   evaluators, have)
                else:
                    found = await self._run_case(run_id, item, repeat, execution,
                                                 evaluators, have)
                    if found is None:  # its judgements wait for a batch
                        continue
                    record = found
                if budget is not None:
                    budget.done(record_cost(record))
                report(record)
                if self.executor is not None:  # a cluster that grew runs more at once
                    slots.fill(min(self.executor.capacity(), max(total, 1)))

        async def flusher(store: RunStore) -> None:
            while True:
                await asyncio.sleep(store.flush_seconds)
                store.flush(wait=False)

        slots = Slots(worker)
        slots.fill(min(self.executor.capacity() if self.executor else self.config.concurrency,
                       max(total, 1)))
        timer = asyncio.ensure_future(flusher(store)) if store else None
        try:
            with gc_relaxed():
                await slots.ended
        except BaseException:
            for task in slots.tasks:
                task.cancel()
            await asyncio.gather(*slots.tasks, return_exceptions=True)
            raise
        finally:
            if timer is not None:
                timer.cancel()
            if store:
                store.flush()  # what finished is written, however the run ends
        for record in _unselected(store, run_id, leftover):
            report(record)
        if keep:
            order = {(item.case.id, r): i for i, item in enumerate(
                select_cases(self.suite, self.config)) for r in range(self.config.repeat)}
            kept.sort(key=lambda r: order.get((r.case_id, r.repeat), len(order)))
        result = summary.build()
        for name, (metric, scores) in reducers.items():
            reduced = metric.reduce(scores)
            if reduced is not None:
                result.dataset_metrics[name] = reduced
        stopped = budget.failure() if budget is not None else None
        fold.finish(result, empty_run_failures(result) + self.gate_failures +
                    ([stopped] if stopped else []))
        return RunOutcome(result, kept, stopped)

    async def _run_case(self, run_id: str, item: SuiteCase, repeat: int,
                        execution: Execution | None, evaluators: list[Evaluator],
                        have: dict[str, Score]) -> CaseRecord | None:
        """Run and judge a case, storing each part as it exists; None when a judgement of
        it waits for a batch (a batch run: see :mod:`assay.llm.batch`), its other parts
        stored, the case itself not."""
        case = item.case
        target_name = self.target_of(item)
        if execution is None:
            execution = await self._execute(item, target_name, repeat)
            self._store(run_id, case.id, repeat, execution)
            evaluators = self.suite.evaluators_after(item, execution)
        ctx = self.context(target_name, repeat)
        book = self.engine.batch

        async def judge(evaluator: Evaluator) -> Score | None:
            if evaluator.name in have:
                return have[evaluator.name]
            if execution.error is not None:
                code = execution.error_code or "target_failed"
                what = {"invalid_output": "the agent's output is not data",
                        "simulator_failed": "the conversation stopped"}.get(
                    code, "the target failed")
                score = Score.failed(evaluator.name, code, f"{what}: {execution.error}")
            elif book is None:
                score = await evaluator.evaluate(case, execution, ctx)
            else:
                token = BATCH_SLOT.set((case.id, repeat, evaluator.name))
                try:
                    score = await evaluator.evaluate(case, execution, ctx)
                finally:
                    BATCH_SLOT.reset(token)
                if book.waits(case.id, repeat, evaluator.name):
                    return None  # not a score: the judgement is in a batch
            return self._store_score(run_id, case.id, repeat, score)

        if len(evaluators) == 1:
            found = {evaluators[0].name: await judge(evaluators[0])}
        else:
            done = await asyncio.gather(*(judge(e) for e in evaluators))
            found = {e.name: s for e, s in zip(evaluators, done, strict=True)}
        if book is not None and None in found.values():
            return None
        scores: dict[str, Score] = found  # type: ignore[assignment]
        record = self._record(run_id, item, repeat, execution, evaluators, scores,
                              store_it=False)
        if self.config.cause_analysis and record.verdict is Verdict.FAIL and \
                not self.config.dry_run:
            from assay.judges.llm.cause_analysis import analyse_case

            # The case's own judge: --judge-model, else its first LLM evaluator's model, else
            # the run's judge.
            own = next((m for e in evaluators for m in e.models() if m), None)
            record.cause_analysis = await analyse_case(
                self.engine, ctx.model(own), case, execution, record.scores, sample=repeat)
        self._store_case(record)
        return record

    async def _elsewhere(self, run_id: str, item: SuiteCase, repeat: int,
                         execution: Execution | None, evaluators: list[Evaluator],
                         have: dict[str, Score]) -> CaseRecord:
        """A case run by the executor, stored and decided here as :meth:`_run_case` does."""
        assert self.executor is not None
        fresh = execution is None
        execution, scores = await self.executor.run_case(item, repeat, execution, have)
        if fresh:
            self._store(run_id, item.case.id, repeat, execution)
            evaluators = self.suite.evaluators_after(item, execution)
        kept: dict[str, Score] = {}
        for evaluator in evaluators:
            if evaluator.name in have:
                kept[evaluator.name] = have[evaluator.name]
                continue
            score = scores.get(evaluator.name)
            if execution.error_code == "invalid_output" or score is None:
                # The execution could not be stored (so its judgements of it are moot), or
                # the worker answered without this score.
                why = execution.error or "the worker returned no score for it"
                score = Score.failed(evaluator.name, execution.error_code or
                                     "evaluator_failed", why)
            kept[evaluator.name] = self._store_score(run_id, item.case.id, repeat, score)
        return self._record(run_id, item, repeat, execution, evaluators, kept)

    def _store_score(self, run_id: str, case_id: str, repeat: int, score: Score) -> Score:
        """Store a score (none in a dry run); one the store refuses becomes an error."""
        if self.store is None:
            return score
        try:
            self.store.record_score(run_id, case_id, repeat, score)
        except RecordRejected as exc:
            score = Score.failed(score.name, "invalid_output",
                                 f"the score cannot be stored: {exc}")
            self.store.record_score(run_id, case_id, repeat, score)
        return score

    def target_of(self, item: SuiteCase) -> str | None:
        """The target that runs a case: ``--target`` first, then the case's, then the suite's."""
        return self.config.target or item.target or self.suite.target

    async def _execute(self, item: SuiteCase, target_name: str | None,
                       repeat: int) -> Execution:
        case = item.case
        if item.execution is not None and target_name is None:
            execution = item.execution.model_copy()
            if execution.input in ("", None):
                execution.input = case.input
            return execution
        target = self.resolve_target(target_name)
        started = time.perf_counter()
        for attempt in range(self.config.agent_retries + 1):
            execution = await self._attempt(target, case, repeat)
            if execution.error is None or attempt == self.config.agent_retries:
                break
            started = time.perf_counter()
        if execution.latency_ms is None and target.measures_latency:
            execution.latency_ms = (time.perf_counter() - started) * 1000
        return execution.as_data()

    async def _attempt(self, target: Target, case: Case, repeat: int) -> Execution:
        """One run of the agent, bounded by :func:`agent_timeout`.

        The agent runs in this task under a deadline (not in a task of its own), so a
        ``TimeoutError`` is the deadline's only when the deadline expired; one the agent
        raised itself is its error like any other."""
        timeout = agent_timeout(self.config, target)
        deadline = asyncio.timeout(timeout)
        try:
            with sampling(repeat), user_code():  # a plugin's target is user code
                async with deadline:
                    return await target.run(case)
        except Exception as exc:  # a target must not stop the run, even by exiting
            if isinstance(exc, TimeoutError) and deadline.expired():
                return Execution(input=case.input, error=f"the agent took longer than the "
                                 f"agent timeout of {timeout:g}s and was stopped")
            return Execution(input=case.input, error=error_text(exc))

    def _store(self, run_id: str, case_id: str, repeat: int, execution: Execution) -> None:
        if self.store is None:
            return
        try:
            self.store.record_execution(run_id, case_id, repeat, execution)
        except RecordRejected as exc:
            execution.output, execution.messages, execution.trace = None, [], []
            execution.retrieved_context = []
            execution.error = f"the agent's execution cannot be stored: {exc}"
            execution.error_code = "invalid_output"
            self.store.record_execution(run_id, case_id, repeat, execution)

    def _record(self, run_id: str, item: SuiteCase, repeat: int, execution: Execution,
                evaluators: list[Evaluator], scores: dict[str, Score],
                store_it: bool = True) -> CaseRecord:
        judged = [e for e in evaluators if e.name in scores]
        ordered = [scores[e.name] for e in judged]
        outcome = self.policy.case_outcome(judged, ordered)
        record = CaseRecord(
            run_id=run_id, case_id=item.case.id, repeat=repeat, case=item.case,
            target=self.target_of(item), execution=execution, scores=ordered,
            score=outcome.score, verdict=outcome.verdict, source=item.source,
            finished_at=time.time(), overall_score=outcome.native,
            evaluators=None if item.evaluators is None else
            [evaluator_spec(e) for e in item.evaluators])
        if store_it:
            self._store_case(record)
        return record

    def _store_case(self, record: CaseRecord) -> None:
        """Store a case's record (its execution and scores are stored already)."""
        if self.store is not None and not self.config.dry_run:
            with contextlib.suppress(RecordRejected):  # its parts were checked one by one
                self.store.record_case(record)


Resumed = tuple[SuiteCase, int, Execution | None, dict[str, Score]]
"""A case and repeat to run, with what a stopped run stored of it: its execution (None when
it has none) and its scores by evaluator."""


def stored_pages(store: RunStore | None, run_id: str,
                 work: Iterator[tuple[SuiteCase, int]]) -> Iterator[Resumed]:
    """Each (case, repeat) of ``work`` in turn with its stored execution and scores, read a
    page of the store's ``read_page`` cases at a time (two queries a page): a resume holds one page
    of stored answers, not every answer of the run, and does not ask once a case."""
    size = store.read_page if store else READ_PAGE
    while page := list(itertools.islice(work, size)):
        keys = {(item.case.id, repeat) for item, repeat in page}
        executions = store.executions(run_id, keys=keys) if store else {}
        scores = store.scores(run_id, keys=keys) if store else {}
        for item, repeat in page:
            key = (item.case.id, repeat)
            yield item, repeat, executions.pop(key, None), scores.pop(key, {})


def agent_timeout(config: RunConfig, target: Target) -> float:
    """How long one run of ``target`` may take: the run's (or suite's) ``agent_timeout_s``,
    else :data:`DEFAULT_AGENT_TIMEOUT_S`, or the target's own ``timeout_s`` when longer (a
    timeout written on the target is never cut short by the default)."""
    if config.agent_timeout_s is not None:
        return config.agent_timeout_s
    own = target.timeout_s
    return max(DEFAULT_AGENT_TIMEOUT_S, own) if own is not None else DEFAULT_AGENT_TIMEOUT_S


def case_verdict(evaluators: list[Evaluator], scores: list[Score],
                 config: RunConfig) -> tuple[float | None, Verdict]:
    """The case score and verdict from its evaluators' scores, by the run's policy (see
    :mod:`assay.run.policies`)."""
    outcome = policy_for(config).case_outcome(evaluators, scores)
    return outcome.score, outcome.verdict


def no_case_scored(summary: RunSummary) -> str:
    """Why a run with cases scored none of them, in the words its output shows."""
    measured = [f"{name} ({e.measured})" for name, e in summary.evaluators.items()
                if e.measured]
    if measured and not summary.evaluator_errors:
        return (f"no case was scored: the run only measured ({', '.join(measured)}), and a "
                "measurement counts in no verdict; add a scorer, or a pass_if, that passes "
                "or fails cases")
    if summary.count(Verdict.SKIPPED) == summary.cases:
        return (f"no case was scored: no evaluator applied to any of the {summary.cases} "
                "case(s), all skipped (see each score's reason)")
    return "no case could be scored"


def empty_run_failures(summary: RunSummary) -> list[str]:
    """A run with no case, or none scored (every case an error, not applicable, or only
    measured), never passes, whatever its policy."""
    if summary.cases == 0:
        return ["no case was run (check the case filter, --filter or --eval-id or "
                "--eval-ids, filter= or case_ids= in Python, and the suite's cases)"]
    if summary.scored == 0:
        return [no_case_scored(summary)]
    return []


def snapshot_evaluators(suite: Suite) -> list[EvaluatorSpec]:
    return [evaluator_spec(e) for e in suite.evaluators]

