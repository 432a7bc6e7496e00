"""What a marked test does when a part it needs is missing: skipped on a developer's machine,
failed under CI (``$CI`` set), so a CI job that forgot to install or start it cannot pass by
skipping."""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing(tests: str, message: str) -> NoReturn:
    """Skip the test or module (fail it under CI), saying what is missing."""
    if under_ci():
        pytest.fail(f"{tests} tests must run in CI; {message}", pytrace=False)
    pytest.skip(message, allow_module_level=True)


def need(module: str, tests: str, install: str) -> ModuleType:
    """``module``, imported; missing, a skip (a failure under CI) saying how to ``install``
    it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        missing(tests, f"{module} is not installed: {install}")
