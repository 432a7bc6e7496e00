"""Suite files in and out: EVAL.yaml, UiPath eval sets, JSONL; all load into :class:`Suite`."""

from __future__ import annotations

from pathlib import Path

from assay.errors import ConfigError
from assay.suites.model import Suite, SuiteCase


def load_any(path: Path, targets_file: Path | None = None) -> Suite:
    """EVAL.yaml / JSONL suites, or a UiPath project (a directory or an eval-set JSON)."""
    if not path.exists():
        raise ConfigError(f"{path}: no such file or directory", code="missing_suite")
    if path.is_dir() or path.suffix == ".json":
        from assay.suites.uipath import load_uipath

        return load_uipath(path)
    from assay.suites.evalyaml import load_suite

    return load_suite(path, targets_file)


__all__ = ["Suite", "SuiteCase", "load_any"]
