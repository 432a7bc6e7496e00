"""A comparison of two runs for people: the terminal, Markdown, and the rows the web UI shows.

Every surface renders the one :class:`~assay.analysis.compare.Comparison` through the same
rows, with numbers shown by :mod:`assay.types.numbers`, so a figure, a change and the verdict
read the same in a terminal, a pull-request comment and the browser: the pass rate in percent
and its change in points, the score on the 0-100 scale, latency and cost with the direction of
their change in words.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field
from rich.console import Console
from rich.table import Table

from assay.analysis.compare import DEFAULT_ALPHA, Comparison
from assay.analysis.significance import PairedComparison
from assay.report.markdown import md_text
from assay.report.safe_text import for_terminal, plain_for_terminal
from assay.report.text_diff import DIFF_LINES, DiffLine, as_text, text_diff
from assay.run.display import TURN_LATENCY, repeats_shown, run_display
from assay.run.policies.base import Reason, cost_not_comparable
from assay.types import numbers
from assay.types.records import CaseRecord, RunSummary, case_overall
from assay.types.score import Outcome, Score

if TYPE_CHECKING:
    from assay.store.runs import RunStore

Summaries = tuple[RunSummary | None, RunSummary | None]
"""The baseline's and the candidate's stored summaries (None for a run read from a results
file, which keeps none)."""

STATUS_STYLE = {"regression": "red", "improvement": "green", "unchanged": "white",
                "error": "magenta"}

Direction = Literal["better", "worse", "same", "unknown"]


class FigureRow(BaseModel):
    """One figure of the two runs, shown: both values, the change, and which way it went."""

    label: str
    baseline: str
    candidate: str
    change: str
    direction: Direction


class CaseRow(BaseModel):
    """One matched case, shown."""

    case_id: str
    status: str
    baseline: str
    candidate: str
    change: str
    passed: str
    direction: Direction = "unknown"
    latency_change: str = Field(default=numbers.MISSING, description="the change of the "
                                "case's agent turn latency (the mean of its executions' "
                                "median turn)")


class SignificanceRow(BaseModel):
    """One paired test of a comparison, shown: its difference and interval on the scale of
    what it tests, its p-value and its outcome."""

    name: str = Field(description="the test's key in Comparison.significance")
    label: str
    method: str
    pairs: str
    difference: str
    interval: str
    p_value: str
    outcome: Literal["significant", "not significant", "not tested"]
    direction: Direction
    warnings: list[str] = Field(default_factory=list)


class EvaluatorRow(BaseModel):
    """One evaluator's (or one metric's) figure in both runs, shown."""

    name: str
    scale: str = Field(description="what the figures are: mean (0-1), pass fraction, or 0-5")
    baseline: str
    candidate: str
    change: str
    direction: Direction


def _direction(delta: float | None, higher_is_better: bool) -> Direction:
    if delta is None:
        return "unknown"
    if delta == 0:
        return "same"
    return "better" if (delta > 0) == higher_is_better else "worse"


def figure_rows(result: Comparison) -> list[FigureRow]:
    """The runs' figures side by side, as every surface shows them."""
    b, c, d = result.baseline, result.candidate, result.aggregate
    return [
        FigureRow(label="pass rate", baseline=numbers.percent(b.pass_rate),
                  candidate=numbers.percent(c.pass_rate),
                  change=numbers.percent_points(d.pass_rate_delta),
                  direction=_direction(d.pass_rate_delta, True)),
        FigureRow(label="average score", baseline=numbers.points(b.avg_score),
                  candidate=numbers.points(c.avg_score),
                  change=numbers.points_delta(d.avg_score_delta),
                  direction=_direction(d.avg_score_delta, True)),
        FigureRow(label=f"{TURN_LATENCY}, mean", baseline=numbers.milliseconds(b.latency_avg_ms),
                  candidate=numbers.milliseconds(c.latency_avg_ms),
                  change=numbers.latency_change(d.latency_avg_delta_ms),
                  direction=_direction(d.latency_avg_delta_ms, False)),
        FigureRow(label=f"{TURN_LATENCY}, p95", baseline=numbers.milliseconds(b.latency_p95_ms),
                  candidate=numbers.milliseconds(c.latency_p95_ms),
                  change=numbers.latency_change(d.latency_p95_delta_ms),
                  direction=_direction(d.latency_p95_delta_ms, False)),
        cost_row(result),
    ]


def cost_row(result: Comparison) -> FigureRow:
    """The runs' costs, each naming the parts whose cost is unknown; their change only when
    both are known in full, else ``not comparable`` (:func:`cost_not_comparable`): a change of
    partial sums is no measured change."""
    b, c, d = result.baseline, result.candidate, result.aggregate
    comparable = cost_not_comparable(b, c) is None
    return FigureRow(label="cost", baseline=numbers.cost_parts(b.cost_usd, b.cost_unknown),
                     candidate=numbers.cost_parts(c.cost_usd, c.cost_unknown),
                     change=numbers.usd_change(d.cost_delta_usd) if comparable
                     else numbers.NOT_COMPARABLE,
                     direction=_direction(d.cost_delta_usd, False))


def stored_summaries(store: RunStore, result: Comparison) -> Summaries:
    """The compared runs' stored summaries, for what a comparison shows of each run."""
    return (store.run_record(result.baseline_run_id).summary,
            store.run_record(result.candidate_run_id).summary)


def repeats_rows(summaries: Summaries) -> list[tuple[str, str, str]]:
    """Each compared run with repeats: its side, then its repeats figure and its flaky cases
    (:func:`~assay.run.display.repeats_shown`), as its own summary and the compare page show
    them; nothing for a run without repeats."""
    return [(side, label, text)
            for side, summary in zip(("baseline", "candidate"), summaries, strict=True)
            if summary is not None
            for label, text in repeats_shown(run_display(summary))]


class ReasonRow(BaseModel):
    """A regression reason, with the p-value of its paired test shown (None: no test)."""

    text: str
    p_value: str | None = None
    significant: bool | None = None
    counted: bool = True
    significance: str = Field(
        default="", description="what its paired test says, as every surface shows it: "
        "'p=0.0574, not significant at 0.05: it may be noise', 'p=0.0012, significant at "
        "0.05', or with --require-significance '..., not counted'; '' when it has no test")


def reason_rows(result: Comparison) -> list[ReasonRow]:
    """The verdict's reasons as every surface lists them. A reason counts by the
    comparison's thresholds alone unless ``--require-significance`` is given (AgentV's and
    Connexity's rule), so a counted reason whose test is not significant says so: two runs of
    the same noisy agent can drop a few points by chance, and the reader should know."""
    level = numbers.plain(result.verdict.require_significance or DEFAULT_ALPHA)
    return [ReasonRow(text=r.text, p_value=None if r.p_value is None
                      else numbers.p_value(r.p_value), significant=r.significant,
                      counted=r.counted, significance=_significance_text(r, level))
            for r in result.verdict.reason_details]


def _significance_text(reason: Reason, level: str) -> str:
    if reason.p_value is None or reason.significant is None:
        return ""
    text = f"p={numbers.p_value(reason.p_value)}, "
    if reason.significant:
        return text + f"significant at {level}"
    return text + f"not significant at {level}: " + (
        "it may be noise" if reason.counted else "not counted")


def case_rows(result: Comparison, limit: int | None = None) -> list[CaseRow]:
    """The matched cases, as every surface shows them (scores on the 0-100 scale)."""
    cases = result.test_case_comparisons if limit is None else \
        result.test_case_comparisons[:limit]

    def passed(value: bool | None) -> str:
        return "-" if value is None else "pass" if value else "not passed"

    direction: dict[str, Direction] = {"regression": "worse", "improvement": "better",
                                       "unchanged": "same", "error": "unknown"}
    return [CaseRow(case_id=case.test_case_id, status=case.status,
                    baseline=numbers.points(case.baseline_score),
                    candidate=numbers.points(case.candidate_score),
                    change=numbers.points_delta(case.score_delta),
                    passed=f"{passed(case.baseline_passed)} → {passed(case.candidate_passed)}",
                    direction=direction.get(case.status, "unknown"),
                    latency_change=numbers.latency_change(case.latency_delta_ms))
            for case in cases]


_TESTS: dict[str, tuple[str, Callable[[float | None], str], bool]] = {
    "cases": ("pass/fail (McNemar)", numbers.percent_points, True),
    "score": ("score, 0-100 (Wilcoxon)", numbers.points_delta, True),
    "latency": (f"{TURN_LATENCY} (Wilcoxon)", numbers.latency_change, False),
}
"""Each test's label, how its difference reads, and whether higher is better."""


def significance_rows(result: Comparison) -> list[SignificanceRow]:
    """The paired tests of a comparison, as the compare page shows them: each difference on
    its own scale (pass rate in points, score in points of 0-100, latency in ms, a metric in
    points of 0-5), with its 95% interval and p-value."""
    rows = []
    for name, test in result.significance.items():
        label, shown, higher_is_better = _TESTS.get(
            name, (f"{name.removeprefix('metric/')}, 0-5 (Wilcoxon)", numbers.points_delta,
                   True))
        rows.append(SignificanceRow(
            name=name, label=label, method=test.method or test.status,
            pairs=numbers.count(test.n_paired), difference=shown(test.diff),
            interval=_interval(test, shown), p_value=numbers.p_value(test.p_value),
            outcome=_outcome(test),
            direction=_direction(test.diff, higher_is_better) if test.significant
            else "same" if test.status == "ok" else "unknown",
            warnings=list(test.warnings)))
    return rows


def _five(value: float | None) -> str:
    return numbers.points(value, 5)


def _interval(test: PairedComparison, shown: Callable[[float | None], str]) -> str:
    if test.ci_low is None or test.ci_high is None:
        return numbers.MISSING
    return f"[{shown(test.ci_low)}, {shown(test.ci_high)}]"


def _outcome(test: PairedComparison) -> Literal["significant", "not significant",
                                                 "not tested"]:
    if test.status != "ok" or test.p_value is None:
        return "not tested"
    return "significant" if test.significant else "not significant"


def evaluator_rows(result: Comparison, baseline: RunSummary | None = None,
                   candidate: RunSummary | None = None) -> list[EvaluatorRow]:
    """Each evaluator's mean (0-1) in both runs' summaries, when given, then each
    multi-metric judge's metric over the matched cases (a binary metric as the fraction
    passed, a scored one on its 0-5 scale)."""
    def means(summary: RunSummary | None) -> dict[str, float | None]:
        return {} if summary is None else \
            {name: e.mean for name, e in summary.evaluators.items()}

    before, after = means(baseline), means(candidate)
    rows = []
    for name in sorted(set(before) | set(after)):
        b, c = before.get(name), after.get(name)
        delta = None if b is None or c is None else round(c - b, 3) + 0.0  # as shown
        rows.append(EvaluatorRow(name=name, scale="mean, 0-1", baseline=numbers.score(b),
                                 candidate=numbers.score(c),
                                 change=numbers.score_delta(delta),
                                 direction=_direction(delta, True)))
    for metric in result.aggregate.per_metric_aggregate_deltas:
        value, change, scale = (numbers.percent, numbers.percent_points, "pass fraction") \
            if metric.is_binary else (_five, numbers.points_delta, "0-5")
        rows.append(EvaluatorRow(name=metric.metric, scale=scale,
                                 baseline=value(metric.baseline),
                                 candidate=value(metric.candidate),
                                 change=change(metric.delta),
                                 direction=_direction(metric.delta, True)))
    return rows


def thresholds_text(result: Comparison) -> str:
    """The thresholds the verdict used, in words."""
    used = result.verdict.thresholds_used
    drop = numbers.percent_points(used.get("max_pass_rate_drop", 0)).lstrip("+")
    parts = [f"pass-rate drop over {drop}", "score drop over "
             f"{numbers.points_delta(used.get('max_avg_score_drop', 5)).lstrip('+')}",
             f"latency rise over {numbers.percent(used.get('max_latency_increase_pct', 0.2))} "
             f"and {numbers.milliseconds(used.get('latency_floor_ms', 50))} and the noise"]
    if "max_cost_increase_pct" in used:
        parts.append(f"cost rise over {numbers.percent(used['max_cost_increase_pct'])}")
    text = "regression when: " + "; ".join(parts)
    if result.verdict.require_significance is not None:
        text += ("; a reason counts only when significant at "
                 f"{numbers.plain(result.verdict.require_significance)}")
    return text


# -- one case in both runs -------------------------------------------------------------------

SIDE_CHARS = 50_000
"""The most of one output a side-by-side view shows (the case page has the whole)."""


class ScoreLine(BaseModel):
    """One evaluator's score on one side of a case, shown."""

    name: str
    value: str
    state: Outcome
    rationale: str | None = None


class CaseSideView(BaseModel):
    """One run's execution of a case, shown beside the other run's."""

    run_id: str
    repeat: int
    verdict: str
    score: str
    output: str = Field(description="the output as text (JSON pretty-printed), cut at "
                        f"{SIDE_CHARS:,} characters with a marker")
    error: str | None = None
    latency: str
    scores: list[ScoreLine] = Field(default_factory=list)


class CaseSides(BaseModel):
    """A case in two runs side by side: the case as the candidate ran it, both executions,
    and the line diff of their outputs."""

    case_id: str
    input: str
    expected: str | None = None
    baseline: CaseSideView | None = None
    candidate: CaseSideView | None = None
    diff: list[DiffLine] = Field(default_factory=list)
    diff_cut: bool = Field(default=False, description="an output had more lines than the "
                           f"diff compares ({DIFF_LINES:,}); the diff covers the first ones")


def _cut(text: str) -> str:
    from assay.report.views import cut_marker

    return text if len(text) <= SIDE_CHARS else text[:SIDE_CHARS] + cut_marker(len(text))


def _score_line(score: Score) -> ScoreLine:
    """A score as the case page shows it: its outcome and its value, by the one rule."""
    return ScoreLine(name=score.name, value=score.shown, state=score.outcome,
                     rationale=score.rationale)


def case_side(record: CaseRecord) -> CaseSideView:
    """One run's record of a case, shown."""
    return CaseSideView(
        run_id=record.run_id, repeat=record.repeat, verdict=record.verdict.value,
        score=numbers.points(case_overall(record)), output=_cut(as_text(record.output)),
        error=record.error, latency=numbers.milliseconds(record.execution.latency_ms),
        scores=[_score_line(s) for s in record.scores])


def case_sides(case_id: str, baseline: CaseRecord | None,
               candidate: CaseRecord | None) -> CaseSides:
    """A case in two runs side by side (either may lack it), with its outputs' diff."""
    shown = candidate or baseline
    case = shown.case if shown is not None else None
    diff, cut = text_diff(as_text(baseline.output) if baseline else "",
                          as_text(candidate.output) if candidate else "")
    return CaseSides(
        case_id=case_id, input=_cut(as_text(shown.input)) if shown else "",
        expected=None if case is None or case.expected_output is None
        else _cut(as_text(case.expected_output)),
        baseline=case_side(baseline) if baseline else None,
        candidate=case_side(candidate) if candidate else None, diff=diff, diff_cut=cut)


def print_comparison(console: Console, result: Comparison, fail_on_thresholds: bool = True,
                     summaries: Summaries = (None, None)) -> None:
    """Print a comparison on the terminal, with each run's repeats from ``summaries``
    (:func:`repeats_rows`)."""
    title = f"{for_terminal(result.baseline_run_id)} → {for_terminal(result.candidate_run_id)}"
    if result.matched_only:
        title += " (matched cases only)"
    table = Table(title=title)
    for column in ("", "baseline", "candidate", "change"):
        table.add_column(column)
    colour = {"better": "green", "worse": "red", "same": "white", "unknown": "white"}
    for row in figure_rows(result):
        table.add_row(row.label, row.baseline, row.candidate,
                      f"[{colour[row.direction]}]{row.change}[/]")
    console.print(table)
    for side, label, text in repeats_rows(summaries):
        console.print(f"{side} {label}: {for_terminal(text)}", highlight=False)
    cases = Table(title=f"cases (scored by the {result.policy} policy, 0-100)")
    for column in ("case", "status", "baseline", "candidate", "change", "passed"):
        cases.add_column(column, overflow="fold")
    for case in case_rows(result):
        style = STATUS_STYLE.get(case.status, "white")
        cases.add_row(for_terminal(case.case_id), f"[{style}]{case.status}[/]", case.baseline,
                      case.candidate, case.change, case.passed)
    console.print(cases)
    d = result.aggregate
    console.print(f"cases: {d.total_regressions} regressed, {d.total_improvements} improved, "
                  f"{d.total_unchanged} unchanged, {d.total_errors} error(s); only in the "
                  f"baseline {len(result.baseline_only_test_cases)}, only in the candidate "
                  f"{len(result.candidate_only_test_cases)}", highlight=False, markup=False)
    for metric in evaluator_rows(result):
        console.print(f"  {plain_for_terminal(metric.name)} ({metric.scale}): {metric.baseline} → "
                      f"{metric.candidate} ({metric.change})", highlight=False, markup=False)
    for warning in result.warnings:
        console.print(f"[yellow]warning[/]: {for_terminal(warning)}", highlight=False)
    for reason in reason_rows(result):
        tested = f" ({reason.significance})" if reason.significance else ""
        console.print(f"[red]reason[/]: {for_terminal(reason.text + tested)}", highlight=False)
    gates = result.candidate_gates
    if gates.gate_failures:
        console.print("candidate's own gates failed: "
                      + plain_for_terminal("; ".join(gates.gate_failures)), highlight=False,
                      markup=False)
    console.print(f"[dim]{for_terminal(thresholds_text(result))}[/]", highlight=False)
    style = "red" if result.exit_code(fail_on_thresholds) else "green"
    console.print(f"[{style}]{for_terminal(result.headline(fail_on_thresholds))}[/]",
                  highlight=False)  # last: the verdict the exit code gives


def comparison_markdown(result: Comparison, fail_on_thresholds: bool = True,
                        cases_shown: int = 20, summaries: Summaries = (None, None)) -> str:
    """A comparison as Markdown, for a pull-request comment or a step summary, with each
    run's repeats from ``summaries`` (:func:`repeats_rows`)."""
    lines = [f"### {md_text(result.headline(fail_on_thresholds))}", "",
             f"`{md_text(result.baseline_run_id)}` → `{md_text(result.candidate_run_id)}` "
             f"({md_text(result.policy)} policy)", "",
             "| | baseline | candidate | change |", "|---|---:|---:|---:|"]
    for row in figure_rows(result):
        lines.append(f"| {row.label} | {row.baseline} | {row.candidate} | {row.change} |")
    repeats = repeats_rows(summaries)
    if repeats:
        lines.append("")
        lines += [f"- {side} {label}: {md_text(text, 400)}" for side, label, text in repeats]
    worst = [r for r in case_rows(result) if r.status in ("regression", "error")]
    if worst:
        lines += ["", "| case | status | baseline | candidate | change |",
                  "|---|---|---:|---:|---:|"]
        for case in worst[:cases_shown]:
            lines.append(f"| {md_text(case.case_id)} | {case.status} | {case.baseline} | "
                         f"{case.candidate} | {case.change} |")
        if len(worst) > cases_shown:
            lines.append(f"\n{len(worst) - cases_shown} more not listed.")
    reasons = reason_rows(result)
    if reasons:
        lines += ["", "**Reasons**", ""] + [
            f"- {md_text(r.text)}" + (f" ({md_text(r.significance)})" if r.significance else "")
            for r in reasons]
    for warning in result.warnings:
        lines.append(f"\n> {md_text(warning)}")
    lines += ["", md_text(thresholds_text(result))]
    return "\n".join(lines) + "\n"


__all__ = ["CaseRow", "CaseSideView", "CaseSides", "DiffLine", "EvaluatorRow", "FigureRow",
           "ReasonRow", "SignificanceRow", "as_text", "case_rows", "case_side", "case_sides",
           "comparison_markdown", "evaluator_rows", "figure_rows", "print_comparison",
           "reason_rows", "repeats_rows", "significance_rows", "stored_summaries", "text_diff",
           "thresholds_text"]
