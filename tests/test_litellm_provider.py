"""The LiteLLM provider (extra ``assay[litellm]``) against the real local server."""

from __future__ import annotations

import pytest

from assay.judges import EvalContext, SemanticSimilarity
from assay.llm import EngineConfig, JudgeEngine
from assay.model import Case, Execution

litellm = pytest.importorskip("litellm", reason="the litellm extra is installed by setup")


async def test_litellm_routes_to_an_openai_compatible_server(mock_server, monkeypatch,
                                                              tmp_path):
    monkeypatch.setenv("OPENAI_API_BASE", mock_server.url)
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    engine = JudgeEngine(EngineConfig(default_model="litellm:openai/judge-model",
                                      cache_path=tmp_path / "c.db"))
    score = await SemanticSimilarity().evaluate(Case(id="a", expected_output="green tea"),
                                                Execution(output="green tea"),
                                                EvalContext(engine))
    assert score.ok, score.error
    assert score.value == pytest.approx(1.0)
    assert mock_server.stats.requests == 1
    assert mock_server.stats.models == {"judge-model": 1}


async def test_litellm_rate_limit_maps_to_a_retryable_error(mock_server, monkeypatch,
                                                             tmp_path):
    from tests.conftest import fast_retry

    mock_server.configure(faults={"429": 1.0}, max_faults_per_request=1, retry_after_s=0.0)
    monkeypatch.setenv("OPENAI_API_BASE", mock_server.url)
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    engine = JudgeEngine(EngineConfig(default_model="litellm:openai/judge-model",
                                      cache_mode="off", retry=fast_retry()))
    score = await SemanticSimilarity().evaluate(Case(id="a", expected_output="x"),
                                                Execution(output="x"), EvalContext(engine))
    assert score.ok and score.usage.retries == 1
