"""``assay convert``, ``assay init`` and ``assay generate rubrics``: writing suites (the
library does the work: :mod:`assay.authoring.convert`, :mod:`assay.authoring.scaffold`,
:mod:`assay.authoring.rubrics`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from assay.cli.app import app, console, friendly_errors

if TYPE_CHECKING:
    from assay.authoring.rubrics import SuiteDrafts

generate_app = typer.Typer(help="Draft suite content with the judge model.",
                           no_args_is_help=True)
app.add_typer(generate_app, name="generate")


@app.command()
@friendly_errors
def convert(
    source: Path = typer.Argument(..., metavar="FILE",
                                  help="An EVAL.yaml, a JSONL suite, or a results JSONL."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Where to write [default: "
                                    "x.yaml -> x-cases.jsonl, x.jsonl -> x.eval.yaml, "
                                    "--to v4 -> x.v4.yaml, --to v2 -> x.v2.yaml]."),
    force: bool = typer.Option(False, "--force", help="Replace files the command line does "
                               "not name (the default output, the sidecar beside --out)."),
    to: str | None = typer.Option(
        None, "--to", help="v2 (AgentV 2's EVAL.yaml), v4 (AgentV 4's) or jsonl [default: "
        "YAML -> jsonl, JSONL -> v2, an AgentV 4 file -> v2]."),
) -> None:
    """Convert a suite between EVAL.yaml and JSONL, or between AgentV 2's and 4's formats (or
    results JSONL to YAML)."""
    from assay.authoring.convert import convert as run_convert
    from assay.errors import ConfigError

    if not source.is_file():
        raise ConfigError(f"{source}: no such file", code="missing_suite")
    from assay.report.safe_text import plain_for_terminal

    for path in run_convert(source, out, force, to):
        console.print(f"wrote {plain_for_terminal(path)}", highlight=False, markup=False)


@app.command()
@friendly_errors
def init(
    directory: Path = typer.Argument(Path("."), metavar="DIR",
                                     help="The folder to create (or an empty one)."),
) -> None:
    """Create a working suite, targets file, prompt and agent in a folder."""
    import shlex

    from assay.authoring.scaffold import init as run_init
    from assay.report.safe_text import plain_for_terminal

    for path in run_init(directory):
        console.print(f"created {plain_for_terminal(path)}", highlight=False, markup=False)
    here = directory.resolve() == Path.cwd().resolve()
    go = "" if here else f"cd {plain_for_terminal(shlex.quote(str(directory)))} && "
    console.print(f"next: {go}assay run EVAL.yaml", highlight=False, markup=False)


@generate_app.command("rubrics")
@friendly_errors
def rubrics(
    suite: Path = typer.Argument(..., metavar="SUITE", help="An EVAL.yaml file."),
    case: list[str] | None = typer.Option(None, "--case", help="Only these case ids."),
    judge_model: str | None = typer.Option(None, "--judge-model", "--target",
                                           envvar="ASSAY_JUDGE_MODEL",
                                           help="The model that drafts the rubrics."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Write a copy of the suite with "
                                    "the rubrics added (the suite itself is not edited)."),
) -> None:
    """Draft rubric items from each case's expected outcome, with the judge model."""
    import asyncio

    import yaml
    from pydantic import ValidationError

    from assay.authoring.rubrics import draft_suite, with_rubrics
    from assay.errors import ConfigError
    from assay.llm.build import build_engine, engine_config
    from assay.report.outputs import check_outputs, write_atomic
    from assay.report.safe_text import plain_for_terminal
    from assay.suites.evalyaml import load_eval_yaml
    from assay.types.config import RunConfig, settings_error

    loaded = load_eval_yaml(suite, False)
    wanted = [c for c in loaded.cases if c.case.expected_outcomes
              and (not case or c.case.id in case)
              and not any(e.type == "rubric" for e in c.evaluators or [])]
    unknown = sorted(set(case or []) - {c.case.id for c in loaded.cases})
    if unknown:
        raise ConfigError(f"--case {', '.join(unknown)}: not a case of {suite}")
    if not wanted:
        raise ConfigError(f"{suite}: no case with an expected_outcome and no rubrics yet")
    try:
        options = RunConfig(judge_model=judge_model or None)
    except ValidationError as exc:
        raise settings_error(exc, "--judge-model") from None
    if out is not None:
        check_outputs({"--out": out},
                      {**engine_config(options).input_files(), **loaded.input_files()})

    async def draft() -> SuiteDrafts:
        engine = build_engine(options)
        try:
            return await draft_suite([c.case for c in wanted], engine)
        finally:
            await engine.aclose()

    drafts = asyncio.run(draft())
    if out is None:
        for case_id, items in drafts.drafted.items():
            console.print(plain_for_terminal(f"# {case_id}"), highlight=False, markup=False)
            console.print(plain_for_terminal(yaml.safe_dump(
                {"rubrics": items}, sort_keys=False, allow_unicode=True)),
                highlight=False, markup=False)
    elif drafts.drafted:
        write_atomic(out, with_rubrics(suite, drafts.drafted).encode("utf-8"), "--out")
        console.print(plain_for_terminal(f"wrote {out} with rubrics for "
                                         f"{len(drafts.drafted)} case(s)"),
                      highlight=False, markup=False)
    _report_failed(drafts, out)


def _report_failed(drafts: SuiteDrafts, out: Path | None) -> None:
    """Each case the judge drafted nothing for, named with the reason on stderr, and exit 1:
    the drafts made for the other cases were printed or written first."""
    from assay.cli.app import EXIT_GATE_FAILED, err_console
    from assay.report.safe_text import for_terminal

    if not drafts.failed:
        return
    for message in drafts.failed.values():
        err_console.print(f"[bold red]error[/] {for_terminal(message)}", highlight=False,
                          soft_wrap=True)
    kept = (f"; the other {len(drafts.drafted)} case(s)' drafts were "
            f"{'printed' if out is None else 'written'}" if drafts.drafted else "")
    err_console.print(for_terminal(f"{len(drafts.failed)} case(s) have no rubrics{kept}"),
                      highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_GATE_FAILED)
