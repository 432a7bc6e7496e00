"""The async engine that drives cases through a target and their evaluators.

For each (case, repeat) it runs the target once, runs every evaluator, and writes each
execution, score and case result to the store the moment it exists. Resuming a run skips what
the store already has: a stored execution is reused (the agent is not run again) and only the
evaluators without a stored score run. Errors are scores, never exceptions that stop the run.
"""

from __future__ import annotations

import asyncio
import fnmatch
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from assay import __version__
from assay.errors import EvaluationError
from assay.judges.base import EvalContext, Evaluator
from assay.llm.engine import JudgeEngine
from assay.llm.models import display_model
from assay.model import Execution, Score, ScoreError, Usage
from assay.run_config import RunConfig
from assay.store.runs import RunStore
from assay.suites.model import Suite, SuiteCase
from assay.targets.base import Target


@dataclass
class CaseResult:
    """One (case, repeat): its execution, its scores, the weighted score and the verdict."""

    case_id: str
    repeat: int
    score: float | None
    verdict: str
    scores: list[Score]
    execution: Execution
    row: dict[str, Any]


@dataclass
class RunSummary:
    """Aggregates over a run's case results; errors are counted, never averaged in."""

    cases: int = 0
    scored: int = 0
    mean_score: float | None = None
    verdicts: dict[str, int] = field(default_factory=dict)
    evaluator_errors: int = 0
    usage: Usage = field(default_factory=Usage)
    gate_failures: list[str] = field(default_factory=list)
    score_total: float = 0.0
    dataset_metrics: dict[str, Score] = field(default_factory=dict)

    def add(self, result: CaseResult) -> None:
        """Fold one case result in; errors are counted, never averaged in."""
        self.cases += 1
        if result.score is not None:
            self.scored += 1
            self.score_total += result.score
            self.mean_score = self.score_total / self.scored
        self.verdicts[result.verdict] = self.verdicts.get(result.verdict, 0) + 1
        for s in result.scores:
            self.usage = self.usage + s.usage
            self.evaluator_errors += 1 if s.error else 0

    def check_gates(self, config: RunConfig) -> None:
        """Record every gate of ``config`` that this run fails."""
        gates = config.gates
        self.gate_failures = []
        failed = self.verdicts.get("fail", 0)
        if gates.max_failed is not None and failed > gates.max_failed:
            self.gate_failures.append(f"{failed} case(s) failed (allowed {gates.max_failed})")
        if gates.max_errors is not None and self.evaluator_errors > gates.max_errors:
            unscored = self.verdicts.get("error", 0)
            self.gate_failures.append(
                f"{self.evaluator_errors} evaluator score(s) could not be computed, "
                f"{unscored} case(s) left with no score (allowed {gates.max_errors} errors)")
        if gates.min_mean_score is not None and (
                self.mean_score is None or self.mean_score < gates.min_mean_score):
            mean = "none" if self.mean_score is None else f"{self.mean_score:.3f}"
            self.gate_failures.append(
                f"mean score {mean} is below the gate {gates.min_mean_score:.3f}")

    @property
    def passed(self) -> bool:
        return not self.gate_failures

    def as_dict(self) -> dict[str, Any]:
        return {"cases": self.cases, "scored": self.scored, "mean_score": self.mean_score,
                "verdicts": self.verdicts, "evaluator_errors": self.evaluator_errors,
                "usage": self.usage.model_dump(), "gate_failures": self.gate_failures,
                "dataset_metrics": {k: v.model_dump(mode="json")
                                    for k, v in self.dataset_metrics.items()},
                "passed": self.passed}


@dataclass
class RunResult:
    run_id: str
    status: str
    results: list[CaseResult]
    summary: RunSummary


class Progress(Protocol):
    """Where the runner reports progress (the CLI's progress bar, or nothing)."""

    def start(self, total: int, done: int) -> None: ...

    def advance(self, result: CaseResult) -> None: ...


class _NoProgress:
    def start(self, total: int, done: int) -> None:
        pass

    def advance(self, result: CaseResult) -> None:
        pass


TargetResolver = Callable[[str | None], Target]


def select_cases(suite: Suite, config: RunConfig) -> Iterator[SuiteCase]:
    """The suite's cases that match the run's filter glob, streamed."""
    for item in suite.iter_cases():
        if not config.filter or fnmatch.fnmatchcase(item.case.id, config.filter):
            yield item


def count_cases(suite: Suite, config: RunConfig) -> int:
    if not config.filter:
        return suite.count()
    return sum(1 for _ in select_cases(suite, config))


def check_evaluator_names(suite: Suite) -> None:
    """Evaluator names key stored scores, so they must be unique within a case."""
    for case_id, duplicates in suite.facts().duplicate_names.items():
        raise EvaluationError(
            "duplicate_evaluator_name",
            f"case {case_id!r}: evaluator name(s) {', '.join(duplicates)} used more "
            "than once; give each evaluator a distinct 'name'")


def snapshot(suite: Suite, config: RunConfig, engine: JudgeEngine,
             targets: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a run records about how it was made (no secrets: targets come redacted)."""
    models = sorted({display_model(str(config.judge_model or m or suite.judge_target
                                       or engine.config.default_model))
                     for m in suite.facts().models})
    return {
        "suite_path": str(suite.source.resolve()) if suite.source else None,
        "suite_name": suite.name,
        "suite_hash": suite.fingerprint(),
        "target": suite.target,
        "targets": targets or {},
        "judge_models": models,
        "run": {**config.model_dump(mode="json"), "judge_model": (
            display_model(config.judge_model) if config.judge_model else None)},
        "assay_version": __version__,
    }


class Runner:
    """Runs one suite into one stored run."""

    def __init__(self, suite: Suite, resolve_target: TargetResolver, engine: JudgeEngine,
                 store: RunStore, config: RunConfig, progress: Progress | None = None,
                 on_result: Callable[[CaseResult], None] | None = None) -> None:
        self.suite = suite
        self.on_result = on_result
        self.resolve_target = resolve_target
        self.engine = engine
        self.store = store
        self.config = config
        self.progress = progress or _NoProgress()
        self.ctx = EvalContext(engine, suite.judge_target, override_model=config.judge_model)

    async def preflight(self) -> None:
        """Check every judge model and target before the first case runs."""
        check_evaluator_names(self.suite)
        facts = self.suite.facts()
        models = {self.ctx.model(m) for m in facts.models}
        names = facts.targets
        if models:  # an all-deterministic suite needs no judge model at all
            await self.engine.preflight(*models)
        for name in names:
            await self.resolve_target(name).preflight()

    async def run(self, run_id: str, keep_results: bool = True) -> RunResult:
        """Run (or resume) ``run_id``; results already in the store are not redone.

        A fixed pool of ``concurrency`` workers pulls (case, repeat) pairs from an iterator,
        so memory does not grow with the number of cases. With ``keep_results`` False the
        results are only reported to ``on_result`` and summarised, not kept.
        """
        total = count_cases(self.suite, self.config) * self.config.repeat
        stored_exec = self.store.executions(run_id)
        stored_scores = self.store.scores(run_id)
        stored_rows = {(r["case_id"], r["repeat"]): r for r in self.store.case_rows(run_id)}
        results: list[CaseResult] = []
        summary = RunSummary()
        self.progress.start(total, 0)
        # Evaluators with a dataset-level metric (classification) get every case's score.
        reducers: dict[str, tuple[Evaluator, list[Score]]] = {}

        def report(result: CaseResult) -> None:
            summary.add(result)
            for score in result.scores:
                if score.name in reducers:
                    reducers[score.name][1].append(score)
            if keep_results:
                results.append(result)
            if self.on_result is not None:
                self.on_result(result)
            self.progress.advance(result)

        work = ((item, r) for item in select_cases(self.suite, self.config)
                for r in range(self.config.repeat))

        async def worker() -> None:
            for item, repeat in work:
                for evaluator in self.suite.evaluators_for(item):
                    if hasattr(evaluator, "reduce") and evaluator.name not in reducers:
                        reducers[evaluator.name] = (evaluator, [])
                key = (item.case.id, repeat)
                names = [e.name for e in self.suite.evaluators_for(item)]
                have = stored_scores.pop(key, {})
                if key in stored_rows and all(n in have for n in names):
                    report(_from_stored(stored_rows.pop(key), have, stored_exec.pop(key, None)))
                    continue
                report(await self._run_case(run_id, item, repeat, stored_exec.pop(key, None),
                                            have))

        async def flusher() -> None:
            while True:
                await asyncio.sleep(self.store.flush_seconds)
                self.store.flush()

        workers = [asyncio.ensure_future(worker())
                   for _ in range(min(self.config.concurrency, max(total, 1)))]
        timer = asyncio.ensure_future(flusher())
        try:
            await asyncio.gather(*workers)
        except BaseException:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        finally:
            timer.cancel()
            self.store.flush()  # what finished is written, however the run ends
        if keep_results:
            order = {(item.case.id, r): i for i, item in enumerate(
                select_cases(self.suite, self.config)) for r in range(self.config.repeat)}
            results.sort(key=lambda r: order.get((r.case_id, r.repeat), 0))
        for name, (evaluator, scores) in reducers.items():
            summary.dataset_metrics[name] = evaluator.reduce(scores)  # type: ignore[attr-defined]
        summary.check_gates(self.config)
        return RunResult(run_id, "completed", results, summary)

    async def _run_case(self, run_id: str, item: SuiteCase, repeat: int,
                        execution: Execution | None, have: dict[str, Score]) -> CaseResult:
        case = item.case
        target_name = item.target or self.suite.target
        if execution is None:
            target = self.resolve_target(target_name)
            started = time.perf_counter()
            try:
                execution = await target.run(case)
            except Exception as exc:  # a target must not stop the run
                execution = Execution(input=case.input, error=f"{type(exc).__name__}: {exc}")
            if execution.latency_ms is None:
                execution.latency_ms = (time.perf_counter() - started) * 1000
            if not self.config.dry_run:
                self.store.record_execution(run_id, case.id, repeat, execution)
        evaluators = self.suite.evaluators_for(item)

        async def judge(evaluator: Evaluator) -> Score:
            if evaluator.name in have:
                return have[evaluator.name]
            if execution.error is not None:
                score = Score(name=evaluator.name, error=ScoreError(
                    code="target_failed", message=f"the target failed: {execution.error}"))
            else:
                score = await evaluator.evaluate(case, execution, self.ctx)
            if not (self.config.dry_run and score.error and score.error.code == "dry_run"):
                self.store.record_score(run_id, case.id, repeat, score)
            return score

        scores = list(await asyncio.gather(*(judge(e) for e in evaluators)))
        value, verdict = case_verdict(evaluators, scores, self.config)
        row = result_row(self.suite, item, repeat, target_name, execution, evaluators, scores,
                         value, verdict)
        if not self.config.dry_run:
            self.store.record_case(run_id, case.id, repeat, value, verdict, row)
        return CaseResult(case.id, repeat, value, verdict, scores, execution, row)


def case_verdict(evaluators: list[Evaluator], scores: list[Score],
                 config: RunConfig) -> tuple[float | None, str]:
    """Weighted mean of the scores that have values; an evaluator that failed a required
    check (``details.required_failed``) fails the case whatever the mean."""
    total_weight = 0.0
    weighted = 0.0
    for evaluator, score in zip(evaluators, scores, strict=True):
        if score.value is not None:
            weighted += score.value * evaluator.weight
            total_weight += evaluator.weight
    if not scores:
        return None, "error"
    if total_weight == 0:
        if all(s.value is not None for s in scores):
            return 0.0, config.thresholds.verdict(0.0)
        return None, "error"
    value = weighted / total_weight
    verdict = config.thresholds.verdict(value)
    if any((s.details or {}).get("required_failed") for s in scores):
        verdict = "fail"
    return value, verdict


def result_row(suite: Suite, item: SuiteCase, repeat: int, target: str | None,
               execution: Execution, evaluators: list[Evaluator], scores: list[Score],
               value: float | None, verdict: str) -> dict[str, Any]:
    """The per-case result row, in AgentV's snake_case JSONL shape plus assay's fields."""
    usage = Usage()
    for s in scores:
        usage = usage + s.usage
    row: dict[str, Any] = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "eval_id": item.case.id,
        "dataset": suite.name,
        "repeat": repeat,
        "score": value,
        "verdict": verdict,
        "hits": [f"[{s.name}] {h}" for s in scores for h in s.hits],
        "misses": [f"[{s.name}] {m}" for s in scores for m in s.misses],
        "candidate_answer": execution.output_text(),
        "target": target,
        "reasoning": " | ".join(f"{s.name}: {s.rationale}" for s in scores if s.rationale),
        "evaluator_results": [
            {
                "name": s.name, "type": e.type, "score": s.value, "weight": e.weight,
                "raw": s.raw, "scale": s.scale, "passed": s.passed,
                "verdict": "error" if s.error else ("pass" if s.passed else "fail"),
                "hits": s.hits, "misses": s.misses, "reasoning": s.rationale,
                "error": s.error.model_dump() if s.error else None,
                "details": s.details, "judge_model": s.judge_model,
            }
            for e, s in zip(evaluators, scores, strict=True)
        ],
        "errors": sum(1 for s in scores if s.error),
        "usage": usage.model_dump(),
        "latency_ms": execution.latency_ms,
    }
    if execution.error:
        row["error"] = execution.error
    return row


def _from_stored(row: dict[str, Any], scores: dict[str, Score],
                 execution: Execution | None) -> CaseResult:
    data = row["row"]
    ordered = [scores[r["name"]] for r in data.get("evaluator_results", []) if r["name"] in scores]
    return CaseResult(row["case_id"], row["repeat"], row["score"], row["verdict"], ordered,
                      execution or Execution(), data)


def summarise(results: list[CaseResult], config: RunConfig) -> RunSummary:
    """Aggregate case results and check the run's gates."""
    summary = RunSummary()
    for result in results:
        summary.add(result)
    summary.check_gates(config)
    return summary
