"""``assay eval``: the command line of ``agentv eval`` and ``uipath eval``, on ``assay run``'s
code path.

::

    assay eval evals/a.yaml 'evals/**/*.yaml' --eval-id 'refund-*' --workers 4 --out r.jsonl
    assay eval main evaluations/eval-sets/default.json --eval-ids "['a','b']" --output-file o.json
    assay eval                     # a UiPath project's only eval set, run with its entry point
    assay eval --input-overrides '{"add": {"a": 100}}' --verbose --output-file o.json \
        --trace-file spans.jsonl --eval-set-run-id nightly-42
    assay eval --resume --eval-set-run-id nightly-42

Each suite (file, glob match, or UiPath eval set) is its own stored run, through
:func:`assay.evaluate_async` exactly as ``assay run`` makes it; ``--out`` collects every run's
rows in one file (else each run writes its own under ``.assay/results/``). After the runs the
statistics ``agentv eval`` prints (:mod:`assay.analysis.score_statistics`) cover all of them. The exit code
is ``assay run``'s: 1 when any run fails its gates, 2 for a usage or configuration error.

``uipath eval``'s flags of 2.14 work as there: ``--input-overrides`` (deep-merged into the
named items' inputs), ``--verbose`` (each item's agent execution in ``--output-file``),
``--trace-file`` (every span as JSON lines), ``--max-llm-concurrency`` (judge, simulated user
and mocking calls in flight), ``--model-settings-id`` and ``--agent-memory-settings-id`` (the
eval set's entries, in each case's metadata), ``--eval-set-run-id`` (the stored run's id),
``--resume`` (the eval set's last interrupted run, or that id's), ``--report-coverage``
(coverage.py over the project's files) and ``--enable-mocker-cache`` (accepted: mocked answers
are cached as every judge answer is, unless ``ASSAY_CACHE=off``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from assay._util.case_filter import refuse_bad_filter
from assay.cli.app import EXIT_GATE_FAILED, EXIT_USAGE, app, console, err_console, friendly_errors
from assay.cli.run import (
    AGENT_TIMEOUT_HELP,
    NO_REPORT_HELP,
    _progress,
    _Reports,
    _run_interruptible,
    _Stopped,
    print_dry_run,
    print_failures,
    results_dir,
    store_url,
)
from assay.errors import ConfigError, EvaluationError


@app.command("eval")
@friendly_errors
def eval_command(
    paths: list[str] | None = typer.Argument(
        None, metavar="[ENTRYPOINT] [SUITE|GLOB]...",
        help="Suite files or globs (AgentV), or a UiPath entry point and eval set."),
    target: str | None = typer.Option(None, "--target", help="Target name (or model string)."),
    targets_file: Path | None = typer.Option(None, "--targets", help="A targets.yaml file."),
    judge_model: str | None = typer.Option(None, "--judge-model", envvar="ASSAY_JUDGE_MODEL",
                                           help="Judge model for every LLM evaluator."),
    eval_id: str | None = typer.Option(None, "--eval-id", "--filter",
                                       help="Only case ids matching this glob."),
    eval_ids: str | None = typer.Option(None, "--eval-ids",
                                        help="Only these ids: \"['id1','id2']\" or id1,id2."),
    workers: int | None = typer.Option(None, "--workers", "--concurrency", "-c", min=1,
                                       help="Cases in flight at once [default: 8]."),
    out: Path | None = typer.Option(None, "--out", "-o",
                                    help="Write every run's rows to this one file."),
    output_format: str = typer.Option("jsonl", "--output-format", help="jsonl or yaml."),
    output_file: Path | None = typer.Option(None, "--output-file", "--uipath-output",
                                            help="UiPath's output file (one suite)."),
    no_report: bool = typer.Option(False, "--no-report", help=NO_REPORT_HELP),
    agent_timeout: float | None = typer.Option(None, "--agent-timeout", min=0.001,
                                               help=AGENT_TIMEOUT_HELP),
    max_retries: int = typer.Option(0, "--max-retries", min=0,
                                    help="Times a failed run of the agent is tried again."),
    dry_run: bool = typer.Option(False, "--dry-run",
                                 help="Estimate judge calls and tokens; call nothing."),
    store: str | None = typer.Option(None, "--store", envvar="ASSAY_STORE_URL",
                                     help="Run store URL."),
    max_failed: int | None = typer.Option(0, "--max-failed", min=0,
                                          help="Gate per run: at most this many failing cases."),
    max_errors: int | None = typer.Option(0, "--max-errors", min=0,
                                          help="Gate per run: at most this many evaluator "
                                          "errors."),
    input_overrides: str | None = typer.Option(
        None, "--input-overrides", help="Fields deep-merged into items' inputs: "
        "'{\"eval-1\": {\"operator\": \"*\"}}'."),
    verbose: bool = typer.Option(False, "--verbose", help="Include each item's agent "
                                 "execution (output, trace, error) in --output-file."),
    trace_file: Path | None = typer.Option(None, "--trace-file", help="Write every span (the "
                                           "agent's and each evaluator's) as JSON lines."),
    max_llm_concurrency: int | None = typer.Option(
        None, "--max-llm-concurrency", min=1, help="Judge, simulated-user and mocking calls "
        "in flight at once [default: --workers]."),
    model_settings_id: str | None = typer.Option(
        None, "--model-settings-id", help="The eval set's modelSettings entry, given to every "
        "case in its metadata ('default': none)."),
    agent_memory_settings_id: str | None = typer.Option(
        None, "--agent-memory-settings-id", help="The eval set's agentMemorySettings entry, "
        "given to every case in its metadata."),
    eval_set_run_id: str | None = typer.Option(
        None, "--eval-set-run-id", help="The id the run is stored under (one eval set)."),
    resume: bool = typer.Option(False, "--resume", help="Resume the eval set's last "
                                "interrupted run (or --eval-set-run-id's) instead of a new one."),
    report_coverage: bool = typer.Option(
        False, "--report-coverage", help="Measure the lines of the project's Python files "
        "the runs executed (coverage.py) and print the report."),
    enable_mocker_cache: bool = typer.Option(
        False, "--enable-mocker-cache", help="Accepted for compatibility with uipath eval: "
        "mocked answers are cached as every judge answer is (ASSAY_CACHE=off draws them "
        "afresh)."),
) -> None:
    """Run one or more suites, as ``agentv eval`` and ``uipath eval`` do, with statistics."""
    from pydantic import ValidationError

    from assay.analysis.score_statistics import score_statistics
    from assay.report.files import ROW_FORMATS
    from assay.report.outputs import check_outputs
    from assay.run.evaluate import evaluate_async, open_store, run_inputs
    from assay.suites.paths import expand, parse_eval_ids, parse_input_overrides
    from assay.types.config import Gates, RunConfig, settings_error

    del enable_mocker_cache  # accepted: mocked answers go through the response cache
    refuse_bad_filter(eval_id, "--eval-id")
    if output_format not in ROW_FORMATS:
        raise ConfigError(f"--output-format {output_format!r}: expected jsonl or yaml")
    entrypoint, suites = expand(list(paths or []))
    for flag, given in (("--output-file", output_file), ("--eval-set-run-id", eval_set_run_id)):
        if given is not None and len(suites) > 1:
            raise ConfigError(f"{flag} takes one eval set; {len(suites)} suites were given")
    if verbose and output_file is None:
        raise ConfigError("--verbose adds the agent's execution to --output-file: give one")
    try:
        config = RunConfig(
            concurrency=workers or RunConfig().concurrency, judge_model=judge_model,
            target=target, targets_file=str(targets_file) if targets_file else None,
            filter=eval_id, case_ids=parse_eval_ids(eval_ids) if eval_ids else None,
            agent_timeout_s=agent_timeout, agent_retries=max_retries, entrypoint=entrypoint,
            dry_run=dry_run, gates=Gates(max_failed=max_failed, max_errors=max_errors),
            input_overrides=parse_input_overrides(input_overrides) if input_overrides
            else None, model_settings_id=model_settings_id,
            agent_memory_settings_id=agent_memory_settings_id,
            llm_concurrency=max_llm_concurrency,
            run_id=None if resume else eval_set_run_id,
            batch=False)  # agentv and uipath eval answer at once: a suite's batch is assay run's
    except ValidationError as exc:
        raise settings_error(exc) from None
    url = store_url(store)
    runs = open_store(url)
    shared = _Reports(out, None, None, fmt=output_format) if out is not None else None
    outputs = {"--out": out, "--output-file": output_file, "--trace-file": trace_file}
    spans: list[str] = []
    coverage = _coverage() if report_coverage else None

    def check(inputs: Mapping[Path, str]) -> None:
        """Refuse an output that is a file a run uses, then open the shared rows file."""
        check_outputs(outputs, inputs)
        if shared is not None:
            shared.open({})

    if not dry_run and (out is not None or output_file is not None or trace_file is not None):
        # Every run writes to these, so each is checked against every run's files first.
        check({p: what for suite in suites
               for p, what in run_inputs(suite, config=config, store=runs).items()})
    records: list[Any] = []
    gates_failed = False
    failures: list[EvaluationError] = []
    for suite in suites:
        reports = shared or _Reports(None, None, None, fmt=output_format,
                                     results_dir=results_dir(url))
        progress = _progress(suite)
        coro = _resume(suite, runs, eval_set_run_id, workers, judge_model, progress, reports,
                       None if dry_run else check) if resume else \
            evaluate_async(suite, config=config, store=runs, progress=progress,
                           on_record=reports.on_record, on_start=reports.started,
                           keep=False, on_inputs=None if dry_run else check)
        try:
            result = _run_interruptible(coro, progress)
        except _Stopped as stop:
            reports.close(keep=True)
            raise typer.Exit(stop.code) from None
        except EvaluationError as exc:
            reports.close(keep=True)
            err_console.print(f"error [{exc.code}]: {exc.message}", highlight=False,
                              markup=False, soft_wrap=True)
            raise typer.Exit(EXIT_USAGE) from None
        if result.estimate is not None:  # a dry run: nothing was written
            print_dry_run(result, f"{suite}: ")
            continue
        if reports is not shared:
            failures += reports.finish(result)
        if output_file is not None:
            try:
                _write_uipath(result, output_file, verbose)
            except EvaluationError as exc:
                failures.append(exc)
        if trace_file is not None:
            from assay.report.uipath_output import trace_lines

            spans.extend(trace_lines(result))
        gates_failed = _report(result, runs, reports) or gates_failed
        records.extend(result.records)
    if coverage is not None:
        _coverage_report(coverage)
    if trace_file is not None and not dry_run:
        from assay.report.outputs import write_atomic

        try:
            write_atomic(trace_file, "".join(f"{line}\n" for line in spans).encode(),
                         "--trace-file")
        except EvaluationError as exc:
            failures.append(exc)
    if shared is not None and not dry_run:
        before = len(failures)
        failures += shared.finish(None)
        if len(failures) == before:
            console.print(f"results written to {out}", highlight=False, markup=False)
    if records:
        from assay.report.score_statistics import statistics_lines

        for line in statistics_lines(score_statistics(records)):
            console.print(line, highlight=False)
    print_failures(failures)
    if failures:
        raise typer.Exit(EXIT_USAGE)
    if gates_failed:
        raise typer.Exit(EXIT_GATE_FAILED)


def _write_uipath(result: Any, path: Path, verbose: bool) -> None:
    """UiPath's output file, with each item's agent execution when ``verbose``."""
    from assay.report.uipath_output import render_for_records, write_uipath_output

    write_uipath_output(path, render_for_records(result, verbose=verbose))


async def _resume(suite: Path, runs: Any, run_id: str | None, workers: int | None,
                  judge_model: str | None, progress: Any, reports: Any, check: Any) -> Any:
    """``--resume``: the run named by ``--eval-set-run-id``, else the newest run of this eval
    set that did not complete; an error when there is none."""
    from assay.run.evaluate import load_data, resume_async
    from assay.types.records import RunStatus

    if run_id is None:
        name = load_data(suite).name
        found = next((r for r in runs.run_records(1000) if r.suite == name
                      and r.status in (RunStatus.INTERRUPTED, RunStatus.FAILED)), None)
        if found is None:
            raise ConfigError(f"--resume: no run of {name!r} is waiting to be finished in "
                              f"{runs.display_url} (name one with --eval-set-run-id)")
        run_id = found.id
    return await resume_async(run_id, store=runs, data=suite, progress=progress,
                              on_record=reports.on_record, on_start=reports.started,
                              keep=False, on_inputs=check, concurrency=workers,
                              judge_model=judge_model)


def _coverage() -> Any:
    """A started coverage.py measurement of the runs (UiPath's --report-coverage)."""
    try:
        import coverage
    except ImportError:
        raise ConfigError("--report-coverage measures with coverage.py, which is not "
                          "installed: pip install 'assay[coverage]'") from None
    measured = coverage.Coverage(branch=True, concurrency=["thread"], data_file=None)
    measured.start()
    return measured


def _coverage_report(measured: Any) -> None:
    """Stop measuring and print the report of the files under the working directory."""
    import sys

    measured.stop()
    try:
        measured.report(include=[str(Path.cwd() / "*")], show_missing=True, file=sys.stdout)
    except Exception as exc:  # coverage's "No data to report" and the like
        console.print(f"coverage: {exc}", highlight=False, markup=False)


def _report(result: Any, runs: Any, reports: Any) -> bool:
    """Print one run's results; True when it failed a gate."""
    from assay.report.safe_text import for_terminal
    from assay.report.terminal import summary_lines

    if result.suite is not None and result.suite.metadata.get("format") == "uipath":
        from assay.report.uipath_console import table_for_result

        console.print(table_for_result(result))
    for line in summary_lines(result.summary, result.notes):
        console.print(line, highlight=False)
    written = getattr(reports, "default_path", None)
    if written is not None:
        console.print(f"results written to {written}", highlight=False, markup=False)
    console.print(f"run {result.run_id} ({for_terminal(result.run.suite)}) stored in "
                  f"{runs.display_url}", highlight=False)
    for failure in result.summary.gate_failures:
        console.print(f"[red]gate failed[/]: {for_terminal(failure)}", highlight=False,
                      soft_wrap=True)  # one line, so a command it advises copies whole
    return not result.passed
