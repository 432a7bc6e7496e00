"""``assay runs``, ``assay show`` and ``assay compare``: reading the run store."""

from __future__ import annotations

import json

import typer
from rich.markup import escape

from assay.cli.app import EXIT_GATE_FAILED, app, console, err_console, friendly_errors
from assay.cli.run import store_url
from assay.compare import compare_runs
from assay.report.safe_text import for_terminal
from assay.report.terminal import cases_table, fmt_score, runs_table
from assay.store.runs import RunStore


@app.command("runs")
@friendly_errors
def list_runs(
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
    limit: int = typer.Option(20, "--limit", "-n"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List stored runs, newest first."""
    rows = RunStore(store_url(store)).runs(limit)
    if as_json:
        print(json.dumps(rows, default=str, indent=2))
        return
    console.print(runs_table(rows))


@app.command()
@friendly_errors
def show(
    run_id: str = typer.Argument(..., metavar="RUN"),
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
    as_json: bool = typer.Option(False, "--json", help="Print the case rows as JSONL."),
) -> None:
    """Show a run: per-case scores, verdicts, hits, misses and reasoning."""
    from assay.report.rows import agentv_row

    runs = RunStore(store_url(store))
    run = runs.run_record(run_id)
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
    baseline: str = typer.Argument(..., metavar="RUN_A"),
    candidate: str = typer.Argument(..., metavar="RUN_B"),
    threshold: float = typer.Option(0.1, "--threshold",
                                    help="A score change of at least this is a win or loss."),
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
    as_json: bool = typer.Option(False, "--json"),
    allow_incomplete: bool = typer.Option(
        False, "--allow-incomplete",
        help="Compare the cases both runs hold even when a run did not complete or their "
             "cases differ (runs sharing no case are still refused)."),
    exit_rule: str = typer.Option(
        "assay", "--exit-rule", help="assay: exit 1 on a regression; agentv: exit 1 when the "
        "mean score change is negative (agentv compare's rule)."),
) -> None:
    """Compare two completed runs of the same cases (run ids, or two results JSONL files);
    exit 1 when the candidate regressed, 2 when they cannot be compared."""
    from pathlib import Path

    from assay.compare_files import agentv_summary, compare_files, fails

    if exit_rule not in ("assay", "agentv"):
        from assay.errors import ConfigError

        raise ConfigError(f"--exit-rule {exit_rule!r}: expected assay or agentv")
    if Path(baseline).is_file() and Path(candidate).is_file():
        result = compare_files(Path(baseline), Path(candidate), threshold)
        a, b = {"id": baseline}, {"id": candidate}
    else:
        runs = RunStore(store_url(store))
        a, b = runs.run(baseline), runs.run(candidate)
        result = compare_runs(a, b, runs.case_rows(a["id"]), runs.case_rows(b["id"]),
                              threshold, allow_incomplete=allow_incomplete)
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
        if result.only_before or result.only_after:
            console.print(f"only in {for_terminal(a['id'])}: {len(result.only_before)}; only in "
                          f"{for_terminal(b['id'])}: {len(result.only_after)}", highlight=False)
    if result.regressions and not as_json:
        console.print(f"[red]regression[/]: {len(result.regressions)} case(s): " +
                      ", ".join(for_terminal(c.case_id) for c in result.regressions[:10]),
                      highlight=False)
    if fails(result, exit_rule):  # type: ignore[arg-type]
        raise typer.Exit(EXIT_GATE_FAILED)
