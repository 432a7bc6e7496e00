"""The ``assay`` command line."""

import importlib

from assay.cli.app import app

for _module in ("judge", "run", "runs", "validate"):
    try:
        importlib.import_module(f"assay.cli.{_module}")
    except ModuleNotFoundError as exc:  # a command module not present in this build
        if exc.name != f"assay.cli.{_module}":
            raise


def main() -> None:
    app()


__all__ = ["app", "main"]
