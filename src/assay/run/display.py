"""A run's figures as people read them: one string per figure, the same on every surface.

The terminal summary, Markdown, JUnit's properties, the HTML report, the REST API's display
fields (which the web UI shows as sent, formatting nothing itself) and a result's ``repr``
all take a run's figures from :func:`run_display`. Each string is made by
:mod:`assay.types.numbers`, and a case score is shown on the scale of the policy that judged
the run (:func:`scale_for`): the pass rate as a percent (``85.0%``), the mean score as
``0.850``, or ``85.0 /100`` under Connexity's 0-100 scale; latency over the executions'
median turn (the figures a comparison weighs) in milliseconds; cost in dollars, the run's
naming each part (agent, simulated user, judge) whose cost is unknown; each part's tokens;
what stopped its conversations; the two run dimensions as points of 100 and a percent,
beside their thresholds; a run with repeats, its cases over their repeats
(:func:`repeats_figure`: pass^k and how many are flaky) and the
first flaky cases' ids (:func:`flaky_figure`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay._util.control_chars import printable
from assay.run.policies import scale_of
from assay.run.policies.base import Scale
from assay.types import numbers
from assay.types.records import CaseSummary, EvaluatorSummary, RunRecord, RunSummary
from assay.types.score import NOT_APPLICABLE, Score
from assay.types.usage import Usage
from assay.types.verdict import Verdict

TURN_LATENCY = "agent turn latency"
"""What every surface calls a run's latency figures (``RunSummary.latency_*_ms``, shown as
``RunDisplay.latency_*``): statistics over each execution's median turn latency, the figures
a comparison weighs. A run's summary also keeps ``RunSummary.latency`` (a
:class:`~assay.types.records.LatencySummary`), each execution's whole time, which a
conversation's turns add up to: no surface calls that one latency."""

FLAKY_SHOWN = 5
"""The most flaky case ids a run's figures name (the rest are counted)."""


class RunDisplay(BaseModel):
    """A run's figures, shown (``-`` where there is no value)."""

    model_config = ConfigDict(extra="forbid")

    score_name: str = Field(description="what its policy calls the case score")
    counted: str = Field(description="what the run's verdicts count: 'cases', or "
                         "'executions' for a run with repeats (a case and each repeat)")
    verdicts: str = Field(description="the run's verdicts, counted with their unit ('10 "
                          "executions: 4 pass, 2 fail, 0 borderline, 2 error, 2 skipped'): a "
                          "'skipped' execution is one no evaluator applied to")
    evaluator_scores: str = Field(
        description="the run's evaluator scores, counted (one per evaluator and execution): "
        "'20 evaluator scores: 10 values, 6 errors, 4 not applicable' (and measurements, "
        "when an evaluator measured); the evaluator errors and the not-applicable scores "
        "every surface shows are these")
    pass_rate: str = Field(description="passed cases over all cases (an error is not a pass)")
    pass_rate_excl_errors: str = Field(description="passed over the cases with a result")
    error_rate: str
    mean_score: str = Field(description="the mean case score, on its policy's scale")
    latency_p50: str = Field(description="agent turn latency: the median of the executions' "
                             "median turn (RunSummary.latency_p50_ms)")
    latency_p95: str = Field(description="agent turn latency: the p95 of the executions' "
                             "median turn; '-' under 20 executions")
    latency_mean: str = Field(description="agent turn latency: the mean of the executions' "
                              "median turn")
    latency_max: str = Field(description="agent turn latency: the slowest execution's "
                             "median turn")
    judge_cost: str
    cost: str = Field(description="the run's cost: the agent's, the simulated user's and the "
                      "judge's costs that are known, summed, then the parts that spent at an "
                      "unknown cost ('$0.0123 + unknown (agent)'; 'unknown (agent, judge)' "
                      "when none is known)")
    agent_tokens: str = Field(description="the tokens the agent reported; '-' when it "
                              "reported none")
    simulator_tokens: str = Field(description="the simulated user's tokens; '-' for a run "
                                  "without one")
    judge_tokens: str = Field(description="the judge's tokens (cause analysis included); "
                              "'-' for a run that made no judge call")
    stop_reasons: str = Field(description="what stopped the conversations, counted "
                              "('max_turns 2, user_ended 4'); '-' for a run without one")
    metrics_dimension: str = Field(description="the mean case score on the 0-100 scale")
    metrics_threshold: str
    cases_dimension: str = Field(description="passed executions over all executions")
    cases_threshold: str
    max_error_rate: str
    repeats: str = Field(
        description="a run with repeats: its cases over their "
        "repeats, how many passed every repeat (pass^k: those over all cases), how many are "
        "flaky (passed in some repeats, not others) and how many never passed ('5 cases x 3 "
        "repeats: 3 passed every repeat (pass^3 60.0%), 1 flaky, 1 never passed'); '-' for "
        "a run without repeats")
    flaky: str = Field(
        description=f"a run with repeats: the ids of its first {FLAKY_SHOWN} flaky cases, "
        "in id order, and how many more ('c0, c1, c2, c3, c4 and 2 more'); '-' when no case "
        "is flaky")
    evaluators: dict[str, str] = Field(default_factory=dict,
                                       description="each evaluator's mean value (0-1)")
    evaluator_counts: dict[str, str] = Field(
        default_factory=dict, description="each evaluator's scores, counted as "
        "evaluator_scores counts the run's ('10 evaluator scores: 6 values (4 passed, 2 "
        "failed), 2 errors, 2 not applicable')")
    measured: dict[str, str] = Field(
        default_factory=dict, description="each evaluator that measured: how many values, "
        "and the numeric ones' mean, min and max on their own scale ('12 value(s): mean "
        "2.25, min 2, max 5'); counted in no verdict, apart from values, errors and skips")
    dataset_metrics: dict[str, str] = Field(
        default_factory=dict, description="each dataset-level metric and each of its parts, "
        "by name: '0.667 (precision 2/3)', 'error CODE: message', a confusion matrix, or why "
        "it has no value")


def scale_for(run: RunRecord | RunSummary | None) -> Scale:
    """The scale a run's case scores are shown on: its policy's, named by its summary (or,
    before it has one, by its config)."""
    if isinstance(run, RunRecord):
        if run.summary is not None:
            return scale_of(run.summary.scoring)
        return scale_of(run.config.run.scoring)
    return scale_of(None if run is None else run.scoring)


def _hundredths(value: float | None) -> float | None:
    """A 0-100 figure as the 0-1 fraction :func:`numbers.percent` takes."""
    return None if value is None else value / 100


def run_display(summary: RunSummary) -> RunDisplay:
    """``summary``'s figures as every surface shows them."""
    scale = scale_for(summary)
    return RunDisplay(
        score_name=scale.name,
        counted=executions_named(summary),
        verdicts=verdict_counts(summary),
        evaluator_scores=score_counts(
            sum(e.scored for e in summary.evaluators.values()), summary.evaluator_errors,
            summary.evaluator_skips, summary.measurements),
        pass_rate=numbers.percent(summary.pass_rate),
        pass_rate_excl_errors=numbers.percent(summary.pass_rate_excl_errors),
        error_rate=numbers.percent(summary.error_rate),
        mean_score=scale.shown(summary.mean_score),
        latency_p50=numbers.milliseconds(summary.latency_p50_ms),
        latency_p95=numbers.milliseconds(summary.latency_p95_ms),
        latency_mean=numbers.milliseconds(summary.latency_avg_ms),
        latency_max=numbers.milliseconds(summary.latency_max_ms),
        judge_cost=numbers.cost(summary.usage.cost),
        cost=numbers.cost_parts(summary.estimated_cost_usd, summary.cost_unknown),
        agent_tokens=tokens(summary.agent_usage),
        simulator_tokens=tokens(summary.simulator_usage),
        judge_tokens=tokens(summary.usage),
        stop_reasons=numbers.counts({printable(reason): n
                                     for reason, n in summary.stop_reasons.items()}),
        metrics_dimension=numbers.points(summary.weighted_metrics_score_pct),
        metrics_threshold=numbers.points(summary.metrics_pass_threshold),
        cases_dimension=numbers.percent(_hundredths(summary.cases_pass_rate_pct)),
        cases_threshold=numbers.percent(_hundredths(summary.cases_pass_threshold)),
        max_error_rate=numbers.percent(summary.max_error_rate),
        repeats=repeats_figure(summary.case_summary),
        flaky=flaky_figure(summary.case_summary),
        evaluators={name: numbers.score(e.mean) for name, e in summary.evaluators.items()},
        evaluator_counts={name: evaluator_counts(e) for name, e in summary.evaluators.items()},
        measured={name: measured_figures(e) for name, e in summary.evaluators.items()
                  if e.measured},
        dataset_metrics=dataset_figures(summary.dataset_metrics))


def tokens(usage: Usage) -> str:
    """A part's tokens (prompt and completion): ``-`` for a part that made no call (an agent
    that reported no usage), so a missing figure never reads as ``0``."""
    if not (usage.calls or usage.cached_calls):
        return numbers.MISSING
    return numbers.count(usage.total_tokens)


def executions_named(summary: RunSummary) -> str:
    """What a run's verdict counts count: ``cases``, or ``executions`` for a run with
    repeats, whose cases the repeats figure counts; a case failed in 3 repeats is one
    case (the ``max_failed`` gate's) and three executions."""
    return "executions" if summary.case_summary else "cases"


def execution_name(case_id: str, repeat: int) -> str:
    """A case's execution as every surface names it: its id, and after ``#`` its repeat
    (from 0) when it is not the first: ``c1``, ``c1#1``. The terminal's cases, JUnit's test
    cases, Markdown's problem cases and the web UI's (``display.name``) all read so."""
    return case_id if not repeat else f"{case_id}#{repeat}"


VERDICTS_SHOWN = (Verdict.PASS, Verdict.FAIL, Verdict.BORDERLINE, Verdict.ERROR,
                  Verdict.SKIPPED)
"""The order every surface counts verdicts in."""


def verdict_counts(summary: RunSummary) -> str:
    """The run's verdicts as every surface counts them, with their unit (:func:`executions_named`):
    ``10 executions: 4 pass, 2 fail, 0 borderline, 2 error, 2 skipped``; a verdict no
    execution had is counted 0, so the counts always add up to the total."""
    counts = ", ".join(f"{numbers.count(summary.verdicts.get(v.value, 0))} {v.value}"
                       for v in VERDICTS_SHOWN)
    extra = sorted(set(summary.verdicts) - {v.value for v in VERDICTS_SHOWN})
    counts += "".join(f", {numbers.count(summary.verdicts[v])} {printable(v)}" for v in extra)
    counted = numbers.count_of(summary.cases, executions_named(summary).removesuffix("s"))
    return f"{counted}: {counts}"


def score_counts(values: int, errors: int, skipped: int, measured: int = 0,
                 of_values: str = "") -> str:
    """Evaluator scores as every surface counts them, each state apart and in one unit:
    ``20 evaluator scores: 10 values, 6 errors, 4 not applicable`` (a measurement is none of
    these: counted apart, when there is one). An error is never a value, and a score that
    did not apply (:data:`~assay.types.score.NOT_APPLICABLE`) is neither. ``of_values``
    follows the values' count (an evaluator's passed and failed)."""
    total = values + errors + skipped + measured
    parts = [numbers.count_of(values, "value") + of_values, numbers.count_of(errors, "error"),
             f"{numbers.count(skipped)} {NOT_APPLICABLE}"]
    if measured:
        parts.append(numbers.count_of(measured, "measurement"))
    return f"{numbers.count_of(total, 'evaluator score')}: {', '.join(parts)}"


def evaluator_counts(e: EvaluatorSummary) -> str:
    """One evaluator's scores counted as :func:`score_counts` counts a run's, its values
    split into passed and failed: ``10 evaluator scores: 6 values (4 passed, 2 failed),
    2 errors, 2 not applicable``."""
    split = f" ({numbers.count(e.passed)} passed, {numbers.count(e.failed)} failed)"
    return score_counts(e.scored, e.errors, e.skipped, e.measured, split if e.scored else "")


def repeats_figure(cases: Mapping[str, CaseSummary]) -> str:
    """A run's cases over their repeats, as every surface shows them: a pass rate over
    executions hides a case that passes one time in three, which pass^k (the cases that
    passed every repeat, over all cases) and the count of flaky cases show. ``-`` for a run
    without repeats (whose summary keeps no case summaries). A run stopped part-way may
    have repeated its cases unevenly: its repeats are a range and its rate pass^k."""
    if not cases:
        return numbers.MISSING
    counts = [c.executions for c in cases.values()]
    low, high = min(counts), max(counts)
    repeats, k = (str(high), str(high)) if low == high else (f"{low} to {high}", "k")
    every = sum(c.pass_all for c in cases.values())
    flaky = sum(c.flaky for c in cases.values())
    never = sum(c.passed == 0 for c in cases.values())
    return (f"{numbers.count(len(cases))} cases x {repeats} repeats: {numbers.count(every)} "
            f"passed every repeat (pass^{k} {numbers.percent(every / len(cases))}), "
            f"{numbers.count(flaky)} flaky, {numbers.count(never)} never passed")


def flaky_cases(cases: Mapping[str, CaseSummary]) -> list[str]:
    """The ids of the cases that passed in some repeats and not in others, in id order."""
    return sorted(case_id for case_id, c in cases.items() if c.flaky)


def flaky_figure(cases: Mapping[str, CaseSummary]) -> str:
    """The first flaky cases' ids, as every surface shows them, so a case that passes only
    sometimes is named, not averaged away; the rest are counted. ``-`` when no case is
    flaky (a run without repeats has none)."""
    flaky = flaky_cases(cases)
    if not flaky:
        return numbers.MISSING
    more = len(flaky) - FLAKY_SHOWN
    return (", ".join(printable(c) for c in flaky[:FLAKY_SHOWN])
            + (f" and {numbers.count(more)} more" if more > 0 else ""))


def repeats_shown(shown: RunDisplay) -> list[tuple[str, str]]:
    """A run with repeats: its repeats figure and, when a case is flaky, the flaky cases'
    ids, each with its label; nothing for a run without repeats (no ``-`` to read past)."""
    if shown.repeats == numbers.MISSING:
        return []
    found = [("repeats", shown.repeats)]
    if shown.flaky != numbers.MISSING:
        found.append(("flaky", shown.flaky))
    return found


def dataset_figures(metrics: Mapping[str, Score]) -> dict[str, str]:
    """The run's dataset-level metrics as every surface shows them, each followed by its
    parts (a per-class F1's classes): a value with its rationale, an error with its code and
    message (never a missing figure), a confusion matrix, or why there is no value."""
    shown: dict[str, str] = {}
    for name, metric in metrics.items():
        for part in (metric, *metric.parts):
            shown[name if part is metric else part.name] = _dataset_text(part)
    return shown


def _dataset_text(metric: Score) -> str:
    if metric.error is not None:
        return f"error {metric.error.code}: {metric.error.message}"
    if metric.value is None:
        matrix = (metric.details or {}).get("confusionMatrix")
        if matrix is not None:
            return _matrix_text(matrix, (metric.details or {}).get("classes"))
        return printable(metric.skipped)
    value = numbers.score(metric.value)
    return f"{value} ({printable(metric.rationale)})" if metric.rationale else value


def _matrix_text(matrix: Any, classes: Any) -> str:
    """A confusion matrix on one line, each row named by its predicted class:
    ``rows predicted, columns expected (a, b): a 3 1; b 0 2``."""
    names = list(classes) if isinstance(classes, list) else []
    if not isinstance(matrix, list) or not all(isinstance(r, list) for r in matrix):
        return f"confusion matrix {printable(matrix)}"
    rows = "; ".join(
        (f"{printable(names[i])} " if i < len(names) else "")
        + " ".join(printable(n) for n in row) for i, row in enumerate(matrix))
    return f"rows predicted, columns expected ({printable(names)}): {rows}"


def measured_figures(e: EvaluatorSummary) -> str:
    """An evaluator's measurements as every surface shows them: their count, and the mean,
    min and max of the numeric ones on their own scale (never a 0-1 score's digits)."""
    text = f"{numbers.count(e.measured)} value(s)"
    if e.measured_mean is not None:
        text += (f": mean {numbers.plain(e.measured_mean)}, min "
                 f"{numbers.plain(e.measured_min)}, max {numbers.plain(e.measured_max)}")
    return text


__all__ = ["FLAKY_SHOWN", "TURN_LATENCY", "VERDICTS_SHOWN", "RunDisplay", "dataset_figures",
           "evaluator_counts", "execution_name", "executions_named", "flaky_cases", "flaky_figure",
           "measured_figures", "repeats_figure", "repeats_shown", "run_display",
           "scale_for", "score_counts", "tokens", "verdict_counts"]
