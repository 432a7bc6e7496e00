"""A comparison of two runs for people: the terminal, Markdown, and the rows the web UI shows.

Every surface renders the one :class:`~assay.analysis.compare.Comparison` through the same
rows, with numbers shown by :mod:`assay.types.numbers`, so a figure, a change and the verdict
read the same in a terminal, a pull-request comment and the browser: the pass rate in percent
and its change in points, the score on the 0-100 scale, latency and cost with the direction of
their change in words.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from assay.analysis.compare import Comparison, MetricAggregateDelta
from assay.report.markdown import md_text
from assay.report.safe_text import for_terminal
from assay.types import numbers
from assay.types.records import RunSummary

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
        FigureRow(label="latency, mean", baseline=numbers.milliseconds(b.latency_avg_ms),
                  candidate=numbers.milliseconds(c.latency_avg_ms),
                  change=numbers.latency_change(d.latency_avg_delta_ms),
                  direction=_direction(d.latency_avg_delta_ms, False)),
        FigureRow(label="latency, p95", baseline=numbers.milliseconds(b.latency_p95_ms),
                  candidate=numbers.milliseconds(c.latency_p95_ms),
                  change=numbers.latency_change(d.latency_p95_delta_ms),
                  direction=_direction(d.latency_p95_delta_ms, False)),
        FigureRow(label="cost", baseline=numbers.usd(b.cost_usd),
                  candidate=numbers.usd(c.cost_usd), change=numbers.usd_change(d.cost_delta_usd),
                  direction=_direction(d.cost_delta_usd, False)),
    ]


def _metric_row(metric: MetricAggregateDelta) -> FigureRow:
    """A judge metric over the matched cases: a pass/fail one as the share that passed, a
    rated one on its 0-5 scale."""
    if metric.is_binary:
        return FigureRow(label=f"{metric.metric} (pass fraction)",
                         baseline=numbers.percent(metric.baseline),
                         candidate=numbers.percent(metric.candidate),
                         change=numbers.percent_points(metric.delta),
                         direction=_direction(metric.delta, True))
    return FigureRow(label=f"{metric.metric} (0-5)", baseline=numbers.points(metric.baseline, 5),
                     candidate=numbers.points(metric.candidate, 5),
                     change=numbers.points_delta(metric.delta),
                     direction=_direction(metric.delta, True))


def metric_rows(result: Comparison, baseline: RunSummary | None = None,
                candidate: RunSummary | None = None) -> list[FigureRow]:
    """Each evaluator's mean value (0-1) in the two runs, when their summaries are given,
    then each judge metric over the matched cases."""
    before = baseline.evaluators if baseline is not None else {}
    after = candidate.evaluators if candidate is not None else {}
    rows = []
    for name in sorted(before.keys() | after.keys()):
        b = before[name].mean if name in before else None
        c = after[name].mean if name in after else None
        delta = None if b is None or c is None else c - b
        rows.append(FigureRow(label=name, baseline=numbers.score(b), candidate=numbers.score(c),
                              change=numbers.score_delta(delta),
                              direction=_direction(delta, True)))
    return rows + [_metric_row(m) for m in result.aggregate.per_metric_aggregate_deltas]


class ReasonRow(BaseModel):
    """A regression reason, with the p-value of its paired test shown (None: no test)."""

    text: str
    p_value: str | None = None
    significant: bool | None = None
    counted: bool = True


def reason_rows(result: Comparison) -> list[ReasonRow]:
    """The verdict's reasons as every surface lists them."""
    return [ReasonRow(text=r.text, p_value=None if r.p_value is None
                      else numbers.p_value(r.p_value), significant=r.significant,
                      counted=r.counted) for r in result.verdict.reason_details]


class SignificanceRow(BaseModel):
    """A paired test's figures, shown in the unit of what it compared."""

    pairs: str
    difference: str
    interval: str
    p_value: str


def _difference(name: str) -> Callable[[float | None], str]:
    """How a test's difference reads: the pass share in points of percent, the 0-100 score
    in points, latency in milliseconds, a metric's mean as a 0-1 score."""
    if name == "cases":
        return numbers.percent_points
    if name == "score":
        return numbers.points_delta
    if name == "latency":
        return numbers.milliseconds_delta
    return numbers.score_delta


def significance_rows(result: Comparison) -> dict[str, SignificanceRow]:
    """Each paired test's figures, by the test's name in ``Comparison.significance``."""
    rows = {}
    for name, test in result.significance.items():
        shown = _difference(name)
        interval = numbers.MISSING if test.ci_low is None else \
            f"[{shown(test.ci_low)}, {shown(test.ci_high)}]"
        rows[name] = SignificanceRow(pairs=numbers.count(test.n_paired),
                                     difference=shown(test.diff), interval=interval,
                                     p_value=numbers.p_value(test.p_value))
    return rows


def case_rows(result: Comparison, limit: int | None = None) -> list[CaseRow]:
    """The matched cases, as every surface shows them (scores on the 0-100 scale)."""
    cases = result.test_case_comparisons if limit is None else \
        result.test_case_comparisons[:limit]

    def passed(value: bool | None) -> str:
        return "-" if value is None else "pass" if value else "not passed"

    return [CaseRow(case_id=case.test_case_id, status=case.status,
                    baseline=numbers.points(case.baseline_score),
                    candidate=numbers.points(case.candidate_score),
                    change=numbers.points_delta(case.score_delta),
                    passed=f"{passed(case.baseline_passed)} → {passed(case.candidate_passed)}")
            for case in cases]


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
                 f"{numbers.p_value(result.verdict.require_significance)}")
    return text


def print_comparison(console: Console, result: Comparison,
                     fail_on_thresholds: bool = True) -> None:
    """Print a comparison on the terminal."""
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
    for row in metric_rows(result):
        console.print(f"  {for_terminal(row.label)}: {row.baseline} → {row.candidate} "
                      f"({row.change})", highlight=False, markup=False)
    for warning in result.warnings:
        console.print(f"[yellow]warning[/]: {for_terminal(warning)}", highlight=False)
    for reason in reason_rows(result):
        p = "" if reason.p_value is None else f"; p={reason.p_value}"
        tag = "" if reason.counted else " (not significant: not counted)"
        console.print(f"[red]reason[/]: {for_terminal(reason.text + p + tag)}", highlight=False)
    gates = result.candidate_gates
    if gates.gate_failures:
        console.print("candidate's own gates failed: "
                      + for_terminal("; ".join(gates.gate_failures)), highlight=False,
                      markup=False)
    console.print(f"[dim]{for_terminal(thresholds_text(result))}[/]", highlight=False)
    style = "red" if result.exit_code(fail_on_thresholds) else "green"
    console.print(f"[{style}]{for_terminal(result.headline(fail_on_thresholds))}[/]",
                  highlight=False)  # last: the verdict the exit code gives


def comparison_markdown(result: Comparison, fail_on_thresholds: bool = True,
                        cases_shown: int = 20) -> str:
    """A comparison as Markdown, for a pull-request comment or a step summary."""
    lines = [f"### {md_text(result.headline(fail_on_thresholds))}", "",
             f"`{md_text(result.baseline_run_id)}` → `{md_text(result.candidate_run_id)}` "
             f"({md_text(result.policy)} policy)", "",
             "| | baseline | candidate | change |", "|---|---:|---:|---:|"]
    for row in figure_rows(result):
        lines.append(f"| {row.label} | {row.baseline} | {row.candidate} | {row.change} |")
    worst = [r for r in case_rows(result) if r.status in ("regression", "error")]
    if worst:
        lines += ["", "| case | status | baseline | candidate | change |",
                  "|---|---|---:|---:|---:|"]
        for case in worst[:cases_shown]:
            lines.append(f"| {md_text(case.case_id)} | {case.status} | {case.baseline} | "
                         f"{case.candidate} | {case.change} |")
        if len(worst) > cases_shown:
            lines.append(f"\n{len(worst) - cases_shown} more not listed.")
    for warning in result.warnings:
        lines.append(f"\n> {md_text(warning)}")
    lines += ["", md_text(thresholds_text(result))]
    return "\n".join(lines) + "\n"


__all__ = ["CaseRow", "FigureRow", "ReasonRow", "SignificanceRow", "case_rows",
           "comparison_markdown", "figure_rows", "metric_rows", "print_comparison",
           "reason_rows", "significance_rows", "thresholds_text"]
