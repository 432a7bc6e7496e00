"""``assay calibrate``: a thin shell over :func:`assay.run.calibrate.calibrate_async`.

It reads the judge from a file, inline JSON, a type name or a suite's evaluator, shows
progress, prints the report (or its JSON), writes it to ``--output`` and picks the exit code:
0, or 1 when ``--min-kappa`` / ``--min-accuracy`` are given and not met; 2 for bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

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

JUDGE_OPTION = typer.Option(
    None, "--judge", "-j", help="The judge: a YAML or JSON file holding one evaluator "
    "config, inline JSON, or a type name [default: the set's own judge].")
SUITE_OPTION = typer.Option(None, "--suite", help="Take the judge from this suite (with "
                            "--evaluator NAME).")
EVALUATOR_OPTION = typer.Option(None, "--evaluator", "-e",
                                help="The evaluator's name in --suite or --run.")
JUDGE_MODEL_OPTION = typer.Option(None, "--judge-model", envvar="ASSAY_JUDGE_MODEL",
                                  help="The judge model (overrides the judge's own).")
KIND_OPTION = typer.Option(None, "--kind", help="Your file's labels: pairwise, binary, "
                           "ordinal or score [default: read from the data].")
LABEL_OPTION = typer.Option("label", "--label", help="Your file's label column.")
SCALE_OPTION = typer.Option(None, "--scale", help="Your labels' scale, e.g. 1-5.")
STORE_OPTION = typer.Option(None, "--store", envvar="ASSAY_STORE_URL",
                            help="Run store URL (where calibrations are kept).")
CONCURRENCY_OPTION = typer.Option(8, "--concurrency", "-c", min=1,
                                  help="Judge calls in flight at once.")
CACHE_OPTION = typer.Option(None, "--cache", help="Judge response cache: use|refresh|off "
                            "(default: $ASSAY_CACHE, else use).")
RESAMPLES_OPTION = typer.Option(1000, "--resamples", min=0,
                                help="Bootstrap resamples for the intervals (0: none).")
"""Options ``assay calibrate`` and ``assay align`` share."""


@app.command()
@friendly_errors
def calibrate(
    data: str | None = typer.Argument(
        None, metavar="SET_OR_FILE", help="A built-in labelled set (see --list) or your "
        "labelled .jsonl, .json or .csv file."),
    judge: str | None = JUDGE_OPTION,
    suite: Path | None = SUITE_OPTION,
    evaluator: str | None = EVALUATOR_OPTION,
    judge_model: str | None = JUDGE_MODEL_OPTION,
    metric: str | None = typer.Option(None, "--metric", help="Which human rating of a set "
                                      "that offers several."),
    limit: int | None = typer.Option(None, "--limit", "-n", min=1,
                                     help="Judge only the first N items."),
    kind: str | None = KIND_OPTION,
    label: str = LABEL_OPTION,
    scale: str | None = SCALE_OPTION,
    run: str | None = typer.Option(None, "--run", help="Calibrate a stored run's scores "
                                   "against the labels people gave them in the viewer (or "
                                   "--labels) instead of judging."),
    labels: Path | None = typer.Option(None, "--labels", help="With --run: a file of case_id "
                                       "and label columns [default: the run's stored human "
                                       "labels]."),
    resume: str | None = typer.Option(None, "--resume", help="Finish a stopped calibration "
                                      "run by id (same data and judge)."),
    store: str | None = STORE_OPTION,
    concurrency: int = CONCURRENCY_OPTION,
    cache: str | None = CACHE_OPTION,
    resamples: int = RESAMPLES_OPTION,
    seed: int = typer.Option(0, "--seed", help="The bootstrap's seed."),
    min_kappa: float | None = typer.Option(None, "--min-kappa", min=-1.0, max=1.0,
                                           help="Exit 1 when kappa is below this."),
    min_accuracy: float | None = typer.Option(None, "--min-accuracy", min=0.0, max=1.0,
                                              help="Exit 1 when accuracy is below this."),
    output: Path | None = typer.Option(None, "--output", "-o",
                                       help="Write the report as JSON to this file."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    list_sets: bool = typer.Option(False, "--list", help="List the built-in sets and exit."),
) -> None:
    """Measure how far a judge agrees with human labels, and store the calibration."""
    from assay.cli.run import _progress, _run_interruptible, _Stopped, print_failures, store_url
    from assay.report.outputs import check_outputs, write_atomic
    from assay.run.calibrate import calibrate_async

    if list_sets:
        _print_sets(as_json)
        return
    mode = cache_option(cache)
    if judge_model is not None and not judge_model.strip():
        raise ConfigError("--judge-model is empty; give a model such as openai:gpt-4o-mini")
    if run is None and data is None:
        raise ConfigError("give a SET_OR_FILE (assay calibrate --list), or --run RUN (with "
                          "its stored human labels, or --labels FILE)")
    if suite is not None and judge is not None:
        raise ConfigError("give the judge with --judge or with --suite, not both")
    files: dict[Path, str] = {}  # what the command reads itself: the judge's file
    built = _judge(judge, files)

    def check(found: dict[Path, str]) -> None:
        """Refuse an --output that is a file the calibration uses (the suite's files among
        them), before any judge call."""
        check_outputs({"--output": output}, {**found, **files})

    options: dict[str, Any] = {
        "judge": built, "judge_model": judge_model, "store": store_url(store),
        "metric": metric, "limit": limit, "kind": kind, "label": label, "scale": scale,
        "concurrency": concurrency, "cache": mode, "resamples": resamples, "seed": seed,
        "resume": resume, "evaluator": evaluator, "suite": suite,
        "on_inputs": check if output is not None else None}
    if run is not None:
        options.update(run=run, labels=labels)
    progress = _Quiet() if as_json else _progress(Path(data) if data else None)
    try:
        report = _run_interruptible(calibrate_async(data, progress=progress, **options),
                                    progress)
    except _Stopped as stop:
        err_console.print("\nstopped: finished judgements are stored and cached; run the same "
                          "command again (or with --resume RUN) to finish", highlight=False,
                          markup=False)
        raise typer.Exit(stop.code) from None
    from assay.calibration.report import figure, text_lines

    show(report.to_json() if as_json else None, [
        *text_lines(report), *([f"calibration {report.id} stored in "
                                f"{_shown(store_url(store))}"] if report.run_id else [])])
    failures = []
    kappa, accuracy = report.kappa, report.accuracy
    if min_kappa is not None and (kappa is None or kappa.value is None
                                  or kappa.value < min_kappa):
        failures.append(f"kappa {figure('kappa', kappa.value if kappa else None)} is below "
                        f"{figure('kappa', min_kappa)}")
    if min_accuracy is not None and (accuracy is None or accuracy.value is None
                                     or accuracy.value < min_accuracy):
        failures.append(f"accuracy {figure('accuracy', accuracy.value if accuracy else None)} "
                        f"is below {figure('accuracy', min_accuracy)}")
    for failure in failures:
        err_console.print(f"gate failed: {failure}", highlight=False, markup=False,
                          soft_wrap=True)
    if output is not None:  # after the report is shown: a failure here loses none of it
        try:
            write_atomic(output, report.to_json().encode(), "--output")
        except EvaluationError as exc:
            print_failures([exc])
            raise typer.Exit(EXIT_USAGE) from None
    if failures:
        raise typer.Exit(EXIT_GATE_FAILED)


def show(as_json: str | None, lines: list[str]) -> None:
    """A report on stdout: its JSON when given (``--json``), else its lines, each made safe
    for the terminal."""
    if as_json is not None:
        print(as_json)
        return
    from assay.report.safe_text import printable

    for line in lines:
        console.print(printable(line), highlight=False, markup=False, soft_wrap=True)


class _Quiet:
    """No progress: with --json, stdout holds the report alone."""

    def __enter__(self) -> _Quiet:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def start(self, total: int, done: int, label: str = "") -> None:
        pass

    def advance(self, record: Any) -> None:
        pass


def _shown(url: str) -> str:
    from assay._util.redact import redact_url

    return redact_url(url)


def _judge(judge: str | None, files: dict[Path, str]) -> Any:
    """The judge to calibrate from ``--judge``: a file, inline JSON or a type name; None for
    the set's own (or the ``--suite``'s evaluator, which the library reads). The file read for
    it is added to ``files``."""
    if judge is None:
        return None
    from assay._util.limits import depth_message, too_deep

    text = judge.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"--judge: not JSON: {exc}") from None
        except RecursionError:
            raise ConfigError(f"--judge: {depth_message()}") from None
        if too_deep(value):
            raise ConfigError(f"--judge: {depth_message()}")
    elif user_path(text).is_file():
        files[user_path(text)] = "the judge file"
        value = _judge_file(user_path(text), text)
    elif text.replace("_", "").isalnum():
        return text
    else:
        raise ConfigError(f"--judge {text!r}: not a file, inline JSON or an evaluator type")
    if not isinstance(value, dict) or "type" not in value:
        raise ConfigError(f"--judge {text}: expected one evaluator config, a mapping with a "
                          "'type' (such as {\"type\": \"pairwise\"})")
    return value


def _judge_file(path: Path, shown: str) -> Any:
    """The judge file's one document, read as a suite file is: bounded in depth and in what
    its aliases expand to (a file of nested aliases would otherwise fill the memory when the
    judge's config is hashed), a key given twice refused."""
    from assay._util.yaml_source import YamlSyntaxError, load_yaml_file

    try:
        loaded = load_yaml_file(path, shown)
    except YamlSyntaxError as exc:
        raise ConfigError(f"--judge {exc.problem}") from None
    if loaded.problems:
        raise ConfigError(f"--judge {loaded.problems[0]}")
    return loaded.data


def _print_sets(as_json: bool) -> None:
    from assay.calibration.sets import SETS

    rows: list[dict[str, Any]] = [{"name": s.name, "title": s.title, "kind": s.kind, "records": s.records,
             "licence": s.licence, "metrics": list(s.metrics)} for s in SETS.values()]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        metrics = f"; ratings: {', '.join(row['metrics'])}" if row["metrics"] else ""
        console.print(f"{row['name']:<24} {row['kind']:<9} {row['records']:>5}  "
                      f"{row['title']} ({row['licence']}){metrics}", highlight=False,
                      markup=False)


__all__ = ["calibrate"]
