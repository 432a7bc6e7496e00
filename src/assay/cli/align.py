"""``assay align``: a thin shell over :func:`assay.run.align.align_async`.

It reads the judge as ``assay calibrate`` does, shows progress, prints the before/after
figures on the held-out labels (or the report's JSON), writes the aligned judge's config to
``--output`` (YAML, or JSON for a ``.json`` name) and the report to ``--report``. Exit 0, or 2
for bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import typer

from assay.cli.app import EXIT_USAGE, app, cache_option, err_console, friendly_errors
from assay.cli.calibrate import (
    CACHE_OPTION,
    CONCURRENCY_OPTION,
    EVALUATOR_OPTION,
    JUDGE_MODEL_OPTION,
    JUDGE_OPTION,
    KIND_OPTION,
    LABEL_OPTION,
    RESAMPLES_OPTION,
    SCALE_OPTION,
    STORE_OPTION,
    SUITE_OPTION,
)
from assay.errors import ConfigError, EvaluationError

if TYPE_CHECKING:
    from assay.calibration.items import Kind


@app.command()
@friendly_errors
def align(
    data: str | None = typer.Argument(None, metavar="[LABELS]", help="Your labelled .jsonl, "
                                      ".json or .csv file (or a built-in set); or --run."),
    run: str | None = typer.Option(None, "--run", help="Learn from the labels people gave "
                                   "a stored run's cases in assay serve (its judge, unless "
                                   "--judge)."),
    judge: str | None = JUDGE_OPTION,
    suite: Path | None = SUITE_OPTION,
    evaluator: str | None = EVALUATOR_OPTION,
    judge_model: str | None = JUDGE_MODEL_OPTION,
    reviser_model: str | None = typer.Option(
        None, "--reviser-model", help="The model that revises the instructions [default: "
        "the judge's]."),
    holdout: float = typer.Option(0.3, "--holdout", min=0.0, max=1.0,
                                  help="The share of the labels held out to measure it."),
    examples: int = typer.Option(4, "--examples", min=0, max=50,
                                 help="Labelled examples shown to the aligned judge."),
    seed: int = typer.Option(0, "--seed", help="Chooses the held-out labels, the examples and "
                             "the bootstrap's resamples."),
    kind: str | None = KIND_OPTION,
    label: str = LABEL_OPTION,
    scale: str | None = SCALE_OPTION,
    limit: int | None = typer.Option(None, "--limit", "-n", min=1,
                                     help="Use only the first N labels."),
    store: str | None = STORE_OPTION,
    concurrency: int = CONCURRENCY_OPTION,
    cache: str | None = CACHE_OPTION,
    resamples: int = RESAMPLES_OPTION,
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Write the aligned judge's config here (YAML, or JSON "
        "for a .json name): use it with --judge, or in a suite's evaluators."),
    report_file: Path | None = typer.Option(None, "--report",
                                            help="Write the alignment report as JSON here."),
    as_json: bool = typer.Option(False, "--json", help="Print the alignment report as JSON."),
) -> None:
    """Improve a judge from human labels: learn from some, measure on the rest."""
    from assay.calibration.alignment import text_lines
    from assay.calibration.items import KINDS
    from assay.cli.calibrate import _judge, _Quiet, _shown, show
    from assay.cli.run import _progress, _run_interruptible, _Stopped, print_failures, store_url
    from assay.report.outputs import check_outputs, write_atomic
    from assay.run.align import align_async

    if judge_model is not None and not judge_model.strip():
        raise ConfigError("--judge-model is empty; give a model such as openai:gpt-4o-mini")
    if suite is not None and judge is not None:
        raise ConfigError("give the judge with --judge or with --suite, not both")
    if kind is not None and kind not in KINDS:
        raise ConfigError(f"--kind {kind!r}: expected one of {', '.join(KINDS)}")
    files: dict[Path, str] = {}
    built = _judge(judge, files)
    outputs = {"--output": output, "--report": report_file}

    def check(found: dict[Path, str]) -> None:
        """Refuse an output that is a file the alignment uses, before any judge call."""
        check_outputs(outputs, {**found, **files})

    if (data is None) == (run is None):
        raise ConfigError("give the labels: a LABELS file, or --run RUN for the labels given "
                          "on a run's case pages")
    progress = _Quiet() if as_json else _progress(Path(data or f"run {run}"))
    try:
        report = _run_interruptible(align_async(
            data, judge=built, suite=suite, evaluator=evaluator, judge_model=judge_model,
            reviser_model=reviser_model, holdout=holdout, examples=examples, seed=seed,
            kind=cast("Kind | None", kind), label=label, scale=scale, limit=limit, store=store_url(store),
            concurrency=concurrency, cache=cache_option(cache), resamples=resamples,
            progress=progress, on_inputs=check, run=run), progress)
    except _Stopped as stop:
        err_console.print("\nstopped: finished judgements are stored and cached; run the same "
                          "command again to finish", highlight=False, markup=False)
        raise typer.Exit(stop.code) from None
    show(report.to_json() if as_json else None,
         [*text_lines(report), f"stored in {_shown(store_url(store))}"])
    try:  # after the report is shown: a failure here loses none of it
        if output is not None:
            write_atomic(output, _config_text(report.judge_config(), output), "--output")
        if report_file is not None:
            write_atomic(report_file, report.to_json().encode(), "--report")
    except EvaluationError as exc:
        print_failures([exc])
        raise typer.Exit(EXIT_USAGE) from None


def _config_text(config: dict[str, Any], path: Path) -> bytes:
    if path.suffix.lower() == ".json":
        return json.dumps(config, indent=2, ensure_ascii=False).encode()
    from assay._util import yaml_text

    return yaml_text.dump(config).encode()


__all__ = ["align"]
