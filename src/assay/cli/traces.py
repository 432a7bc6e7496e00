"""``assay watch`` (online evaluation of traces) and ``assay writeback`` (verdicts back to
where the traces live): thin shells over :mod:`assay.run.sources`."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import typer

from assay.cli.app import app, console, friendly_errors
from assay.cli.run import _agent_options, store_url
from assay.errors import ConfigError


@app.command()
@friendly_errors
def watch(
    source: str = typer.Argument(..., metavar="SOURCE", help="Where the traces are: store "
                                 "(what assay serve received), mlflow:URI, phoenix:URL, ..."),
    suite_path: Path | None = typer.Argument(
        None, metavar="SUITE", help="A suite whose evaluators judge the traces."),
    judges: str | None = typer.Option(None, "--judges", help="Built-in agent judges, "
                                      "comma-separated, instead of (or with) a suite's."),
    judge_model: str | None = typer.Option(None, "--judge-model", envvar="ASSAY_JUDGE_MODEL",
                                           help="Judge model for every LLM evaluator."),
    name: str = typer.Option("default", "--name", help="The online evaluation's name: its "
                             "decisions and runs are kept under it."),
    rate: float = typer.Option(1.0, "--rate", min=0.0, max=1.0,
                               help="The fraction of traces judged."),
    trace_filter: str | None = typer.Option(
        None, "--filter", help="Only traces with KEY=VALUE (name, status, service or a root "
        "span attribute), pairs separated by commas."),
    on_error: bool = typer.Option(True, "--always-on-error/--sample-errors",
                                  help="Judge every trace with a failed span."),
    feedback: list[str] = typer.Option(
        [], "--feedback-marker", help="A span name or attribute prefix that marks user "
        "feedback, whose traces are always judged (repeatable; default: feedback, "
        "user_feedback, user.feedback)."),
    max_cost: float | None = typer.Option(None, "--max-cost-per-hour", min=0.0,
                                          help="Start no judging once the last hour's "
                                          "judging cost reached this (dollars)."),
    period: str = typer.Option("hour", "--period", help="One run per hour, day or week."),
    interval: float = typer.Option(30.0, "--interval", min=0.1,
                                   help="Seconds between passes over the source."),
    settle_s: float = typer.Option(5.0, "--settle", min=0.0, help="A received trace is "
                                   "complete once no span arrived for this many seconds."),
    since: str | None = typer.Option(None, "--since", help="Only traces that started at or "
                                     "after this (ISO 8601, seconds, or 24h, 7d)."),
    once: bool = typer.Option(False, "--once", help="One pass, then exit (for a schedule)."),
    store: str | None = typer.Option(None, "--store", envvar="ASSAY_STORE_URL",
                                     help="Run store URL."),
) -> None:
    """Judge new traces as they arrive: a sample within a budget, each once per evaluator
    version, into one run per period; restarted, it goes on where it stopped."""
    from assay.run.evaluate import load_data
    from assay.run.sources import TraceQuery, open_source
    from assay.run.sources.base import parse_filters
    from assay.run.sources.suite import parse_time
    from assay.run.sources.watch import FEEDBACK_MARKERS, SamplingRules, Watcher
    from assay.store.runs import open_store
    from assay.suites.model import Suite
    from assay.types.config import RunConfig

    runs = open_store(store_url(store))
    config = RunConfig(judge_model=judge_model,
                       **_agent_options(judges, None, None, None))
    suite = load_data(suite_path, config=config) if suite_path else Suite(name="watch")
    rules = SamplingRules(rate=rate, filters=tuple(parse_filters(trace_filter)),
                          always_on_error=on_error,
                          feedback_markers=tuple(feedback) or FEEDBACK_MARKERS,
                          max_cost_per_hour=max_cost)
    watcher = Watcher(open_source(source, store=runs), suite, runs, name=name, config=config,
                      rules=rules, period=period, settle_s=settle_s,
                      query=TraceQuery(since=parse_time(since)))

    def report(tick: Any) -> None:
        console.print(f"watch {name}: {tick.line()}", highlight=False, markup=False)

    if once:
        report(asyncio.run(watcher.tick()))
        return
    console.print(f"watching {watcher.source.name} as {watcher.key} every {interval:g}s "
                  "(Ctrl-C stops; a restart goes on where it stopped)", highlight=False,
                  markup=False)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(watcher.forever(interval, report))


@app.command()
@friendly_errors
def writeback(
    run_id: str = typer.Argument(..., metavar="RUN", help="A run of traces (assay run "
                                 "--traces, assay watch)."),
    to: str = typer.Option(..., "--to", help="mlflow:TRACKING_URI (assessments), phoenix:URL "
                           "(span annotations) or otlp:FILE.json (an OTLP JSON export)."),
    store: str | None = typer.Option(None, "--store", envvar="ASSAY_STORE_URL",
                                     help="Run store URL."),
) -> None:
    """Write a run's verdicts back onto the traces it judged; writing twice adds nothing."""
    import orjson

    from assay.report.outputs import check_outputs, write_atomic
    from assay.report.safe_text import plain_for_terminal
    from assay.run.sources.writeback import trace_files, write_back
    from assay.store.runs import open_store

    runs = open_store(store_url(store))
    run = runs.run_record(run_id)
    kind, _, address = to.partition(":")
    if kind == "otlp":
        if not address:
            raise ConfigError("--to otlp:FILE.json: give the file to write")
        path = Path(address)
        check_outputs({"--to": path}, {**runs.input_files(), **trace_files(runs, run.id)})
        found = write_back(runs, run.id, to)
        assert isinstance(found, dict)
        write_atomic(path, orjson.dumps(found, option=orjson.OPT_INDENT_2), "--to")
        spans = len(found["resourceSpans"][0]["scopeSpans"][0]["spans"])
        console.print(f"{spans} evaluation span(s) of run {run.id} written to {path}",
                      highlight=False, markup=False)
        return
    result = write_back(runs, run.id, to)
    assert not isinstance(result, dict)
    # The trace ids and the source's errors are the source's text: shown, never obeyed.
    console.print(plain_for_terminal(f"run {run.id} -> {result.target}: {result.summary()}"),
                  highlight=False, markup=False)
    for problem in result.problems[:20]:
        console.print(f"  {plain_for_terminal(problem)}", highlight=False, markup=False)
