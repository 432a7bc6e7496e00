"""The ``assay`` command line."""

from assay.cli import judge as _judge  # noqa: F401  (registers the command)
from assay.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
