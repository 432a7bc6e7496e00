"""The built-in suite formats, registered like a plugin's would be.

A format answers ``matches(path)`` and ``check(path, targets) -> (suite | None, problems)``;
:func:`assay.suites.load_any` and :func:`assay.suites.check_any` ask the formats in order of
registration (built-ins first, then installed plugins) and use the first that matches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay._util.yaml_source import Problem
from assay.registry import suite_format
from assay.suites.model import Suite


@suite_format("data")
class DataRows:
    """CSV and Parquet files, and JSONL files of data rows (see :mod:`assay.suites.dataset`)."""

    @staticmethod
    def matches(path: Path) -> bool:
        from assay.suites import dataset

        suffix = path.suffix.lower()
        return path.is_file() and (suffix in dataset.DATA_SUFFIXES or (
            suffix == ".jsonl" and dataset.looks_like_rows(path)))

    @staticmethod
    def check(path: Path, targets: Any = None) -> tuple[Suite | None, list[Problem]]:
        from assay.suites.dataset import suite_from_file

        return suite_from_file(path), []


@suite_format("uipath")
class UiPathProject:
    """A UiPath project directory, or one eval-set ``.json`` file."""

    @staticmethod
    def matches(path: Path) -> bool:
        return path.is_dir() or path.suffix.lower() == ".json"

    @staticmethod
    def check(path: Path, targets: Any = None) -> tuple[Suite | None, list[Problem]]:
        from assay.suites.uipath import load_uipath

        return load_uipath(path), []


@suite_format("agentv4")
class AgentV4Yaml:
    """AgentV 4's EVAL.yaml: ``tests`` with per-test ``assertions`` (see
    :mod:`assay.suites.agentv4`)."""

    @staticmethod
    def matches(path: Path) -> bool:
        from assay.suites.agentv4 import looks_like_agentv4

        return path.suffix.lower() in (".yaml", ".yml") and path.is_file() and \
            looks_like_agentv4(path)

    @staticmethod
    def check(path: Path, targets: Any = None) -> tuple[Suite | None, list[Problem]]:
        from assay.suites.evalyaml import check_eval_yaml

        return check_eval_yaml(path, targets)  # which reads AgentV 4's documents as such


@suite_format("eval_yaml")
class EvalYaml:
    """AgentV's EVAL.yaml (``.yaml``/``.yml``) and its JSONL variant with a sidecar."""

    @staticmethod
    def matches(path: Path) -> bool:
        return path.suffix.lower() in (".yaml", ".yml", ".jsonl")

    @staticmethod
    def check(path: Path, targets: Any = None) -> tuple[Suite | None, list[Problem]]:
        from assay.suites.evalyaml import check_suite

        return check_suite(path, targets)
