"""``assay validate``: check suites without running anything, as ``assay run`` loads them.

Prints every problem of every file as ``file:line:col: message (expected: ...)`` (the shape
editors and CI annotate), problems of the targets file in use included; a suite that loads is
then put through the run's own checks before its first call (:func:`assay.run.evaluate.check`:
targets, judge models, evaluators, something to judge), so what ``assay run`` would refuse,
``validate`` refuses. It exits 0 when all is valid and 2 when anything is not. Output is plain text, never wrapped, so each problem
stays on one line for tools that parse it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from assay.cli.app import EXIT_OK, EXIT_USAGE, app, friendly_errors

if TYPE_CHECKING:
    from assay.suites.model import Suite
    from assay.targets.config import TargetsFile


@app.command()
@friendly_errors
def validate(
    files: list[Path] = typer.Argument(
        ..., metavar="SUITE...", help="EVAL.yaml (.yaml, .yml) or JSONL suite files, or UiPath "
        "projects (a project directory or an eval-set .json)."),
    targets: Path | None = typer.Option(None, "--targets",
                                        help="A targets.yaml; default: the nearest "
                                        ".assay/targets.yaml (or .agentv/) above each file."),
) -> None:
    """Check suites as ``assay run`` loads them: every problem, located, and nothing run."""
    from assay.report.safe_text import printable
    from assay.suites import check_any, is_uipath
    from assay.targets.config import load_targets_for

    failed = False
    reported: set[Path] = set()
    printed: set[str] = set()  # a targets file's problems are printed once
    for path in files:
        found = None
        if path.is_file() and not is_uipath(path):
            found = load_targets_for(path, targets, strict=False)
        suite, problems = check_any(path, found if found is not None else False)
        if found is not None and found.path is not None and found.path not in reported:
            reported.add(found.path)
            # An unset secret matters only to a run that uses its target, as in `assay run`.
            notes = secret_notes(found, suite)
            for problem in found.problems:
                printed.add(str(problem))
                typer.echo(printable(f"{notes.get(problem, '')}{problem}"))
            failed = failed or any(p not in notes for p in found.problems)
        for problem in problems:
            if str(problem) not in printed:
                typer.echo(printable(problem))
        if problems or suite is None:
            failed = True
            continue
        refused = preflight(suite, targets)
        if refused is not None:
            code, message = refused
            shown = found is not None and found.path in reported  # its problems are printed
            if code != "invalid_targets" or not shown:
                typer.echo(printable(f"{path}: {message} [{code}]"))
            failed = True
            continue
        typer.echo(printable(summary(path, suite, found)))
    raise typer.Exit(EXIT_USAGE if failed else EXIT_OK)


def preflight(suite: Suite, targets: Path | None) -> tuple[str, str] | None:
    """Why ``assay run`` would refuse the suite before its first call (its targets, judge
    models, evaluators...), by the run's own checks, as (code, message); None when it would
    start."""
    from assay.errors import EvaluationError
    from assay.run.evaluate import check
    from assay.types.config import RunConfig

    try:
        check(suite, config=RunConfig(targets_file=str(targets) if targets else None))
    except EvaluationError as exc:
        return exc.code, exc.message
    return None


def secret_notes(targets: TargetsFile, suite: Suite | None) -> dict[Any, str]:
    """The unset-secret problems that are only notes, each with the words that say why: a
    target the suite does not use; or, for a suite that could not be read (its own problems
    fail it), a target it may not use, which `assay run` does not list among the suite's
    problems either."""
    if suite is None:
        return {p: "note (checked once the suite's own problems are fixed): "
                for config in targets.targets.values() for p in config.missing_secrets}
    return {p: "note (target not used by this suite): " for p in unused_secrets(targets, suite)}


def unused_secrets(targets: TargetsFile, suite: Suite) -> set[Any]:
    """The unset-secret problems of targets the suite does not use."""
    used = {name for name in suite.facts().targets if name}
    for name in list(used):
        config = targets.get(name)
        if config is not None and config.judge_target:
            used.add(config.judge_target)
    return {p for name, config in targets.targets.items() if name not in used
            for p in config.missing_secrets}


def summary(path: Path, suite: Suite, targets: TargetsFile | None) -> str:
    """One line for a valid suite: its cases, evaluators and target."""
    evaluators = {id(e): e for e in suite.evaluators}
    cases = 0
    for item in suite.iter_cases():
        cases += 1
        for evaluator in item.evaluators or []:
            evaluators[id(evaluator)] = evaluator
    count = len(evaluators)
    line = (f"{path}: ok, {cases} case{'s' if cases != 1 else ''}, "
            f"{count} evaluator{'s' if count != 1 else ''}")
    if suite.target:
        line += f", target {suite.target}"
    if targets is not None and targets.path is not None:
        line += f" (targets: {targets.path})"
    return line
