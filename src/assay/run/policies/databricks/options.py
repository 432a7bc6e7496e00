"""The agent-judge run options, read without importing the judges: whether a run uses them
at all decides whether :mod:`assay.run.policies.databricks.setup` (and the judges it builds) is imported."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from assay.errors import ConfigError
from assay.types.config import DATA_FILE_OPTIONS, RunConfig, settings_problems

if TYPE_CHECKING:
    from assay.suites.model import Suite

OPTIONS = DATA_FILE_OPTIONS
"""The run options a data file's sidecar may set (``data.csv`` + ``data.yaml``)."""


def active(config: RunConfig) -> bool:
    """Whether the run uses the agent-judge options at all."""
    return bool(config.naming or config.judges or config.quality_criteria or
                config.global_guidelines)


def with_sidecar(config: RunConfig, suite: Suite) -> RunConfig:
    """The config with the data's sidecar options filled in where it keeps the default."""
    options = suite.metadata.get("run_options")
    if not isinstance(options, dict) or not options:
        return config
    defaults = RunConfig()
    update = {k: v for k, v in options.items()
              if k in OPTIONS and getattr(config, k) == getattr(defaults, k)}
    if not update:
        return config
    try:
        return RunConfig.model_validate({**config.model_dump(), **update})
    except ValidationError as exc:
        raise ConfigError(_sidecar_problems(exc, suite.metadata.get("run_options_file")),
                          code="invalid_run_options") from None


def _sidecar_problems(exc: ValidationError, file: object) -> str:
    """Each option the sidecar got wrong at its line (``data.yaml:2:1: naming: Input should
    be 'databricks' or 'mlflow'``), as a suite's problems are named, not pydantic's report."""
    from assay._util.yaml_source import load_yaml_file
    from assay.errors import EvaluationError

    try:
        source = load_yaml_file(Path(str(file))).source if file else None
    except EvaluationError:
        source = None
    lines = []
    for error in exc.errors():
        key = tuple(str(part) for part in error["loc"])
        where = str(source.locate(key[:1])) if source is not None and key else \
            str(file or "the data's sidecar")
        problem = settings_problems(ValidationError.from_exception_data(exc.title, [error]))  # type: ignore[list-item]
        lines.append(f"{where}: {problem}")
    return "; ".join(lines)


__all__ = ["OPTIONS", "active", "with_sidecar"]
