"""The ``assay`` command line."""

import importlib

from assay.cli.app import app

COMMANDS = ("calibrate", "align", "judge", "run", "runs", "validate", "baseline", "eval_cmd",
            "authoring", "report", "serve", "traces")
"""The modules that define commands; each imports the library only inside its commands, so
building the command line costs little more than typer itself."""

for _module in COMMANDS:
    try:
        importlib.import_module(f"assay.cli.{_module}")
    except ModuleNotFoundError as exc:  # a command module not present in this build
        if exc.name != f"assay.cli.{_module}":
            raise


def main() -> None:
    # The entry point (assay.__main__) imports this module under gc_pause.importing, which
    # freezes what the imports built, so no collection walks it again.
    app()


__all__ = ["app", "main"]
