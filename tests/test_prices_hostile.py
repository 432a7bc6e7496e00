"""A prices file ($ASSAY_PRICES) that is hostile or wrong is an error naming the file, the
model and what was expected: never a traceback, never a price read silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import assay
from assay.errors import ConfigError

ROWS = [{"id": "c0", "input": "what colour", "expected_output": "blue", "output": "blue"}]


@pytest.fixture
def openai(mock_server, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-prices-test")
    return mock_server


def _estimate(tmp_path: Path, prices: str, monkeypatch: pytest.MonkeyPatch) -> object:
    path = tmp_path / "prices.json"
    path.write_text(prices)
    monkeypatch.setenv("ASSAY_PRICES", str(path))
    return assay.evaluate(ROWS, evaluators=["semantic_similarity"],
                          judge_model="openai:gpt-4o-mini", store=tmp_path / "runs.db",
                          cache="off", dry_run=True).estimate


@pytest.mark.parametrize(("prices", "said"), [
    ('{"gpt-4o-mini": [1' + "0" * 400 + ', 2]}', "'gpt-4o-mini': expected"),
    ('{"gpt-4o-mini": [1e300, 2]}', "'gpt-4o-mini': expected"),
    ('{"gpt-4o-mini": [-1, 2]}', "'gpt-4o-mini': expected"),
    ('{"gpt-4o-mini": [NaN, 2]}', "'gpt-4o-mini': expected"),
    ('{"gpt-4o-mini": [Infinity, 2]}', "'gpt-4o-mini': expected"),
    ('{"gpt-4o-mini": [1, 2], "gpt-4o-mini": [100, 200]}', "duplicate key 'gpt-4o-mini'"),
    ('{"gpt-\\u202e4o": "x"}', "'gpt-\\u202e4o': expected"),
    ('{"gpt-4o-mini": [1, 2', "cannot read it as JSON"),
])
def test_a_hostile_prices_file_is_an_error_naming_the_file_and_model(
        openai, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prices: str,
        said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        _estimate(tmp_path, prices, monkeypatch)
    assert raised.value.code == "invalid_prices"
    assert f"ASSAY_PRICES={tmp_path / 'prices.json'}" in str(raised.value)
    assert said in str(raised.value), str(raised.value)
    assert "\u202e" not in str(raised.value)


def test_a_plain_prices_file_prices_the_estimate(openai, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    estimate = _estimate(tmp_path, json.dumps({"gpt-4o-mini": [1.0, 4.0]}), monkeypatch)
    assert estimate is not None and estimate.cost > 0  # type: ignore[attr-defined]
