"""``assay runs``, ``assay show`` and ``assay compare``: reading the run store."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import typer

from assay.cli.app import EXIT_GATE_FAILED, app, console, err_console, friendly_errors
from assay.cli.run import store_url
from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.analysis.compare import Comparison
    from assay.store.runs import RunStore


@app.command("runs")
@friendly_errors
def list_runs(
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
    limit: int = typer.Option(20, "--limit", "-n"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List stored runs, newest first (a run that cannot be read is listed, saying why)."""
    from assay.report.terminal import run_notes, runs_table
    from assay.store.runs import RunStore

    runs = RunStore(store_url(store))
    records = runs.run_records(limit)
    if as_json:
        print(json.dumps([r.model_dump(mode="json") for r in records], indent=2))
        return
    console.print(runs_table(records))
    for line in run_notes(records, runs.display_url if store else None):
        console.print(line, highlight=False, soft_wrap=True)


@app.command()
@friendly_errors
def show(
    run_id: str = typer.Argument(..., metavar="RUN"),
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
    as_json: bool = typer.Option(False, "--json", help="Print the case rows as JSONL."),
    summary_only: bool = typer.Option(
        False, "--summary", help="Print the run's summary (with --json: as one JSON object) "
        "instead of its cases."),
) -> None:
    """Show a run: per-case scores, verdicts, hits, misses and reasoning."""
    from assay.report.rows import agentv_row
    from assay.report.safe_text import for_terminal
    from assay.report.terminal import cases_table, fmt_score
    from assay.store.runs import RunStore

    runs = RunStore(store_url(store))
    run = runs.run_record(run_id)
    if not as_json:
        from assay.report.terminal import run_notes

        for line in run_notes([run], runs.display_url if store else None):
            err_console.print(line, highlight=False, soft_wrap=True)
    if summary_only:
        from assay.report.terminal import summary_lines
        from assay.types.records import RunSummary

        found = run.summary or RunSummary()
        if as_json:
            print(json.dumps({"run_id": run.id, "suite": run.suite, "status": run.status.value,
                              **found.model_dump(mode="json")}, indent=2))
        else:
            for line in summary_lines(found):
                console.print(line, highlight=False)
        return
    records = runs.case_records(run.id)
    if as_json:
        types = {e.name: e for e in run.config.evaluators}
        for r in records:
            print(json.dumps(agentv_row(r, run.suite, types), default=str))
        return
    console.print(f"run [bold]{for_terminal(run.id)}[/] · suite {for_terminal(run.suite)} · "
                  f"{run.status.value}", highlight=False)
    console.print(cases_table(records))
    summary = run.summary
    if summary is not None:
        console.print(f"mean score {fmt_score(summary.mean_score)}; verdicts "
                      f"{for_terminal(summary.verdicts)}; gate "
                      f"{'pass' if summary.passed else 'fail'}", highlight=False)


@app.command()
@friendly_errors
def compare(
    baseline: str | None = typer.Argument(None, metavar="RUN_A",
                                          help="The baseline run (with --against-baseline: "
                                          "the candidate)."),
    candidate: str | None = typer.Argument(None, metavar="RUN_B", help="The candidate run."),
    threshold: float = typer.Option(0.1, "--threshold",
                                    help="Per-case policy: a score change of at least this "
                                    "is a win or loss."),
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
    as_json: bool = typer.Option(False, "--json"),
    allow_incomplete: bool = typer.Option(
        False, "--allow-incomplete",
        help="Compare even when a run did not complete (per-case policy: or when their cases "
             "differ; runs sharing no case are still refused)."),
    policy: str | None = typer.Option(
        None, "--policy", help="connexity (a verdict on whole-run aggregates) or cases (any "
        "case that regressed); default: connexity when the runs were scored with "
        "'scoring: connexity', else cases."),
    max_pass_rate_drop: float | None = typer.Option(
        None, "--max-pass-rate-drop", min=0.0, help="A pass-rate drop (0-1) above this is a "
        "regression (default: 0.0)."),
    max_avg_score_drop: float | None = typer.Option(
        None, "--max-avg-score-drop", min=0.0, help="An average-score drop (0-100 points) "
        "above this is a regression (default: 5.0)."),
    max_latency_increase_pct: str | None = typer.Option(
        None, "--max-latency-increase-pct", help="A latency increase above this fraction "
        "(0.2) or percentage (20%) is a regression (default: 0.2)."),
    max_cost_increase_pct: str | None = typer.Option(
        None, "--max-cost-increase-pct", help="A cost increase above this fraction or "
        "percentage is a regression (default: not checked)."),
    fail_on_thresholds: bool = typer.Option(
        True, "--fail-on-thresholds/--no-fail-on-thresholds",
        help="Also exit 1 when the candidate fails its own run dimensions."),
    require_significance: float | None = typer.Option(
        None, "--require-significance", metavar="ALPHA", min=0.0, max=1.0,
        help="Count only regression reasons whose paired test is significant at ALPHA."),
    strict_comparability: bool = typer.Option(
        False, "--strict-comparability", help="Exit 2 when the judge, its settings or the "
        "scoring changed between the runs."),
    matched_only: bool = typer.Option(False, "--matched-only",
                                      help="Aggregate over the cases both runs hold."),
    missing_is_regression: bool = typer.Option(
        False, "--missing-is-regression", help="A baseline case missing from the candidate "
        "is a regression."),
    against_baseline: bool = typer.Option(
        False, "--against-baseline", help="Compare the one run given with the baseline of "
        "its suite and target (see assay baseline)."),
    exit_rule: str = typer.Option(
        "assay", "--exit-rule", help="Per-case policy. assay: exit 1 on a regression; agentv: "
        "exit 1 when the mean score change is negative (agentv compare's rule, which counts an "
        "errored row of a results file at its written score)."),
) -> None:
    """Compare two completed runs (run ids, or two results JSONL files); exit 1 when the
    candidate regressed (or fails its own run dimensions), 2 when they cannot be compared."""
    from pathlib import Path

    from assay.analysis.run_comparison import CompareThresholds, compare_records, parse_fraction
    from assay.store.runs import RunStore

    if exit_rule not in ("assay", "agentv"):
        raise ConfigError(f"--exit-rule {exit_rule!r}: expected assay or agentv")
    if baseline is not None and candidate is not None and Path(baseline).is_file() \
            and Path(candidate).is_file():
        if policy == "connexity":
            raise ConfigError("--policy connexity compares stored runs, not results files")
        from assay.analysis.compare_files import compare_files

        _report_cases(compare_files(Path(baseline), Path(candidate), threshold),
                      {"id": baseline}, {"id": candidate}, as_json, exit_rule)
        return
    runs = RunStore(store_url(store))
    if against_baseline:
        if candidate is not None or baseline is None:
            raise ConfigError("--against-baseline compares one run with its suite's baseline: "
                              "give only the candidate run, not two runs")
        from assay.store.baselines import baseline_for

        candidate = baseline
        found = baseline_for(runs, candidate)
        if found is None:
            raise ConfigError(f"run {candidate} has no baseline to compare with: set one "
                              "with 'assay baseline set RUN'", code="no_baseline")
        baseline = found.run_id
    if baseline is None or candidate is None:
        raise ConfigError("give two runs to compare (RUN_A RUN_B), or one with "
                          "--against-baseline")
    a, b = runs.run(baseline), runs.run(candidate)
    flags = [name for name, value in (
        ("--max-pass-rate-drop", max_pass_rate_drop), ("--max-avg-score-drop", max_avg_score_drop),
        ("--max-latency-increase-pct", max_latency_increase_pct),
        ("--max-cost-increase-pct", max_cost_increase_pct),
        ("--require-significance", require_significance),
        ("--strict-comparability", strict_comparability or None),
        ("--matched-only", matched_only or None),
        ("--missing-is-regression", missing_is_regression or None),
        ("--no-fail-on-thresholds", None if fail_on_thresholds else True),
        ("--against-baseline", against_baseline or None)) if value is not None]
    chosen = _policy(policy, a, b, flags)
    if chosen == "cases":
        _report_cases(compare_runs_of(runs, a, b, threshold, allow_incomplete), a, b, as_json,
                      exit_rule)
        return
    if exit_rule != "assay":
        raise ConfigError("--exit-rule applies to the per-case policy, not --policy connexity")
    try:
        options: dict[str, Any] = {
            "max_pass_rate_drop": max_pass_rate_drop, "max_avg_score_drop": max_avg_score_drop,
            "max_latency_increase_pct": None if max_latency_increase_pct is None
            else parse_fraction(max_latency_increase_pct),
            "max_cost_increase_pct": None if max_cost_increase_pct is None
            else parse_fraction(max_cost_increase_pct)}
        thresholds = CompareThresholds(**{k: v for k, v in options.items()
                                          if v is not None or k == "max_cost_increase_pct"})
    except ValueError as exc:
        raise ConfigError(f"comparison thresholds: {exc}") from None
    from assay.analysis.run_comparison import load_run

    base, before = load_run(runs, a["id"], "baseline", allow_incomplete)
    cand, after = load_run(runs, b["id"], "candidate", allow_incomplete)
    result = compare_records(base, cand, before, after, thresholds=thresholds,
                             matched_only=matched_only,
                             require_significance=require_significance,
                             missing_is_regression=missing_is_regression,
                             strict_comparability=strict_comparability)
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        from assay.report.comparison import print_comparison

        print_comparison(console, result)
    code = result.exit_code(fail_on_thresholds)
    if code:
        raise typer.Exit(code)


def _policy(given: str | None, baseline: dict[str, Any], candidate: dict[str, Any],
            flags: list[str]) -> str:
    """The comparison policy: ``--policy``, else connexity when a run was scored that way or
    a flag only that policy has was given, else the per-case policy."""
    if given is not None:
        if given not in ("connexity", "cases"):
            raise ConfigError(f"--policy {given!r}: expected connexity or cases")
        if given == "cases" and flags:
            raise ConfigError(f"{', '.join(flags)} only apply to --policy connexity")
        return given
    scorings = {((run.get("config") or {}).get("run") or {}).get("scoring")
                for run in (baseline, candidate)}
    return "connexity" if "connexity" in scorings or flags else "cases"


def compare_runs_of(runs: RunStore, a: dict[str, Any], b: dict[str, Any], threshold: float,
                    allow_incomplete: bool) -> Comparison:
    """The per-case comparison of two stored runs."""
    from assay.analysis.compare import compare_runs

    return compare_runs(a, b, runs.case_rows(a["id"]), runs.case_rows(b["id"]), threshold,
                        allow_incomplete=allow_incomplete)


def _report_cases(result: Comparison, a: dict[str, Any], b: dict[str, Any], as_json: bool,
                  exit_rule: str) -> None:
    """The per-case comparison (AgentV and UiPath suites) shown; exit 1 on a regression (or,
    by AgentV's rule, on a negative mean change)."""
    from rich.markup import escape

    from assay.analysis.compare_files import agentv_summary, fails
    from assay.report.safe_text import for_terminal
    from assay.report.terminal import fmt_score

    for reason in result.incomplete:
        err_console.print(f"[yellow]warning[/]: comparing anyway: {escape(reason)}",
                          highlight=False)
    if as_json:
        print(json.dumps({**result.as_dict(), "agentv": agentv_summary(result)}, indent=2))
    else:
        from rich.table import Table

        table = Table(title=f"{for_terminal(a['id'])} → {for_terminal(b['id'])}")
        for col in ("case", "before", "after", "delta", "outcome", "verdict"):
            table.add_column(col)
        style = {"win": "green", "loss": "red", "tie": "white", "error": "magenta"}
        for c in result.cases:
            delta = "—" if c.delta is None else f"{c.delta:+.3f}"
            table.add_row(for_terminal(c.case_id if not c.repeat else f"{c.case_id}#{c.repeat}"),
                          fmt_score(c.before), fmt_score(c.after), delta,
                          f"[{style[c.outcome]}]{c.outcome}[/]",
                          for_terminal(f"{c.verdict_before} → {c.verdict_after}"))
        console.print(table)
        d = result.as_dict()
        mean = "—" if d["mean_delta"] is None else f"{d['mean_delta']:+.4f}"
        console.print(f"matched {d['matched']}: wins {d['wins']}, losses {d['losses']}, ties "
                      f"{d['ties']}, errors {d['errors']}; mean delta {mean}", highlight=False)
        if exit_rule == "agentv":
            agentv_mean = agentv_summary(result)["meanDelta"]
            console.print("AgentV's mean delta (errored rows at their written score): "
                          + ("—" if agentv_mean is None else f"{agentv_mean:+.3f}"),
                          highlight=False)
        if result.only_before or result.only_after:
            console.print(f"only in {for_terminal(a['id'])}: {len(result.only_before)}; only in "
                          f"{for_terminal(b['id'])}: {len(result.only_after)}", highlight=False)
    if result.regressions and not as_json:
        console.print(f"[red]regression[/]: {len(result.regressions)} case(s): " +
                      ", ".join(for_terminal(c.case_id) for c in result.regressions[:10]),
                      highlight=False)
    if fails(result, exit_rule):  # type: ignore[arg-type]
        raise typer.Exit(EXIT_GATE_FAILED)
