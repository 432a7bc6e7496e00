"""Fixtures of the Connexity acceptance tests: the stub judge and a store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import assay
from tests.acceptance.connexity.stub_tables import stub_judge
from tests.acceptance.stub import StubJudge


@pytest.fixture
def stub() -> Iterator[StubJudge]:
    """The stub judge as ``custom:stub`` (and ``custom:stub2``, another judge model name)."""
    judge = stub_judge()
    assay.register_service("stub", judge)
    assay.register_service("stub2", judge)
    yield judge


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"
