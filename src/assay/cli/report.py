"""``assay report``: a stored run as a static HTML file or Markdown."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from assay._util.user_paths import user_path
from assay.cli.app import app, err_console, friendly_errors
from assay.cli.run import store_url
from assay.errors import ConfigError


@app.command()
@friendly_errors
def report(
    run_id: str = typer.Argument(..., metavar="RUN"),
    html: Path | None = typer.Option(None, "--html", help="Write a self-contained HTML report "
                                     "(works opened from disk, no network); missing folders "
                                     "are created, as for assay run --output."),
    markdown: str | None = typer.Option(None, "--markdown", help="Write a Markdown summary "
                                        "to this file, or '-' for standard output (append it "
                                        "to $GITHUB_STEP_SUMMARY)."),
    max_cases: int = typer.Option(5000, "--max-cases", min=1,
                                  help="Cases included in the HTML report, problems first."),
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
    compare: str | None = typer.Option(
        None, "--compare", metavar="BASELINE", help="Compare RUN with this baseline run: the "
        "HTML report opens on the comparison, and the Markdown is the comparison's (a "
        "pull-request comment). Runs that differ must be alike, as for assay compare."),
) -> None:
    """Render a stored run for people: an HTML file for CI artifacts, Markdown for reviews.
    Markdown is also appended to $GITHUB_STEP_SUMMARY when it is set. Each file written is
    named on standard error (standard output may carry the Markdown)."""
    from assay.report.github import write_markdown
    from assay.report.html import write_html
    from assay.report.markdown import render_markdown
    from assay.report.outputs import check_outputs
    from assay.store.runs import RunStore

    if html is None and markdown is None:
        raise ConfigError("give --html FILE, --markdown FILE or --markdown -", code="no_output")
    md_path = None if markdown in (None, "-") else user_path(markdown)
    runs = RunStore(store_url(store), must_exist=True)
    check_outputs({"--html": html, "--markdown": md_path}, runs.input_files())
    run = runs.run_record(run_id)
    baseline = runs.run_record(compare) if compare is not None else None
    text = None
    if baseline is not None:
        from assay.analysis.compare import compare_stored
        from assay.report.comparison import comparison_markdown, stored_summaries

        compared = compare_stored(runs, baseline.id, run.id)
        text = comparison_markdown(compared, summaries=stored_summaries(runs, compared))
    if html is not None:
        write_html(runs, run, html, max_cases, baseline=baseline)
        _written("HTML report", html)
    if markdown is not None:
        text = text if text is not None else render_markdown(runs, run)
        if md_path is None:
            sys.stdout.write(text)
        write_markdown(md_path, text, runs.input_files())
        if md_path is not None:
            _written("Markdown report", md_path)


def _written(label: str, path: Path) -> None:
    """Name a file the command wrote, on standard error: a report on standard output stays
    only the report."""
    from assay.report.safe_text import plain_for_terminal

    err_console.print(f"{label} written to {plain_for_terminal(str(path))}", highlight=False,
                      markup=False, soft_wrap=True)
