"""``assay judge``: score one expected/actual pair from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from assay._util import jsondata
from assay.cli.app import app, cache_option, console, err_console, friendly_errors
from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.types.score import CaseScore


def _maybe_json(text: str) -> Any:
    """Parse JSON when the text is JSON, else keep the text."""
    try:
        return jsondata.loads(text)
    except ValueError:
        return text


@app.command()
@friendly_errors
def judge(
    expected: str = typer.Option(..., "--expected", "-e", help="Expected output (text or JSON)."),
    actual: str = typer.Option(..., "--actual", "-a", help="Actual output (text or JSON)."),
    evaluator: str = typer.Option("semantic_similarity", "--evaluator", "-t",
                                  help="Evaluator type: semantic_similarity, llm_judge, "
                                  "exact_match, contains."),
    model: str | None = typer.Option(None, "--model", "-m",
                                     help="Judge model, e.g. openai:gpt-4o-mini; default: "
                                     "$ASSAY_JUDGE_MODEL or local:gemma-3-270m."),
    prompt: Path | None = typer.Option(None, "--prompt", "-p", exists=True, dir_okay=False,
                                       help="A prompt template file."),
    question: str = typer.Option("", "--question", "-q", help="The question (llm_judge)."),
    cache: str | None = typer.Option(None, "--cache", help="Judge response cache: "
                                     "use|refresh|off (default: $ASSAY_CACHE, else use)."),
    max_attempts: int = typer.Option(6, "--max-attempts", min=1,
                                     help="Attempts per judge call (1 = no retries)."),
    call_timeout: float = typer.Option(120.0, "--call-timeout", min=0.001,
                                       help="Seconds one judge call may take."),
    as_json: bool = typer.Option(False, "--json", help="Print the score as JSON."),
) -> None:
    """Score one pair and print the score, the case's verdict, rationale, tokens and cost."""
    from pydantic import ValidationError

    from assay.judges import build
    from assay.llm.build import engine_config
    from assay.llm.models import judge_notes
    from assay.run.score import score
    from assay.types.case import Case
    from assay.types.config import RunConfig, settings_error
    from assay.types.engine_config import RetryPolicy
    from assay.types.execution import Execution

    config: dict[str, Any] = {"type": evaluator}
    if prompt is not None:
        config["prompt"] = prompt.read_text()
    if evaluator == "contains":
        config["search_text"] = expected
    built = build(config, where=f"--evaluator {evaluator}")
    if model is not None and not model.strip():  # an error, not the default
        raise ConfigError("--model: the judge model is empty; name one such as "
                          "openai:gpt-4o-mini, or leave the option out for the default")
    try:
        options = RunConfig(
            judge_model=model, cache=cache_option(cache),
            retry=RetryPolicy(max_attempts=max_attempts, call_timeout_s=call_timeout))
    except ValidationError as exc:
        raise settings_error(exc) from None
    default_model = engine_config(options).default_model
    for note in judge_notes(m or default_model for m in built.models()):
        err_console.print(f"[yellow]note[/]: {note}", highlight=False, soft_wrap=True)
    case = Case(id="cli", input=question, expected_output=_maybe_json(expected))
    execution = Execution(input=question, output=_maybe_json(actual))
    result = score(built, case, execution, config=options)
    if as_json:
        from assay._util.redact import scrub_json

        console.print_json(scrub_json(result.model_dump_json()))
    else:
        _print_score(result)
    raise typer.Exit(0 if result.ok else 1)


def _print_score(score: CaseScore) -> None:
    from assay.report.safe_text import for_terminal
    from assay.types import numbers

    if score.error is not None:
        console.print(f"[bold red]error[/] {for_terminal(score.error.code)}: "
                      f"{for_terminal(score.error.message)}", highlight=False)
    else:
        raw = f" (raw {for_terminal(score.raw)} on {for_terminal(score.scale)})" \
            if score.scale else ""
        verdict = "[green]pass[/]" if score.passed else "[red]fail[/]"
        console.print(f"score     {numbers.score(score.value)}{raw} {verdict}", highlight=False)
    case = "" if score.case_score is None else f" (case score {numbers.score(score.case_score)})"
    console.print(f"verdict   {score.verdict.value}{case}", highlight=False)
    if score.rationale:
        console.print(f"rationale {for_terminal(score.rationale)}", highlight=False)
    usage = score.usage
    console.print(
        f"tokens    {numbers.count(usage.prompt_tokens)} prompt + "
        f"{numbers.count(usage.completion_tokens)} completion; "
        f"calls {usage.calls} (+{usage.cached_calls} cached); cost {numbers.cost(usage.cost)}",
        highlight=False)
    if score.judge_model:
        console.print(f"judge     {for_terminal(score.judge_model)}", highlight=False)
