"""The ``assay`` command: one typer app; each command lives in its own module.

Exit codes: 0 success (all gates pass), 1 a gate failed, 2 a usage or configuration error.
Configuration errors print one clear line, never a traceback. Everything printed that comes
from data (ids, names, messages) goes through :func:`assay.report.safe_text.for_terminal`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from assay._util.user_paths import user_path
from assay.errors import EvaluationError
from assay.report.safe_text import for_terminal, make_console

if TYPE_CHECKING:
    from assay.types.engine_config import CacheMode

app = typer.Typer(
    name="assay",
    help="Judge AI agents: score outputs, tool calls, trajectories and retrieved context.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
console = make_console()
err_console = make_console(stderr=True)

EXIT_OK, EXIT_GATE_FAILED, EXIT_USAGE = 0, 1, 2

F = TypeVar("F", bound=Callable[..., Any])


def friendly_errors(fn: F) -> F:
    """Turn configuration errors into one line on stderr and exit code 2; every path option
    and argument arrives with ``~`` expanded (see :mod:`assay._util.user_paths`)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs = {name: _expanded(value) for name, value in kwargs.items()}
        try:
            return fn(*args, **kwargs)
        except EvaluationError as exc:
            err_console.print(f"[bold red]error[/] {for_terminal(f'[{exc.code}]')}: "
                              f"{for_terminal(exc.message)}", highlight=False, soft_wrap=True)
            raise typer.Exit(EXIT_USAGE) from None

    return wrapper  # type: ignore[return-value]


def _expanded(value: Any) -> Any:
    """A path option's value as assay reads it (a repeatable one's each); others as given."""
    if isinstance(value, Path):
        return user_path(value)
    if isinstance(value, list) and value and all(isinstance(v, Path) for v in value):
        return [user_path(v) for v in value]
    return value


def cache_option(value: str | None) -> CacheMode | None:
    """A ``--cache`` option, checked; None (not given) leaves the mode to the library's one
    rule, ``$ASSAY_CACHE`` else ``use`` (:func:`assay.types.engine_config.cache_mode`)."""
    if value is None:
        return None
    from assay.types.engine_config import cache_mode

    return cache_mode(value, "--cache")


def version_callback(value: bool) -> None:
    if value:
        from assay import __version__

        console.print(f"assay {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(False, "--version", callback=version_callback, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Judge AI agents with LLM judges and deterministic checks."""
