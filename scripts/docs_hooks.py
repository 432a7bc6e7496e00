"""MkDocs hooks for assay's guide: the reference pages are made from the code at build time.

- ``<!-- assay: cli -->`` in a page becomes the reference of every ``assay`` command, read from
  the Typer app itself (through mkdocs-click), so it can never disagree with ``assay --help``.
- ``<!-- assay: api -->`` becomes one mkdocstrings entry per name of ``assay.__all__``, grouped
  by the module that defines it, so a name added to the public API is documented on the next
  build, from its docstring.
"""

from __future__ import annotations

import sys
import types
from collections import defaultdict
from typing import Any

CLI_MODULE = "assay_cli_reference"


def on_config(config: Any) -> Any:
    """Make the click command behind the Typer app importable for mkdocs-click."""
    import typer

    from assay.cli import app  # importing the package adds every command to the app

    module = types.ModuleType(CLI_MODULE)
    module.command = typer.main.get_command(app)  # type: ignore[attr-defined]
    sys.modules[CLI_MODULE] = module
    return config


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Expand the markers of the reference pages; other pages are left as they are."""
    return (markdown.replace("<!-- assay: cli -->", cli_reference())
            .replace("<!-- assay: api -->", api_reference()))


def cli_reference() -> str:
    return ("::: mkdocs-click\n"
            f"    :module: {CLI_MODULE}\n"
            "    :command: command\n"
            "    :prog_name: assay\n"
            "    :depth: 1\n"
            "    :style: plain\n"
            "    :list_subcommands: true\n")


def api_reference() -> str:
    import assay

    exports: dict[str, str] = assay._EXPORTS
    by_module: dict[str, list[str]] = defaultdict(list)
    for name in assay.__all__:
        if name != "__version__":
            by_module[exports[name]].append(name)
    parts = []
    for module in sorted(by_module):
        parts.append(f"## From `{module}`\n")
        parts.extend(f"::: assay.{name}\n" for name in sorted(by_module[module]))
    return "\n".join(parts)
