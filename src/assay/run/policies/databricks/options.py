"""The agent-judge run options, read without importing the judges: whether a run uses them
at all decides whether :mod:`assay.run.policies.databricks.setup` (and the judges it builds) is imported."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.errors import ConfigError
from assay.types.config import RunConfig

if TYPE_CHECKING:
    from assay.suites.model import Suite

OPTIONS = ("naming", "judges", "global_guidelines", "request_from_messages", "chunk_errors",
           "retrieval_per",
           "quality_criteria")
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
    except ValueError as exc:
        where = suite.metadata.get("run_options_file", "the data's sidecar")
        raise ConfigError(f"{where}: {exc}", code="invalid_run_options") from None


__all__ = ["OPTIONS", "active", "with_sidecar"]
