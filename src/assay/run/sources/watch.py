"""Online evaluation: judge new traces as they arrive, a sample of them, within a budget.

A :class:`Watcher` reads a source's traces that are complete (no span received for
``settle_s`` seconds, for the receiver's store), decides for each once, and judges those it
picks into the run of the current period (one run per hour or day, all under one suite name,
so the runs list and chart show them as a trend):

- only traces that pass the filters are considered (the others are recorded as filtered out);
- a trace whose span failed, or that carries user feedback (a span named, or an attribute
  starting with, one of the feedback markers), is always judged;
- any other is judged when its sampling draw (a hash of the watcher and the trace id, so the
  same trace draws the same way after a restart) falls under the rate;
- no batch starts once the judging cost of the last hour reached the ceiling: the traces left
  wait, undecided, for the next tick (a batch may overrun the ceiling by its own cost).

Every decision is stored (:mod:`assay.store.traces`) under the watcher's name and its
evaluators' version, after the judged cases are stored in the period's run. A watcher that
stops anywhere resumes where it stopped: a trace decided is never decided again, a trace
judged but not yet recorded as decided is in the period's run already, whose stored results
the run reuses, and a trace not decided is judged on the next tick. Changing the evaluators
is a new version: every trace is judged again, once, by it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.errors import ConfigError, EvaluationError
from assay.run.policies import settle
from assay.run.sources.base import AttributeFilter, SourcedTrace, TraceQuery, TraceSource
from assay.run.sources.suite import TraceCase, trace_case
from assay.store import queries
from assay.store.runs import RunStore
from assay.store.traces import cost_since, decided, record_decisions
from assay.suites.model import Suite, SuiteCase
from assay.traces.reader import TraceReading
from assay.types.config import RunConfig

FEEDBACK_MARKERS = ("feedback", "user_feedback", "user.feedback")
PERIODS = {"hour": "%Y%m%dT%H", "day": "%Y%m%d", "week": "%GW%V"}
HOUR_S = 3600.0


@dataclass(frozen=True)
class SamplingRules:
    """Which traces are judged: see the module's description."""

    rate: float = 1.0
    filters: tuple[AttributeFilter, ...] = ()
    always_on_error: bool = True
    feedback_markers: tuple[str, ...] = FEEDBACK_MARKERS
    max_cost_per_hour: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ConfigError(f"sampling rate {self.rate}: expected a fraction from 0 to 1",
                              code="invalid_option")
        if self.max_cost_per_hour is not None and not self.max_cost_per_hour >= 0:
            raise ConfigError(f"cost ceiling {self.max_cost_per_hour}: expected dollars per "
                              "hour, 0 or more", code="invalid_option")


def has_feedback(reading: TraceReading, markers: Sequence[str]) -> bool:
    """Whether a span of the trace carries user feedback: its name is a marker, or one of
    its attributes or events starts with one."""
    wanted = tuple(m.lower() for m in markers)
    if not wanted:
        return False
    for span in reading.execution.trace:
        if span.name.lower() in wanted:
            return True
        if any(k.lower().startswith(wanted) for k in span.attributes):
            return True
        if any(str(e.get("name", "")).lower().startswith(wanted) for e in span.events):
            return True
    return False


def draw(watcher: str, trace_id: str) -> float:
    """The trace's sampling draw in [0, 1): the same for the same watcher and trace."""
    digest = hashlib.sha256(f"{watcher}\0{trace_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass
class TickReport:
    """What one pass over the source did."""

    judged: int = 0
    sampled_out: int = 0
    filtered_out: int = 0
    waiting: int = 0
    """Traces left undecided for the cost ceiling; judged on a later tick."""
    run_ids: list[str] = field(default_factory=list)
    cost: float = 0.0

    def line(self) -> str:
        return (f"{self.judged} judged, {self.sampled_out} sampled out, "
                f"{self.filtered_out} filtered out"
                + (f", {self.waiting} waiting for the cost ceiling" if self.waiting else "")
                + (f" (run {', '.join(self.run_ids)})" if self.run_ids else ""))


class Watcher:
    """One online evaluation of one source by one suite's evaluators (see the module)."""

    def __init__(self, source: TraceSource, suite: Suite, store: RunStore, *, name: str,
                 config: RunConfig | None = None, rules: SamplingRules | None = None,
                 period: str = "hour", settle_s: float = 5.0, batch: int = 50,
                 query: TraceQuery | None = None) -> None:
        if period not in PERIODS:
            raise ConfigError(f"period {period!r}: expected one of {', '.join(PERIODS)}",
                              code="invalid_option")
        if not suite.evaluators and not (config and config.judges):
            raise ConfigError("an online evaluation needs evaluators: give a suite that has "
                              "them, or --judges", code="missing_evaluator")
        self.source, self.store, self.name = source, store, name
        self.suite = suite
        self.config = config or RunConfig()
        self.rules = rules or SamplingRules()
        self.period, self.settle_s, self.batch = period, settle_s, max(1, batch)
        self.query = query or TraceQuery()
        self.version = self._version()
        self.key = f"{name}@{self.version}"[:200]

    def _version(self) -> str:
        """The evaluators' version: their recorded specs and the judge model."""
        specs = [e.spec().model_dump(mode="json") for e in self.suite.evaluators]
        text = json.dumps({"evaluators": specs, "judges": self.config.judges,
                           "judge": self.config.judge_model or self.suite.judge_target},
                          sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def run_id(self, now: float) -> str:
        stamp = time.strftime(PERIODS[self.period], time.gmtime(now))
        return f"watch-{stamp}-{hashlib.sha256(self.key.encode()).hexdigest()[:8]}"

    # -- one pass --------------------------------------------------------------------------

    async def tick(self, now: float | None = None) -> TickReport:
        """Decide every complete trace not decided yet; judge those picked."""
        now = time.time() if now is None else now
        report = TickReport()
        picked: list[tuple[TraceCase, str]] = []
        over = False  # the cost ceiling reached: picked traces wait, the rest are decided
        for chunk in self._undecided(now):
            skipped: list[tuple[str, str, str | None, str | None, float | None]] = []
            for trace in chunk:
                reading = trace.read()
                why = self._why(trace, reading)
                if why in ("filtered_out", "sampled_out"):
                    skipped.append((trace.trace_id, why, None, None, None))
                    setattr(report, why, getattr(report, why) + 1)
                else:
                    picked.append((TraceCase(trace_case(trace, reading), reading, trace), why))
            record_decisions(self.store, self.key, skipped, now)
            while len(picked) >= self.batch and not over:
                over = not await self._judge(picked[:self.batch], now, report)
                if not over:
                    del picked[:self.batch]
            if over:
                report.waiting += len(picked)
                picked = []
        if picked and not over and not await self._judge(picked, now, report):
            report.waiting += len(picked)
        return report

    def _undecided(self, now: float) -> Any:
        """The source's complete traces in chunks, those decided already left out."""
        def skip(ids: Sequence[str]) -> set[str]:
            return decided(self.store, self.key, ids)

        chunk: list[SourcedTrace] = []
        for trace in self.source.traces(self.query, settled_before=now - self.settle_s,
                                        skip=skip):
            chunk.append(trace)
            if len(chunk) >= self.batch:
                yield self._fresh(chunk, skip)
                chunk = []
        if chunk:
            yield self._fresh(chunk, skip)

    @staticmethod
    def _fresh(chunk: list[SourcedTrace],
               skip: Callable[[Sequence[str]], set[str]]) -> list[SourcedTrace]:
        done = skip([t.trace_id for t in chunk])
        return [t for t in chunk if t.trace_id not in done]

    def _why(self, trace: SourcedTrace, reading: TraceReading) -> str:
        """Why the trace is judged (error, feedback, sampled), or why not."""
        rules = self.rules
        if not all(f.matches(reading, trace.service) for f in rules.filters):
            return "filtered_out"
        if rules.always_on_error and reading.failed:
            return "error"
        if has_feedback(reading, rules.feedback_markers):
            return "feedback"
        return "sampled" if draw(self.key, trace.trace_id) < rules.rate else "sampled_out"

    async def _judge(self, picked: list[tuple[TraceCase, str]], now: float,
                     report: TickReport) -> bool:
        """Judge ``picked`` into the period's run; False (nothing judged) when the cost
        ceiling is reached."""
        ceiling = self.rules.max_cost_per_hour
        if ceiling is not None and cost_since(self.store, self.key, now - HOUR_S) >= ceiling:
            return False
        from assay.run.evaluate import _Session

        run_id = self.run_id(now)
        stored = queries.find_run(self.store, run_id)
        previous = [SuiteCase(case=r.case, execution=r.execution)
                    for r in (self.store.case_records(run_id) if stored else [])]
        known = {c.case.id for c in previous}
        new = [(c, why) for c, why in picked if c.item.case.id not in known]
        again = [(c, why) for c, why in picked if c.item.case.id in known]
        suite = self.suite.model_copy(update={
            "name": f"watch {self.name}", "case_source": None,
            "cases": [*previous, *(c.item for c, _ in new)],
            "metadata": {**self.suite.metadata, "watch": self.key,
                         "traces": self.source.name}})
        suite, config, policy = settle(suite, self.config)
        session = _Session(suite, config, policy, self.store, None, None, resume=stored,
                           run_id=run_id, evaluators_given=True)
        result = await session.execute(None, None, None, keep=True)
        costs = {r.case_id: sum((s.usage.cost or 0.0) for s in r.scores)
                 for r in result.records}
        decisions = [(c.trace.trace_id, "judged", run_id, why,
                      costs.get(c.item.case.id, 0.0)) for c, why in [*new, *again]]
        record_decisions(self.store, self.key, decisions, now)
        report.judged += len(decisions)
        report.cost += sum(d[4] or 0.0 for d in decisions)
        if run_id not in report.run_ids:
            report.run_ids.append(run_id)
        return True

    async def forever(self, interval_s: float, on_tick: Callable[[TickReport], None] | None
                      = None, stop: asyncio.Event | None = None,
                      on_error: Callable[[EvaluationError], None] | None = None) -> None:
        """Tick every ``interval_s`` seconds until ``stop`` is set (or the task cancelled).
        With ``on_error``, a pass that fails (a source down, a judge unreachable) is reported
        to it and the next pass tries again; without, it ends the watch."""
        stop = stop or asyncio.Event()
        while not stop.is_set():
            try:
                report = await self.tick()
            except EvaluationError as exc:
                if on_error is None:
                    raise
                on_error(exc)
            else:
                if on_tick is not None:
                    on_tick(report)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=interval_s)


