"""``assay runs``, ``assay show``, ``assay compare`` and ``assay delete``: the run store."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import typer

from assay.cli.app import EXIT_GATE_FAILED, app, console, err_console, friendly_errors
from assay.cli.run import store_option_of, store_url
from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.analysis.compare import Comparison


@app.command("runs")
@friendly_errors
def list_runs(
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
    limit: int = typer.Option(20, "--limit", "-n", min=1,
                              help="At most this many runs, the newest."),
    as_json: bool = typer.Option(False, "--json", help="Print the runs as a JSON list."),
) -> None:
    """List stored runs, newest first (a run that cannot be read is listed, saying why)."""
    from assay.report.terminal import run_notes, runs_table
    from assay.store.queries import listed_cases
    from assay.store.runs import RunStore

    runs = RunStore(store_url(store), must_exist=True)
    records = runs.run_records(limit)
    stored = runs.stored_case_counts([r.id for r in records if r.summary is None])
    if as_json:
        print(json.dumps([{**r.model_dump(mode="json"), **listed_cases(r, stored)}
                          for r in records], indent=2))
        return
    console.print(runs_table(records, stored))
    for line in run_notes(records, store_option_of(runs)):
        console.print(line, highlight=False, soft_wrap=True)


@app.command()
@friendly_errors
def annotate(
    run_id: str = typer.Argument(..., metavar="RUN"),
    name: str | None = typer.Option(None, "--name", help="Call the run this ('' clears it)."),
    tag: list[str] | None = typer.Option(None, "--tag", help="Add a tag (repeatable)."),
    untag: list[str] | None = typer.Option(None, "--untag", help="Remove a tag (repeatable)."),
    notes: str | None = typer.Option(None, "--notes", help="The run's notes ('' clears them)."),
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
) -> None:
    """Name a run, tag it or write its notes, at any time after it ran."""
    from pydantic import TypeAdapter, ValidationError

    from assay.report.safe_text import for_terminal
    from assay.store.runs import RunStore
    from assay.types.config import RunName, Tag

    try:
        for value in tag or []:
            TypeAdapter(Tag).validate_python(value)
        if name:
            TypeAdapter(RunName).validate_python(name)
    except ValidationError as exc:
        raise ConfigError(f"--tag or --name: {exc.errors()[0]['msg']} "
                          "(one line, no comma in a tag)") from None
    run = RunStore(store_url(store), must_exist=True).annotate_run(
        run_id, name=name, notes=notes, add_tags=tag or [], remove_tags=untag or [])
    console.print(f"run {for_terminal(run.id)}: name {for_terminal(run.name or '-')}; tags "
                  f"{for_terminal(', '.join(run.tags) or '-')}", highlight=False)


@app.command()
@friendly_errors
def delete(
    run_id: str = typer.Argument(..., metavar="RUN"),
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
    force: bool = typer.Option(
        False, "--force", help="Delete even when a batch of the run could not be cancelled "
        "at its provider (it then runs to its end and is billed)."),
) -> None:
    """Delete a run and all it stored; a run waiting for batch has its batches cancelled at
    the providers first."""
    from assay.report.safe_text import for_terminal, plain_for_terminal
    from assay.run.delete import delete_run
    from assay.store.runs import RunStore

    runs = RunStore(store_url(store), must_exist=True)
    run = runs.run_record(run_id)
    done = delete_run(runs, run.id, force=force)
    for line in done.lines():
        err_console.print(plain_for_terminal(line), highlight=False, markup=False, soft_wrap=True)
    console.print(f"deleted run {for_terminal(run.id)}" if done.deleted else
                  f"run {for_terminal(run.id)} was already gone", highlight=False)


@app.command()
@friendly_errors
def show(
    run_id: str = typer.Argument(..., metavar="RUN"),
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
    as_json: bool = typer.Option(False, "--json", help="Print the case rows as JSONL."),
    summary_only: bool = typer.Option(
        False, "--summary", help="Print the run's summary (with --json: as one JSON object) "
        "instead of its cases."),
    failed: bool = typer.Option(False, "--failed", help="Only the cases that did not pass "
                                "(failed, borderline, in error, or with an evaluator that "
                                "could not score them)."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="At most this many cases."),
) -> None:
    """Show a run: per-case scores, verdicts, hits, misses and reasoning."""
    from assay.report.rows import agentv_row
    from assay.report.safe_text import for_terminal, plain_for_terminal
    from assay.report.terminal import (
        cases_table,
        chosen_cases,
        note_lines,
        repeats_lines,
        spend_lines,
    )
    from assay.run.display import executions_named, run_display
    from assay.run.result import verdict_notes
    from assay.store.runs import RunStore
    from assay.types.records import RunStatus, status_text

    runs = RunStore(store_url(store), must_exist=True)
    run = runs.run_record(run_id)
    if not as_json:
        from assay.report.terminal import run_notes

        for line in run_notes([run], store_option_of(runs)):
            err_console.print(line, highlight=False, soft_wrap=True)
    notes = verdict_notes(run)
    if summary_only:
        from assay.report.terminal import summary_lines
        from assay.types.records import RunSummary

        found = run.summary or RunSummary()
        if as_json:
            print(json.dumps({"run_id": run.id, "suite": run.suite, "status": run.status.value,
                              **found.model_dump(mode="json"), "notes": notes}, indent=2))
        else:
            for line in summary_lines(found, notes):
                console.print(line, highlight=False)
        return
    counted = "cases" if run.summary is None else executions_named(run.summary)
    records, left_out = chosen_cases(runs.case_records(run.id), failed, limit, counted)
    if as_json:
        types = {e.name: e for e in run.config.evaluators}
        for r in records:
            print(json.dumps(agentv_row(r, run.suite, types), default=str))
        if left_out:
            err_console.print(left_out, highlight=False)
        return
    console.print(f"run [bold]{for_terminal(run.id)}[/] · suite {for_terminal(run.suite)} · "
                  f"{status_text(run.status)}", highlight=False)
    if run.status is RunStatus.WAITING:
        from assay.run.batch import progress_of

        for line in progress_of(runs, run.id).lines():
            console.print(plain_for_terminal(line), highlight=False, markup=False)
    if records:
        console.print(cases_table(records, run=run))
    else:
        console.print("no failed, borderline or errored case" if failed else "no cases",
                      highlight=False)
    if left_out:
        console.print(left_out, highlight=False)
    summary = run.summary
    if summary is not None:
        shown = run_display(summary)
        console.print(f"{for_terminal(shown.verdicts)}; pass rate {shown.pass_rate}; mean score "
                      f"{shown.mean_score}; {for_terminal(shown.evaluator_scores)}; gate "
                      f"{'pass' if summary.passed else 'fail'}", highlight=False)
        for failure in summary.gate_failures:  # why it failed, as `assay run` said it
            console.print(f"  gate failed: {plain_for_terminal(failure)}", highlight=False,
                          markup=False)
        for line in spend_lines(shown):
            console.print(line, highlight=False)
        for line in repeats_lines(shown):
            console.print(line, highlight=False)
    for line in note_lines(notes):
        console.print(line, highlight=False)


@app.command()
@friendly_errors
def compare(
    baseline: str | None = typer.Argument(None, metavar="RUN_A",
                                          help="The baseline run (with --against-baseline: "
                                          "the candidate)."),
    candidate: str | None = typer.Argument(None, metavar="RUN_B", help="The candidate run."),
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
    markdown: bool = typer.Option(False, "--markdown",
                                  help="Print the comparison as Markdown (a PR comment)."),
    allow_incomplete: bool = typer.Option(
        False, "--allow-incomplete", help="Compare even when a run did not complete."),
    allow_different_cases: bool = typer.Option(
        False, "--allow-different-cases", help="Compare runs whose cases differ (on the "
        "cases both hold; runs sharing no case are never compared)."),
    allow_different_evaluators: bool = typer.Option(
        False, "--allow-different-evaluators",
        help="Compare runs whose evaluators or their settings differ."),
    allow_different_judge: bool = typer.Option(
        False, "--allow-different-judge",
        help="Compare runs judged (or whose user was simulated) by different models."),
    allow_different_scoring: bool = typer.Option(
        False, "--allow-different-scoring",
        help="Compare runs scored by different policies or verdict settings."),
    max_pass_rate_drop: float | None = typer.Option(
        None, "--max-pass-rate-drop", min=0.0, max=1.0, help="A pass-rate drop (0-1) above "
        "this is a regression [default: 0.0]."),
    max_avg_score_drop: float | None = typer.Option(
        None, "--max-avg-score-drop", min=0.0, max=100.0, help="An average-score drop "
        "(points of 0-100) above this is a regression [default: 5.0]."),
    max_latency_increase_pct: str | None = typer.Option(
        None, "--max-latency-increase-pct", help="A latency rise above this fraction (0.2) or "
        "percentage (20%) is a regression, when above the floor and the noise too "
        "[default: 0.2]."),
    latency_floor_ms: float | None = typer.Option(
        None, "--latency-floor-ms", min=0.0, help="A latency rise of at most this many ms "
        "is never a regression [default: 50]."),
    max_cost_increase_pct: str | None = typer.Option(
        None, "--max-cost-increase-pct", help="A cost rise above this fraction or "
        "percentage is a regression [default: not checked]."),
    fail_on_thresholds: bool = typer.Option(
        True, "--fail-on-thresholds/--no-fail-on-thresholds",
        help="Also exit 1 when the candidate failed its own gates."),
    require_significance: float | None = typer.Option(
        None, "--require-significance", metavar="ALPHA", min=0.0, max=1.0,
        help="Count only regression reasons whose paired test is significant at ALPHA."),
    matched_only: bool = typer.Option(False, "--matched-only",
                                      help="The runs' figures over the cases both hold."),
    missing_is_regression: bool = typer.Option(
        False, "--missing-is-regression", help="A baseline case missing from the candidate "
        "is a regression."),
    against_baseline: bool = typer.Option(
        False, "--against-baseline", help="Compare the one run given with the baseline of "
        "its suite and target (see assay baseline)."),
    exit_rule: str = typer.Option(
        "assay", "--exit-rule", help="assay: the comparison's exit code; agentv: exit 1 when "
        "the mean score change is negative (agentv compare's rule)."),
    threshold: float = typer.Option(
        0.1, "--threshold", min=0.0, max=1.0, help="AgentV's win/loss threshold for the "
        "'agentv' summary of --json (agentv compare's --threshold)."),
    strict_comparability: bool = typer.Option(
        False, "--strict-comparability", hidden=True,
        help="Accepted and ignored: runs that differ are always refused unless allowed."),
    cause_analysis: bool = typer.Option(
        False, "--cause-analysis", help="One judge call per regressed case: the turn and "
        "behaviour that caused it and a fix to try, kept with the candidate's case."),
    judge_model: str | None = typer.Option(
        None, "--judge-model", help="The judge of --cause-analysis [default: the case's own "
        "judge]."),
) -> None:
    """Compare two runs (run ids, or two results JSONL files): exit 1 when the candidate
    regressed (or failed its own gates), 2 when they cannot be compared. Runs that differ in
    their cases, evaluators, judge or scoring are refused unless each difference is allowed;
    the same pair gives the same verdict here, in Python, over the REST API and in the UI."""
    from pathlib import Path

    from assay.analysis.compare import CompareOptions, CompareThresholds, compare_stored
    from assay.analysis.compare_files import agentv_summary, compare_files, fails
    from assay.report.comparison import Summaries, stored_summaries
    from assay.run.policies.base import parse_fraction
    from assay.store.runs import RunStore

    if exit_rule not in ("assay", "agentv"):
        raise ConfigError(f"--exit-rule {exit_rule!r}: expected assay or agentv")
    try:
        given: dict[str, Any] = {
            "max_pass_rate_drop": max_pass_rate_drop, "max_avg_score_drop": max_avg_score_drop,
            "latency_floor_ms": latency_floor_ms,
            "max_latency_increase_pct": None if max_latency_increase_pct is None
            else parse_fraction(max_latency_increase_pct),
            "max_cost_increase_pct": None if max_cost_increase_pct is None
            else parse_fraction(max_cost_increase_pct)}
        options = CompareOptions(
            thresholds=CompareThresholds(**{k: v for k, v in given.items() if v is not None}),
            matched_only=matched_only, require_significance=require_significance or None,
            missing_is_regression=missing_is_regression, allow_incomplete=allow_incomplete,
            allow_different_cases=allow_different_cases,
            allow_different_evaluators=allow_different_evaluators,
            allow_different_judge=allow_different_judge,
            allow_different_scoring=allow_different_scoring)
    except ValueError as exc:
        raise ConfigError(f"comparison options: {exc}") from None
    inputs: dict[Path, str] = {}  # what the step summary may not be
    if baseline is not None and candidate is not None and Path(baseline).is_file() \
            and Path(candidate).is_file():
        if cause_analysis:
            raise ConfigError("--cause-analysis reads stored runs: give run ids, not files")
        inputs = {Path(baseline): "the baseline", Path(candidate): "the candidate"}
        result: Comparison = compare_files(Path(baseline), Path(candidate), options)
        summaries: Summaries = (None, None)  # results files keep no summary
    else:
        runs = RunStore(store_url(store), must_exist=True)
        inputs = runs.input_files()
        if against_baseline:
            if candidate is not None or baseline is None:
                raise ConfigError("--against-baseline compares one run with its suite's "
                                  "baseline: give only the candidate run, not two runs")
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
        result = compare_stored(runs, baseline, candidate, options)
        summaries = stored_summaries(runs, result)
        if cause_analysis:
            _analyse(runs, result, judge_model)
    failed = fails(result, exit_rule, fail_on_thresholds)  # type: ignore[arg-type]
    if as_json:  # exit_code is the process's, under the rule it was given
        print(json.dumps({**result.model_dump(mode="json"),
                          "headline": result.headline(fail_on_thresholds),
                          "exit_rule": exit_rule, "exit_code": EXIT_GATE_FAILED if failed else 0,
                          "agentv": agentv_summary(result, threshold)}, indent=2))
    elif markdown:
        from assay.report.comparison import comparison_markdown

        print(comparison_markdown(result, fail_on_thresholds, summaries=summaries), end="")
    else:
        from assay.report.comparison import print_comparison

        print_comparison(console, result, fail_on_thresholds, summaries)
        if cause_analysis:
            _print_causes(result)
        if exit_rule == "agentv":  # the last line is the verdict the exit code gives
            from assay.types import numbers

            mean = agentv_summary(result, threshold)["meanDelta"]
            shown = numbers.score_delta(mean)
            console.print(f"AgentV's mean delta (errored rows at their written score): {shown}",
                          highlight=False)
            console.print(f"[{'red' if failed else 'green'}]"
                          f"{'regression' if failed else 'no regression'} by AgentV's rule "
                          f"(mean delta {shown} is {'' if failed else 'not '}negative)[/]",
                          highlight=False)
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        from assay.report.comparison import comparison_markdown
        from assay.report.github import append_step_summary

        append_step_summary(comparison_markdown(result, fail_on_thresholds,
                                                summaries=summaries), inputs)
    if failed:
        raise typer.Exit(EXIT_GATE_FAILED)



def _analyse(runs: Any, result: Any, judge_model: str | None) -> None:
    """Analyse the comparison's regressed cases (each kept with the candidate's case)."""
    from assay.analysis.cause import analyse_regressions
    from assay.run.sync import run_sync

    found = run_sync(analyse_regressions(runs, result, judge_model=judge_model))
    for case in result.test_case_comparisons:
        case.cause_analysis = found.get(case.test_case_id)


def _print_causes(result: Any) -> None:
    """Why each regressed case regressed, a line each, after the comparison."""
    from assay.report.safe_text import plain_for_terminal
    from assay.types import numbers

    for case in result.test_case_comparisons:
        found = case.cause_analysis
        if found is None:
            continue
        cost = numbers.cost(found.usage.cost)
        if found.error is not None:
            text = f"the cause analysis failed: {found.error.message}"
        else:
            where = "no single turn" if found.turn is None else f"turn {found.turn}"
            text = (f"{where}: {found.behaviour} {found.cause} Fix: {found.suggested_fix} "
                    f"(confidence {found.confidence})")
        console.print(f"why {plain_for_terminal(case.test_case_id)} regressed: {plain_for_terminal(text)} "
                      f"[cost {cost}]", highlight=False, markup=False, soft_wrap=True)
