"""``assay run``: a thin shell over :func:`assay.evaluate_async` (arguments, progress, printing).

Everything a run does (loading, targets, judges, resume rules, the store, gates) is the
library's; this module turns flags into a :class:`RunConfig`, shows progress, writes the
requested result files, prints the summary and picks the exit code. SIGTERM (what CI and
``docker stop`` send) stops a run like Ctrl-C: agent processes are killed, the run is marked
interrupted and the resume command printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import typer

from assay._util.case_filter import refuse_bad_filter
from assay._util.user_paths import user_path
from assay.cli.app import (
    EXIT_GATE_FAILED,
    EXIT_USAGE,
    app,
    cache_option,
    console,
    err_console,
    friendly_errors,
)
from assay.errors import ConfigError, EvaluationError
from assay.report.safe_text import for_terminal, plain_for_terminal

EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
NO_REPORT_HELP = ("Accepted for compatibility with uipath eval, and does nothing: UiPath's "
                  "flag skips reporting to Studio Web, and assay reports to no platform.")
AGENT_TIMEOUT_HELP = ("Seconds one run of the agent may take (default: the suite's "
                      "execution.agent_timeout_s, else 600, or the target's own timeout_s when "
                      "longer).")


def store_url(option: str | None) -> str:
    """``--store`` as a URL, else the library's default store (``$ASSAY_STORE_URL``, else
    ``.assay/runs.db``)."""
    from assay.store.runs import store_url as url_of

    return url_of(option)


def store_option_of(runs: Any) -> str | None:
    """What a command printed for the user to run next needs of ``runs`` (a RunStore) to
    find its run: the store's URL as it may be shown, or None for the default store, which
    that command opens by itself. Without it, ``resume with: assay run --resume ID`` after
    ``--store elsewhere.db`` looked in the default store and found no run."""
    from assay._util.user_paths import user_url

    return None if runs.url == user_url(store_url(None)) else runs.display_url


@app.command()
@friendly_errors
def run(
    ctx: typer.Context,
    suite_path: Path | None = typer.Argument(
        None, metavar="SUITE", help="EVAL.yaml, JSONL, CSV, Parquet, or a UiPath project."),
    target: str | None = typer.Option(None, "--target", help="Target name (or model string)."),
    targets_file: Path | None = typer.Option(None, "--targets", help="A targets.yaml file."),
    judge_model: str | None = typer.Option(None, "--judge-model", envvar="ASSAY_JUDGE_MODEL",
                                           help="Judge model for every LLM evaluator."),
    concurrency: int | None = typer.Option(
        None, "--concurrency", "-c", "--workers", min=1,
        help="Cases (and judge calls) in flight at once [default: 8, or the resumed run's]."),
    filter_glob: str | None = typer.Option(
        None, "--filter", "--eval-id", help="Only case ids matching this glob (*, ?, [a-z]; "
        "[[] for a literal [; a '[' left open is an error); with --traces, which traces: "
        "MLflow's filter_string for mlflow:, else KEY=VALUE pairs (name, status, "
        "service or a root span attribute) separated by commas."),
    traces: str | None = typer.Option(
        None, "--traces", help="Judge traces instead of running an agent: store, store:URL, "
        "mlflow:TRACKING_URI[#EXPERIMENT], phoenix:URL[#PROJECT], langfuse:FILE.json, "
        "otlp:FILE.json. SUITE, when given, supplies the evaluators."),
    since: str | None = typer.Option(
        None, "--since", help="With --traces: traces that started at or after this (ISO 8601 "
        "date or date-time, seconds since 1970, or a time ago: 30m, 24h, 7d)."),
    until: str | None = typer.Option(
        None, "--until", help="With --traces: traces that started before this."),
    eval_ids: str | None = typer.Option(
        None, "--eval-ids", help="Only these case ids: \"['id1','id2']\" or id1,id2 "
        "(UiPath's option)."),
    repeat: int = typer.Option(1, "--repeat", min=1, help="Run every case N times."),
    output: Path | None = typer.Option(None, "--output", "-o", "--out",
                                       help="Write result rows (JSONL) as cases complete."),
    uipath_output: Path | None = typer.Option(None, "--uipath-output", "--output-file",
                                              help="Also write UiPath's output-file shape."),
    junit: Path | None = typer.Option(None, "--junit", help="Write a JUnit XML report."),
    report: list[str] | None = typer.Option(
        None, "--report", help="Write a report: FORMAT:PATH (jsonl, junit, uipath, or a "
        "plugin's); repeatable."),
    dry_run: bool = typer.Option(False, "--dry-run",
                                 help="Estimate judge calls and tokens; call nothing."),
    resume: str | None = typer.Option(None, "--resume", help="Resume a stopped run by id."),
    rerun_failed: str | None = typer.Option(
        None, "--rerun-failed", metavar="RUN_ID", help="A new run of RUN_ID's suite: its "
        "failed and errored cases run again, the others keep their results."),
    store: str | None = typer.Option(None, "--store", envvar="ASSAY_STORE_URL",
                                     help="Run store URL."),
    cache: str | None = typer.Option(None, "--cache", help="Judge response cache: "
                                     "use|refresh|off (default: $ASSAY_CACHE, else use)."),
    max_attempts: int = typer.Option(6, "--max-attempts", min=1,
                                     help="Attempts per judge call (1 = no retries)."),
    call_timeout: float = typer.Option(120.0, "--call-timeout", min=0.001,
                                       help="Seconds one judge call may take."),
    total_timeout: float = typer.Option(300.0, "--total-timeout", min=0.001,
                                        help="Seconds one judge call may take, retries included."),
    min_score: float | None = typer.Option(None, "--min-score", min=0.0, max=1.0,
                                           help="Gate: mean case score at least this."),
    max_failed: int | None = typer.Option(0, "--max-failed", min=0,
                                          help="Gate: at most this many failing cases (with "
                                          "--repeat, a case that failed in any repeat counts "
                                          "once)."),
    max_errors: int | None = typer.Option(0, "--max-errors", min=0,
                                          help="Gate: at most this many evaluator errors."),
    retry_errors: bool = typer.Option(False, "--retry-errors",
                                      help="With --resume: compute errors again."),
    pass_at: float = typer.Option(0.8, "--pass-at", min=0.0, max=1.0,
                                  help="Case passes at this score."),
    borderline_at: float = typer.Option(0.6, "--borderline-at", min=0.0, max=1.0,
                                        help="Borderline from here."),
    scoring: str | None = typer.Option(
        None, "--scoring", help="default or connexity (default: the suite's)."),
    metrics_pass_threshold: float | None = typer.Option(
        None, "--metrics-pass-threshold", min=0.0, max=100.0,
        help="Gate: mean case score (0-100) at least this (default: the suite's; 80 under "
        "scoring: connexity)."),
    cases_pass_threshold: float | None = typer.Option(
        None, "--cases-pass-threshold", min=0.0, max=100.0,
        help="Gate: percent of executions passed (errors not passed) at least this "
        "(default: the suite's; 100 under scoring: connexity)."),
    max_error_rate: float | None = typer.Option(
        None, "--max-error-rate", min=0.0, max=1.0,
        help="Gate: errored executions over all at most this fraction."),
    connexity_compat: bool = typer.Option(
        False, "--connexity-compat", help="Score a failed judge call 0 and count its case "
        "as failed, as the Connexity platform does."),
    simulator_model: str | None = typer.Option(
        None, "--simulator-model", help="The simulated user's model for conversation cases."),
    cause_analysis: bool = typer.Option(
        False, "--cause-analysis", help="One more judge call per failed case: the turn and "
        "behaviour that caused it and a fix to try, kept with the case (its cost counts)."),
    set_baseline: bool = typer.Option(
        False, "--set-baseline", help="Make this run the baseline of its suite and target "
        "when it passes its gates."),
    compare_to_baseline: bool = typer.Option(
        False, "--compare-to-baseline", help="Compare this run with its suite's baseline "
        "afterwards; exit 1 on a regression."),
    judges: str | None = typer.Option(
        None, "--judges", help="Built-in agent judges, comma-separated (correctness, "
        "groundedness, ...), or 'default' to choose them per case."),
    naming: str | None = typer.Option(
        None, "--naming", help="Report in Databricks' names (databricks) or MLflow's (mlflow)."),
    quality_criteria: str | None = typer.Option(
        None, "--quality-criteria", help="Conditions the run must meet, such as "
        "\"correctness >= 0.9 AND `safety/mean` >= 1\" (exit 1 when unmet)."),
    global_guideline: list[str] | None = typer.Option(
        None, "--global-guideline", help="A guideline for every case (repeatable)."),
    retrieval_per: str | None = typer.Option(
        None, "--retrieval-per", help="Retrieval judgements per row (Databricks, the "
        "default) or per retriever span (span: MLflow 3's numbers)."),
    output_format: str = typer.Option("jsonl", "--output-format",
                                      help="Result rows as jsonl or yaml (AgentV's option)."),
    results_file: bool = typer.Option(
        True, "--results-file/--no-results-file",
        help="Also write the rows to .assay/results/RUN.jsonl beside the store."),
    agent_timeout: float | None = typer.Option(
        None, "--agent-timeout", min=0.001, help=AGENT_TIMEOUT_HELP),
    max_retries: int = typer.Option(0, "--max-retries", min=0,
                                    help="Times a failed run of the agent is tried again."),
    no_report: bool = typer.Option(False, "--no-report", help=NO_REPORT_HELP),
    executor: str = typer.Option(
        "local", "--executor", help="Where cases run: local (this process) or ray (a Ray "
        "cluster: $RAY_ADDRESS or --ray-address; results stored here either way)."),
    ray_address: str | None = typer.Option(
        None, "--ray-address", help="The Ray cluster to join [default: $RAY_ADDRESS, else a "
        "local Ray]."),
    ray_workers: int | None = typer.Option(
        None, "--ray-workers", min=1, help="Worker actors on the cluster [default: one per "
        "CPU]."),
    judge_concurrency: int | None = typer.Option(
        None, "--judge-concurrency", min=1, help="With --executor ray: calls in flight to "
        "one judge model across the whole cluster [default: --concurrency]."),
    target_concurrency: int | None = typer.Option(
        None, "--target-concurrency", min=1, help="With --executor ray: runs of one target "
        "in flight across the whole cluster [default: no limit]."),
    min_judge_kappa: float | None = typer.Option(
        None, "--min-judge-kappa", min=-1.0, max=1.0,
        help="Gate: every judge has a current calibration (assay calibrate) with kappa at "
        "least this."),
    min_judge_accuracy: float | None = typer.Option(
        None, "--min-judge-accuracy", min=0.0, max=1.0,
        help="Gate: every judge has a current calibration with accuracy at least this."),
    calibration_set: str | None = typer.Option(
        None, "--calibration-set", help="Gate: the judges' calibrations must be on this set "
        "(implies the calibration gate)."),
    budget_usd: float | None = typer.Option(
        None, "--budget-usd", min=0.000001, help="USD the run may spend: it stops starting "
        "cases before the budget is spent and can be resumed (--resume) for the rest."),
    batch: bool | None = typer.Option(
        None, "--batch/--no-batch", help="Send the judge calls through the providers' batch "
        "APIs (OpenAI, Anthropic) at half the price: the agent runs now, the run is left "
        "waiting for batch and 'assay run --resume RUN_ID' collects the answers (within 24 "
        "hours). Default: the suite's execution.batch, else --no-batch.", show_default=False),
    wait: bool = typer.Option(
        False, "--wait", help="With a batch run (--batch, the suite's execution.batch, or "
        "--resume of a batch run): wait for the batches and complete the run, asking every "
        "--poll-interval seconds."),
    poll_interval: float = typer.Option(
        60.0, "--poll-interval", min=0.01, max=3600.0,
        help="With --wait: seconds between two checks of the batches."),
    transcript: Path | None = typer.Option(
        None, "--transcript", help="Judge recorded sessions (AgentV's transcript JSONL) "
        "instead of running the agent; each answers the case of its test_id."),
    run_name: str | None = typer.Option(None, "--name", help="What to call the run (shown "
                                        "beside its id; change it with assay annotate)."),
    tag: list[str] | None = typer.Option(None, "--tag", help="A tag to find the run by "
                                         "(repeatable)."),
    notes: str | None = typer.Option(None, "--notes", help="What the run is for."),
    agent_version: str | None = typer.Option(
        None, "--agent-version", envvar="ASSAY_AGENT_VERSION",
        help="The version of the agent under test, recorded and compared between runs "
        "(default: the suite's agent.version)."),
) -> None:
    """Run a suite: every case through its target and evaluators, stored as it completes.
    The run records the git commit, branch and uncommitted changes of the suite's tree."""
    from assay._util.gc_pause import importing

    with importing():
        from pydantic import ValidationError

        from assay.run.evaluate import evaluate_async, open_store, resume_async
        from assay.suites.paths import parse_eval_ids
        from assay.types.config import (
            CalibrationGate,
            Gates,
            RayOptions,
            RunConfig,
            RunThresholds,
            Thresholds,
            settings_error,
        )
        from assay.types.engine_config import RetryPolicy

    mode = cache_option(cache)
    if judge_model is not None and not judge_model.strip():
        raise ConfigError("--judge-model is empty; give a model such as openai:gpt-4o-mini, "
                          "or leave it out for the default")
    if traces is None:  # with --traces it is the trace source's filter, not a glob
        refuse_bad_filter(filter_glob, "--filter")
    if wait and batch is False:
        raise ConfigError("--wait waits for a batch run: leave out --no-batch")
    if batch is not None and (resume or rerun_failed):
        raise ConfigError("--batch and --no-batch choose for a new run; a resume of a run "
                          "batches as it did (leave them out)")
    if retry_errors and not resume:
        raise ConfigError("--retry-errors goes with --resume RUN_ID")
    if resume and rerun_failed:
        raise ConfigError("give --resume RUN_ID or --rerun-failed RUN_ID, not both")
    if (resume or rerun_failed) and traces is None:
        _refuse_new_run_options(ctx, "--resume" if resume else "--rerun-failed")
    if resume is None and rerun_failed is None and suite_path is None and traces is None:
        raise ConfigError("give a SUITE file, --traces SOURCE, --resume RUN_ID or "
                          "--rerun-failed RUN_ID")
    if (since or until) and traces is None:
        raise ConfigError("--since and --until select traces: give --traces SOURCE too")
    if traces is not None and (resume or rerun_failed):
        raise ConfigError("--traces starts a new run: leave out --resume and --rerun-failed")
    if scoring is not None and scoring not in ("default", "connexity"):
        raise ConfigError(f"--scoring {scoring!r}: expected default or connexity")
    if dry_run and (set_baseline or compare_to_baseline):
        raise ConfigError("--set-baseline and --compare-to-baseline need a stored run, "
                          "not --dry-run")
    runs = open_store(store_url(store))
    reports = _Reports(output, junit, uipath_output, _report_options(report),
                       fmt=output_format,
                       results_dir=results_dir(store_url(store)) if results_file else None)
    progress = _progress(suite_path)
    started: dict[str, str] = {}

    def on_start(run: Any) -> None:
        started["id"] = run.id
        reports.started(run)

    stored_run = resume or rerun_failed
    if stored_run:
        coro: Coroutine[Any, Any, Any] = resume_async(
            stored_run, store=runs, data=suite_path, retry_errors=retry_errors,
            rerun_failed=rerun_failed is not None,
            concurrency=concurrency, cache=mode, judge_model=judge_model,
            budget_usd=budget_usd, progress=progress,
            on_record=reports.on_record, on_start=on_start, on_warning=_warn,
            on_notice=_notice, keep=False, on_inputs=reports.open,
            wait=True if wait else None,
            poll_s=poll_interval if _typed(ctx, "poll_interval") else None,
            retry=_retry_given(ctx, max_attempts=max_attempts, call_timeout_s=call_timeout,
                               total_timeout_s=total_timeout))
    else:
        try:
            config = RunConfig(
                concurrency=concurrency or RunConfig().concurrency, judge_model=judge_model,
                target=target, targets_file=str(targets_file) if targets_file else None,
                repeat=repeat, filter=None if traces else filter_glob, dry_run=dry_run,
                cache=mode,
                retry=RetryPolicy(max_attempts=max_attempts, call_timeout_s=call_timeout,
                                  total_timeout_s=total_timeout),
                thresholds=Thresholds(pass_at=pass_at, borderline_at=borderline_at),
                gates=Gates(min_mean_score=min_score, max_failed=max_failed,
                            max_errors=max_errors,
                            calibration=CalibrationGate(
                                min_kappa=min_judge_kappa, min_accuracy=min_judge_accuracy,
                                set=calibration_set)
                            if (min_judge_kappa, min_judge_accuracy, calibration_set) !=
                            (None, None, None) else None),
                scoring=scoring,
                run_thresholds=RunThresholds(metrics_pass_threshold=metrics_pass_threshold,
                                             cases_pass_threshold=cases_pass_threshold,
                                             max_error_rate=max_error_rate),
                connexity_compat=connexity_compat, simulator_model=simulator_model,
                cause_analysis=cause_analysis, case_ids=parse_eval_ids(eval_ids) if eval_ids is not None else None,
                agent_timeout_s=agent_timeout, agent_retries=max_retries,
                executor=executor,  # type: ignore[arg-type]
                ray=RayOptions(address=ray_address, workers=ray_workers,
                               judge_concurrency=judge_concurrency,
                               target_concurrency=target_concurrency),
                transcript=str(user_path(transcript).absolute()) if transcript else None,
                budget_usd=budget_usd, batch=batch, batch_wait=wait,
                batch_poll_s=poll_interval,
                run_name=run_name, tags=tag or [], notes=notes, agent_version=agent_version,
                **_agent_options(judges, naming, quality_criteria, global_guideline,
                                 retrieval_per))
        except ValidationError as exc:
            raise settings_error(exc) from None
        trace_options: dict[str, Any] = {} if traces is None else {
            "traces": traces, "trace_filter": filter_glob, "since": since, "until": until}
        coro = evaluate_async(suite_path, config=config, store=runs, progress=progress,
                              on_record=reports.on_record, on_start=on_start,
                              keep=False, on_inputs=reports.open, **trace_options)
    try:
        result = _run_interruptible(coro, progress)
    except _Stopped as stop:
        reports.close(keep=True)
        run_id = started.get("id")
        if run_id:
            from assay.types.records import cli_resume_command

            command = cli_resume_command(run_id, store_option_of(runs))
            err_console.print(
                f"\n[yellow]stopped[/]: finished results of run {for_terminal(run_id)} are "
                f"stored. Resume with: {for_terminal(command)}", highlight=False,
                soft_wrap=True)
        raise typer.Exit(stop.code) from None
    except EvaluationError as exc:
        reports.close(keep=True)
        err_console.print(f"error [{exc.code}]: {plain_for_terminal(exc.message)}",
                          highlight=False, markup=False, soft_wrap=True)
        _store_hint(started.get("id"), runs)
        raise typer.Exit(EXIT_USAGE) from None
    except BaseException:
        reports.close(keep=True)
        _store_hint(started.get("id"), runs)
        raise
    if result.estimate is not None:
        print_dry_run(result)
        return
    if result.waiting:
        reports.close(keep=False)  # the rows are written when the run completes
        _print_waiting(result, runs, resumed=stored_run is not None)
        return
    failures = reports.finish(result)
    if getattr(reports, "default_path", None) is not None:
        console.print(f"results written to {reports.default_path}", highlight=False,
                      markup=False)
    _print_result(result, runs, lambda: _baseline(result, runs, set_baseline,
                                                  compare_to_baseline), failures)


RETRY_OPTIONS = {"max_attempts": "max_attempts", "call_timeout_s": "call_timeout",
                 "total_timeout_s": "total_timeout"}
"""The :class:`~assay.types.engine_config.RetryPolicy` fields a resume may change, each with
its option of ``assay run``: a run stopped by a slow provider is resumed with a longer
timeout or more attempts for the rest of it."""

AGAIN_OPTIONS = frozenset({
    "suite_path", "judge_model", "concurrency", "output", "uipath_output", "junit", "report",
    "resume", "rerun_failed", "store", "cache", "retry_errors", "set_baseline",
    "compare_to_baseline", "output_format", "results_file", "no_report", "budget_usd", "wait",
    "poll_interval", "batch", *RETRY_OPTIONS.values()})
"""The options of ``assay run`` that a resume (or a re-run of failures) takes: this
invocation's own (its outputs, cache, budget, concurrency, judge given again, how long and
how often it retries a judge call). Every other choice is the stored run's, recorded when it
started."""


def _retry_given(ctx: typer.Context, **values: float) -> dict[str, float] | None:
    """The retry settings given on the command line, by RetryPolicy field (None: none): only
    those, so that the rest stay the resumed run's recorded ones."""
    given = {field: values[field] for field, option in RETRY_OPTIONS.items()
             if _typed(ctx, option)}
    return given or None


def _refuse_new_run_options(ctx: typer.Context, flag: str) -> None:
    """ConfigError naming each option given on the command line that only a new run takes:
    a resume runs with the stored run's recorded choices, so ``--dry-run``, ``--repeat``,
    ``--filter``, a gate or an agent timeout given beside it would otherwise be dropped without a
    word (``--resume RUN --dry-run`` ran the rest of the run)."""
    given = [param.opts[0] for param in ctx.command.params
             if param.name and param.name not in AGAIN_OPTIONS and _typed(ctx, param.name)]
    if given:
        raise ConfigError(
            f"{', '.join(given)} {'chooses' if len(given) == 1 else 'choose'} for a new run; "
            f"{flag} runs with the choices the run recorded (leave "
            f"{'it' if len(given) == 1 else 'them'} out, or start a new run)")


def _typed(ctx: typer.Context, name: str) -> bool:
    """Whether option ``name`` was given on the command line (not its default)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def _print_waiting(result: Any, runs: Any, resumed: bool) -> None:
    """A run waiting for its batches: where they are and how to collect them. Exit 0 when
    this command submitted them (``assay run --batch``), else :data:`EXIT_WAITING`: a resume
    that found them unfinished (or submitted a next round)."""
    from assay.run.batch import EXIT_WAITING
    from assay.types.records import resume_command

    progress = result.batch
    if progress is not None and progress.submitted:
        console.print(f"{progress.submitted} judge request(s) submitted in batches at the "
                      "batch price (half the live price)", highlight=False, markup=False)
    for line in progress.lines() if progress is not None else []:
        console.print(plain_for_terminal(line), highlight=False, markup=False, soft_wrap=True)
    command = resume_command(result.run, store_option_of(runs))
    console.print(f"run {result.run_id} is waiting for batch (stored in {runs.display_url}); "
                  f"collect the answers and complete it with: {plain_for_terminal(command or '')}",
                  highlight=False, markup=False, soft_wrap=True)
    if resumed:
        raise typer.Exit(EXIT_WAITING)


def _baseline(result: Any, runs: Any, set_it: bool, compare_it: bool) -> bool:
    """Compare the run with its baseline and/or make it the baseline; True on a
    regression."""
    from assay.store.baselines import baseline_for
    from assay.store.baselines import set_baseline as mark

    regressed = False
    if compare_it:
        found = baseline_for(runs, result.run_id)
        if found is None or found.run_id == result.run_id:
            console.print("no baseline to compare with yet (set one with assay baseline set "
                          "RUN, or --set-baseline)", highlight=False, markup=False)
        else:
            from assay.analysis.compare import compare_stored
            from assay.report.comparison import print_comparison, stored_summaries

            comparison = compare_stored(runs, found.run_id, result.run_id)
            print_comparison(console, comparison, summaries=stored_summaries(runs, comparison))
            regressed = bool(comparison.exit_code())  # as the printed verdict says
    if set_it:
        if result.passed and not regressed:
            made = mark(runs, result.run_id)
            console.print(f"baseline set for suite {for_terminal(made.suite)}",
                          highlight=False)
        else:
            console.print("[yellow]baseline not set[/]: the run did not pass", highlight=False)
    return regressed


@app.command()
@friendly_errors
def rescore(
    run_id: str = typer.Argument(..., metavar="RUN", help="The run whose executions to judge."),
    evaluator: list[str] | None = typer.Option(
        None, "--evaluator", "-e", help="An evaluator type to judge with instead of the "
        "run's own (repeatable)."),
    judge_model: str | None = typer.Option(None, "--judge-model", envvar="ASSAY_JUDGE_MODEL",
                                           help="Judge model for every LLM evaluator."),
    concurrency: int | None = typer.Option(None, "--concurrency", "-c", min=1),
    store: str | None = typer.Option(None, "--store", envvar="ASSAY_STORE_URL",
                                     help="Run store URL."),
    output: Path | None = typer.Option(None, "--output", "-o",
                                       help="Write result rows (JSONL) as cases complete."),
    junit: Path | None = typer.Option(None, "--junit", help="Write a JUnit XML report."),
    cache: str | None = typer.Option(None, "--cache", help="Judge response cache: "
                                     "use|refresh|off (default: $ASSAY_CACHE, else use)."),
    dry_run: bool = typer.Option(False, "--dry-run",
                                 help="Count the judge calls (and what the cache answers) "
                                 "without making them; nothing is stored."),
) -> None:
    """Judge a stored run's executions again into a new run, without running the agent."""
    from assay.run.evaluate import open_store, rescore_async

    if judge_model is not None and not judge_model.strip():
        raise ConfigError("--judge-model is empty; give a model such as openai:gpt-4o-mini")
    mode = cache_option(cache)
    runs = open_store(store_url(store))
    reports = _Reports(output, junit, None)
    progress = _progress(None)
    options: dict[str, Any] = {}
    if judge_model:
        options["judge_model"] = judge_model
    if concurrency:
        options["concurrency"] = concurrency
    if mode is not None:
        options["cache"] = mode
    if dry_run:
        options["dry_run"] = True
    coro = rescore_async(run_id, store=runs, evaluators=evaluator or None, progress=progress,
                         on_record=reports.on_record, keep=False, on_inputs=reports.open,
                         **options)
    try:
        result = _run_interruptible(coro, progress)
    except _Stopped as stop:
        reports.close(keep=True)
        raise typer.Exit(stop.code) from None
    except BaseException:
        reports.close(keep=True)
        raise
    if result.estimate is not None:
        print_dry_run(result)
        return
    failures = reports.finish(result)
    console.print(f"rescored run {run_id} into a new run", highlight=False, markup=False)
    _print_result(result, runs, failures=failures)


def _agent_options(judges: str | None, naming: str | None, criteria: str | None,
                   guidelines: list[str] | None,
                   retrieval_per: str | None = None) -> dict[str, Any]:
    """The agent-judge flags as RunConfig fields (checked by the library before any call)."""
    options: dict[str, Any] = {}
    if judges is not None:
        names = [j.strip() for j in judges.split(",") if j.strip()]
        if not names:
            raise ConfigError("--judges is empty; name judges (correctness,groundedness) or "
                              "give 'default'")
        options["judges"] = "default" if names == ["default"] else names
    if naming is not None:
        if naming not in ("databricks", "mlflow"):
            raise ConfigError(f"--naming {naming!r}: expected databricks or mlflow")
        options["naming"] = naming
    if criteria is not None:
        from assay.run.policies.databricks.criteria import parse

        parse(criteria)  # a malformed expression stops here, before anything runs
        options["quality_criteria"] = criteria
    if guidelines:
        options["global_guidelines"] = list(guidelines)
    if retrieval_per is not None:
        if retrieval_per not in ("row", "span"):
            raise ConfigError(f"--retrieval-per {retrieval_per!r}: expected row or span")
        options["retrieval_per"] = retrieval_per
    return options


def _report_options(values: list[str] | None) -> list[tuple[str, Path]]:
    """``--report FORMAT:PATH`` values, each format checked against the registry now."""
    from assay.registry import REGISTRY

    found = []
    for value in values or []:
        name, sep, path = value.partition(":")
        if not sep or not name or not path:
            raise ConfigError(f"--report {value!r}: expected FORMAT:PATH, such as "
                              "junit:report.xml")
        REGISTRY.require("reporter", name, "--report")
        found.append((name, user_path(path)))
    return found


class _Stopped(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def _run_interruptible(coro: Coroutine[Any, Any, Any], progress: Any) -> Any:
    """Run the coroutine; Ctrl-C and SIGTERM cancel it (the library marks the run
    interrupted and closes targets, killing agent processes) and raise :class:`_Stopped`."""
    stopped: dict[str, int] = {}

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def stop(code: int) -> Callable[[], None]:
            def handler() -> None:
                stopped.setdefault("code", code)
                task.cancel()
            return handler

        for sig, code in ((signal.SIGTERM, EXIT_TERMINATED), (signal.SIGINT, EXIT_INTERRUPTED)):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, stop(code))
        with progress:
            return await coro

    try:
        return asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise _Stopped(stopped.get("code", EXIT_INTERRUPTED)) from None


def _progress(suite_path: Path | None) -> Any:
    from assay.report.terminal import ProgressBar

    return ProgressBar(console, suite_path.name if suite_path else "run")


def results_dir(url: str) -> Path:
    """Where a run's default results file goes: ``results/`` beside a SQLite store file (so
    ``.assay/results/`` for the default store), else ``.assay/results/`` here."""
    if url.startswith("sqlite:///") and url != "sqlite://":
        return user_path(Path(url.removeprefix("sqlite:///"))).parent / "results"
    return Path(".assay") / "results"


class _Reports:
    """The result files of a run: rows as cases complete (the ``--output`` file, else the
    run's default file ``results/RUN.jsonl``), JUnit and UiPath at the end."""

    def __init__(self, output: Path | None, junit: Path | None, uipath: Path | None,
                 extra: list[tuple[str, Path]] | None = None, fmt: str = "jsonl",
                 results_dir: Path | None = None) -> None:
        from assay.report.files import ROW_FORMATS

        if fmt not in ROW_FORMATS:
            raise ConfigError(f"--output-format {fmt!r}: expected jsonl or yaml")
        self.output, self.junit, self.uipath = output, junit, uipath
        self.extra = extra or []
        self.fmt = fmt
        self.results_dir = results_dir
        self.writer: Any = None
        self.types: dict[str, Any] = {}
        self.dataset = ""
        self.named: tuple[Any, str, str] | None = None

    def open(self, inputs: Mapping[Path, str]) -> None:
        """Refuse an output that is a file the run uses (``inputs``: see
        :data:`assay.run.evaluate.OnInputs`), another output, or not writable, before any case
        runs; then open the results file."""
        from assay.report.files import RowWriter
        from assay.report.outputs import check_outputs

        outputs: dict[str, Path | None] = {"--output": self.output, "--junit": self.junit,
                                           "--uipath-output": self.uipath}
        outputs.update({f"--report {name}:{path}": path for name, path in self.extra})
        check_outputs(outputs, inputs)
        if self.output is not None and self.writer is None:
            self.writer = RowWriter(self.output, "--output", self.fmt)

    def started(self, run: Any) -> None:
        """The run's evaluator types and weights, for the rows' evaluator entries (and, with
        a naming, what each judge is, for rows in that naming); without ``--output``, the rows
        go to the run's own results file."""
        from assay.report.files import RowWriter

        self.dataset = run.suite
        self.types = {e.name: e for e in run.config.evaluators}
        naming = run.config.run.naming
        if naming:
            from assay.run.policies.databricks import Catalog

            self.named = (Catalog(run.config.evaluators), naming,
                          run.config.run.chunk_errors)
        if self.writer is None and self.output is None and self.results_dir is not None:
            self.results_dir.mkdir(parents=True, exist_ok=True)
            path = self.results_dir / f"{run.id}.{self.fmt}"
            self.writer = RowWriter(path, "the results file", self.fmt)
            self.default_path: Path | None = path

    def on_record(self, record: Any) -> None:
        if self.writer is not None:
            if self.named is not None:
                from assay.run.policies.databricks import named_row

                catalog, naming, chunk_errors = self.named
                self.writer.write(named_row(record, catalog, naming, chunk_errors))
                return
            from assay.report.rows import agentv_row

            self.writer.write(agentv_row(record, self.dataset, self.types))

    def close(self, keep: bool) -> None:
        if self.writer is not None:
            self.writer.close(keep=keep)
            self.writer = None

    def finish(self, result: Any) -> list[EvaluationError]:
        """Put the rows in place and write the reports of a finished run; what could not be
        written is returned, one error each, for the command to report after the results
        (the run itself is stored whatever happens here)."""
        from assay.report.reporters import write_report

        failures: list[EvaluationError] = []
        with _kept(failures):
            self.close(keep=True)  # the rows' last block is written here: it may fail
        for name, path in [*(("junit", self.junit), ("uipath", self.uipath)), *self.extra]:
            if path is not None:
                with _kept(failures):
                    write_report(name, result, path)
        return failures


@contextlib.contextmanager
def _kept(failures: list[EvaluationError]) -> Iterator[None]:
    """Collect an output's failure instead of raising it."""
    try:
        yield
    except EvaluationError as exc:
        failures.append(exc)


def _print_result(result: Any, runs: Any, after: Callable[[], bool] | None = None,
                  failures: Sequence[EvaluationError] = ()) -> None:
    """The summary, where the run is stored and its gates; then each output that could not
    be written. Exit 2 when one could not, else 1 when a gate failed."""
    from assay.llm.models import judge_notes
    from assay.report.terminal import summary_lines
    from assay.types.records import resume_command

    if result.suite is not None and result.suite.metadata.get("format") == "uipath":
        from assay.report.uipath_console import table_for_result

        console.print(table_for_result(result))  # as `uipath eval` shows its results
    for line in summary_lines(result.summary, result.notes):
        console.print(line, highlight=False)
    if result.summary.assessments is not None:
        from assay.report.terminal import aggregate_lines

        for line in aggregate_lines(result.summary.assessments):
            console.print(line, highlight=False, soft_wrap=True)
    console.print(f"run {result.run_id} stored in {runs.display_url}", highlight=False,
                  markup=False)
    regressed = after() if after is not None else False
    failed = not result.passed or regressed
    if failed:
        if result.summary.assessments is not None:
            for line in result.reason.splitlines():
                console.print(for_terminal(line), highlight=False)
        for failure in result.summary.gate_failures:
            console.print(f"[red]gate failed[/]: {for_terminal(failure)}", highlight=False,
                          soft_wrap=True)  # one line, so a command it advises copies whole
        command = resume_command(result.run, store_option_of(runs))
        if command:  # stopped with cases not run (its budget): the rest can still run
            console.print(f"resume with: {plain_for_terminal(command)}", highlight=False,
                          soft_wrap=True, markup=False)
    elif judge_notes(result.run.config.judge_models):  # a pass on them is no judgement
        console.print("[green]all gates passed[/], but on a judge that is not a real one "
                      "(see the note above)", highlight=False)
    else:
        console.print("[green]all gates passed[/]")
    print_failures(failures)
    if failures:
        raise typer.Exit(EXIT_USAGE)
    if failed:
        raise typer.Exit(EXIT_GATE_FAILED)


def print_failures(failures: Sequence[EvaluationError]) -> None:
    """Each output that could not be written, on a line of its own."""
    for exc in failures:
        err_console.print(f"error [{exc.code}]: {exc.message}", highlight=False,
                          markup=False, soft_wrap=True)


def print_dry_run(result: Any, label: str = "") -> None:
    """What a dry run (see :mod:`assay.run.dry_run`) would take, as every command that has
    one prints it (``label``: the suite, when a command runs several)."""
    from assay.types import numbers

    est = result.estimate
    console.print(f"{label}dry run: {result.summary.cases} case(s); {est.calls} judge call(s) "
                  f"at most (+{est.cached} answered from the cache, not counted); about "
                  f"{numbers.count(est.prompt_tokens)} prompt + "
                  f"{numbers.count(est.completion_tokens)} completion tokens; "
                  f"cost {numbers.cost(est.cost)}; nothing stored", highlight=False,
                  markup=False)
    for model, n in sorted(est.by_model.items()):
        console.print(f"  {model}: {n} call(s)", highlight=False, markup=False)


def _store_hint(run_id: str | None, runs: Any) -> None:
    if run_id:
        from assay.types.records import cli_resume_command

        command = cli_resume_command(run_id, store_option_of(runs))
        err_console.print(f"run {plain_for_terminal(run_id)}: finished results are stored; "
                          f"resume with '{plain_for_terminal(command)}' once the problem is "
                          "fixed", highlight=False, markup=False, soft_wrap=True)


def _notice(message: str) -> None:
    console.print(message, highlight=False, markup=False)


def _warn(message: str) -> None:
    err_console.print(f"warning: {message}", highlight=False, markup=False)


__all__ = ["EXIT_USAGE", "run", "store_url"]
