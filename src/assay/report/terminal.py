"""Terminal output with rich: the live progress bar and the tables of runs and cases.

Every value that comes from data (suite and case names, judge text, error messages) passes
through :func:`assay.report.safe_text.for_terminal`, so no escape sequence reaches the terminal
and no markup in data is interpreted.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from assay.report.safe_text import for_terminal
from assay.run.display import (
    TURN_LATENCY,
    RunDisplay,
    execution_name,
    repeats_shown,
    run_display,
    scale_for,
)
from assay.types import numbers
from assay.types.records import (
    AssessmentSummary,
    CaseRecord,
    RunRecord,
    RunStatus,
    RunSummary,
    resume_command,
    status_text,
)
from assay.types.score import NOT_APPLICABLE
from assay.types.usage import Usage
from assay.types.verdict import Verdict

VERDICT_STYLE = {"pass": "green", "borderline": "yellow", "fail": "red", "error": "magenta",
                 "skipped": "dim"}


class ProgressBar:
    """A progress bar with ETA, errors so far and judge cost so far.

    Cases are counted as they finish, but the bar is told at most every
    ``refresh_seconds`` (and when it stops): Rich redraws ten times a second anyway, and
    updating its task for every case cost more than a cached case itself.
    """

    refresh_seconds = 0.1

    def __init__(self, console: Console, label: str) -> None:
        self.console = console
        self.errors = 0
        # Judge calls and cost so far, as plain numbers: summing Usage models cost a cached
        # case more than the rest of the bar.
        self._calls = 0
        self._cached_calls = 0
        self._cost: float | None = 0.0
        self._progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("eta"), TimeRemainingColumn(), TimeElapsedColumn(),
            TextColumn("{task.fields[status]}"), console=console, transient=False)
        self._task: TaskID | None = None
        self._label = for_terminal(label)
        self._last_plain = 0.0
        self._unshown = 0  # cases finished since the bar was last updated
        self._shown_at = 0.0

    def __enter__(self) -> ProgressBar:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._show()
        self._progress.stop()

    def start(self, total: int, done: int, label: str = "") -> None:
        """A bar for a run of ``total`` cases (``done`` already); a later run of the same
        command (a calibration's, an alignment's) gets a bar of its own, the cases counted
        for the one before given to it first."""
        self._show()
        if label:
            self._label = for_terminal(label)
        self._task = self._progress.add_task(self._label, total=total, completed=done,
                                             status=self._status())

    @property
    def usage(self) -> Usage:
        """The judge calls, cached calls and cost counted so far."""
        return Usage(calls=self._calls, cached_calls=self._cached_calls, cost=self._cost)

    def advance(self, result: CaseRecord) -> None:
        for s in result.scores:
            if s.error:
                self.errors += 1
            usage = s.usage
            self._calls += usage.calls
            self._cached_calls += usage.cached_calls
            if self._cost is not None and usage.cost != 0.0:
                self._cost = None if usage.cost is None else self._cost + usage.cost
        self._unshown += 1
        now = time.monotonic()
        if now - self._shown_at >= self.refresh_seconds:
            self._show(now)
        if now - self._last_plain > 10 and not self.console.is_terminal:
            self._last_plain = now
            self._show(now)
            task = self._progress.tasks[-1] if self._progress.tasks else None
            if task is not None:
                self.console.print(f"{int(task.completed)}/{int(task.total or 0)} cases, "
                                   f"{self._status()}", highlight=False)

    def _show(self, now: float | None = None) -> None:
        """Give the bar every case counted since it was last updated."""
        self._shown_at = time.monotonic() if now is None else now
        if self._task is not None and self._unshown:
            self._progress.update(self._task, advance=self._unshown, status=self._status())
            self._unshown = 0

    def _status(self) -> str:
        return f"errors {self.errors} · cost {numbers.cost(self._cost)} · calls {self._calls}" \
               f" (+{self._cached_calls} cached)"


def counts_text(counts: dict[str, int]) -> str:
    """Counts by name as Rich markup, ``fail 1, pass 3`` (names escaped, in order)."""
    return ", ".join(f"{for_terminal(k)} {v}" for k, v in sorted(counts.items()))


def summary_lines(summary: RunSummary, notes: list[str] | None = None) -> list[str]:
    """The run's summary as lines of Rich markup (data in them escaped), ending with
    ``notes`` (:func:`assay.run.result.verdict_notes`; default: the summary's own). Every
    figure is :func:`assay.run.display.run_display`'s, as on every other surface."""
    shown = run_display(summary)
    u = summary.usage
    lines = [
        f"{for_terminal(shown.verdicts)}; pass rate {shown.pass_rate}; mean score "
        f"{shown.mean_score} over {numbers.count(summary.scored)} scored {shown.counted}; "
        f"{for_terminal(shown.evaluator_scores)}",
        *repeats_lines(shown),
        f"judge calls {u.calls} (+{u.cached_calls} cached, {u.retries} retries"
        f"{f', {u.batch_calls} through batch APIs at the batch rate' if u.batch_calls else ''}"
        "); tokens "
        f"{numbers.count(u.prompt_tokens)} prompt + {numbers.count(u.completion_tokens)} "
        f"completion; cost {shown.judge_cost}",
    ]
    if summary.cause_analyses:
        a = summary.cause_analysis_usage
        lines.append(f"  of which cause analysis of {summary.cause_analyses} failed case(s): "
                     f"{a.calls} call(s) (+{a.cached_calls} cached); cost "
                     f"{numbers.cost(a.cost)}")
    for name, e in summary.evaluators.items():
        counts = for_terminal(shown.evaluator_counts[name])
        if e.measured and not e.scored:
            lines.append(f"  {for_terminal(name)}: measured {shown.measured[name]}; a "
                         f"measurement counts in no verdict ({counts})")
            continue
        lines.append(f"  {for_terminal(name)}: mean {shown.evaluators[name]} ({counts})"
                     + (f"; measured {shown.measured[name]}, counted in no verdict"
                        if e.measured else ""))
    lines += [f"dataset metric {for_terminal(name)}: {for_terminal(text)}"
              for name, text in shown.dataset_metrics.items()]
    if summary.latency_p50_ms is not None:
        lines.append(f"{TURN_LATENCY} p50 {shown.latency_p50}, p95 {shown.latency_p95}, mean "
                     f"{shown.latency_mean}, max {shown.latency_max}")
    lines.extend(dimension_lines(summary, shown))
    lines.extend(spend_lines(shown))
    lines.extend(note_lines(summary.notes if notes is None else notes))
    return lines


def repeats_lines(shown: RunDisplay) -> list[str]:
    """A run with repeats: its cases over their repeats and the first flaky cases' ids
    (:func:`~assay.run.display.repeats_shown`), so a case that passes only sometimes is
    named, not averaged away; nothing for a run without repeats."""
    return [f"{'  ' if label == 'flaky' else ''}{label}: {for_terminal(text)}"
            for label, text in repeats_shown(shown)]


def note_lines(notes: list[str]) -> list[str]:
    """A run's notes (:func:`assay.run.result.verdict_notes`), one line of markup each."""
    return [f"[yellow]note[/]: {for_terminal(note)}" for note in notes]


def _gate(passed: bool | None) -> str:
    return {True: "[green]pass[/]", False: "[red]fail[/]", None: "not gated"}[passed]


def dimension_lines(summary: RunSummary, shown: RunDisplay | None = None) -> list[str]:
    """The run's executions both ways (errors in and out of the pass rate) and its two
    dimensions; shown when the run has dimensions."""
    if summary.metrics_pass_threshold is None and summary.cases_pass_threshold is None \
            and summary.scoring == "default":
        return []
    shown = shown or run_display(summary)
    lines = [
        f"executions {summary.total_executions} ({summary.unique_test_case_count} case(s)): "
        f"{summary.passed_count} passed, {summary.failed_count} failed, {summary.error_count} "
        f"errored, {summary.skipped_count} skipped; pass rate {shown.pass_rate} (errors as not "
        f"passed), {shown.pass_rate_excl_errors} (of executions with a result)",
        f"metrics dimension {shown.metrics_dimension} (threshold {shown.metrics_threshold}): "
        f"{_gate(summary.metrics_passed)}; cases dimension {shown.cases_dimension} (threshold "
        f"{shown.cases_threshold}): {_gate(summary.cases_passed)}",
    ]
    return lines


def spend_lines(shown: RunDisplay) -> list[str]:
    """What the run spent, by who spent it: its cost (naming each part whose cost is
    unknown, :attr:`RunDisplay.cost`) and each part's tokens, then what stopped its
    conversations. ``assay show RUN`` prints them below its cases, the summary in it."""
    lines = [f"total cost {shown.cost}; tokens: agent {shown.agent_tokens}, simulated user "
             f"{shown.simulator_tokens}, judge {shown.judge_tokens}"]
    if shown.stop_reasons != numbers.MISSING:
        lines.append(f"conversations stopped: {for_terminal(shown.stop_reasons)}")
    return lines


def aggregate_lines(found: AssessmentSummary) -> list[str]:
    """The agent-judge aggregates in the run's naming, one line each (whole keys, so a CI
    log can be searched for them), with the values, errors and skips behind each. A value is
    shown as the family's metrics hold it (:func:`assay.types.numbers.plain`, not turned into
    a percent): quality criteria are written against those numbers."""
    lines = [f"aggregates ({found.naming or 'mlflow'} names):"]
    width = max((len(row.key) for row in found.metrics), default=0)
    for row in found.metrics:
        value = numbers.plain(row.value)
        lines.append(f"  {for_terminal(row.key.ljust(width))}  {value:>8}  ({row.scored} "
                     f"values, {row.errors} errors, {row.skipped} {NOT_APPLICABLE})")
    return lines


def runs_table(runs: list[RunRecord], stored_cases: Mapping[str, int] | None = None) -> Table:
    """Stored runs, one a row; a run whose row cannot be read shows as ``unreadable``, and
    one without a summary the case results it stored (``stored_cases``, by run id), and
    ``-`` for its mean and gate (see :func:`~assay.store.queries.cases_shown`)."""
    from assay.store.queries import cases_shown

    stored = stored_cases or {}
    table = Table(title="runs")
    table.add_column("run", no_wrap=True)
    for col in ("suite", "status", "created", "cases", "mean", "gate"):
        table.add_column(col)
    for r in runs:
        s = r.summary
        status = "unreadable" if r.unreadable else status_text(r.status)
        table.add_row(for_terminal(r.id), for_terminal(r.suite), status,
                      numbers.MISSING if r.created_at is None else
                      time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_at)),
                      cases_shown(s, stored.get(r.id, 0) if stored_cases is not None
                                  else None),
                      numbers.MISSING if s is None else run_display(s).mean_score,
                      numbers.MISSING if s is None else ("pass" if s.passed else "fail"))
    return table


def run_notes(runs: list[RunRecord], store: str | None = None) -> list[str]:
    """What a list of runs must add below its table: why each unreadable run cannot be read,
    and how to resume each run that stopped before completing (and, when it has no summary,
    why its mean and gate read ``-``)."""
    lines = []
    for r in runs:
        if r.unreadable:
            lines.append(f"[red]unreadable[/] {for_terminal(r.id)}: {for_terminal(r.unreadable)}")
            continue
        command = resume_command(r, store)
        if command is not None and r.status is RunStatus.WAITING:
            lines.append(f"[yellow]waiting for batch[/] {for_terminal(r.id)}: its judge calls "
                         f"are in the providers' batch APIs; collect the answers with "
                         f"{for_terminal(command)}")
        elif command is not None:
            why = ", its process stopped" if r.abandoned else ""
            if r.summary is None:
                why = " (no summary yet, so no mean or gate)" + why
            lines.append(f"[yellow]{r.status.value}[/] {for_terminal(r.id)}{why}: resume with "
                         f"{for_terminal(command)}")
    return lines


def _score_cell(score: Any) -> str:
    return f"{score.name}: {score.shown}"


def not_passed(record: CaseRecord) -> bool:
    """A case ``--failed`` keeps: one that failed or errored
    (:attr:`~assay.types.records.CaseRecord.failed_or_errored`, an evaluator error
    included), and one that is borderline, which passes the gates but is worth a look."""
    return record.failed_or_errored or record.verdict is Verdict.BORDERLINE


def chosen_cases(records: list[CaseRecord], failed: bool = False,
                 limit: int | None = None, counted: str = "cases"
                 ) -> tuple[list[CaseRecord], str | None]:
    """The cases a listing shows: those that did not pass when ``failed``, the first
    ``limit`` of them; and a line saying how many were left out (None when none were), in
    ``counted``, what the run's verdicts count (:attr:`RunDisplay.counted`: executions for
    a run with repeats)."""
    kept = [r for r in records if not_passed(r)] if failed else records
    shown = kept if limit is None else kept[:limit]
    what = f"{counted} that did not pass" if failed else counted
    if len(shown) == len(records):
        return shown, None
    note = f"{numbers.count(len(shown))} of {numbers.count(len(kept))} {what} shown"
    if failed:
        note += f" ({numbers.count(len(records))} in the run)"
    return shown, note


def cases_table(records: list[CaseRecord], verbose: bool = True,
                run: RunRecord | None = None) -> Table:
    """The cases, one a row; the case score on ``run``'s policy's scale (assay's 0-1 when
    not given), each evaluator's on 0-1. The hits and misses column is left out when no
    evaluator of these cases gave any (most do not), rather than shown empty on every row."""
    scale = scale_for(run)
    table = Table(title="cases", show_lines=verbose)
    with_hits = any(s.hits or s.misses for r in records for s in r.scores)
    columns = ["case", "score", "verdict", "evaluators"]
    columns += ["hits / misses"] if with_hits else []
    for col in [*columns, "reasoning"]:
        table.add_column(col, overflow="fold")
    for r in records:
        evals = "\n".join(_score_cell(s) for s in r.scores)
        hm = "\n".join([f"+ [{s.name}] {h}" for s in r.scores for h in s.hits] +
                       [f"- [{s.name}] {m}" for s in r.scores for m in s.misses])
        reasoning = " | ".join(f"{s.name}: {s.rationale}" for s in r.scores if s.rationale)
        name = execution_name(r.case_id, r.repeat)
        verdict = r.verdict.value
        cells = [for_terminal(name), scale.shown(r.score),
                 f"[{VERDICT_STYLE.get(verdict, 'white')}]{verdict}[/]", for_terminal(evals)]
        cells += [for_terminal(hm)] if with_hits else []
        table.add_row(*cells, for_terminal(reasoning or r.execution.error or ""))
    return table
