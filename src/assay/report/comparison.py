"""A run comparison on the terminal: the verdict and its reasons (with their paired tests),
the aggregates side by side, each case's status, the metrics, and what changed."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from assay.report.safe_text import for_terminal

STATUS_STYLE = {"regression": "red", "improvement": "green", "unchanged": "white",
                "error": "magenta"}


def _num(value: float | None, spec: str = ".2f", suffix: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{suffix}"


def _signed(value: float | None, spec: str = "+.2f", suffix: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{suffix}"


def print_comparison(console: Console, result: Any) -> None:
    """Print a :class:`~assay.analysis.run_comparison.RunComparison`."""
    b, c, d = result.baseline, result.candidate, result.aggregate
    table = Table(title=f"{for_terminal(result.baseline_run_id)} → "
                        f"{for_terminal(result.candidate_run_id)}"
                        + (" (matched cases only)" if result.matched_only else ""))
    for column in ("", "baseline", "candidate", "delta"):
        table.add_column(column)
    table.add_row("pass rate", _num(b.pass_rate), _num(c.pass_rate), _signed(d.pass_rate_delta,
                                                                             "+.4f"))
    table.add_row("avg score", _num(b.avg_score), _num(c.avg_score),
                  _signed(d.avg_score_delta))
    table.add_row("avg latency", _num(b.latency_avg_ms, ".0f", "ms"),
                  _num(c.latency_avg_ms, ".0f", "ms"), _signed(d.latency_avg_delta_ms, "+.0f",
                                                               "ms"))
    table.add_row("p95 latency", _num(b.latency_p95_ms, ".0f", "ms"),
                  _num(c.latency_p95_ms, ".0f", "ms"), _signed(d.latency_p95_delta_ms, "+.0f",
                                                               "ms"))
    table.add_row("cost", _num(b.cost_usd, ".4f"), _num(c.cost_usd, ".4f"),
                  _signed(d.cost_delta_usd, "+.4f"))
    console.print(table)
    cases = Table(title="cases")
    for column in ("case", "status", "baseline", "candidate", "delta", "passed"):
        cases.add_column(column, overflow="fold")
    for case in result.test_case_comparisons:
        style = STATUS_STYLE.get(case.status, "white")
        passed = f"{case.baseline_passed} → {case.candidate_passed}"
        cases.add_row(for_terminal(case.test_case_id), f"[{style}]{case.status}[/]",
                      _num(case.baseline_score), _num(case.candidate_score),
                      _signed(case.score_delta), passed)
    console.print(cases)
    console.print(f"cases: {d.total_regressions} regressed, {d.total_improvements} improved, "
                  f"{d.total_unchanged} unchanged, {d.total_errors} errors; only in the "
                  f"baseline {len(result.baseline_only_test_cases)}, only in the candidate "
                  f"{len(result.candidate_only_test_cases)}", highlight=False)
    for metric in d.per_metric_aggregate_deltas:
        console.print(f"  {for_terminal(metric.metric)}: {_num(metric.baseline, '.4f')} → "
                      f"{_num(metric.candidate, '.4f')} ({_signed(metric.delta, '+.4f')})",
                      highlight=False)
    for warning in result.warnings:
        console.print(f"[yellow]warning[/]: {for_terminal(warning)}", highlight=False)
    verdict = result.verdict
    used = ", ".join(f"{k} {v:g}" for k, v in verdict.thresholds_used.items())
    for reason in verdict.reason_details:
        p = "" if reason.p_value is None else f"; p={reason.p_value:.4g}"
        tag = "" if reason.counted else " [dim](not significant: not counted)[/]"
        console.print(f"[red]reason[/]: {for_terminal(reason.text)}{p}{tag}", highlight=False)
    gates = result.candidate_gates
    console.print(f"candidate gates: metrics {gates.metrics_passed}, cases "
                  f"{gates.cases_passed}", highlight=False)
    if verdict.regression_detected:
        console.print(f"[red]regression detected[/] (thresholds: {used})", highlight=False)
    else:
        console.print(f"[green]no regression[/] (thresholds: {used})", highlight=False)


__all__ = ["print_comparison"]
