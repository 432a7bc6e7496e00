"""``assay baseline set|show|clear``: the run of a suite (and target) that later runs are
compared to (``assay compare --against-baseline``, ``assay run --compare-to-baseline``)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import typer

from assay.cli.app import app, console, friendly_errors
from assay.cli.run import store_url
from assay.errors import ConfigError
from assay.report.safe_text import for_terminal

if TYPE_CHECKING:
    from assay.store.baselines import Baseline

# The store is imported inside each command: building the command line (``assay --help``,
# every other command) must not load SQLAlchemy.

baseline_app = typer.Typer(help="Name the run that later runs of a suite are compared to.",
                           no_args_is_help=True)
app.add_typer(baseline_app, name="baseline")


def _line(found: Baseline) -> str:
    when = f"an unknown time: {for_terminal(found.unreadable or '')}" \
        if found.created_at is None else \
        time.strftime("%Y-%m-%d %H:%M", time.localtime(found.created_at))
    target = f", target {for_terminal(found.target)}" if found.target else ""
    return f"suite {for_terminal(found.suite)}{target}: run {for_terminal(found.run_id)} " \
           f"(since {when})"


@baseline_app.command("set")
@friendly_errors
def set_command(
    run_id: str = typer.Argument(..., metavar="RUN", help="A completed run."),
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
) -> None:
    """Make RUN the baseline of its suite and target (replacing the one before)."""
    from assay.store.baselines import set_baseline
    from assay.store.runs import RunStore

    found = set_baseline(RunStore(store_url(store), must_exist=True), run_id)
    console.print(f"baseline set: {_line(found)}", highlight=False)


@baseline_app.command("show")
@friendly_errors
def show_command(
    run_id: str | None = typer.Argument(None, metavar="[RUN]",
                                        help="Show the baseline of this run's suite."),
    suite: str | None = typer.Option(None, "--suite", help="A suite name."),
    target: str | None = typer.Option(None, "--target", help="A target name."),
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Show baselines: of a run's scope, of --suite (and --target), or all of them."""
    from assay.store.baselines import get_baseline, list_baselines, scope_of
    from assay.store.runs import RunStore

    runs = RunStore(store_url(store), must_exist=True)
    if run_id is not None:
        suite, scope_target = scope_of(runs.run_record(run_id))
        found = [b for b in [get_baseline(runs, suite, scope_target)] if b is not None]
    elif suite is not None:
        found = [b for b in [get_baseline(runs, suite, target)] if b is not None]
    else:
        found = list_baselines(runs)
    if as_json:
        print(json.dumps([b.model_dump() for b in found], indent=2))
        return
    if not found:
        console.print("no baseline set", highlight=False)
    for item in found:
        console.print(_line(item), highlight=False)


@baseline_app.command("clear")
@friendly_errors
def clear_command(
    run_id: str | None = typer.Argument(None, metavar="[RUN]",
                                        help="Clear the baseline of this run's suite."),
    suite: str | None = typer.Option(None, "--suite", help="A suite name."),
    target: str | None = typer.Option(None, "--target", help="A target name."),
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
) -> None:
    """Remove the baseline of a run's scope, or of --suite (and --target)."""
    from assay.store.baselines import clear_baseline, scope_of
    from assay.store.runs import RunStore

    runs = RunStore(store_url(store), must_exist=True)
    if run_id is not None:
        suite, target = scope_of(runs.run_record(run_id))
    elif suite is None:
        raise ConfigError("give a RUN, or --suite (and --target) to clear")
    if clear_baseline(runs, suite, target):
        console.print(f"baseline cleared for suite {for_terminal(suite)}", highlight=False)
    else:
        console.print(f"no baseline was set for suite {for_terminal(suite)}", highlight=False)
