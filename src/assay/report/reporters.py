"""The built-in reporters: an evaluation result rendered to a file, registered by name.

``assay run --report junit:report.xml`` (and ``--output``, ``--junit``, ``--uipath-output``,
which are these by another name) write through here; a plugin adds a format with
``@assay.registry.reporter("name")`` on a ``write(result, path)`` function.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay._util.user_code import user_code
from assay.registry import REGISTRY, reporter
from assay.report.rows import agentv_row


def write_report(name: str, result: Any, path: Path) -> None:
    """Render ``result`` to ``path`` with the reporter registered as ``name`` (a plugin's
    runs as user code: an exit in it is an error naming it, not the command ending)."""
    write = REGISTRY.require("reporter", name)
    with user_code(f"the reporter {name!r}"):
        write(result, path)


def _specs(result: Any) -> dict[str, Any]:
    return {e.name: e for e in result.run.config.evaluators}


@reporter("jsonl")
def write_rows(result: Any, path: Path) -> None:
    """One AgentV-shaped result row per (case, repeat)."""
    from assay.report.files import write_jsonl

    specs = _specs(result)
    write_jsonl(path, [agentv_row(r, result.run.suite, specs) for r in result.records],
                "jsonl report")


@reporter("junit")
def write_junit_report(result: Any, path: Path) -> None:
    """A JUnit XML report for CI systems."""
    from assay.report.files import write_junit

    specs = _specs(result)
    write_junit(path, result.run.suite,
                [agentv_row(r, result.run.suite, specs) for r in result.records], result.run_id,
                summary=result.run.summary)


@reporter("uipath")
def write_uipath_report(result: Any, path: Path) -> None:
    """UiPath's ``uipath eval --output-file`` shape."""
    from assay.report.uipath_output import render_for_records, write_uipath_output

    write_uipath_output(path, render_for_records(result))


def _stored(result: Any, what: str) -> Any:
    from assay.errors import ConfigError

    if result.store is None:
        raise ConfigError(f"the {what} report reads the run from its store; this run has "
                          "none (a dry run)", code="no_store")
    result.store.flush()
    return result.store


@reporter("html")
def write_html_report(result: Any, path: Path) -> None:
    """One self-contained HTML file: the run's page and its cases' details (no network)."""
    from assay.report.html import write_html

    store = _stored(result, "html")
    write_html(store, store.run_record(result.run_id), path)


@reporter("markdown")
def write_markdown_report(result: Any, path: Path) -> None:
    """A Markdown summary for a pull-request comment or a GitHub step summary; appended to
    ``$GITHUB_STEP_SUMMARY`` too when it is set, as every command that writes Markdown does
    (unless ``path`` is that file: it is written once)."""
    from assay.report.github import write_markdown
    from assay.report.markdown import render_markdown

    store = _stored(result, "markdown")
    write_markdown(Path(path), render_markdown(store, store.run_record(result.run_id)),
                   store.input_files())
